"""Warm-up is a start, not a disturbance (issue 27, docs/methods.md §2.1), end to end.

Fixed campaigns on the fake executor with a known series: 17 quiet rounds then a
disturbance (the issue's campaign) must give a level shift at round 18 and no CI; a real
warm-up (slower first rounds) is cut, and then ``show``'s "steady" counts the rounds
analysed and the drift note's levels are relative to the table's mean. References: the
stored rounds read back with plain sqlite3 and the block means computed here with numpy.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.cli import main
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.execute.executor import RoundSpec
from benchrun.runner.execute.fake import FakeExecutor, FakeRound, Script

ROUNDS = 52


class _Quiet:
    def start(self, *a: object) -> None: ...
    def round_done(self, *a: object) -> None: ...
    def message(self, text: str) -> None: ...
    def show_decision(self, *a: object) -> None: ...
    def stop(self) -> None: ...


def _series(levels: np.ndarray) -> Script:
    def script(spec: RoundSpec, k: int, clock: float) -> FakeRound:
        return FakeRound(float(levels[k]))

    return script


def _campaign(root: Path, levels: np.ndarray) -> Path:
    text = (
        f"name: shift\noutput: {root / 'out'}\n"
        f"settings: {{pin: none, seed: 3, adaptive: false, rounds: {ROUNDS}, warmup_rounds: 0}}\n"
        "workloads:\n  - {name: a, command: [work]}\n"
    )
    exp = parse_experiment(text, base_dir=root, check_commands=False)
    run_campaign(exp, FakeExecutor({"a": _series(levels)}), _Quiet())
    return root / "out"


def _show_json(capsys: pytest.CaptureFixture[str], out: Path) -> dict:
    capsys.readouterr()
    assert main(["show", str(out), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["workloads"][0]


def _stored(out: Path) -> np.ndarray:
    conn = sqlite3.connect(next(out.glob("**/benchrun.db")))
    rows = conn.execute(
        "SELECT wall_ns FROM round WHERE warmup = 0 AND status = 'ok' ORDER BY seq"
    ).fetchall()
    conn.close()
    return np.array([ns / 1e9 for (ns,) in rows])


def test_quiet_then_disturbed_is_a_level_shift_not_warm_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(11)
    k = np.arange(ROUNDS)
    levels = np.where(k < 17, 0.115, 0.270) * (1 + 0.01 * rng.standard_normal(ROUNDS))
    out = _campaign(tmp_path, levels)
    w = _show_json(capsys, out)
    c = w["collected"]
    assert c["level_shift_at"] == 17  # the first disturbed round, 0-based
    x = _stored(out)
    assert c["level_shift_change"] == pytest.approx(x[17:].mean() / x[:17].mean() - 1, rel=1e-9)
    assert c["enough"] is False and c["certified"] is False
    assert c["ci_low"] is None and c["interval_low"] is None
    assert c["warmup_readings"] == 0 and w["steady"] == ROUNDS  # nothing cut as warm-up
    assert c["mean"] == pytest.approx(x.mean(), rel=1e-12)
    capsys.readouterr()
    assert main(["show", str(out)]) == 0
    text = capsys.readouterr().out
    pct = 100 * (x[17:].mean() / x[:17].mean() - 1)
    assert f"a: no CI: level shift at round 18 ({pct:+.0f} %)" in " ".join(text.split())
    md = tmp_path / "report.md"
    assert main(["report", str(out), "--format", "md", "--no-plots", "-o", str(md)]) == 0
    report = " ".join(md.read_text().split())
    assert f"(no CI: level shift at round 18 ({pct:+.0f} %))" in report
    assert f"left without a CI: a (level shift at round 18 ({pct:+.0f} %))" in report
    assert "stored and discarded as warm-up" in report and "it found none" in report


def test_compare_gives_no_regression_across_a_shift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's gate: a quiet campaign against one disturbed from round 18 on exited 1
    ("2.311x slower (regression)") on identical code; the disturbed side now has no CI."""
    rng = np.random.default_rng(14)
    quiet = _campaign(tmp_path / "old", 0.115 * (1 + 0.01 * rng.standard_normal(ROUNDS)))
    k = np.arange(ROUNDS)
    levels = np.where(k < 17, 0.115, 0.270) * (1 + 0.01 * rng.standard_normal(ROUNDS))
    disturbed = _campaign(tmp_path / "new", levels)
    capsys.readouterr()
    code = main(["compare", str(quiet), str(disturbed), "--fail-on-regression", "5%"])
    text = " ".join(capsys.readouterr().err.split())  # the gate's one line
    assert code == 3, text  # not comparable (the conditions), and the new side has no CI
    pct = 100 * (levels[17:].mean() / levels[:17].mean() - 1)
    assert f"level shift (a): none vs at round 18 ({pct:+.0f} %)" in text, text
    # with the conditions accepted, the collector's reason remains: no CI across the shift
    capsys.readouterr()
    code = main(
        ["compare", str(quiet), str(disturbed), "--fail-on-regression", "5%"]
        + ["--allow-different-conditions"]
    )
    text = " ".join(capsys.readouterr().err.split())
    assert code == 3, text
    assert f"level shift at round 18 ({pct:+.0f} %): no CI across it" in text, text
    # the same through benchrun's export (the shift travels in its result)
    exported = tmp_path / "new.json"
    assert main(["export", str(disturbed), "-o", str(exported)]) == 0
    result = json.loads(exported.read_text())["workloads"][0]["result"]
    assert result["level_shift_at"] == 17 and result["enough"] is False
    capsys.readouterr()
    code = main(["compare", str(quiet), str(exported), "--fail-on-regression", "5%"])
    text = " ".join(capsys.readouterr().err.split())
    assert code == 3 and f"level shift at round 18 ({pct:+.0f} %)" in text, text


