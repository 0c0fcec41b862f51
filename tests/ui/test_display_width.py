"""Issue 17, the terminal: what ``run`` and ``show`` print fits 80 columns, shows each
workload in one unit and says what ``{work}`` the rounds ran with.

Campaigns run with the fake executor (runner/execute/fake.py: real store and controller,
no processes); the references are the stored rounds read with plain sqlite3 and numpy,
and the rendered text itself (its widths, its cells).
"""

from __future__ import annotations

import io
import re
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from rich.cells import cell_len
from rich.console import Console

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.commands.show import CampaignSummary, print_results, read_summary
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec
from benchrun.runner.execute.fake import FakeExecutor, FakeRound, lognormal
from benchrun.runner.ui.display import RichDisplay, counts_table, results_table
from benchrun.runner.ui.fit import output_width

LONG = ("sum-range[n=1000000]", "sum-range[n=2000000]")


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


def _campaign(root: Path, text: str, scripts: dict[str, Any]) -> Path:
    exp = parse_experiment(text, base_dir=root, check_commands=False)
    run_campaign(exp, FakeExecutor(scripts), NullDisplay())
    return exp.campaign_dir


FIXED = """\
name: width
output: {out}
settings: {{adaptive: false, rounds: 30, warmup_rounds: 1, pin: none, seed: 1}}
workloads:
  - name: sum-range
    command: [work, "{{n}}"]
  - name: own-timings
    command: [work, "{{work}}"]
    work: 200000
matrix: {{n: [1000000, 2000000]}}
"""


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """30 rounds each of a 37.6 ms, a 56 ms and a 212 ms workload (CoV 8 %)."""
    root = tmp_path_factory.mktemp("width")
    return _campaign(
        root,
        FIXED.format(out=root / "out"),
        {
            LONG[0]: lognormal(0.0376, 0.08, seed=1),
            LONG[1]: lognormal(0.056, 0.08, seed=2),
            "own-timings": lognormal(0.212, 0.08, seed=3),
        },
    )


def render(renderable: Any, width: int, terminal: bool = False) -> str:
    console = Console(
        file=io.StringIO(), width=width, color_system=None, force_terminal=terminal, soft_wrap=False
    )
    console.print(renderable)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    return str(out)


def summary_text(s: CampaignSummary, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=True)
    console.print(counts_table(s.results, s.states))
    print_results(console, s)
    return str(console.file.getvalue())  # type: ignore[attr-defined]


def stored_values(db: Path, name: str) -> np.ndarray:
    """The steady ok rounds' wall times of ``name`` in s, read with plain sqlite3."""
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT r.wall_ns FROM round r JOIN workload w ON w.id = r.workload_id"
        " WHERE w.name = ? AND r.warmup = 0 AND r.status = 'ok' ORDER BY r.seq",
        (name,),
    ).fetchall()
    conn.close()
    return np.array([ns / 1e9 for (ns,) in rows])


def row_of(text: str, name: str, after: str = "") -> list[str]:
    """The cells of the first table row that starts with ``name`` after the text ``after``."""
    tail = text[text.index(after) :] if after else text
    line = next(line for line in tail.splitlines() if line.startswith(f"│ {name} "))
    return [c.strip() for c in line.strip("│").split("│")]


def results_row(text: str, name: str) -> list[str]:
    """The cells of ``name``'s row in the results table (after the counts table)."""
    return row_of(text, name, after="mean ± ")


