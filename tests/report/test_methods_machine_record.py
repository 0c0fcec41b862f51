"""What the methods paragraph and rules 9-10 (runner/report/methods.py) state from a
campaign's stored machine record, read by ``MachineFacts.from_stored``: the timer, how
rounds were contained, what tuning changed, the sections recorded and the facts listed
as unreadable. The expected sentences are written out here from the record each test
stores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from synthetic import store_campaign

from benchrun.runner.report.document import Report, build_report
from benchrun.runner.report.model import load_campaign

READINGS = {"a": [[0.010 + 0.0001 * (i % 7)] for i in range(30)]}

RECORD: dict[str, Any] = {
    "hardware": {"cpu_model": "X", "_unavailable": {"microcode": "no file", "cache_l3": "no"}},
    "software": {"kernel_release": "6.1"},
    "timer": {
        "clock": "perf_counter_ns",
        "implementation": "clock_gettime(CLOCK_MONOTONIC)",
        "measured_resolution_ns": 20,
        "overhead_ns": 41.4,
        "_unavailable": {},
    },
    "environment": {"load_average": [0.1, 0.2, 0.3], "_unavailable": {"aslr": "no file"}},
    "containment": {"kind": "cgroup", "detail": "cgroup v2", "wait_source": "cpu.stat"},
    "tuning": {
        "journal": "/run/j",
        "changes": [{"setting": "turbo", "path": "sys/boost", "before": "1", "after": "0"}],
        "skipped": [],
    },
}


def _report(tmp_path: Path, metadata: dict[str, Any] | None) -> Report:
    db = store_campaign(tmp_path / "c" / "benchrun.db", READINGS, metadata=metadata)
    return build_report(load_campaign(db), with_plots=False)


def test_the_record_is_stated_in_the_methods_and_rules(tmp_path: Path) -> None:
    report = _report(tmp_path, RECORD)
    assert (
        "Each round ran in its own cgroup, and whatever it left running was killed "
        "before the next round started."
    ) in report.methods
    assert "benchrun tuned the machine (settings.tune) and restored it afterwards" in (
        report.methods
    )
    assert "turbo" in report.methods.split("restored it afterwards: ")[1]
    assert (
        "Times come from perf_counter_ns (clock_gettime(CLOCK_MONOTONIC)), smallest "
        "measured step 20 ns, 41 ns per call."
    ) in report.methods
    rules = {r.number: (r.status, r.detail) for r in report.rules}
    assert rules[9] == (
        "met",
        "hardware, software, timer, environment and the full experiment file are recorded "
        "(3 facts unreadable on this machine, listed)",
    )
    assert rules[10][0] == "met" and rules[10][1].startswith("timer (perf_counter_ns)")


def test_a_process_group_and_no_tuning(tmp_path: Path) -> None:
    record = {**RECORD, "containment": {"kind": "process group"}, "tuning": {"changes": []}}
    report = _report(tmp_path, record)
    assert "Each round ran in its own process group" in report.methods
    assert "tuned the machine" not in report.methods


def test_a_damaged_record_is_not_recorded_rather_than_an_error(tmp_path: Path) -> None:
    record = {
        "hardware": "not an object",
        "timer": {"clock": "", "measured_resolution_ns": "20"},
        "containment": "cgroup",
        "tuning": {"changes": "all"},
    }
    report = _report(tmp_path, record)
    assert "Times come from" not in report.methods
    assert "its own cgroup" not in report.methods and "tuned" not in report.methods
    rules = {r.number: (r.status, r.detail) for r in report.rules}
    assert rules[9] == ("missing", "not recorded: software, environment")
    assert rules[10] == ("missing", "the timer is not recorded (no machine record of it)")
