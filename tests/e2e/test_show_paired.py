"""End to end: ``benchrun show`` of adaptive campaigns with paired comparisons, a budget
stop and no comparison at all (real processes; tests/e2e/paired_campaigns.py), checked
against the database read with plain sqlite3 and against what ``benchrun run`` printed."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from e2e_util import cli, query
from paired_campaigns import TRUE_RATIO, run_campaigns
from scipy import stats as sps


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return run_campaigns(tmp_path_factory.mktemp("show-paired"))


def _verdicts(campaign: Path) -> dict:
    (row,) = query(campaign / "benchrun.db", "SELECT data_json FROM event WHERE kind = 'verdicts'")
    return json.loads(row[0])


def _drifted(campaign: Path, name: str) -> bool:
    """The von Neumann test (p < 0.01, normal approximation) of the workload's steady
    round values in launch order, computed here from the stored readings."""
    rows = query(
        campaign / "benchrun.db",
        "SELECT round.seq, reading.value FROM round JOIN workload w ON w.id = round.workload_id"
        " JOIN reading ON reading.round_id = round.id WHERE w.name = ? AND round.status = 'ok'"
        " AND round.warmup = 0 ORDER BY round.seq, reading.idx",
        (name,),
    )
    by: dict[int, list[float]] = {}
    for seq, v in rows:
        by.setdefault(seq, []).append(v)
    x = np.array([np.mean(v) for _, v in sorted(by.items())])
    n = x.size
    vn = np.sum(np.diff(x) ** 2) / np.sum((x - x.mean()) ** 2)
    return bool(sps.norm.cdf((vn - 2) / math.sqrt(4 * (n - 2) / ((n + 1) * (n - 1)))) < 0.01)


def _words(text: str) -> str:
    return " ".join(text.split())


def test_show_leads_comparisons_with_the_ratio_and_says_the_drift(runs: dict[str, Path]) -> None:
    campaign = runs["paired"]
    (pair,) = _verdicts(campaign)["pairs"]
    proc = cli("show", str(campaign))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    headline = (
        f"b is {pair['ratio']:.3f}x [{pair['ratio_low']:.3f}, {pair['ratio_high']:.3f}] "
        f"slower than a (paired, median per-pass ratio, {pair['passes']} passes)"
    )
    assert headline in out
    assert pair["ratio_low"] < TRUE_RATIO < pair["ratio_high"]
    row = next(line for line in out.splitlines() if headline in line)
    assert "separated" in row and "paired" in row.split(headline)[1]
    # the comparisons table comes after the results, its first column the headline
    assert out.index("mean ± 95 % CI") < out.index("ratio [95 % CI]") < out.index(headline)
    drift = {
        line.split(":")[1].strip(): line for line in out.splitlines() if line.startswith("drift: ")
    }
    for name in ("a", "b", "c"):
        assert (name in drift) == _drifted(campaign, name), name
    assert set(drift) == {"a", "b"}  # the shared drift; c ran on a steady level
    for line in drift.values():
        assert line.endswith(
            "its mean describes this period of this machine; its comparisons are paired, "
            "which cancels a drift shared by the pass"
        )
    # the same lines as `benchrun run` printed (rich wrapped them at 160 columns there)
    run_out = _words((campaign.parent.parent / "paired.stdout").read_text())
    for line in drift.values():
        assert _words(line) in run_out
    assert "ended on a budget" not in out


def test_show_json_has_the_comparisons_and_the_drift(runs: dict[str, Path]) -> None:
    campaign = runs["paired"]
    (pair,) = _verdicts(campaign)["pairs"]
    proc = cli("show", str(campaign), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    (c,) = doc["comparisons"]["comparisons"]
    assert (c["test"], c["ratio"], c["ratio_low"], c["ratio_high"], c["passes"]) == (
        "paired", pair["ratio"], pair["ratio_low"], pair["ratio_high"], pair["passes"],
    )  # fmt: skip
    assert c["headline"].startswith(f"b is {pair['ratio']:.3f}x")
    assert doc["comparisons"]["conditions_met"] is True
    by = {w["name"]: w for w in doc["workloads"]}
    for name in ("a", "b", "c"):
        assert by[name]["drift"]["drifted"] == _drifted(campaign, name)
        assert (by[name]["drift_line"] is not None) == by[name]["drift"]["drifted"]


def test_show_says_a_budget_stop_plainly(runs: dict[str, Path]) -> None:
    campaign = runs["budget"]
    stored = _verdicts(campaign)
    assert stored["conditions_met"] is False
    (pair,) = stored["pairs"]
    proc = cli("show", str(campaign))
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith(
        "The campaign ended on a budget before every condition of its stopping rule was met: "
    )
    (reason,) = query(campaign / "benchrun.db", "SELECT stop_reason FROM campaign")[0]
    assert reason in last and "max_rounds 40 reached" in reason
    row = next(line for line in proc.stdout.splitlines() if "(Welch)" in line)
    assert "undecided" in row and "Welch │" in row  # the verdict and the test column
    doc = json.loads(cli("show", str(campaign), "--json").stdout)
    assert doc["comparisons"]["budget_stop"] is True
    assert doc["comparisons"]["comparisons"][0]["p_holm"] == pair["welch_p_holm"]


def test_show_of_a_campaign_without_comparisons(runs: dict[str, Path]) -> None:
    proc = cli("show", str(runs["alone"]))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert "comparisons: none" in proc.stdout and "ratio [" not in proc.stdout
    assert "drift:" not in proc.stdout
    doc = json.loads(cli("show", str(runs["alone"]), "--json").stdout)
    assert doc["comparisons"]["comparisons"] == []


#: prints, after `benchrun show DIR` in a fresh interpreter, which heavy modules it imported
_IMPORTED = """
import contextlib, io, sys
from benchrun.runner.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["show", sys.argv[1]])
print(code, *(m for m in ("scipy.stats", "scipy.special", "benchrun.runner.control.controller")
               if m in sys.modules))