def test_one_display_unit_for_every_value_of_a_row(fixed: Path) -> None:
    s = read_summary(fixed / "benchrun.db")
    text = render(results_table(s.results, 0.95, s.works), 160)
    header = row_of(text.replace("┃", "│"), "workload")
    assert "unit" not in header  # every value carries its unit: no column saying "s"
    for name in (*LONG, "own-timings"):
        cells = dict(zip(header, row_of(text, name), strict=True))
        values = stored_values(fixed / "benchrun.db", name)
        # the unit is the one for the mean: ms for 37.6, 56 and 212 ms alike
        for key in ("median", "min", "max"):
            assert cells[key].endswith(" ms"), (name, key, cells[key])
        assert cells["median"] == f"{np.median(values) * 1e3:.4g} ms"
        assert cells["min"] == f"{values.min() * 1e3:.4g} ms"
        assert cells["max"] == f"{values.max() * 1e3:.4g} ms"
        mean, half = re.fullmatch(r"(\S+) ms ± (\S+) ms(?: \*)?", cells["mean ± 95 % CI"]).groups()  # type: ignore[union-attr]
        assert 30 < float(mean) < 260 and 0 < float(half) < float(mean)
        assert not re.search(r"\d (s|µs|ns)\b", " ".join(cells.values()))


def test_the_tables_fit_80_columns_without_cutting_a_cell(fixed: Path) -> None:
    s = read_summary(fixed / "benchrun.db")
    for width in (80, 60):
        text = summary_text(s, width)
        lines = text.splitlines()
        assert max(cell_len(line) for line in lines) <= width, text
        assert "…" not in text
        # every name whole, on the row of its estimate
        for r in s.results:
            row = results_row(text, r.name)
            assert row[0] == r.name and row[1].split(" ")[1] == "ms"
        # what was left out is said, and no mean wraps onto a second line
        assert f"not shown at {width} columns" in text
        table = text.split("mean ± 95 % CI", 1)[1].split("└", 1)[0]
        rows = [line for line in table.splitlines() if line.startswith("│")]
        assert len(rows) == len(s.results)
    # the comparisons, narrower than their table: verdict and headline, whole, on lines
    pairs = (s.verdicts or {})["pairs"]
    assert len(pairs) == 2  # neighbours in the ranking: 37.6 ~ 56 ms, 56 ~ 212 ms
    words = " ".join(summary_text(s, 80).split())
    for pair in pairs:
        slower = max(
            pair["a"], pair["b"], key=lambda n: stored_values(fixed / "benchrun.db", n).mean()
        )
        faster = pair["a"] if slower == pair["b"] else pair["b"]
        factor = max(pair["ratio"], 1 / pair["ratio"])
        assert f"{pair['verdict']}: {slower} is {factor:.3f}x" in words
        assert f"slower than {faster} (paired, median per-pass ratio, 30 passes)" in words
    # at 160 columns (a pipe's default width) nothing is left out
    wide = summary_text(s, 160)
    assert "not shown" not in wide and "median" in wide and "ratio [95 % CI]" in wide


def test_a_pipe_uses_columns_else_160() -> None:
    assert output_width({"COLUMNS": "80"}) == 80
    assert output_width({"COLUMNS": "x"}) in (160, output_width({}))
    # pytest captures stderr, so no terminal there: the documented 160
    assert output_width({}) == 160


def _scaled(spec: RoundSpec, k: int, clock: float) -> FakeRound:
    """A round of ``work`` units at 10 µs each (no work in argv: the launch overhead)."""
    work = int(spec.argv[-1])
    return FakeRound(work * 1e-5 * (1.0 + 0.01 * ((k * 7) % 5)))


CALIBRATED = """\
name: cal
output: {out}
settings: {{pin: none, seed: 2, min_round_time: 100ms, ci_rel_width: 0.05, max_rounds: 40}}
workloads:
  - name: own-timings
    command: [work, "{{work}}"]
    work: 1000
  - name: plain
    command: [work, "5"]
"""


