"""Containment of a round's processes (runner/execute/containment.py) with real processes:
nothing a round starts outlives it, and a dead run's round is ended by the next run."""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchrun.runner.config.experiment import ReadingsSpec
from benchrun.runner.execute.containment import (
    Containment,
    end_leftovers,
    probe_containment,
    record_inflight,
    start_ticks,
    sweep_stale_cgroups,
)
from benchrun.runner.execute.executor import RoundSpec
from benchrun.runner.execute.local import LocalExecutor

ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
PROBE = probe_containment()
CGROUPS = PROBE.kind == "cgroup"
#: the cgroup the runners of this process make theirs in (None without cgroups)
PROBE_PARENT = PROBE.home
NO_CGROUP = f"no usable cgroup v2 here ({PROBE.why}): a setsid child escapes process groups"


@pytest.fixture
def ex() -> Iterator[LocalExecutor]:
    executor = LocalExecutor(kill_grace=0.3, drain_grace=0.3)
    yield executor
    executor.close()


def _marker() -> str:
    """A sleep duration no other process uses, to find our processes in /proc."""
    return f"{300 + (uuid.uuid4().int % 10**6) / 10**6:.6f}"


def _pids_with(arg: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if arg.encode() in cmdline:
                found.append(int(entry.name))
    return found


def _gone(arg: str, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _pids_with(arg):
            return True
        time.sleep(0.02)
    return False


def test_a_child_that_closed_its_pipes_is_killed_at_the_end_of_the_round(
    ex: LocalExecutor,
) -> None:
    mark = _marker()
    spec = RoundSpec(
        workload="w",
        argv=("sh", "-c", f"sleep {mark} >/dev/null 2>&1 &"),
        env=ENV,
        timeout=10.0,
        shell=False,
    )
    out = ex.launch(spec)
    assert out.status == "ok" and out.wall_ns < 2e9
    assert _gone(mark, within=0.5)  # gone when launch returns, not later
    assert out.extra.get("leftovers_killed") is True


@pytest.mark.skipif(not CGROUPS, reason=NO_CGROUP)
def test_a_setsid_child_is_killed_when_rounds_run_in_a_cgroup(ex: LocalExecutor) -> None:
    mark = _marker()
    spec = RoundSpec(
        workload="w",
        argv=("sh", "-c", f"setsid sleep {mark} >/dev/null 2>&1 < /dev/null &"),
        env=ENV,
        timeout=10.0,
    )
    out = ex.launch(spec)
    assert out.status == "ok"
    assert _gone(mark, within=0.5)
    assert ex.containment.kind == "cgroup"


def test_without_cgroups_the_group_is_still_killed_and_the_kind_says_so() -> None:
    executor = LocalExecutor(use_cgroup=False)
    try:
        mark = _marker()
        spec = RoundSpec(
            workload="w", argv=("sh", "-c", f"sleep {mark} >/dev/null 2>&1 &"), env=ENV, timeout=5
        )
        assert executor.launch(spec).status == "ok"
        assert _gone(mark, within=0.5)
        assert executor.containment.kind == "process group"
        assert "setsid can escape" in executor.containment.describe()
    finally:
        executor.close()


def test_the_cgroup_is_removed_when_the_executor_closes() -> None:
    executor = LocalExecutor()
    executor.launch(RoundSpec(workload="w", argv=("true",), env=ENV, timeout=5))
    cgroup = executor.containment.cgroup
    executor.close()
    if cgroup is not None:
        assert not cgroup.exists() and not cgroup.parent.exists()


def test_a_timed_out_round_with_readings_is_a_timeout(ex: LocalExecutor) -> None:
    spec = RoundSpec(
        workload="w",
        argv=("sleep", "5"),
        env=ENV,
        timeout=0.3,
        readings=ReadingsSpec(pattern=r"t=(\d+)"),
    )
    out = ex.launch(spec)
    assert out.status == "timeout" and "timed out" in (out.reason or "")


def test_a_failed_round_with_readings_keeps_its_exit_code_reason(ex: LocalExecutor) -> None:
    spec = RoundSpec(
        workload="w",
        argv=("sh", "-c", "exit 3"),
        env=ENV,
        timeout=5,
        readings=ReadingsSpec(pattern=r"t=(\d+)"),
    )
    out = ex.launch(spec)
    assert out.status == "failed" and out.reason == "exit code 3"


def test_the_inflight_record_exists_exactly_while_the_round_runs(
    ex: LocalExecutor, tmp_path: Path
) -> None:
    ex.inflight_path = tmp_path / "inflight.json"
    spec = RoundSpec(
        workload="w",
        argv=("sh", "-c", f"test -f {ex.inflight_path} && echo present"),
        env=ENV,
        timeout=5,
    )
    out = ex.launch(spec)
    assert out.stdout_tail.strip() == "present"
    assert not ex.inflight_path.exists()


def _group(mark: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["sh", "-c", f"sleep {mark} & sleep {mark} & wait"], start_new_session=True
    )


def test_end_leftovers_kills_the_recorded_group_of_a_dead_run(tmp_path: Path) -> None:
    mark = _marker()
    proc = _group(mark)
    time.sleep(0.2)
    assert len(_pids_with(mark)) == 2
    record = tmp_path / "inflight.json"
    record_inflight(record, proc.pid, None)
    note = end_leftovers(record)
    proc.wait(timeout=5)
    assert note is not None and str(proc.pid) in note
    assert _gone(mark) and not record.exists()


def test_end_leftovers_never_kills_a_recycled_pid(tmp_path: Path) -> None:
    mark = _marker()
    proc = _group(mark)
    try:
        time.sleep(0.2)
        record = tmp_path / "inflight.json"
        record_inflight(record, proc.pid, None)
        doc = record.read_text().replace(
            f'"start_ticks": {start_ticks(proc.pid)}', '"start_ticks": 1'
        )
        record.write_text(doc)  # as if the pid now belonged to another process
        assert end_leftovers(record) is None
        assert len(_pids_with(mark)) == 2 and not record.exists()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


def test_an_unreadable_record_is_dropped_with_a_note(tmp_path: Path) -> None:
    record = tmp_path / "inflight.json"
    record.write_text("{not json")
    assert "unreadable" in (end_leftovers(record) or "")
    assert not record.exists() and end_leftovers(record) is None


@pytest.mark.skipif(not CGROUPS, reason=NO_CGROUP)
def test_cgroups_of_dead_runners_are_emptied_and_removed() -> None:
    probe = Containment.create()
    assert probe.cgroup is not None
    parent = probe.cgroup.parent.parent
    probe.close()
    stale = parent / "benchrun-4194304" / "rounds"  # above pid_max's default: never alive
    stale.mkdir(parents=True)
    mark = _marker()
    proc = subprocess.Popen(["sleep", mark])
    (stale / "cgroup.procs").write_text(str(proc.pid))
    assert sweep_stale_cgroups(parent) >= 1
    proc.wait(timeout=5)
    assert proc.returncode == -signal.SIGKILL and not stale.parent.exists()


def _own_cgroup_line() -> str:
    return Path("/proc/self/cgroup").read_text().splitlines()[-1]


@pytest.mark.skipif(not CGROUPS, reason=NO_CGROUP)
def test_the_child_starts_in_the_rounds_cgroup_and_the_runner_returns_home(
    ex: LocalExecutor,
) -> None:
    home, affinity = _own_cgroup_line(), os.sched_getaffinity(0)
    spec = RoundSpec(workload="w", argv=("cat", "/proc/self/cgroup"), env=ENV, timeout=5)
    out = ex.launch(spec)
    child = out.stdout_tail.splitlines()[-1]
    assert child.startswith("0::") and child.endswith("/rounds")
    assert ex.containment.cgroup is not None and str(ex.containment.cgroup).endswith(child[3:])
    assert _own_cgroup_line() == home and os.sched_getaffinity(0) == affinity


@pytest.mark.skipif(not CGROUPS, reason=NO_CGROUP)
def test_cgroup_containment_adds_no_fork_to_the_measured_wall_time() -> None:
    """A child that enters its cgroup itself needs code between fork and exec, so CPython
    forks (copying this process's page tables: ~5 ms a round measured here) instead of
    vfork. Run back to back with process groups, the rounds must take as long."""
    ballast = bytearray(256 * 2**20)  # a runner with a big heap makes a fork obvious
    ballast[::4096] = b"x" * len(ballast[::4096])
    with_cgroup, without = LocalExecutor(), LocalExecutor(use_cgroup=False)
    try:
        spec = RoundSpec(workload="w", argv=("true",), env=ENV, timeout=5)
        extra_ms = []  # pairs run back to back: a burst of load hits both
        for _ in range(40):
            a, b = (executor.launch(spec) for executor in (with_cgroup, without))
            assert a.status == b.status == "ok"
            extra_ms.append((a.wall_ns - b.wall_ns) / 1e6)
        assert with_cgroup.containment.kind == "cgroup"
        assert statistics.median(extra_ms[5:]) < 1.0, extra_ms
    finally:
        with_cgroup.close()
        without.close()
        del ballast


def test_end_leftovers_ends_a_group_whose_leader_has_exited(tmp_path: Path) -> None:
    mark = _marker()
    leader = subprocess.Popen(
        ["sh", "-c", f"sleep {mark} >/dev/null 2>&1 & sleep {mark} >/dev/null 2>&1 & sleep 0.3"],
        start_new_session=True,
    )
    record = tmp_path / "inflight.json"
    record_inflight(record, leader.pid, None)
    leader.wait(timeout=5)  # the leader is gone and reaped; its group lives on
    assert len(_pids_with(mark)) == 2 and start_ticks(leader.pid) is None
    note = end_leftovers(record)
    assert note is not None and str(leader.pid) in note
    assert _gone(mark, within=0.5)


_DYING_RUNNER = """
import sys
from pathlib import Path
from benchrun.runner.execute.executor import RoundSpec
from benchrun.runner.execute.local import LocalExecutor
executor = LocalExecutor(use_cgroup=sys.argv[1] == "cgroup")
executor.inflight_path = Path(sys.argv[2])
executor.inflight_campaign = 7
executor.launch(RoundSpec(workload="w", argv=("sh", "-c", sys.argv[3]), env={}, timeout=60))
"""


@pytest.mark.parametrize("kind", ["process group", "cgroup"])
def test_the_round_of_a_runner_killed_with_sigkill_is_ended_from_its_record(
    kind: str, tmp_path: Path
) -> None:
    if kind == "cgroup" and not CGROUPS:
        pytest.skip(NO_CGROUP)
    mark = _marker()
    # with a cgroup, a child that left the session is caught too
    escape = "/usr/bin/setsid " if kind == "cgroup" else ""
    script = f"{escape}/bin/sleep {mark} >/dev/null 2>&1 & /bin/sleep {mark} & /bin/sleep {mark}"
    record = tmp_path / "inflight.json"
    runner = subprocess.Popen([sys.executable, "-c", _DYING_RUNNER, kind, str(record), script])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (
            len(_pids_with(mark)) == 3 and record.exists() and json.loads(record.read_text())["pid"]
        ):
            time.sleep(0.01)
        assert len(_pids_with(mark)) == 3
        doc = json.loads(record.read_text())
        assert doc["pid"] == doc["pgid"] and doc["start_ticks"] == start_ticks(doc["pid"])
        assert doc["campaign_id"] == 7 and doc["runner_pid"] == runner.pid
        runner.kill()
        runner.wait(timeout=5)
        assert len(_pids_with(mark)) == 3  # the round outlives its runner
        note = end_leftovers(record)
        assert note is not None and "of campaign 7" in note and str(doc["pid"]) in note
        assert _gone(mark, within=0.5) and not record.exists()
        if kind == "cgroup":
            assert not Path(doc["cgroup"]).parent.exists()
    finally:
        runner.kill()
        runner.wait(timeout=5)
        for pid in _pids_with(mark):  # only when the test failed: leave nothing behind
            os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not CGROUPS, reason=NO_CGROUP)
def test_killing_the_rounds_cgroup_spares_a_runner_inside_it() -> None:
    script = """
import subprocess, sys
from benchrun.runner.execute.containment import Containment, kill_cgroup
c = Containment.create()
c.enter()
child = subprocess.Popen(["sleep", "60"])
assert kill_cgroup(c.cgroup)
child.wait(timeout=5)
c.close()
print("alive", child.returncode)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["alive", str(-signal.SIGKILL)]


@pytest.mark.skipif(not CGROUPS, reason=NO_CGROUP)
def test_a_cgroup_named_for_a_live_runner_is_kept_and_one_for_a_recycled_pid_swept() -> None:
    parent = PROBE_PARENT
    assert parent is not None
    alive = os.getppid()
    live = parent / f"benchrun-{alive}-{start_ticks(alive)}"
    recycled = parent / f"benchrun-{alive}-1"  # the same pid, another start: a dead runner
    live.mkdir()
    recycled.mkdir()
    try:
        sweep_stale_cgroups(parent)
        assert live.exists() and not recycled.exists()
    finally:
        for d in (live, recycled):
            if d.exists():
                d.rmdir()


_INNER_RUNNER = """
import sys
from benchrun.runner.execute.executor import RoundSpec
from benchrun.runner.execute.local import LocalExecutor
executor = LocalExecutor()
executor.launch(RoundSpec(workload="w", argv=("sleep", sys.argv[1]), env={}, timeout=60))
"""


@pytest.mark.skipif(not CGROUPS, reason=NO_CGROUP)
def test_a_round_that_runs_a_runner_leaves_nothing_in_the_cgroups_below(
    ex: LocalExecutor,
) -> None:
    mark = _marker()
    spec = RoundSpec(
        workload="w",
        argv=(sys.executable, "-c", _INNER_RUNNER, mark),
        env=dict(os.environ),
        timeout=2.0,
    )
    out = ex.launch(spec)
    assert out.status == "timeout"
    assert _gone(mark, within=0.2)  # it ran in the inner runner's cgroup, below the round's


def test_the_pid_enters_the_record_only_while_a_round_has_run_a_while(
    ex: LocalExecutor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record naming the child's pid is written once a round has run a few
    milliseconds, while the child runs: a round that ends sooner is never timed across
    that write (0.02-0.3 ms a round here)."""
    import benchrun.runner.execute.local as local

    writes: list[tuple[int | None, bool]] = []  # (pid, the child was running)

    def spy(path: Path, pid: int | None, *args: object) -> None:
        running = pid is not None and (_stat_state(pid) or "Z") not in "ZX"
        writes.append((pid, running))
        record_inflight(path, pid, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(local, "record_inflight", spy)
    ex.inflight_path = tmp_path / "inflight.json"
    for _ in range(10):
        ex.launch(RoundSpec(workload="w", argv=("true",), env=ENV, timeout=5))
    before_spawn = [pid for pid, _ in writes if pid is None]
    with_pid = [pid for pid, _ in writes if pid is not None]
    # the pid is written only once a round has run a while: none unless the machine stalls,
    # a few on a loaded one (then the child may just have ended), never for every round
    assert len(before_spawn) == 10 and len(with_pid) < 10
    writes.clear()
    out = ex.launch(RoundSpec(workload="w", argv=("sleep", "0.1"), env=ENV, timeout=5))
    assert out.status == "ok" and not ex.inflight_path.exists()
    assert [w[0] is None for w in writes] == [True, False] and writes[1][1]


def _stat_state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2]
