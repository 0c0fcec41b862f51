"""The in-flight record names processes to kill, so it is trusted only when nobody else
could have written it, and its cgroup only when a dead benchrun runner made it (issue 29,
item 1; runner/execute/containment.py ``end_leftovers``, docs/security.md). Real processes,
real cgroups: each test checks that the process the record names is still alive."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchrun.runner.execute.containment import end_leftovers, probe_containment, start_ticks
from tests.other_user import needs_root

BOOT_ID = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
PROBE = probe_containment()
CGROUPS = PROBE.kind == "cgroup"


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[bytes]]:
    """A process group of ours that no record should be able to end."""
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait(timeout=5)


def _record(pid: int | None, cgroup: str | None = None) -> str:
    return json.dumps(
        {
            "pid": pid,
            "pgid": pid,
            "start_ticks": None if pid is None else start_ticks(pid),
            "boot_id": BOOT_ID,
            "cgroup": cgroup,
            "campaign_id": 1,
            "runner_pid": 4194304,
        }
    )


def test_a_record_others_may_write_names_nothing_to_kill(
    tmp_path: Path, victim: subprocess.Popen[bytes]
) -> None:
    record = tmp_path / "inflight.json"
    record.write_text(_record(victim.pid))
    record.chmod(0o666)  # ours, but anyone could have rewritten it
    note = end_leftovers(record)
    assert victim.poll() is None
    assert note is not None and "left the in-flight record" in note and "mode 0666" in note
    assert record.exists()  # left alone, unread


def test_a_record_reached_through_a_symlink_names_nothing_to_kill(
    tmp_path: Path, victim: subprocess.Popen[bytes]
) -> None:
    real = tmp_path / "elsewhere.json"
    real.write_text(_record(victim.pid))
    record = tmp_path / "inflight.json"
    record.symlink_to(real)
    note = end_leftovers(record)
    assert victim.poll() is None
    assert note is not None and "a symbolic link" in note


def test_a_record_with_a_second_hard_link_names_nothing_to_kill(
    tmp_path: Path, victim: subprocess.Popen[bytes]
) -> None:
    real = tmp_path / "elsewhere.json"
    real.write_text(_record(victim.pid))
    record = tmp_path / "inflight.json"
    os.link(real, record)
    note = end_leftovers(record)
    assert victim.poll() is None
    assert note is not None and "2 hard links" in note


_SELF_RECORD = """
import json, os, sys
from pathlib import Path
from benchrun.runner.execute.containment import end_leftovers, start_ticks
record = Path(sys.argv[1])
me = os.getpgrp()
record.write_text(json.dumps({"pid": me, "start_ticks": start_ticks(me),
    "boot_id": Path("/proc/sys/kernel/random/boot_id").read_text().strip()}))
print(end_leftovers(record), flush=True)
print("survived", flush=True)
"""


def test_a_record_naming_the_runners_own_group_does_not_kill_the_runner(tmp_path: Path) -> None:
    # the runner leads its own process group (as under a shell); a record naming it
    done = subprocess.run(
        [sys.executable, "-c", _SELF_RECORD, str(tmp_path / "inflight.json")],
        capture_output=True,
        text=True,
        start_new_session=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"ignored an unreadable in-flight record {tmp_path / 'inflight.json'}",
        "survived",
    ]


@pytest.fixture
def victim_cgroup() -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    """A cgroup that is not benchrun's (beside the runners' ones) with a process in it."""
    assert PROBE.home is not None
    cgroup = PROBE.home / f"not-benchrun-{uuid.uuid4().hex[:12]}"
    cgroup.mkdir()
    proc = subprocess.Popen(["sleep", "300"])
    try:
        (cgroup / "cgroup.procs").write_text(str(proc.pid))
        yield cgroup, proc
    finally:
        proc.kill()
        proc.wait(timeout=5)
        cgroup.rmdir()


@needs_root
@pytest.mark.skipif(not CGROUPS, reason=f"no usable cgroup v2 here ({PROBE.why})")
def test_a_cgroup_reached_through_a_symlink_is_left_alone(
    tmp_path: Path, victim_cgroup: tuple[Path, subprocess.Popen[bytes]]
) -> None:
    # probe 1: "cgroup" pointing through a symlink to another cgroup emptied that cgroup
    cgroup, proc = victim_cgroup
    fake = tmp_path / "benchrun-4194304-1"  # a dead runner's name (pid above pid_max)
    fake.mkdir()
    (fake / "rounds").symlink_to(cgroup)
    record = tmp_path / "inflight.json"
    record.write_text(_record(None, str(fake / "rounds")))
    note = end_leftovers(record)
    assert proc.poll() is None, "the cgroup behind the symlink was emptied"
    assert note is not None and "left the cgroup" in note
    assert (cgroup / "cgroup.procs").read_text().split() == [str(proc.pid)]


@needs_root
@pytest.mark.skipif(not CGROUPS, reason=f"no usable cgroup v2 here ({PROBE.why})")
def test_a_cgroup_benchrun_did_not_make_is_left_alone(
    tmp_path: Path, victim_cgroup: tuple[Path, subprocess.Popen[bytes]]
) -> None:
    cgroup, proc = victim_cgroup
    nested = cgroup / "benchrun-4194304-1" / "rounds"
    for recorded in (str(cgroup), f"{cgroup}/x/../{cgroup.name}", str(nested)):
        record = tmp_path / "inflight.json"
        record.write_text(_record(None, recorded))
        end_leftovers(record)
        assert proc.poll() is None, recorded
    assert (cgroup / "cgroup.procs").read_text().split() == [str(proc.pid)]


@needs_root
@pytest.mark.skipif(not CGROUPS, reason=f"no usable cgroup v2 here ({PROBE.why})")
def test_a_dead_runners_own_cgroup_is_still_emptied(tmp_path: Path) -> None:
    # what the record is for: the rounds' cgroup of a runner killed with SIGKILL (nested
    # in a cgroup of this test's, so that no other run's sweep of stale cgroups takes it)
    assert PROBE.home is not None
    holder = PROBE.home / f"not-benchrun-{uuid.uuid4().hex[:12]}"
    rounds = holder / "benchrun-4194304-1" / "rounds"
    rounds.mkdir(parents=True)
    proc = subprocess.Popen(["sleep", "300"])
    try:
        (rounds / "cgroup.procs").write_text(str(proc.pid))
        record = tmp_path / "inflight.json"
        record.write_text(_record(None, str(rounds)))
        note = end_leftovers(record)
        assert proc.wait(timeout=10) == -signal.SIGKILL
        assert note is not None and note.startswith("ended the processes of a round")
        assert not rounds.parent.exists()
    finally:
        proc.kill()
        proc.wait(timeout=5)
        for d in (rounds, rounds.parent, holder):
            if d.exists():
                d.rmdir()
