"""The README's Python API section runs as written: its ```python blocks, executed in
order in one namespace, on the campaign the section names, made here first with the
command the section gives (real processes, a few seconds).

What the blocks compute is checked independently: the CSV export's per-workload means
against the readings read with sqlite3 directly, the SQL block's rows against the same
query done here, the statistics against numpy and scipy (Welch against
``scipy.stats.ttest_ind(equal_var=False)``, the t interval against ``scipy.stats.t``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.stats as sps

pd = pytest.importorskip("pandas")

README = Path(__file__).resolve().parents[1] / "README.md"
SECTION = "## Python API"


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end >= 0 else len(text)]


def python_blocks(markdown: str) -> list[str]:
    """The ```python fenced blocks of ``markdown``, in order."""
    return re.findall(r"^```python\n(.*?)^```$", markdown, flags=re.S | re.M)


def campaign_command(section: str) -> list[str]:
    """The ``benchrun run ...`` command (in backquotes) that the section says makes its
    campaign."""
    match = re.search(r"`(benchrun run [^`]+)`", section)
    assert match, "the Python API section names no `benchrun run ...` command"
    return shlex.split(match.group(1))


def test_readme_starts_with_the_two_commands() -> None:
    """Install and run the demo; install the test extra and run the suite (the first two
    commands a reader copies, kept as they are)."""
    lines = README.read_text(encoding="utf-8").splitlines()
    assert lines[2:6] == [
        "```bash",
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && "
        "benchrun run configs/demo.yaml",
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && "
        "python -m pytest --cov --cov-report= --cov-fail-under=85",
        "```",
    ]


def _sql_readings(db: Path) -> dict[str, list[float]]:
    """Workload -> values of its steady (not warm-up) ok rounds, in launch order."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT w.name, g.value FROM reading g JOIN round r ON r.id = g.round_id "
            "JOIN workload w ON w.id = r.workload_id "
            "WHERE r.status = 'ok' AND r.warmup = 0 ORDER BY r.seq, g.idx"
        ).fetchall()
    finally:
        conn.close()
    out: dict[str, list[float]] = {}
    for name, value in rows:
        out.setdefault(name, []).append(value)
    return out


def test_the_python_api_section_runs_and_its_numbers_are_right(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    section = _section()
    blocks = python_blocks(section)
    assert len(blocks) >= 3, "the section has the CSV, SQLite and statistics blocks"
    # the console script of this interpreter's environment, as the blocks call it
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    argv = campaign_command(section)
    made = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    db = tmp_path / "results" / "demo" / "benchrun.db"
    assert db.is_file(), list(tmp_path.rglob("*"))

    namespace: dict[str, object] = {"__name__": "readme"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"README.md python block {i + 1}", "exec"), namespace)
    printed = capsys.readouterr().out
    assert printed.strip(), "the blocks print their results"

    truth = _sql_readings(db)
    assert set(truth) == {"true", "sleep 0.001"}
    assert all(len(v) == 12 for v in truth.values()), {k: len(v) for k, v in truth.items()}

    # the CSV: every stored reading, in the base unit; its steady ok rows are the SQL's
    readings = namespace["readings"]
    assert set(readings["unit"]) == {"s"}
    for name, values in truth.items():
        rows = readings[
            (readings.workload == name)
            & (readings.round_warmup == 0)
            & (readings.round_status == "ok")
        ].sort_values("seq")
        assert np.allclose(rows["value"].to_numpy(), values, rtol=1e-12, atol=0)
        assert rows["value"].mean() == pytest.approx(np.mean(values), rel=1e-12)
        # the analysed readings are some of those, and their mean is the block's
        steady = rows[rows.analysed == 1]["value"]
        per = namespace["per_workload"].loc[name]
        assert per["count"] == len(steady) <= len(values)
        assert per["mean"] == pytest.approx(steady.mean(), rel=1e-12)
    # the display factor is the one `show --json` reports for each workload
    shown = subprocess.run(
        ["benchrun", "show", "results/demo", "--json"], capture_output=True, text=True
    )
    assert shown.returncode == 0, shown.stderr
    factors = {
        w["name"]: w["display_unit"]["factor"] for w in json.loads(shown.stdout)["workloads"]
    }
    factor = namespace["factor"]
    assert {k: float(factor[k]) for k in factors} == factors

    # the SQL block: the same rows as the query done here, its means the plain means
    kept = namespace["kept"]
    for name, values in truth.items():
        got = kept[kept.workload == name].sort_values("seq")["value"].to_numpy()
        assert np.array_equal(got, np.array(values))
    assert len(namespace["hooks"]) == 0  # the campaign has no hooks

    # the statistics on the arrays the block built (the analysed readings in launch order)
    a, b = namespace["a"], namespace["b"]
    steady_rows = readings[readings.analysed == 1].sort_values("seq")
    assert np.array_equal(a, steady_rows[steady_rows.workload == "true"]["value"].to_numpy())
    assert np.array_equal(b, steady_rows[steady_rows.workload == "sleep 0.001"]["value"].to_numpy())
    w = namespace["w"]
    ref = sps.ttest_ind(a, b, equal_var=False)
    assert w.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert w.statistic == pytest.approx(ref.statistic, rel=1e-9)
    low, high = ref.confidence_interval(0.95)
    assert (w.ci_low, w.ci_high) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))
    assert w.difference == pytest.approx(a.mean() - b.mean(), rel=1e-12)
    ci = namespace["ci"]
    half = sps.t.ppf(0.975, a.size - 1) * a.std(ddof=1) / np.sqrt(a.size)
    assert (ci.low, ci.high) == (
        pytest.approx(a.mean() - half, rel=1e-9),
        pytest.approx(a.mean() + half, rel=1e-9),
    )
    # TOST: the two one-sided Welch tests with the margin (5 % of a's mean) moved onto a
    t = namespace["t"]
    delta = 0.05 * abs(a.mean())
    p_lower = sps.ttest_ind(a + delta, b, equal_var=False, alternative="greater").pvalue
    p_upper = sps.ttest_ind(a - delta, b, equal_var=False, alternative="less").pvalue
    assert t.p_value == pytest.approx(max(p_lower, p_upper), rel=1e-9)
    # b sleeps a millisecond more than a runs: not equivalent within 5 % of a's mean
    assert not t.equivalent
    s = namespace["s"]
    assert s.n + s.warmup_readings == a.size
    assert s.interval_low is not None and s.interval_low < s.mean < s.interval_high
    if s.certified:
        assert (s.ci_low, s.ci_high) == (s.interval_low, s.interval_high)
    else:
        assert s.ci_low is None and s.interval_note
    q = namespace["q"]
    w_q = namespace["w_q"]
    ma = a[: a.size // q * q].reshape(-1, q).mean(axis=1)
    mb = b[: b.size // q * q].reshape(-1, q).mean(axis=1)
    assert w_q.p_value == pytest.approx(sps.ttest_ind(ma, mb, equal_var=False).pvalue, rel=1e-9)


def test_public_names_stay_functions_after_their_submodule_is_imported() -> None:
    """``from benchrun.stats import hpt`` (the Python API the README documents) is the
    function even when ``benchrun.stats.hpt``, the module of the same name, was imported
    first: the import system's assignment of the submodule used to shadow it ("'module'
    object is not callable" in ``benchrun analyze hpt`` run in such a process). A fresh
    interpreter, so that nothing imported before decides the outcome."""
    code = (
        "import types, benchrun.stats.hpt, benchrun.stats.normality\n"
        "from benchrun import stats\n"
        "from benchrun.stats import hpt, normality\n"
        "for f in (stats.hpt, stats.normality, hpt, normality):\n"
        "    assert isinstance(f, types.FunctionType), f\n"
        "import importlib\n"
        "assert isinstance(importlib.import_module('benchrun.stats.hpt'), types.ModuleType)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
