"""Tests of the parse boundaries of runner/machine/: the stored reproducibility record
(MachineFacts.from_stored / to_json), the tuning journal (parse_journal), a stored
revision (Revision.from_dict) and a stored tuning record (recorded_changes).

Expected values are written out by hand here (JSON as an older or a hostile writer
leaves it, the texts people read), never computed with the code under test.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from benchrun.runner.errors import UserError
from benchrun.runner.machine.describe import describe_machine
from benchrun.runner.machine.facts import (
    Aslr,
    Clock,
    Cores,
    CpuIdentity,
    EnvironmentFacts,
    Frequency,
    HardwareFacts,
    Load,
    MachineFacts,
    TimerFacts,
)
from benchrun.runner.machine.noise import noise_warnings, unknown_noise_settings
from benchrun.runner.machine.revision import Revision
from benchrun.runner.machine.tuning import recorded_changes
from benchrun.runner.machine.tuning_journal import parse_journal

# ------------------------------------------------------------------ the stored record


def test_a_record_is_written_in_the_stored_layout() -> None:
    facts = MachineFacts(
        HardwareFacts(
            identity=CpuIdentity(cpu_model="Test CPU", cpu_flags_notable=("avx2",)),
            frequency=Frequency(
                governors={"0": "performance"},
                governor="performance",
                unavailable={"turbo": "no boost file"},
            ),
            facts_for_cpu=0,
        ),
        timer=TimerFacts(failed="RuntimeError: boom"),
        environment=EnvironmentFacts(workload_cpus=(0,), load=Load(load_average=(0.5, 0.25, 0.0))),
        collected_at="2026-11-28T07:00:00Z",
        collection_seconds=0.02,
    )
    doc = facts.to_json()
    assert list(doc) == [
        "schema_version",
        "collected_at",
        "hardware",
        "software",
        "timer",
        "environment",
        "collection_seconds",
    ]
    assert doc["schema_version"] == 1
    hw = doc["hardware"]
    assert isinstance(hw, dict)
    assert list(hw)[:3] == ["_unavailable", "cpu_arch", "cpu_model"]
    assert list(hw)[-1] == "facts_for_cpu"
    assert hw["_unavailable"] == {"turbo": "no boost file"}
    assert hw["cpu_model"] == "Test CPU" and hw["cpu_flags_notable"] == ["avx2"]
    assert hw["governors"] == {"0": "performance"} and hw["turbo"] is None
    assert doc["timer"] == {"_unavailable": {"*": "RuntimeError: boom"}}
    env = doc["environment"]
    assert isinstance(env, dict)
    assert list(env)[:3] == ["_unavailable", "workload_cpus", "load_average"]
    assert env["workload_cpus"] == [0] and env["load_average"] == [0.5, 0.25, 0.0]
    # what json writes reads back the same
    assert MachineFacts.from_stored(json.loads(json.dumps(doc))).to_json() == doc


def test_every_key_written_is_read_back() -> None:
    # a record of this machine, through JSON: each group reads every key it writes (a
    # misspelt key would be absent and read back as null)
    from benchrun.runner.machine.metadata import collect_metadata

    stored = json.loads(json.dumps(collect_metadata(env_names=["PATH"], workload_cpus=[0])))
    facts = MachineFacts.from_stored(stored)
    groups = [
        *(facts.hardware.identity, facts.hardware.cores, facts.hardware.smt),
        *(facts.hardware.caches, facts.hardware.frequency, facts.hardware.memory),
        *(facts.software.kernel, facts.software.os_release, facts.software.libc),
        *(facts.software.python, facts.timer.clock, facts.environment.load),
        *(facts.environment.aslr, facts.environment.isolation, facts.environment.variables),
        facts.environment.git,
    ]
    assert [g for g in groups if g.absent] == []
    assert facts.to_json() == stored
    assert facts.environment.variables.variables == {"PATH": os.environ["PATH"]}


def test_an_old_record_without_newer_keys_reads() -> None:
    # as stored before the microcode and the reference CPU were recorded
    old = {
        "schema_version": 1,
        "collected_at": "2025-01-01T00:00:00Z",
        "hardware": {
            "_unavailable": {},
            "cpu_model": "Old CPU",
            "cores_logical": 8,
            "governor": "powersave",
            "governors": {"0": "powersave", "1": "powersave"},
        },
        "environment": {"_unavailable": {}, "workload_cpus": [1], "aslr": 0},
    }
    facts = MachineFacts.from_stored(old)
    assert facts.hardware.identity.cpu_model == "Old CPU"
    assert facts.hardware.identity.microcode is None
    assert "microcode" in facts.hardware.identity.absent
    assert facts.hardware.facts_for_cpu is None
    assert facts.hardware.cores.cores_logical == 8
    assert facts.environment.workload_cpus == (1,)
    text = {label: value for _, label, value in describe_machine(old)}
    assert text["CPU model"] == "Old CPU"
    assert text["Memory"] == "not set"
    assert "Caches" in text  # no reference CPU: the label names none
    assert text["OS"] == "not set"  # a section the record lacks
    assert [w.setting for w in noise_warnings(old)] == ["CPU frequency governor"]
    assert ("turbo boost", "not in the record") in unknown_noise_settings(old)


def test_values_of_the_wrong_type_are_unknown_with_a_reason() -> None:
    hostile = {
        "hardware": {
            "_unavailable": {},
            "cores_logical": "four",
            "governors": ["performance"],
            "turbo": "yes",
            "thread_siblings": {"0": "0,1"},
        },
        "environment": {"_unavailable": {}, "load_average": "high", "isolated_cpus": [1, True]},
    }
    facts = MachineFacts.from_stored(hostile)
    assert facts.hardware.cores.cores_logical is None
    assert facts.hardware.cores.why("cores_logical") == "the stored value is not an integer"
    assert facts.hardware.frequency.turbo is None
    assert facts.environment.isolation.isolated_cpus is None
    unknown = dict(unknown_noise_settings(hostile))
    assert unknown["CPU frequency governor"] == "the stored value is not a mapping of strings"
    assert unknown["turbo boost"] == "the stored value is not true or false"
    assert unknown["load average"] == "the stored value is not a list of numbers"
    assert unknown["isolated CPUs"] == "the stored value is not a list of integers"
    assert noise_warnings(hostile) == []
    text = {label: value for _, label, value in describe_machine(hostile)}
    assert text["Turbo / boost"] == "unknown (the stored value is not true or false)"


def test_a_section_that_failed_as_a_whole() -> None:
    stored = {"hardware": {"_unavailable": {"*": "KeyError: 'x'"}}}
    facts = MachineFacts.from_stored(stored)
    assert facts.hardware.failed == "KeyError: 'x'"
    assert facts.hardware.identity.why("cpu_model") == "KeyError: 'x'"
    assert facts.hardware.to_json() == {"_unavailable": {"*": "KeyError: 'x'"}}
    assert ("turbo boost", "KeyError: 'x'") in unknown_noise_settings(stored)


@pytest.mark.parametrize("doc", [None, [], "text", 3, {"hardware": 5}])
def test_anything_else_is_an_empty_record(doc: object) -> None:
    facts = MachineFacts.from_stored(doc)
    assert facts.hardware.identity.cpu_model is None
    assert facts.environment.workload_cpus is None
    text = {label: value for _, label, value in describe_machine(facts)}
    assert text["CPU model"] == "not set" and text["Workload CPUs"] == "not given"


def test_a_typed_record_is_used_as_it_is() -> None:
    facts = MachineFacts(
        HardwareFacts(cores=Cores(cores_logical=4)),
        timer=TimerFacts(clock=Clock(clock="time.monotonic_ns", overhead_ns=21.4)),
        environment=EnvironmentFacts(aslr=Aslr(aslr=2, aslr_meaning="on")),
    )
    assert MachineFacts.from_stored(facts) is facts
    text = {label: value for _, label, value in describe_machine(facts)}
    assert text["ASLR"] == "2 (on)"
    assert text["Overhead"] == "21 ns per call (median)"
    assert [w.setting for w in noise_warnings(facts)] == ["ASLR"]


# -------------------------------------------------------------------------- journal


def _journal(**changes: object) -> bytes:
    doc: dict[str, object] = {
        "format": "benchrun-tuning-journal",
        "version": 1,
        "root": "/",
        "owner": {"kind": "manual", "pid": 12, "started": 1700000000.5, "campaign": None},
        "entries": [
            {
                "setting": "ASLR",
                "path": "proc/sys/kernel/randomize_va_space",
                "before": "2",
                "after": "0",
            }
        ],
    }
    doc.update(changes)
    return json.dumps(doc).encode()


def test_a_journal_as_benchrun_writes_it_reads() -> None:
    journal = parse_journal(_journal(), Path("/j"))
    assert journal.owner.kind == "manual" and journal.owner.pid == 12
    assert journal.owner.started == 1700000000.5 and journal.owner.campaign is None
    assert [e.before for e in journal.entries] == ["2"]
    owned = {"kind": "campaign", "pid": 3, "started": 5, "campaign": "/runs/c"}
    assert parse_journal(_journal(owner=owned), Path("/j")).owner.campaign == "/runs/c"
    no_campaign = {"kind": "manual", "pid": 3, "started": 5}
    assert parse_journal(_journal(owner=no_campaign), Path("/j")).owner.campaign is None


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"format": "other"}, "no format field"),
        ({"version": 2}, "version 2, this benchrun reads 1"),
        ({"root": "relative"}, "root is not an absolute path"),
        ({"root": 5}, "'root' is not a short printable string"),
        ({"owner": {"kind": "root", "pid": 1, "started": 1}}, "owner is not manual nor campaign"),
        ({"owner": "manual"}, "owner is not manual nor campaign"),
        ({"owner": {"kind": "manual", "pid": True, "started": 1}}, "owner has no pid or start"),
        ({"owner": {"kind": "manual", "pid": 1, "started": False}}, "owner has no pid or start"),
        ({"owner": {"kind": "manual", "pid": 1}}, "owner has no pid or start time"),
        (
            {"owner": {"kind": "campaign", "pid": 1, "started": 1, "campaign": 7}},
            "owner's campaign is not a path",
        ),
        (
            {"owner": {"kind": "campaign", "pid": 1, "started": 1, "campaign": "a\nb"}},
            "owner's campaign is not a path",
        ),
        ({"entries": {}}, "no list of entries"),
    ],
)
def test_a_malformed_journal_is_one_clear_error(changes: dict[str, object], why: str) -> None:
    with pytest.raises(UserError) as err:
        parse_journal(_journal(**changes), Path("/state/tuning.json"))
    message = str(err.value)
    assert message.startswith("/state/tuning.json: not a benchrun tuning journal (")
    assert why in message and "\n" not in message


def test_a_journal_without_version_or_format() -> None:
    doc = json.loads(_journal())
    del doc["version"]
    with pytest.raises(UserError, match=r"version None, this benchrun reads 1"):
        parse_journal(json.dumps(doc).encode(), Path("/j"))
    with pytest.raises(UserError, match="no format field"):
        parse_journal(b"[1, 2]", Path("/j"))


# ------------------------------------------------------------ revision, tuning record


def test_a_stored_revision_reads_with_defaults() -> None:
    stored = {"label": "v1.2", "commit": "abc", "date": 5, "source": "flag", "extra": "x"}
    assert Revision.from_dict(stored) == Revision("v1.2", commit="abc", source="flag")
    assert Revision.from_dict({"label": "x", "source": "elsewhere"}) == Revision("x")
    assert Revision.from_dict({"label": 3}) is None
    assert Revision.from_dict(["v1"]) is None
    assert Revision.from_dict({"label": "y" * 300}) == Revision("y" * 200)


def test_recorded_changes_leaves_out_what_is_not_a_change() -> None:
    record = {
        "changes": [
            {"setting": "turbo", "path": "p", "before": "0", "after": "1"},
            {"setting": "half a change"},
            "text",
        ]
    }
    assert recorded_changes(record) == "turbo: 0 -> 1"
    assert recorded_changes({"changes": []}) is None
    assert recorded_changes({"changes": "all"}) is None
    assert recorded_changes(None) is None


# ------------------------------------------------------------------- /proc/cpuinfo


def test_an_arm_cpuinfo_names_its_facts_differently(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from benchrun.runner.machine import probes

    proc = tmp_path / "proc"
    proc.mkdir()
    monkeypatch.setattr(probes, "PROC", proc)
    (proc / "cpuinfo").write_text(
        "processor\t: 0\n"
        "Model\t\t: Raspberry Pi 4 Model B Rev 1.4\n"
        "Features\t: fp asimd evtstrm aes crc32 cpuid\n"
        "CPU implementer\t: 0x41\n"
        "model name\t: \n"
        "\n"
        "processor\t: 1\n"
        "Features\t: fp\n"
    )
    identity = probes.probe_cpu_identity()
    assert identity.cpu_model == "Raspberry Pi 4 Model B Rev 1.4"  # "model name" is empty
    assert identity.cpu_vendor == "0x41"
    assert identity.cpu_flags_count == 6
    assert identity.cpu_flags_notable == ("aes", "asimd")
    assert identity.virtualized is False and identity.microcode is None
    assert identity.cpu_identity_source == str(proc / "cpuinfo")
