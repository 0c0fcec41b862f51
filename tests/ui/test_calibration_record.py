"""A stored "calibrated" event read once into a record (runner/ui/tables.py Calibration,
issue 30), the work notes built from it, and a level shift in words (runner/format.py)."""

from __future__ import annotations

import pytest

from benchrun.runner.format import level_shift_words
from benchrun.runner.store.records import EventRow, RoundRow, WorkloadRow
from benchrun.runner.ui.tables import Calibration, workload_works


def _workload(spec: dict[str, object]) -> WorkloadRow:
    return WorkloadRow(1, "sort", 0, "readings", "ms", "lower_is_better", spec, "active", None)


def _round(seq: int, work: int) -> RoundRow:
    return RoundRow(
        id=seq, workload_id=1, seq=seq, pass_=seq, round_index=seq, status="ok", reason=None,
        exit_code=0, started_at=0.0, wall_ns=1, user_s=0.0, sys_s=0.0, max_rss_kib=1,
        cpus=None, argv=["sort"], work=work, warmup=False, flags="", stdout_tail=None,
        stderr_tail=None, facts=None, readings=(1.0,),
    )  # fmt: skip


def _event(data: dict[str, object] | None) -> EventRow:
    return EventRow(1, 0.0, "calibrated", "sort: calibrated", data)


def test_calibration_as_the_adaptive_loop_stores_it() -> None:
    data = {"workload": "sort", "work": 80, "target_s": 0.1, "overhead_s": 0.02,
            "steps": [[20, 0.03], [80, 0.11]], "reached": True}  # fmt: skip
    assert Calibration.from_event(data) == Calibration("sort", 80, 0.1, True)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (None, None),  # an event without data
        ({"workload": "sort"}, None),  # no work amount: nothing calibrated
        ({"workload": "sort", "work": 5}, Calibration("sort", 5, None, None)),  # older event
        (
            {"workload": "sort", "work": 5, "target_s": "fast", "reached": False},
            Calibration("sort", 5, None, False),
        ),  # fmt: skip
    ],
)
def test_calibration_of_older_or_odd_events(
    data: dict[str, object] | None, expected: Calibration | None
) -> None:
    assert Calibration.from_event(data) == expected


def test_work_note_from_a_calibrated_event() -> None:
    w = _workload({"command": ["sort", "{work}"], "work": 20})
    event = _event({"workload": "sort", "work": 80, "target_s": 0.1, "reached": False})
    info = workload_works([w], [_round(0, 80), _round(1, 80)], [event])["sort"]
    assert (info.work, info.file, info.calibrated, info.target_s) == (80, 20, True, 0.1)
    assert info.note("sort") == (
        "sort: work 80 (calibrated for rounds of >= 0.1 s, target not reached; file said 20)"
    )
    # without the event: the file's amount, nothing calibrated
    plain = workload_works([w], [_round(0, 20)], [])["sort"]
    assert (plain.calibrated, plain.reached, plain.note("sort")) == (False, None, None)


def test_level_shift_words() -> None:
    assert level_shift_words(None, 1.35) is None
    assert level_shift_words(17, 1.35) == "level shift at round 18 (+135 %)"
    assert level_shift_words(0, None) == "level shift at round 1"
    assert level_shift_words(3, -0.2) == "level shift at round 4 (-20 %)"