"""


def test_show_of_an_adaptive_campaign_imports_no_scipy_stats(runs: dict[str, Path]) -> None:
    """The stored verdicts need no controller, the tables no median CI nor normality test:
    `show` leaves scipy.stats (0.3-0.5 s to import) and the controller out (issue 30)."""
    proc = subprocess.run(
        [sys.executable, "-c", _IMPORTED, str(runs["paired"])],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "scipy.special"]


def test_show_tables_print_the_values_of_its_json(runs: dict[str, Path]) -> None:
    """The tables' median, min and max (from ``stats.describe`` alone) are the JSON's
    (from ``stats.summarize``, which also has the median CI), and the median is numpy's of
    the steady rounds' values read from the store with plain sqlite3."""
    campaign = runs["paired"]
    db = campaign / "benchrun.db"
    doc = json.loads(cli("show", str(campaign), "--json").stdout)
    text = cli("show", str(campaign), env={"COLUMNS": "200"}).stdout
    ((settings,),) = query(db, "SELECT settings_json FROM campaign")
    keep_contended = json.loads(settings).get("contended") == "keep"
    for w in doc["workloads"]:
        s, factor, label = w["summary"], w["display_unit"]["factor"], w["display_unit"]["label"]
        assert "median_ci_low" in s and "median_ci_high" in s  # None when too few rounds
        if s["median_ci_low"] is not None:
            assert s["median_ci_low"] <= s["median"] <= s["median_ci_high"]
        # its row of the results table (the counts table comes first)
        row = [line for line in text.splitlines() if line.startswith(f"│ {w['name']} ")][1]
        cells = [c.strip() for c in row.strip("│").split("│")]
        for key in ("median", "min", "max"):  # 4 significant digits in the display unit
            assert f"{s[key] / factor:.4g} {label}".rstrip() in cells, (key, cells)
        # the analysed rounds in launch order: ok, not warm-up, not contended (unless the
        # campaign keeps those), readings averaged per round; the collector's cut
        # (w["warmup"] beyond the stored warm-up rounds) leaves out the first ones
        rows = query(
            db,
            "SELECT round.seq, avg(reading.value) FROM round JOIN workload ON workload.id ="
            " round.workload_id JOIN reading ON reading.round_id = round.id WHERE"
            " workload.name = ? AND round.status = 'ok' AND round.warmup = 0"
            " AND (? OR round.flags NOT LIKE '%contended%') GROUP BY round.id ORDER BY round.seq",
            (w["name"], keep_contended),
        )
        (stored_warmup,) = query(
            db,
            "SELECT count(*) FROM round JOIN workload ON workload.id = round.workload_id"
            " WHERE workload.name = ? AND round.warmup = 1",
            (w["name"],),
        )[0]
        values = [v for _, v in rows][w["warmup"] - stored_warmup :]
        assert len(values) == w["steady"]
        assert s["median"] == pytest.approx(float(np.median(values)), rel=1e-12, abs=0)
