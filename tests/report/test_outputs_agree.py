"""Issue 17: every output says the same thing about one campaign.

One fixed campaign of two matrix workloads (``sum[n=100000]`` about 30 ms, ``sum[n=200000]``
about 90 ms, 3x slower, both riding one machine drift) is run once with the fake executor
(runner/execute/fake.py: real store, real controller, no processes). Then ``show`` (text
and ``--json``), ``report`` (JSON, Markdown and HTML) and ``export`` (JSON and CSV) must print
the same pair verdict, ratio, CI and p-values, and the same CI of each workload; every
workload is shown in one display unit (ms) while the stored and exported unit stays the
base unit (s); and a campaign run against a baseline leads every output with that
verdict. The references are the stored readings themselves (plain sqlite3), numpy and
scipy.
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.cli import main
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.execute.fake import FakeExecutor, lognormal

A, B = "sum[n=100000]", "sum[n=200000]"


class NullDisplay:
    """A Display that prints nothing."""

    def start(self, campaign: Any, targets: dict[str, int], done: dict[str, int]) -> None:
        pass

    def round_done(self, workload: str, outcome: Any, value: float | None, warmup: bool) -> None:
        pass

    def message(self, text: str) -> None:
        pass

    def show_decision(self, decision: Any, eta_s: float | None) -> None:
        pass

    def stop(self) -> None:
        pass


def swing(clock: float) -> float:
    """The machine's speed, shared by every workload: ±2 % over about a minute."""
    return 1.0 + 0.02 * math.sin(clock / 10.0)


def _campaign(root: Path, text: str, scripts: dict[str, Any]) -> Path:
    exp = parse_experiment(text, base_dir=root, check_commands=False)
    run_campaign(exp, FakeExecutor(scripts), NullDisplay())
    return exp.campaign_dir


FIXED = """\
name: agree
output: {out}
settings: {{adaptive: false, rounds: 48, warmup_rounds: 1, pin: none, seed: 3}}
workloads:
  - name: sum
    command: [work, "{{n}}"]
matrix: {{n: [100000, 200000]}}
"""


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("agree")
    return _campaign(
        root,
        FIXED.format(out=root / "out"),
        {
            A: lognormal(0.030, 0.02, seed=1, drift=swing),
            B: lognormal(0.090, 0.02, seed=2, drift=swing),
        },
    )


