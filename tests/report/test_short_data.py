"""Issue 17, "Short data still gets an answer": a fixed campaign of 30 rounds is too short
to certify that its readings are independent, so every report format shows the marked,
uncertified interval of docs/methods.md §4.1 ("... (independence not certified: assumes
tau <= X, Yx the i.i.d. width)") instead of "no CI", and the figures draw it marked.

The campaign is the two-workload fixed campaign of tests/report/test_outputs_agree.py
(fake executor: real store and controller, no processes) with 30 rounds. The reference
interval is computed here from the stored rounds (plain sqlite3) with Geyer's initial
positive sequence written out and scipy's t quantile; "no CI" must remain only where there
is no interval at all (2 rounds).
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps
from test_outputs_agree import FIXED, A, B, _campaign, _outputs, _round_values, _section, swing

from benchrun.runner.cli import main
from benchrun.runner.execute.fake import lognormal

MARK = "independence not certified: assumes tau <= {tau:.1f}, {factor:.1f}x the i.i.d. width"


def _geyer_interval(x: np.ndarray, confidence: float = 0.95) -> dict[str, float]:
    """The uncertified interval of docs/methods.md §4.1, written out: r_k the sample
    autocorrelations (centred, over n), Γ_m = r_2m + r_2m+1 summed while positive,
    τ = -1 + 2 ΣΓ, T = max(1, τ), m ± t_{(1+c)/2, max(1, n/T - 1)} · s · sqrt(T/n)."""
    n = x.size
    d = x - x.mean()
    c0 = float(d @ d)
    r = [float(d[: n - k] @ d[k:]) / c0 for k in range(n)]
    total = 0.0
    for m in range(n // 2):
        if 2 * m + 1 >= n:
            break
        g = r[2 * m] + r[2 * m + 1]
        if g <= 0:
            break
        total += g
    tau = -1.0 + 2.0 * total
    big_t = max(1.0, tau)
    s = float(x.std(ddof=1))
    q = (1 + confidence) / 2
    half = float(sps.t.ppf(q, max(1.0, n / big_t - 1.0))) * s * math.sqrt(big_t / n)
    naive = float(sps.t.ppf(q, n - 1)) * s / math.sqrt(n)
    m = float(x.mean())
    return {"mean": m, "low": m - half, "high": m + half, "tau": big_t, "factor": half / naive}


@pytest.fixture(scope="module")
def short(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("short")
    return _campaign(
        root,
        FIXED.format(out=root / "out").replace("rounds: 48", "rounds: 30"),
        {
            A: lognormal(0.030, 0.02, seed=1, drift=swing),
            B: lognormal(0.090, 0.02, seed=2, drift=swing),
        },
    )


@pytest.fixture(scope="module")
def reference(short: Path) -> dict[str, dict[str, float]]:
    out = {}
    for name in (A, B):
        x = np.array([v for _, v in sorted(_round_values(short / "benchrun.db", name).items())])
        assert x.size == 30
        out[name] = _geyer_interval(x)
    return out


def _mark(ref: dict[str, float]) -> str:
    return MARK.format(tau=ref["tau"], factor=ref["factor"])


def test_json_csv_and_export_carry_the_uncertified_interval(
    short: Path,
    reference: dict[str, dict[str, float]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _outputs(short, tmp_path, capsys)
    reported = {w["name"]: w["estimate"] for w in out["report"]["workloads"]}
    exported = {w["name"]: w["result"] for w in out["export"]["workloads"]}
    (group,) = out["report"]["headline"]
    rows = {r["name"]: r for r in group["rows"]}
    capsys.readouterr()
    assert main(["report", str(short), "--format", "csv"]) == 0
    table = {r["workload"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    for name, ref in reference.items():
        for doc in (reported[name], exported[name], rows[name]):
            assert doc["certified"] is False
            assert doc["ci_low"] is None and doc["ci_high"] is None  # no certified CI
            assert doc["interval_low"] == pytest.approx(ref["low"], rel=1e-9)
            assert doc["interval_high"] == pytest.approx(ref["high"], rel=1e-9)
            assert doc["tau_bound"] == pytest.approx(ref["tau"], rel=1e-9)
            assert doc["width_factor"] == pytest.approx(ref["factor"], rel=1e-9)
        assert reported[name]["interval_note"] == _mark(ref)
        assert rows[name]["text"].endswith(f"({_mark(ref)})")
        row = table[name]
        assert row["certified"] == "False" and row["ci_low"] == ""
        assert float(row["interval_low"]) == pytest.approx(ref["low"], rel=1e-9)
        assert float(row["interval_high"]) == pytest.approx(ref["high"], rel=1e-9)
        assert float(row["tau_bound"]) == pytest.approx(ref["tau"], rel=1e-9)
        assert float(row["width_factor"]) == pytest.approx(ref["factor"], rel=1e-9)
    # the ratio to the best: no CI (the paired comparison is undecided), but an interval
    # from the two marked ones, delta method on the log scale, marked as not certified
    (pair,) = out["report"]["comparisons"]["comparisons"]
    assert pair["ratio_low"] is None
    worse = rows[B]
    assert worse["ratio_certified"] is False and worse["ratio_low"] is None
    h = math.hypot(
        *((reference[n]["high"] - reference[n]["low"]) / 2 / reference[n]["mean"] for n in (A, B))
    )
    assert worse["ratio_interval_low"] == pytest.approx(worse["ratio"] * math.exp(-h), rel=1e-9)
    assert worse["ratio_interval_high"] == pytest.approx(worse["ratio"] * math.exp(h), rel=1e-9)


def _no_ci_free(text: str) -> None:
    assert "no CI" not in text and "No CI" not in text


def test_markdown_and_html_print_the_marked_interval_not_no_ci(
    short: Path,
    reference: dict[str, dict[str, float]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _outputs(short, tmp_path, capsys)
    md, page = out["md"], html.unescape(out["html"])
    for ref in reference.values():
        assert f"({_mark(ref)})" in md and f"({_mark(ref)})" in page
        pct = 100 * (ref["high"] - ref["low"]) / 2 / ref["mean"]
        assert f"| {pct:.3g} % (not certified) |" in md
    for text in (md.split("## Headline", 1)[1].split("\n## ", 1)[0],
                 md.split("## Per workload", 1)[1].split("\n## ", 1)[0],
                 html.unescape(_section(out["html"], "headline")),
                 html.unescape(_section(out["html"], "workloads"))):  # fmt: skip
        _no_ci_free(text)
    assert "(not certified)" in md.split("| rank | workload |", 1)[1].split("\n\n", 1)[0]
    # the methods and the checklist say the intervals are not certified, not missing
    for methods in (out["report"]["methods"], html.unescape(_section(out["html"], "methods"))):
        _no_ci_free(methods)
        marks = ", ".join(
            f"{n} (tau <= {r['tau']:.1f}, {r['factor']:.1f}x the i.i.d. width)"
            for n, r in reference.items()
        )
        assert f"For {marks} the readings were too few to certify" in methods
    rules = {r["rule"]: r for r in out["report"]["rules"]}
    assert rules[5]["detail"].startswith("intervals not certified for ")
    assert rules[1]["detail"].startswith("the interval of the base of the ratios is not certified")
    for r in (rules[1], rules[5], rules[6]):
        _no_ci_free(r["detail"])


def test_figures_draw_the_uncertified_interval_and_say_so(
    short: Path, reference: dict[str, dict[str, float]], tmp_path: Path
) -> None:
    md = tmp_path / "fig.md"
    assert main(["report", str(short), "--format", "md", "-o", str(md)]) == 0
    captions = [line for line in md.read_text().splitlines() if line.startswith("*")]
    for name, ref in reference.items():
        (cap,) = [c for c in captions if c.startswith(f"*{name}. Values in ms.")]
        assert (
            "the hatched band between dashed lines its 95 % interval, not certified "
            f"({_mark(ref)})" in cap
        )
    (ranking,) = [c for c in captions if "ratio of each workload to the best" in c]
    assert f"Dashed whiskers: an interval that is not certified, for {B}:" in ranking
    (overlay,) = [c for c in captions if c.startswith(f"*The steady readings of {A}")]
    assert f"Hatched instead: the 95 % interval of {A} ({_mark(reference[A])})" in overlay


def test_compare_says_the_interval_is_not_certified(
    short: Path,
    reference: dict[str, dict[str, float]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    capsys.readouterr()
    main(["compare", str(short), str(short), "--json"])
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    for w in doc["workloads"]:
        ref = reference[w["name"]]
        assert w["verdict"] == "undecided"
        assert w["old_interval"] == pytest.approx([ref["low"], ref["high"]], rel=1e-9)
        assert w["new_interval_note"] == _mark(ref)
        assert w["reason"].startswith("no certified CI on the old side (30 readings")
        assert f"its interval: {_mark(ref)}" in w["reason"]
        _no_ci_free(w["reason"])


def test_compare_terminal_marks_the_uncertified_interval(
    short: Path,
    reference: dict[str, dict[str, float]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    capsys.readouterr()
    main(["compare", str(short), str(short)])
    out = capsys.readouterr().out
    for name in (A, B):
        ref = reference[name]
        # the cell: mean ± half-width in ms (the display unit), marked; the note below
        half_ms = (ref["high"] - ref["low"]) / 2 * 1e3
        assert f"{ref['mean'] * 1e3:.4g} ms ± {half_ms:.4g} ms (uncertified)" in out
        assert f"{name} (old): {_mark(ref)}" in out
        assert f"{name} (new): {_mark(ref)}" in out


def test_show_gives_no_subsession_count_for_an_uncertified_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a machine whose speed swings ±30 % within the campaign: the collector asks for
    # subsessions longer than half the 30 rounds, so there is no complete pair of them and
    # the uncertified interval uses every reading; the q × n_q column says "-" rather than
    # a subsession size with zero subsessions ("16 × 0")
    def big(clock: float) -> float:
        return 1.0 + 0.3 * math.sin(clock / 2.0)

    d = _campaign(
        tmp_path,
        FIXED.format(out=tmp_path / "out").replace("rounds: 48", "rounds: 30"),
        {
            A: lognormal(0.030, 0.01, seed=1, drift=big),
            B: lognormal(0.090, 0.01, seed=2, drift=big),
        },
    )
    monkeypatch.setenv("COLUMNS", "200")
    capsys.readouterr()
    main(["show", str(d), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert [w["collected"]["n_q"] for w in doc["workloads"]] == [0, 0]  # the case at hand
    main(["show", str(d)])
    out = capsys.readouterr().out
    rows = [ln.split("│") for ln in out.splitlines() if ln.startswith("│ sum[") and "±" in ln]
    assert [r[3].strip() for r in rows] == ["-", "-"], out  # the q × n_q column
    assert [r[2].strip().endswith("*") for r in rows] == [True, True]  # marked interval


def test_no_ci_remains_only_without_any_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 2 rounds: no interval at all (at least 3 readings are needed), so "no CI" it is
    d = _campaign(
        tmp_path,
        FIXED.format(out=tmp_path / "out").replace("rounds: 48", "rounds: 2"),
        {A: lognormal(0.030, 0.02, seed=1), B: lognormal(0.090, 0.02, seed=2)},
    )
    out = _outputs(d, tmp_path, capsys)
    for w in out["report"]["workloads"]:
        assert w["estimate"]["interval_low"] is None and w["estimate"]["certified"] is False
    assert "(no CI: " in out["md"] and "(no CI: " in html.unescape(out["html"])
    rules = {r["rule"]: r for r in out["report"]["rules"]}
    assert rules[5]["detail"].startswith("no CI for ")
    assert "No CI could be given for" in out["report"]["methods"]
