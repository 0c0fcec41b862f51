"""The report and the export of adaptive campaigns with paired comparisons, checked
against the database read with plain sqlite3 and against independent computations.

Campaigns (tests/e2e/paired_campaigns.py): ``paired`` (b/a = 1.10 under a shared ±25 %
drift, c compared with nothing), ``budget`` (a Welch pair left undecided when
max_rounds runs out), ``alone`` (one workload, no comparison).
"""

from __future__ import annotations

import html
import json
import math
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from e2e_util import cli
from markdown_it import MarkdownIt
from paired_campaigns import TRUE_RATIO, run_campaigns
from scipy import stats as sps

from benchrun.runner.cli import main


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return run_campaigns(tmp_path_factory.mktemp("paired"))


@pytest.fixture(scope="module")
def docs(runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """The JSON report of each campaign, built once through the CLI."""
    out = tmp_path_factory.mktemp("reports")
    result = {}
    for name, campaign in runs.items():
        path = out / f"{name}.json"
        assert main(["report", str(campaign), "--format", "json", "--out", str(path)]) == 0
        result[name] = json.loads(path.read_text())
    return result


def _db(campaign: Path) -> Path:
    return campaign / "benchrun.db"


def stored_verdicts(campaign: Path) -> dict:
    """The "verdicts" event's data, read with sqlite3 (not through benchrun)."""
    conn = sqlite3.connect(_db(campaign))
    rows = conn.execute("SELECT data_json FROM event WHERE kind = 'verdicts'").fetchall()
    conn.close()
    assert len(rows) == 1
    return json.loads(rows[0][0])


def round_values(campaign: Path, name: str) -> dict[int, float]:
    """Pass -> the value (mean of the readings) of the workload's steady ok round."""
    conn = sqlite3.connect(_db(campaign))
    rows = conn.execute(
        "SELECT round.pass, reading.value FROM round JOIN workload w ON w.id = round.workload_id"
        " JOIN reading ON reading.round_id = round.id WHERE w.name = ? AND round.status = 'ok'"
        " AND round.warmup = 0 ORDER BY round.seq, reading.idx",
        (name,),
    ).fetchall()
    conn.close()
    by: dict[int, list[float]] = {}
    for p, v in rows:
        by.setdefault(p, []).append(v)
    return {p: float(np.mean(v)) for p, v in by.items()}


def headline_of(pair: dict, word_more: str = "slower", word_less: str = "faster") -> str:
    """The headline written out here from the stored numbers (b/a, turned round below 1)."""
    r, lo, hi = pair["ratio"], pair["ratio_low"], pair["ratio_high"]
    word = word_more if r >= 1 else word_less
    if r < 1:
        r, lo, hi = 1 / r, 1 / hi, 1 / lo
    test = {"paired": "paired", "welch": "Welch"}[pair["test"]]
    if pair.get("estimand"):
        test += f", {pair['estimand']}"
    tail = f"{test}, {pair['passes']} passes" if pair.get("passes") else test
    return f"{pair['b']} is {r:.3f}x [{lo:.3f}, {hi:.3f}] {word} than {pair['a']} ({tail})"


def von_neumann_p(values: np.ndarray) -> float:
    """One-sided p of the von Neumann ratio (normal approximation), written out here."""
    n = values.size
    vn = np.sum(np.diff(values) ** 2) / np.sum((values - values.mean()) ** 2)
    sd = math.sqrt(4.0 * (n - 2) / ((n + 1) * (n - 1)))
    return float(sps.norm.cdf((vn - 2.0) / sd))


# --------------------------------------------------------------------------- paired


def _signed_rank_null(n: int) -> np.ndarray:
    """P(W+ = w), w = 0..n(n+1)/2, for n untied values: every sign pattern alike (the
    sign-flip distribution, by convolution of the n ranks' two-point laws)."""
    pmf = np.array([1.0])
    for r in range(1, n + 1):
        nxt = np.zeros(pmf.size + r)
        nxt[: pmf.size] += pmf / 2
        nxt[r:] += pmf / 2
        pmf = nxt
    return pmf


def test_stored_ratio_is_the_median_per_pass_ratio(runs: dict[str, Path]) -> None:
    (pair,) = stored_verdicts(runs["paired"])["pairs"]
    assert (pair["a"], pair["b"], pair["test"], pair["verdict"]) == (
        "a",
        "b",
        "paired",
        "separated",
    )
    assert pair["estimand"] == "median per-pass ratio"
    a, b = round_values(runs["paired"], "a"), round_values(runs["paired"], "b")
    common = sorted(set(a) & set(b))
    assert pair["passes"] == len(common)
    d = np.log([b[p] for p in common]) - np.log([a[p] for p in common])
    # Hodges-Lehmann: the median of the Walsh averages (d_i + d_j)/2, i <= j, and its
    # distribution-free 95 % CI, the k-th smallest and largest of them with k from the
    # exact null of the signed-rank statistic (Hollander, Wolfe & Chicken, §3.2-3.3)
    i, j = np.triu_indices(d.size)
    walsh = np.sort((d[i] + d[j]) / 2)
    assert pair["ratio"] == pytest.approx(math.exp(np.median(walsh)), rel=1e-12)
    cdf = np.cumsum(_signed_rank_null(d.size))
    k = int(np.searchsorted(cdf, 0.025, side="right"))  # P(W+ <= k - 1) <= 0.025
    # the stored CI contains it (widened for correlation and to the interval over means
    # of two passes, docs/paired.md)
    assert pair["ratio_low"] <= math.exp(walsh[k - 1]) * (1 + 1e-12)
    assert pair["ratio_high"] >= math.exp(walsh[walsh.size - k]) * (1 - 1e-12)
    # the truth: b is 10 % slower in every pass; the ±25 % drift cancels in the ratio
    assert pair["ratio_low"] < TRUE_RATIO < pair["ratio_high"]
    assert pair["ratio_high"] / pair["ratio_low"] < 1.05


def test_json_report_leads_with_the_stored_comparisons(
    runs: dict[str, Path], docs: dict[str, dict]
) -> None:
    doc = docs["paired"]
    stored = stored_verdicts(runs["paired"])
    (pair,) = stored["pairs"]
    assert doc["sections"][0] == "comparisons"
    cmp = doc["comparisons"]
    assert cmp["source"] == "controller"
    assert cmp["conditions_met"] is True and cmp["budget_stop"] is False
    (c,) = cmp["comparisons"]
    assert c["headline"] == headline_of(pair)
    assert (c["kind"], c["a"], c["b"], c["verdict"], c["test"]) == (
        "pair", "a", "b", "separated", "paired",
    )  # fmt: skip
    for mine, theirs in (("ratio", "ratio"), ("ratio_low", "ratio_low"),
                         ("ratio_high", "ratio_high"), ("p", "welch_p"),
                         ("p_holm", "welch_p_holm"), ("tost_p", "tost_p"),
                         ("passes", "passes"), ("look", "look"), ("alpha", "alpha")):  # fmt: skip
        assert c[mine] == pair[theirs], mine
    # the groups follow compare: [[a, b]]; c is compared with nothing
    groups = {tuple(r["name"] for r in g["rows"]): g for g in doc["headline"]}
    ab, alone = groups[("a", "b")], groups[("c",)]
    assert ab["compared"] and ab["verdict_source"] == "controller"
    assert not alone["compared"] and alone["pairs"] == [] and alone["rows"][0]["rank"] == 0
    (p,) = ab["pairs"]
    assert (p["verdict"], p["test"], p["ratio"], p["headline"]) == (
        "separated", "paired", pair["ratio"], c["headline"],
    )  # fmt: skip
    b_row = ab["rows"][1]
    assert (b_row["ratio"], b_row["ratio_low"], b_row["ratio_high"]) == (
        pair["ratio"], pair["ratio_low"], pair["ratio_high"],
    )  # fmt: skip
    assert ab["rows"][0]["verdict_next"] == "separated"


def test_markdown_and_html_show_the_headline_first(runs: dict[str, Path], tmp_path: Path) -> None:
    (pair,) = stored_verdicts(runs["paired"])["pairs"]
    line = headline_of(pair)
    md = tmp_path / "r.md"
    assert main(["report", str(runs["paired"]), "--format", "md", "--out", str(md)]) == 0
    text = md.read_text()
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    h2 = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h2"]  # fmt: skip
    assert h2[:3] == ["Comparisons", "Headline", "Per workload"]
    comparisons = text.split("## Comparisons", 1)[1].split("\n## ", 1)[0]
    assert line in comparisons
    assert "stopping rule was met" in comparisons
    page = tmp_path / "r.html"
    assert main(["report", str(runs["paired"]), "--out", str(page)]) == 0
    body = page.read_text()
    ids = re.findall(r'<section id="([a-z]+)">', body)
    assert ids[:3] == ["comparisons", "headline", "workloads"]
    section = body.split('<section id="comparisons">', 1)[1].split("</section>", 1)[0]
    assert html.escape(line) in section and ">paired<" in section


def test_per_workload_drift_and_paired_notes(runs: dict[str, Path], docs: dict[str, dict]) -> None:
    doc = docs["paired"]
    target = doc["campaign"]["settings"]["ci_rel_width"]
    by = {w["name"]: w for w in doc["workloads"]}
    for name in ("a", "b", "c"):
        values = round_values(runs["paired"], name)
        series = np.array([values[p] for p in sorted(values)])
        drifted = von_neumann_p(series) < 0.01
        notes = by[name]["notes"]
        assert any(n.startswith(f"drift: {name}: the level moved") for n in notes) == drifted
        assert by[name]["drift"]["drifted"] == drifted
        e = by[name]["estimate"]
        uncertified = e["ci_low"] is None or e["rel_half_width"] > target
        paired_note = [n for n in notes if "its comparisons are paired and" in n]
        assert bool(paired_note) == (name != "c" and uncertified)
        if paired_note:
            assert "its mean describes the period measured" in paired_note[0]
            assert "its CI was not required" in paired_note[0]
    # the drifting pair: the drift is there and said; c neither drifts nor is paired
    assert by["a"]["drift"]["drifted"] and by["b"]["drift"]["drifted"]
    # a contended-rounds note depends on the machine's load during the run, not on c
    assert [n for n in by["c"]["notes"] if not n.startswith("contended:")] == []
    # without enough data for a CI there are no subsession means to plot (no crash)
    if by["a"]["estimate"]["ci_low"] is None:
        assert by["a"]["acf_subsession_means"] is None


def test_methods_paragraph_describes_the_paired_test(docs: dict[str, dict]) -> None:
    methods = docs["paired"]["methods"]
    for phrase in (
        "compared pass by pass on the log ratio of the two rounds of each pass "
        "(randomised order within the pass)",
        "one-sample t-test on the subsession means of the log ratios",
        "TOST [TOST] within ±1 %",
        "alpha = 0.01 spent over them",
        "Holm-corrected",
        "exp of the mean log ratio",
    ):
        assert phrase in methods, phrase
    assert "Welch" not in methods  # the only comparison was paired


def test_csv_ranks_only_compared_workloads(runs: dict[str, Path], capsys) -> None:
    assert main(["report", str(runs["paired"]), "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split(",")
    rows = {r.split(",")[header.index("workload")]: r.split(",") for r in lines[1:]}
    rank = header.index("rank")
    assert (rows["a"][rank], rows["b"][rank], rows["c"][rank]) == ("1", "2", "")


# --------------------------------------------------------------------------- failure paths


def test_budget_stop_is_said_and_the_welch_pair_shown_undecided(
    runs: dict[str, Path], docs: dict[str, dict], tmp_path: Path
) -> None:
    stored = stored_verdicts(runs["budget"])
    assert stored["conditions_met"] is False
    (pair,) = stored["pairs"]
    assert (pair["test"], pair["verdict"]) == ("welch", "undecided")
    doc = docs["budget"]
    cmp = doc["comparisons"]
    assert cmp["budget_stop"] is True and cmp["reason"] == stored["reason"]
    (c,) = cmp["comparisons"]
    assert c["headline"] == headline_of(pair)
    assert c["headline"].endswith("(Welch)") and c["passes"] is None
    assert (c["p"], c["p_holm"], c["tost_p"]) == (
        pair["welch_p"], pair["welch_p_holm"], pair["tost_p"],
    )  # fmt: skip
    assert "Welch's t-test" in doc["methods"] and "pass by pass" not in doc["methods"]
    assert "(on a budget, before every condition of the stopping rule was met)" in doc["methods"]
    md = tmp_path / "b.md"
    assert main(["report", str(runs["budget"]), "--format", "md", "--out", str(md)]) == 0
    comparisons = md.read_text().split("## Comparisons", 1)[1].split("\n## ", 1)[0]
    assert "ended on a budget before every condition of its stopping rule was met" in comparisons
    assert c["headline"] in comparisons and "undecided" in comparisons


def test_campaign_without_comparisons(
    runs: dict[str, Path], docs: dict[str, dict], tmp_path: Path
) -> None:
    assert stored_verdicts(runs["alone"])["pairs"] == []
    doc = docs["alone"]
    assert doc["comparisons"]["comparisons"] == [] and doc["comparisons"]["conditions_met"]
    (group,) = doc["headline"]
    assert group["pairs"] == [] and [r["name"] for r in group["rows"]] == ["c"]
    page = tmp_path / "a.html"
    assert main(["report", str(runs["alone"]), "--out", str(page)]) == 0
    section = page.read_text().split('<section id="comparisons">', 1)[1].split("</section>")[0]
    # the reason the JSON gives (Report.no_comparison), word for word, naming the workload
    why = doc["no_comparison"]
    assert why.startswith("No comparison: every group of workloads compared with each other")
    assert ": c), and there is no baseline." in why
    assert html.escape(why) in section
    md = tmp_path / "a.md"
    assert main(["report", str(runs["alone"]), "--format", "md", "--out", str(md)]) == 0
    assert why in md.read_text().split("## Comparisons", 1)[1].split("\n## ", 1)[0]
    assert "pass by pass" not in doc["methods"] and "Welch" not in doc["methods"]


# --------------------------------------------------------------------------- export


def test_export_carries_the_comparisons(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "e.json"
    proc = cli("export", str(runs["paired"]), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["format"] == "benchrun-export" and doc["version"] == 1
    assert list(doc).index("comparisons") == list(doc).index("workloads") + 1
    (pair,) = stored_verdicts(runs["paired"])["pairs"]
    (c,) = doc["comparisons"]["comparisons"]
    assert c["headline"] == headline_of(pair)
    assert (c["test"], c["ratio"], c["ratio_low"], c["ratio_high"], c["passes"]) == (
        "paired", pair["ratio"], pair["ratio_low"], pair["ratio_high"], pair["passes"],
    )  # fmt: skip
    # the same event stays among the events, and the export is still read back
    (event,) = [e for e in doc["events"] if e["kind"] == "verdicts"]
    assert event["data"]["pairs"][0]["ratio"] == pair["ratio"]
    back = cli("compare", str(out), str(runs["paired"]), "--json")
    assert back.returncode == 0, back.stderr
    results = tmp_path / "r.json"
    assert main(["export", str(runs["budget"]), "--what", "results", "-o", str(results)]) == 0
    assert json.loads(results.read_text())["comparisons"]["budget_stop"] is True
    readings = tmp_path / "x.json"
    assert main(["export", str(runs["alone"]), "--what", "readings", "-o", str(readings)]) == 0
    # every export carries the comparisons (issue 17); "alone" compares nothing
    assert json.loads(readings.read_text())["comparisons"]["comparisons"] == []


def test_export_of_a_fixed_campaign_has_its_computed_comparisons(
    campaigns: dict[str, Path], tmp_path: Path
) -> None:
    # a fixed campaign stores no verdicts: they are computed once when it is read, and the
    # export carries the same ones the report shows (runner/results/comparisons.py)
    out = tmp_path / "f.json"
    assert main(["export", str(campaigns["old"]), "-o", str(out)]) == 0
    comparisons = json.loads(out.read_text())["comparisons"]
    assert comparisons["source"] == "computed" and comparisons["conditions_met"] is None
    proc = cli("report", str(campaigns["old"]), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["comparisons"]["comparisons"] == comparisons["comparisons"]
    # c (50) < a (100) < b (200): 8 passes are too few for the log ratios, Welch decides
    assert [(c["a"], c["b"], c["verdict"], c["test"]) for c in comparisons["comparisons"]] == [
        ("c", "a", "separated", "welch"), ("a", "b", "separated", "welch"),
    ]  # fmt: skip
