"""``benchrun export``'s CSV rows from typed records (runner/commands/export.py
ExportWorkload, ExportRound; issue 30): every cell of a row, written by hand."""

from __future__ import annotations

from benchrun.runner.commands.export import (
    ExportRound,
    ExportWorkload,
    _export_rounds,
    readings_csv,
    results_csv,
)
from benchrun.runner.report.model import WorkloadView
from benchrun.runner.results.estimate import Estimate
from benchrun.runner.results.verdicts import StoredComparison
from benchrun.runner.store.records import RoundRow


def _round(rid: int, seq: int, readings: tuple[float, ...], warmup: bool) -> RoundRow:
    return RoundRow(
        id=rid, workload_id=1, seq=seq, pass_=seq, round_index=seq, status="ok", reason=None,
        exit_code=0, started_at=1795400000.5 + seq, wall_ns=2_000_000, user_s=0.25,
        sys_s=0.01, max_rss_kib=10240, cpus="3", argv=["sort"], work=None, warmup=warmup,
        flags="", stdout_tail=None, stderr_tail=None, facts={"node": "n07"},
        readings=readings, wait_ns=1500, wait_source="cgroup cpu.pressure",
    )  # fmt: skip


ESTIMATE = Estimate(
    mean=0.0125, variance=4e-8, n_q=6, q=2, ci_low=0.0123, ci_high=0.0127,
    rel_half_width=0.016, enough=True, n=12, warmup_readings=0, series="rounds",
)  # fmt: skip


def _view(flags: list[str]) -> WorkloadView:
    return WorkloadView(
        name="sort[n=10]", metric="wall_time", unit="s", direction="lower_is_better",
        status="active", status_reason=None, params={"n": 10}, base_name="sort",
        per_work=False, rounds=2, steady_rounds=1, warmup_rounds=1, failed_rounds=0,
        last_failure=None, estimate=ESTIMATE, summary=None,
        collected={"mean": 0.0125}, all_flags=flags,
    )  # fmt: skip


BASELINE = StoredComparison(
    kind="baseline", a="sort[n=5]", b="sort[n=10]",
    headline="sort[n=10] is 2.010x [1.990, 2.030] slower than sort[n=5] (paired, 6 passes)",
    verdict="separated", test="paired", ratio=2.01, ratio_low=1.99, ratio_high=2.03,
    passes=6, p=1e-6, p_holm=2e-6, tost_p=1.0, look=1, alpha=0.01,
    relative_difference=1.01, rounds_needed=None,
)  # fmt: skip


def test_reading_flags_follow_the_rounds_and_keep_the_stored_flag() -> None:
    rounds = [_round(11, 0, (0.02,), True), _round(12, 1, (0.012, 0.013), False)]
    view = _view(["warmup-round", "", "outlier"])
    out = _export_rounds(view, rounds, {(12, 1): "odd"})
    assert [r.reading_flags for r in out] == [("warmup-round",), ("", "outlier,odd")]
    assert out[0].node() == "n07"


def test_reading_rows() -> None:
    rounds = (
        ExportRound(_round(11, 0, (0.02,), True), ("warmup-round",)),
        ExportRound(_round(12, 1, (0.012,), False), ("outlier,odd",)),
    )
    w = ExportWorkload(_view(["warmup-round", "outlier"]), rounds, None)
    head = ("sort[n=10]", 10, "s", "ms", 0.001, "lower_is_better")
    assert w.reading_rows(["n"], steady_only=False) == [
        (*head, 0, 0, 0, 0, "ok", 1, "", "3", None, 1795400000.5, 2_000_000, 0.25, 0.01,
         10240, 0, 0.02, "warmup-round", 0, "n07", 1500, "cgroup cpu.pressure"),
        (*head, 0, 1, 1, 1, "ok", 0, "", "3", None, 1795400001.5, 2_000_000, 0.25, 0.01,
         10240, 0, 0.012, "outlier,odd", 1, "n07", 1500, "cgroup cpu.pressure"),
    ]  # fmt: skip
    # only the analysed readings: an outlier is analysed, a warm-up round is not
    steady = w.reading_rows(["n"], steady_only=True)
    assert [row[-6] for row in steady] == [0.012]
    text = readings_csv([w], steady_only=True)
    assert text.splitlines()[0].startswith("workload,param_n,unit,display_unit,display_factor,")
    assert text.splitlines()[1].startswith("sort[n=10],10,s,ms,0.001,lower_is_better,0,1,1,1,ok,0")


def test_result_row_with_and_without_a_baseline() -> None:
    w = ExportWorkload(_view([]), (), BASELINE)
    assert w.result_row([], 0.95) == (
        "sort[n=10]", "s", "ms", 0.001, "lower_is_better",
        0.0125, 0.0123, 0.0127, 0.95, 4e-8, 6, 2, 12, 0, True, 0.016,
        "sort[n=5]", "separated", 2.01, 1.99, 2.03, "paired", 2e-6, BASELINE.headline,
    )  # fmt: skip
    lone = ExportWorkload(_view([]), (), None)
    assert lone.result_row([], 0.99)[-8:] == (None,) * 8
    assert lone.result_row([], 0.99)[8] == 0.99
    lines = results_csv([lone], 0.99).splitlines()
    assert lines[1] == (
        "sort[n=10],10,s,ms,0.001,lower_is_better,0.0125,0.0123,0.0127,0.99,4e-08,6,2,12,0,"
        "True,0.016,,,,,,,,"
    )