def _out(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def _outputs(d: Path, tmp: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """Every output of campaign ``d``: show (text, JSON), report (JSON, Markdown, HTML),
    export (JSON, results CSV)."""
    md, page = tmp / "r.md", tmp / "r.html"
    assert main(["report", str(d), "--format", "md", "--no-plots", "-o", str(md)]) == 0
    assert main(["report", str(d), "--no-plots", "-o", str(page)]) == 0
    ej, ec = tmp / "e.json", tmp / "e.csv"
    assert main(["export", str(d), "-o", str(ej)]) == 0
    assert main(["export", str(d), "--what", "results", "--format", "csv", "-o", str(ec)]) == 0
    return {
        "show": _out(capsys, "show", str(d)),
        "show_json": json.loads(_out(capsys, "show", str(d), "--json")),
        "report": json.loads(_out(capsys, "report", str(d), "--format", "json")),
        "md": md.read_text(),
        "html": page.read_text(),
        "export": json.loads(ej.read_text()),
        "csv": list(csv.DictReader(io.StringIO(ec.read_text()))),
    }


def _section(page: str, sid: str) -> str:
    """The HTML of one section of the report (``<section id="sid">``)."""
    return page.split(f'<section id="{sid}">', 1)[1].split("</section>", 1)[0]


def _lines(page: str, sid: str) -> list[str]:
    """The headline lines of one section of the HTML report (its ``<li>`` items), as text."""
    items = re.findall(r"<li[^>]*>(.*?)</li>", _section(page, sid), re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", item)) for item in items]


def _round_values(db: Path, name: str) -> dict[int, float]:
    """Pass -> the steady ok round's value of ``name``, read with plain sqlite3."""
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT round.pass, round.wall_ns FROM round JOIN workload w ON w.id = round.workload_id"
        " WHERE w.name = ? AND round.warmup = 0 AND round.status = 'ok'",
        (name,),
    ).fetchall()
    conn.close()
    return {int(p): ns / 1e9 for p, ns in rows}


def _signed_rank_k(n: int, confidence: float) -> int:
    """k of the distribution-free interval [W_(k), W_(M+1-k)] of the Walsh averages: the
    largest k with 2·P0[W+ <= k-1] <= 1 - c, from the exact null law of the signed-rank
    statistic W+ (the coefficients of prod_{i<=n} (1 + x^i) over 2^n; Hollander, Wolfe and
    Chicken, Nonparametric Statistical Methods, §3.3)."""
    counts = np.array([1.0])
    for i in range(1, n + 1):
        counts = np.concatenate([counts, np.zeros(i)]) + np.concatenate([np.zeros(i), counts])
    cdf = np.cumsum(counts) / 2.0**n
    return int(np.sum(2.0 * cdf <= 1.0 - confidence))


def _hodges_lehmann(d: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """(median of the Walsh averages (d_i + d_j)/2, i <= j; W_(k); W_(M+1-k))."""
    walsh = np.sort(((d[:, None] + d[None, :]) / 2.0)[np.triu_indices(d.size)])
    k = _signed_rank_k(d.size, confidence)
    return float(np.median(walsh)), float(walsh[k - 1]), float(walsh[walsh.size - k])


def _paired_ratio(d: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """The paired comparison's ratio b/a and its CI from the per-pass log ratios ``d``, as
    docs/controller.md describes it: the Hodges-Lehmann estimate of d with its signed-rank
    interval, joined with the interval over the means of two consecutive passes, the
    half-widths scaled by sqrt((1 + r)/(1 - r)) with r = the rank lag-1 autocorrelation of
    d (scipy.stats.rankdata) plus one standard error 1/sqrt(n); exp of the three."""
    ranks = sps.rankdata(d)
    c = ranks - ranks.mean()
    r1 = float(np.dot(c[:-1], c[1:]) / np.dot(c, c))
    assert r1 <= 1.645 / math.sqrt(d.size)  # the passes are the units (no means of q)
    r = min(0.9, max(0.0, r1 + 1.0 / math.sqrt(d.size)))
    est, low, high = _hodges_lehmann(d, confidence)
    _, low2, high2 = _hodges_lehmann(d.reshape(-1, 2).mean(axis=1), confidence)
    low, high = min(low, low2), max(high, high2)
    w = math.sqrt((1.0 + r) / (1.0 - r))
    return math.exp(est), math.exp(est - w * (est - low)), math.exp(est + w * (high - est))


def test_the_pair_and_every_ci_are_identical_in_every_output(
    fixed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _outputs(fixed, tmp_path, capsys)
    # -- the pair: one computation (a fixed campaign's, computed once when read) -------------
    (pair,) = out["show_json"]["comparisons"]["comparisons"]
    assert out["report"]["comparisons"]["comparisons"] == [pair]
    assert out["export"]["comparisons"]["comparisons"] == [pair]
    assert (pair["a"], pair["b"], pair["verdict"], pair["test"]) == (A, B, "separated", "paired")
    # the ratio is exp of the mean per-pass log ratio: check it against the stored rounds
    a, b = _round_values(fixed / "benchrun.db", A), _round_values(fixed / "benchrun.db", B)
    d = np.log([b[p] / a[p] for p in sorted(set(a) & set(b))])
    assert d.size == 48
    assert pair["ratio_low"] < math.exp(float(d.mean())) < pair["ratio_high"]
    assert pair["ratio_low"] < 3.0 < pair["ratio_high"]  # the truth: 90 ms / 30 ms
    # the ratio and its CI, from the stored rounds (_paired_ratio: numpy and scipy), and
    # the headline every text output prints, written from them
    ratio, low, high = _paired_ratio(d, confidence=0.95)
    assert pair["ratio"] == pytest.approx(ratio, rel=1e-12)
    assert (pair["ratio_low"], pair["ratio_high"]) == (
        pytest.approx(low, rel=1e-12),
        pytest.approx(high, rel=1e-12),
    )
    assert ratio > 1.0  # B is the slower one: "slower" (seconds, lower is better)
    assert pair["headline"] == (
        f"{B} is {ratio:.3f}x [{low:.3f}, {high:.3f}] slower than {A} "
        "(paired, median per-pass ratio, 48 passes)"
    )
    # (show fits its terminal width, so a long headline may wrap: compare its words)
    shown = " ".join(out["show"].split())
    for text in (shown, out["md"], html.unescape(out["html"])):
        assert pair["headline"] in text
    holm = f"{pair['p_holm']:.3g}"
    assert holm in out["show"] and holm in out["md"]
    assert f"<td>{holm}</td>" in _section(out["html"], "comparisons")
    # ... and the report leads with it (the comparisons first, then the headline line)
    assert out["report"]["sections"][0] == "comparisons"
    assert out["report"]["headlines"] == [f"separated: {pair['headline']}"]
    assert f"- **separated: {pair['headline']}**" in out["md"]
    # the HTML too: comparisons first, and the headline section opens with the same lines
    assert re.findall(r'<section id="(\w+)">', out["html"]) == out["report"]["sections"]
    assert _lines(out["html"], "headline") == out["report"]["headlines"]
    head = _section(out["html"], "headline")
    assert head.index("<li") < head.index("How the campaign stopped") < head.index("<table")
    assert out["report"]["no_comparison"] is None
    assert "no pair to compare" not in out["html"]
    (group,) = out["report"]["headline"]
    (rpair,) = group["pairs"]
    assert (rpair["ratio"], rpair["welch_p_holm"], rpair["verdict"]) == (
        pair["ratio"], pair["p_holm"], "separated",
    )  # fmt: skip
    assert "computed_verdict" not in rpair
    # -- each workload's CI: one estimate (the collector's) ------------------------------
    shown = {w["name"]: w for w in out["show_json"]["workloads"]}
    reported = {w["name"]: w for w in out["report"]["workloads"]}
    exported = {w["name"]: w for w in out["export"]["workloads"]}
    rows = {r["workload"]: r for r in out["csv"]}
    for name in (A, B):
        c = shown[name]["collected"]
        ci = (c["mean"], c["ci_low"], c["ci_high"], c["q"], c["n_q"])
        e = reported[name]["estimate"]
        assert (e["mean"], e["ci_low"], e["ci_high"], e["q"], e["n_q"]) == ci
        r = exported[name]["result"]
        assert (r["mean"], r["ci_low"], r["ci_high"], r["q"], r["n_q"]) == ci
        row = rows[name]
        assert None not in ci
        assert tuple(float(row[k]) for k in ("mean", "ci_low", "ci_high")) == ci[:3]
        assert (int(row["q"]), int(row["n_q"])) == ci[3:]
        # no second CI, subsession choice or tau beside it (the summary is descriptive)
        for doc in (shown[name], reported[name], exported[name]):
            assert not {"ci_low", "subsession_size", "n_subsessions", "tau"} & set(doc["summary"])
        # the interval as text, in ms with 4 significant digits, is the one every output
        # prints (show's text table is runner/ui/display.py's; show --json holds the same
        # numbers, checked above)
        text = f"{c['mean'] * 1e3:.4g} ms ± {(c['ci_high'] - c['ci_low']) / 2 * 1e3:.4g} ms"
        assert f"| {text} |" in out["md"]
        assert f"<td>{html.escape(text)}</td>" in out["html"]
        assert f"{c['q']} × {c['n_q']}" in out["md"]
        # the CI is Student t over the n_q subsession means: scipy on the stored rounds
        x = np.array([v for _, v in sorted(_round_values(fixed / "benchrun.db", name).items())])
        x = x[c["warmup_readings"] :]
        means = x[: c["q"] * c["n_q"]].reshape(c["n_q"], c["q"]).mean(axis=1)
        assert c["mean"] == pytest.approx(means.mean(), rel=1e-12)
        assert c["s2_q"] == pytest.approx(means.var(ddof=1), rel=1e-9)
        lo, hi = sps.t.interval(0.95, c["n_q"] - 1, loc=means.mean(), scale=sps.sem(means))
        # widened to hold the t interval over the means of 2q rounds (docs/methods.md §3)
        k = x.size // (2 * c["q"])
        assert k >= 4
        means2 = x[: 2 * c["q"] * k].reshape(k, 2 * c["q"]).mean(axis=1)
        lo2, hi2 = sps.t.interval(0.95, k - 1, loc=means2.mean(), scale=sps.sem(means2))
        half = max(hi - means.mean(), means.mean() - lo2, hi2 - means.mean())
        assert (c["ci_low"], c["ci_high"]) == (
            pytest.approx(means.mean() - half, rel=1e-9),
            pytest.approx(means.mean() + half, rel=1e-9),
        )


def test_one_display_unit_per_workload_and_the_base_unit_in_data(
    fixed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _outputs(fixed, tmp_path, capsys)
    for w in out["report"]["workloads"] + out["export"]["workloads"]:
        assert w["unit"] == "s"  # the base unit of every stored and exported number
        assert w["display_unit"] == {"label": "ms", "factor": 0.001}
    (group,) = out["report"]["headline"]
    assert {r["display_unit"]["label"] for r in group["rows"]} == {"ms"}
    assert {r["display_unit"] for r in out["csv"]} == {"ms"}
    assert {r["unit"] for r in out["csv"]} == {"s"}
    # the Markdown headline table's unit column and every value of the statistics tables
    table = out["md"].split("| rank | workload |", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"^\| \d \| [^|]+ \| [^|]+ \| (\w+) \|", table, re.M) == ["ms", "ms"]
    stats = out["md"].split("### ", 1)[1]
    values = re.findall(r"\d(?:\.\d+)? (s|ms|µs|ns)\b", stats.split("## ", 1)[0])
    assert values and set(values) == {"ms"}


def test_a_fixed_pair_without_enough_passes_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 4 rounds: neither the log ratios nor each workload's own series can be tested; the
    # report says which pair and why instead of "Only one workload per metric"
    d = _campaign(
        tmp_path,
        FIXED.format(out=tmp_path / "out").replace("rounds: 48", "rounds: 4"),
        {A: lognormal(0.030, 0.02, seed=1), B: lognormal(0.090, 0.02, seed=2)},
    )
    out = _outputs(d, tmp_path, capsys)
    (pair,) = out["report"]["comparisons"]["comparisons"]
    assert (pair["a"], pair["b"], pair["verdict"]) == (A, B, "undecided")
    assert "Only one workload" not in out["md"] and "Only one workload" not in out["html"]
    assert f"pair {A}~{B} undecided" in out["report"]["comparisons"]["reason"]
    assert f"pair {A}~{B} undecided" in out["md"]
    assert f"pair {A}~{B} undecided" in html.unescape(_section(out["html"], "comparisons"))
    assert _lines(out["html"], "headline") == out["report"]["headlines"]
    assert out["report"]["headlines"] == [f"undecided: {pair['headline']}"]
    assert out["show_json"]["comparisons"]["comparisons"] == [pair]


ADAPTIVE = """\
name: regress
output: {out}
settings:
  pin: none
  seed: 5
  warmup_rounds: 0
  ci_rel_width: 0.02
  max_rounds: 300
  baseline: {baseline}
workloads:
  - name: w
    command: [work]
"""


def test_the_baseline_verdict_leads_every_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the baseline: 100 ms with s_q² and n_q of 20 subsession means; the campaign is 10 %
    # slower, so the controller stores "slower" and every output must say so first
    base = tmp_path / "old.json"
    base.write_text(json.dumps({"w": {"mean": 0.100, "variance": 0.0001**2, "n_q": 20, "q": 1}}))
    d = _campaign(
        tmp_path,
        ADAPTIVE.format(out=tmp_path / "out", baseline=base),
        {"w": lognormal(0.110, 0.01, seed=4)},
    )
    out = _outputs(d, tmp_path, capsys)
    stored = sqlite3.connect(d / "benchrun.db").execute(
        "SELECT data_json FROM event WHERE kind = 'verdicts'"
    )
    (event,) = [json.loads(row[0]) for row in stored]
    (b,) = event["baselines"]
    assert (b["name"], b["verdict"]) == ("w", "slower")
    (c,) = out["report"]["comparisons"]["comparisons"]
    assert (c["kind"], c["verdict"], c["ratio"], c["p_holm"]) == (
        "baseline", "slower", b["ratio"], b["welch_p_holm"],
    )  # fmt: skip
    assert out["export"]["comparisons"]["comparisons"] == [c]
    assert out["show_json"]["comparisons"]["comparisons"] == [c]
    line = f"slower: {c['headline']}"
    assert out["report"]["headlines"] == [line]
    head = out["md"].split("## Headline", 1)[1].split("\n## ", 1)[0]
    assert f"- **{line}**" in head
    assert "vs baseline" in head and "Only one workload" not in out["md"]
    # the HTML leads its headline with the same line, before the tables
    assert _lines(out["html"], "headline") == [line]
    page = _section(out["html"], "headline")
    assert page.index(html.escape(line)) < page.index("<table") and "vs baseline" in page
    assert "Only one workload" not in out["html"] and "no pair to compare" not in out["html"]
    (row,) = out["csv"]
    assert (row["baseline_verdict"], float(row["baseline_ratio"])) == ("slower", b["ratio"])
    assert row["baseline"] == "stored baseline"


ALONE = """\
name: alone
output: {out}
settings: {{adaptive: false, rounds: 12, warmup_rounds: 1, pin: none, seed: 3}}
workloads:
  - name: solo
    command: [work]
"""


def test_a_campaign_that_compares_nothing_says_why_in_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # one workload, no baseline: the JSON's no_comparison names it, and the HTML and the
    # Markdown print that sentence (not a fixed "Only one workload per metric")
    d = _campaign(
        tmp_path, ALONE.format(out=tmp_path / "out"), {"solo": lognormal(0.03, 0.02, seed=1)}
    )
    out = _outputs(d, tmp_path, capsys)
    why = out["report"]["no_comparison"]
    assert why == (
        "No comparison: every group of workloads compared with each other (one metric and "
        "unit, or a compare: group) has one workload (wall_time [s]: solo), and there is no "
        "baseline."
    )
    assert out["report"]["headlines"] == []
    assert html.escape(why) in _section(out["html"], "comparisons")
    assert why in out["md"].split("## Comparisons", 1)[1].split("\n## ", 1)[0]
    assert "no pair to compare" not in out["html"]
    assert _lines(out["html"], "headline") == []


def _methods(out: dict[str, Any]) -> list[str]:
    """The methods paragraph of the JSON, Markdown and HTML reports."""
    md = out["md"].split("## Methods", 1)[1].split("\n## ", 1)[0]
    page = html.unescape(_section(out["html"], "methods"))
    return [out["report"]["methods"], md, page]


def test_a_fixed_campaigns_methods_name_the_test_its_comparisons_used(
    fixed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the fixed campaign's one comparison is paired (the stored rounds' per-pass log
    # ratios, computed when read at one look): the methods must say so, not "Welch"
    out = _outputs(fixed, tmp_path, capsys)
    (pair,) = out["report"]["comparisons"]["comparisons"]
    assert pair["test"] == "paired" and pair["passes"] == 48
    for text in _methods(out):
        assert "compared pass by pass on the log ratio of the two rounds of each pass" in text
        assert "over 48 passes" in text
        assert "at a single look over every stored round" in text
        assert "Each test spent the whole alpha = 0.01 at that one look" in text
        assert "Welch's t-test" not in text and "geometric schedule of looks" not in text
    (rule,) = [r for r in out["report"]["rules"] if r["rule"] == 7]
    assert rule["detail"].startswith("1 comparison: workloads measured in the same passes")
    assert "one look at the whole alpha" in rule["detail"]


def test_a_fixed_campaign_compared_independently_names_welch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = FIXED.format(out=tmp_path / "out").replace(
        "seed: 3}", "seed: 3, comparison: independent}"
    )
    d = _campaign(
        tmp_path, text, {A: lognormal(0.030, 0.02, seed=1), B: lognormal(0.090, 0.02, seed=2)}
    )
    out = _outputs(d, tmp_path, capsys)
    (pair,) = out["report"]["comparisons"]["comparisons"]
    assert pair["test"] == "welch"
    for text in _methods(out):
        assert "The comparison was made with Welch's t-test [WELCH]" in text
        assert "pass by pass" not in text
        assert "Each test spent the whole alpha = 0.01 at that one look" in text