def test_steady_and_drift_are_those_of_the_rounds_analysed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(12)
    k = np.arange(ROUNDS)
    # a real warm-up (+50 % decaying) and a slow upward drift of the steady part
    levels = 0.1 * (1 + 0.5 * np.exp(-k / 3.0) + 0.0006 * k + 0.002 * rng.standard_normal(ROUNDS))
    out = _campaign(tmp_path, levels)
    w = _show_json(capsys, out)
    c = w["collected"]
    cut = c["warmup_readings"]
    assert cut > 0 and c["level_shift_at"] is None
    assert w["steady"] == ROUNDS - cut == c["n"]  # the rounds analysed
    assert w["warmup"] == cut
    x = _stored(out)[cut:]
    assert w["summary"]["median"] == pytest.approx(float(np.median(x)), rel=1e-12)
    d = w["drift"]
    assert d is not None and d["n"] == x.size
    blocks = np.array([b.mean() for b in np.array_split(x, 5)]) / c["mean"] - 1
    assert d["level_low"] == pytest.approx(blocks.min(), rel=1e-9)
    assert d["level_high"] == pytest.approx(blocks.max(), rel=1e-9)


def test_adaptive_campaign_never_stops_on_a_ci_across_a_shift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Quiet rounds, then +50 % from the 15th steady round: without the rule the collector
    would cut the quiet rounds and stop on the disturbed ones; now the workload's condition
    stays unmet ("level shift at round ...") until max_rounds."""
    rng = np.random.default_rng(13)
    n = 200
    levels = np.where(np.arange(n) < 16, 0.1, 0.15) * (1 + 0.01 * rng.standard_normal(n))
    text = (
        f"name: shift\noutput: {tmp_path / 'out'}\n"
        "settings: {pin: none, seed: 3, max_rounds: 60, ci_rel_width: 0.05}\n"
        "workloads:\n  - {name: a, command: [work]}\n"
    )
    exp = parse_experiment(text, base_dir=tmp_path, check_commands=False)
    run_campaign(exp, FakeExecutor({"a": _series(levels)}), _Quiet())
    x = _stored(tmp_path / "out")
    assert x.size == 60  # ran to max_rounds: no stop on a certified CI
    w = _show_json(capsys, tmp_path / "out")
    c = w["collected"]
    assert c["level_shift_at"] == 15 and not c["enough"]  # steady round 16 = launch 17
    assert w["status"] == "unmet"
    assert c["level_shift_change"] == pytest.approx(x[15:].mean() / x[:15].mean() - 1, rel=1e-9)
    conn = sqlite3.connect(next((tmp_path / "out").glob("**/benchrun.db")))
    reasons = [r for (r,) in conn.execute("SELECT stop_reason FROM campaign")]
    conn.close()
    assert any("level shift at round 16" in (r or "") for r in reasons), reasons
