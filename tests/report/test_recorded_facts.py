"""The machine record read once for the methods paragraph and the rules
(runner/report/recorded.py): what a full record gives, and how a missing or damaged
section reads (not recorded, never an error)."""

from __future__ import annotations

from benchrun.runner.report.recorded import RecordedFacts, TimerFacts

RECORD = {
    "hardware": {"cpu_model": "X", "_unavailable": {"microcode": "no file", "l3": "no"}},
    "software": {"kernel": "6.1"},
    "timer": {
        "clock": "perf_counter_ns",
        "implementation": "clock_gettime(CLOCK_MONOTONIC)",
        "measured_resolution_ns": 20,
        "overhead_ns": 41.5,
        "_unavailable": {"measured_resolution_ns": "never changed"},
    },
    "environment": {"load_average": [0.1, 0.2, 0.3]},
    "containment": {"kind": "cgroup"},
    "tuning": {"changes": []},
}


def test_a_full_record() -> None:
    r = RecordedFacts.from_metadata(RECORD)
    assert r.present and r.sections == ("hardware", "software", "timer", "environment")
    assert r.unavailable == 3  # two hardware facts and one timer fact
    assert r.timer == TimerFacts("perf_counter_ns", "clock_gettime(CLOCK_MONOTONIC)", 20.0, 41.5)
    assert r.containment == "cgroup" and r.tuning == {"changes": []}


def test_no_record() -> None:
    for missing in (None, {}):
        r = RecordedFacts.from_metadata(missing)
        assert not r.present and r.sections == () and r.unavailable == 0
        assert r.timer == TimerFacts() and r.containment is None and r.tuning is None


def test_missing_and_empty_sections_are_not_recorded() -> None:
    r = RecordedFacts.from_metadata({"hardware": {"cpu_model": "X"}, "software": {}})
    assert r.present and r.sections == ("hardware",)
    assert r.timer.clock is None and r.containment is None


def test_damaged_sections_read_as_unknown() -> None:
    r = RecordedFacts.from_metadata(
        {
            "hardware": "not an object",
            "timer": {"clock": "", "measured_resolution_ns": "20", "overhead_ns": None},
            "containment": "cgroup",
        }
    )
    # a section that is there counts as recorded; what it holds is read only when it is
    # an object
    assert r.sections == ("hardware", "timer") and r.unavailable == 0
    assert r.timer == TimerFacts()  # an empty clock is none; "20" is not a number
    assert r.containment is None  # not an object: no kind
