"""What a campaign's stored metadata holds besides the machine record's facts, read by
:meth:`MachineFacts.from_stored` into ``stored`` (runner/machine/facts.py ``Stored``): the
sections held, the facts they list as unreadable, how the rounds were contained and what
tuning changed; and the data of a node's ``node-metadata`` event (runner/machine/nodes.py
``NodeEvent``). A missing or damaged part reads as not recorded, never as an error."""

from __future__ import annotations

import json

import pytest

from benchrun.runner.machine.facts import MachineFacts
from benchrun.runner.machine.nodes import NodeEvent
from benchrun.runner.machine.revision import Revision
from benchrun.runner.machine.tuning_journal import Entry

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
    "containment": {"kind": "cgroup", "detail": "cgroup v2", "wait_source": "cpu.stat"},
    "tuning": {
        "journal": "/run/benchrun/tuning.json",
        "changes": [{"setting": "turbo", "path": "sys/boost", "before": "1", "after": "0"}],
        "skipped": [],
    },
    "revision": {"label": "v1.2", "commit": "abc1234", "source": "flag"},
}


def test_a_full_record() -> None:
    facts = MachineFacts.from_stored(RECORD)
    s = facts.stored
    assert s.present and s.sections == ("hardware", "software", "timer", "environment")
    assert s.unreadable == 3  # two hardware facts and one timer fact, as listed
    clock = facts.timer.clock
    assert (clock.clock, clock.implementation) == (
        "perf_counter_ns",
        "clock_gettime(CLOCK_MONOTONIC)",
    )
    assert (clock.measured_resolution_ns, clock.overhead_ns) == (20, 41.5)
    assert (s.containment.kind, s.containment.detail, s.containment.wait_source) == (
        "cgroup",
        "cgroup v2",
        "cpu.stat",
    )
    assert s.tuning == (Entry("turbo", "sys/boost", "1", "0"),)
    assert s.revision == Revision("v1.2", commit="abc1234", source="flag")


@pytest.mark.parametrize("doc", [None, {}, [], "text"])
def test_no_record(doc: object) -> None:
    s = MachineFacts.from_stored(doc).stored
    assert not s.present and s.sections == () and s.unreadable == 0
    assert s.containment.kind is None and s.tuning == () and s.revision is None


def test_missing_and_empty_sections_are_not_held() -> None:
    facts = MachineFacts.from_stored({"hardware": {"cpu_model": "X"}, "software": {}})
    assert facts.stored.present and facts.stored.sections == ("hardware",)
    assert facts.timer.clock.clock is None and facts.stored.containment.kind is None


def test_damaged_parts_read_as_unknown() -> None:
    facts = MachineFacts.from_stored(
        {
            "hardware": "not an object",
            "timer": {"clock": "", "measured_resolution_ns": "20", "overhead_ns": None},
            "containment": "cgroup",
            "tuning": {"changes": "all"},
            "revision": {"commit": "abc1234"},  # no label: no revision
        }
    )
    # a section that is there is held; what it holds is read only when it is an object
    assert facts.stored.sections == ("hardware", "timer") and facts.stored.unreadable == 0
    assert not facts.timer.clock.clock  # an empty clock names none
    assert facts.timer.clock.measured_resolution_ns is None  # "20" is not a number
    assert facts.stored.containment.kind is None  # not an object: no kind
    assert facts.stored.tuning == () and facts.stored.revision is None


def test_unreadable_facts_listed_as_a_list_are_counted() -> None:
    doc = {"hardware": {"_unavailable": ["cache_l3", "turbo"]}, "software": {"_unavailable": 5}}
    assert MachineFacts.from_stored(doc).stored.unreadable == 2


def test_a_collected_record_reads_back_whole_and_writes_the_same_json() -> None:
    from benchrun.runner.machine.metadata import collect_metadata

    stored = json.loads(json.dumps(collect_metadata(env_names=["PATH"], workload_cpus=[0])))
    sections = ("hardware", "software", "timer", "environment")
    listed = sum(len(stored[k]["_unavailable"]) for k in sections)
    facts = MachineFacts.from_stored({**stored, "containment": RECORD["containment"]})
    assert facts.stored.sections == sections and facts.stored.unreadable == listed
    # the keys the campaign adds are read, never written back by the record
    assert json.dumps(facts.to_json()) == json.dumps(stored)


def test_tuning_changes_that_are_not_changes_are_left_out() -> None:
    record = {
        "changes": [
            {"setting": "turbo", "path": "sys/boost", "before": "0", "after": "1"},
            {"setting": "ASLR", "path": "proc/x"},  # no values
            "governor",
        ]
    }
    assert Entry.changes_of(record) == (Entry("turbo", "sys/boost", "0", "1"),)
    assert Entry.changes_of({"changes": []}) == ()
    assert Entry.changes_of(["changes"]) == ()


@pytest.mark.parametrize(
    ("data", "want"),
    [
        ({"node": "n1", "record": {"hardware": {}}}, NodeEvent("n1", {"hardware": {}})),
        ({"node": "n1", "record": "broken"}, NodeEvent("n1", {})),
        ({"node": "n1"}, NodeEvent("n1", {})),
        ({"node": 7, "record": {}}, NodeEvent("7", {})),
        ({"node": "", "record": {"hardware": {}}}, None),
        ({"record": {}}, None),
        (None, None),
        ("n1", None),
    ],
)
def test_a_node_metadata_event(data: object, want: NodeEvent | None) -> None:
    assert NodeEvent.from_data(data) == want