def test_the_calibrated_work_is_shown_with_the_files_value(tmp_path: Path) -> None:
    d = _campaign(tmp_path, CALIBRATED.format(out=tmp_path / "out"), {"own-timings": _scaled,
                  "plain": lambda spec, k, clock: FakeRound(0.05 * (1 + 0.01 * (k % 3)))})  # fmt: skip
    conn = sqlite3.connect(d / "benchrun.db")
    works = {
        w
        for (w,) in conn.execute(
            "SELECT r.work FROM round r JOIN workload w ON w.id = r.workload_id"
            " WHERE w.name = 'own-timings' AND r.warmup = 0 AND r.status = 'ok'"
        )
    }
    conn.close()
    (work,) = works  # every steady round ran the calibrated amount ...
    assert work * 1e-5 >= 0.1 > 1000 * 1e-5  # ... which makes a round last 100 ms
    s = read_summary(d / "benchrun.db")
    info = s.works["own-timings"]
    assert (info.work, info.file, info.calibrated) == (work, 1000, True)
    assert "plain" not in s.works  # no {work} in its command
    text = summary_text(s, 80)
    grouped = f"{work:,}".replace(",", " ")
    assert results_row(text, "own-timings")[2] == grouped  # the work column
    assert results_row(text, "plain")[2] == "-"
    words = " ".join(text.split())
    assert (
        f"own-timings: work {grouped} (calibrated for rounds of >= 0.1 s; file said 1 000)" in words
    )


def _decision(needed: int, *, done: bool = False, stop: bool = False) -> Any:
    w = SimpleNamespace(
        done=done, active=not done, rounds_needed=needed, rel_half_width=0.04, target=0.05,
        waiting_for=() if done else ("a~b",),
    )  # fmt: skip
    pair = SimpleNamespace(a="a", b="b", test="welch", ratio_low=None, verdict="undecided")
    return SimpleNamespace(
        workloads={"a": w}, pairs=[pair], stop=stop, reason="continue: pair a~b undecided"
    )


def _live_text(display: RichDisplay, width: int) -> str:
    assert display.live is not None
    return render(display.live.renderable, width)


def test_the_live_total_is_marked_as_the_controllers_estimate() -> None:
    console = Console(file=io.StringIO(), width=80, force_terminal=True, color_system=None)
    clock = [0.0]
    display = RichDisplay({"a": "s"}, console=console, clock=lambda: clock[0])
    campaign = SimpleNamespace(id=1, name="x", settings={"adaptive": True})
    display.start(campaign, {"a": 6}, {"a": 0})  # type: ignore[arg-type]
    try:
        ok = RoundOutcome("ok", 37_590_000, 0.03, 0.0, 1024, 0, 0.0)
        shown = []
        for needed in (1, 40, 48, 40):  # the controller's estimates of rounds still needed
            for _ in range(3):
                display.round_done("a", ok, 0.03759, False)
            display.show_decision(_decision(needed), 12.0)
            text = _live_text(display, 80)
            shown.append(row_of(text, "a")[1])
            assert max(cell_len(line) for line in text.splitlines()) <= 80
            assert "…" not in text and "37.59 ms" in text and "~12s left" in text
        assert shown == ["3/~4", "6/~46", "9/~57", "12/~52"]
        display.show_decision(_decision(0, done=True, stop=True), None)
        assert row_of(_live_text(display, 80), "a")[1] == "12"
    finally:
        display.stop()
    # fixed mode: the total is exact, no "~"
    fixed = RichDisplay({"a": "s"}, console=console)
    fixed.start(SimpleNamespace(id=1, name="x", settings={}), {"a": 31}, {"a": 9})  # type: ignore[arg-type]
    try:
        assert row_of(_live_text(fixed, 80), "a")[1] == "9/31"
    finally:
        fixed.stop()


def test_a_calibration_that_kept_the_files_work_adds_no_line() -> None:
    from benchrun.runner.ui.tables import WorkInfo

    kept = WorkInfo(1000, 1000, True, target_s=0.1, reached=True, low=1000, high=1000)
    assert kept.note("w") is None  # the table's work column already says 1 000
    short = WorkInfo(1000, 1000, True, target_s=0.1, reached=False, low=1000, high=1000)
    assert (
        short.note("w")
        == "w: work 1\xa0000 (calibrated for rounds of >= 0.1 s, target not reached; file said 1\xa0000)"
    )
    grown = WorkInfo(5000, 1000, True, target_s=0.1, reached=True, low=5000, high=5000)
    assert (
        grown.note("w")
        == "w: work 5\xa0000 (calibrated for rounds of >= 0.1 s; file said 1\xa0000)"
    )
