"""The CPU reservation (runner/execute/reservation.py) in this process and in child
processes that hold locks: which CPUs a run takes beside others, who it names, the
hostile lock directory, and the "machine is loaded" line (runner/machine/quiet.py)."""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from benchrun.runner.errors import UserError
from benchrun.runner.execute.reservation import (
    EXIT_CPUS_BUSY,
    CpusBusy,
    Reservation,
    _lock_within,
    active_runs,
    lock_directory,
    open_lock_directory,
    register_unpinned,
    reserve,
    try_reserve,
)
from benchrun.runner.machine.quiet import (
    CPU_PRESSURE,
    cpu_pressure_avg10,
    load_note,
    loaded_threshold,
)


def fake_sysfs(tmp_path: Path, siblings: dict[int, str]) -> Path:
    """cpuN/topology/core_cpus_list files holding the given sibling lists."""
    root = tmp_path / "sysfs"
    for cpu, text in siblings.items():
        topo = root / f"cpu{cpu}" / "topology"
        topo.mkdir(parents=True)
        (topo / "core_cpus_list").write_text(text + "\n")
    return root


#: four CPUs, no SMT
FLAT4 = {0: "0", 1: "1", 2: "2", 3: "3"}
#: four CPUs on two cores: (0, 2) and (1, 3), siblings interleaved as on many Intel boxes
SMT4 = {0: "0,2", 1: "1,3", 2: "0,2", 3: "1,3"}


def _take(pin, tmp_path, siblings=FLAT4, duet=False, campaign="c"):  # type: ignore[no-untyped-def]
    return try_reserve(
        pin,
        campaign,
        duet=duet,
        directory=tmp_path / "locks",
        allowed=sorted(siblings),
        sysfs=fake_sysfs(tmp_path / f"s{time.monotonic_ns()}", siblings),
    )


# -- which CPUs ----------------------------------------------------------------------------


def test_two_runs_on_four_cpus_get_disjoint_cores_and_a_third_is_refused(tmp_path: Path) -> None:
    first = _take("auto", tmp_path)
    second = _take("auto", tmp_path)
    third = _take("auto", tmp_path)
    assert isinstance(first, Reservation) and isinstance(second, Reservation)
    # by hand: the last free core runs the workload, the first free one the runner
    assert (first.plan.workload_cpus, first.plan.runner_cpus) == ((3,), (0,))
    assert (second.plan.workload_cpus, second.plan.runner_cpus) == ((2,), (1,))
    assert isinstance(third, CpusBusy)
    assert third.busy == (0, 1, 2, 3)
    assert {h.cpus for h in third.holders} == {(0, 3), (1, 2)}
    assert all(h.pid == os.getpid() for h in third.holders)
    first.close()
    fourth = _take("auto", tmp_path)  # the first's cores are free again
    assert isinstance(fourth, Reservation)
    assert (fourth.plan.workload_cpus, fourth.plan.runner_cpus) == ((3,), (0,))
    second.close()
    fourth.close()


def test_smt_siblings_of_a_held_cpu_are_not_free(tmp_path: Path) -> None:
    held = _take([1], tmp_path, SMT4)  # workload CPU 1: its core (1, 3) and a runner core
    assert isinstance(held, Reservation)
    assert held.cpus == (0, 1, 2, 3)  # core (1,3) for the workload, core (0,2) the runner
    assert held.plan.runner_cpus == (0, 2)
    busy = _take("auto", tmp_path, SMT4)
    assert isinstance(busy, CpusBusy)
    held.close()


def test_explicit_pin_waits_for_its_cpu_not_another(tmp_path: Path) -> None:
    a = _take([3], tmp_path)
    assert isinstance(a, Reservation) and a.plan.runner_cpus == (0,)
    b = _take([3], tmp_path)
    assert isinstance(b, CpusBusy) and "CPU 3" in b.needed
    assert "CPU 0, CPU 3" not in b.line() and "pid " + str(os.getpid()) in b.line()
    c = _take([2], tmp_path)  # CPU 2 and a free runner core (1)
    assert isinstance(c, Reservation)
    assert (c.plan.workload_cpus, c.plan.runner_cpus) == ((2,), (1,))
    a.close()
    c.close()


def test_duet_takes_every_free_core(tmp_path: Path) -> None:
    other = _take([3], tmp_path)  # holds 3 and 0
    duet = _take("auto", tmp_path, duet=True)
    assert isinstance(other, Reservation) and isinstance(duet, Reservation)
    assert duet.cpus == (1, 2)
    assert set(duet.plan.workload_cpus or ()) | set(duet.plan.runner_cpus or ()) == {1, 2}
    other.close()
    duet.close()


# -- a dead holder, waiting ----------------------------------------------------------------

HOLDER = """
import sys, time
from pathlib import Path
from benchrun.runner.execute.reservation import try_reserve
r = try_reserve("auto", "held-by-child", directory=Path(sys.argv[1]), allowed=[0, 1])
print(type(r).__name__, flush=True)
time.sleep(60)
"""


def _holder(locks: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(locks)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "Reservation"
    return proc


def test_a_killed_holder_frees_its_cpus_at_once_and_is_named_while_alive(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    proc = _holder(locks)
    try:
        busy = try_reserve("auto", "me", directory=locks, allowed=[0, 1])
        assert isinstance(busy, CpusBusy)
        assert [h.pid for h in busy.holders] == [proc.pid]  # the child's pid, from Popen
        assert busy.holders[0].campaign == "held-by-child"
        assert [h.pid for h in active_runs(locks)] == [proc.pid]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    # at once: try_reserve never waits for a CPU, and nobody cleaned anything up
    got = try_reserve("auto", "me", directory=locks, allowed=[0, 1])
    assert isinstance(got, Reservation), got
    assert active_runs(locks) == []  # the dead run's record is not live (still on disk)
    got.close()


def test_reserve_waits_then_refuses_with_the_exit_code(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    proc = _holder(locks)
    lines: list[str] = []
    t0 = time.monotonic()
    try:
        with pytest.raises(UserError) as err:
            reserve("auto", "me", wait_s=1.2, on_wait=lines.append, directory=locks, allowed=[0, 1])
    finally:
        proc.kill()
        proc.wait()
    assert 1.2 <= time.monotonic() - t0 < 5
    assert err.value.exit_code == EXIT_CPUS_BUSY == 4
    assert f"pid {proc.pid}" in err.value.message and "held-by-child" in err.value.message
    assert lines and lines[0].startswith("waiting for CPUs")


# -- the hostile directory -------------------------------------------------------------------


def test_a_planted_symlink_is_neither_followed_nor_written(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    locks.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    before = victim.stat()
    (locks / "cpu1.lock").symlink_to(victim)
    (locks / "cpu0.lock").symlink_to(tmp_path / "created-through-link")  # dangling
    with pytest.raises(UserError) as err:
        try_reserve("auto", "me", directory=locks, allowed=[0, 1])
    assert "symlink" in err.value.message and "cpu0.lock" in err.value.message
    assert victim.read_text() == "precious"
    assert victim.stat().st_mtime_ns == before.st_mtime_ns
    assert not (tmp_path / "created-through-link").exists()
    (locks / "cpu0.lock").unlink()
    with pytest.raises(UserError, match="cpu1.lock"):
        try_reserve("auto", "me", directory=locks, allowed=[0, 1])
    assert victim.read_text() == "precious"


def test_a_hard_link_and_a_fifo_are_refused(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    locks.mkdir(mode=0o700)
    other = tmp_path / "other"
    other.write_text("x")
    os.link(other, locks / "cpu0.lock")
    with pytest.raises(UserError, match="cpu0.lock"):
        try_reserve("auto", "me", directory=locks, allowed=[0, 1])
    (locks / "cpu0.lock").unlink()
    os.mkfifo(locks / "cpu0.lock")
    with pytest.raises(UserError, match="cpu0.lock"):  # and does not block on the FIFO
        try_reserve("auto", "me", directory=locks, allowed=[0, 1])


def test_unsafe_directories_are_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(UserError, match="not a directory"):
        open_lock_directory(tmp_path / "link" / "cpus")
    assert not (real / "cpus").exists()
    open_w = tmp_path / "open"
    open_w.mkdir()
    os.chmod(open_w, 0o777)  # world-writable, not sticky: anyone could swap files
    with pytest.raises(UserError, match="sticky"):
        open_lock_directory(open_w)
    os.chmod(open_w, 0o1777)  # like /tmp: fine
    os.close(open_lock_directory(open_w))
    if os.geteuid() == 0:
        foreign = tmp_path / "foreign"
        foreign.mkdir()
        os.chown(foreign, 65534, 65534)
        with pytest.raises(UserError, match="uid 65534"):
            open_lock_directory(foreign)


def test_made_directories_are_private_and_records_are_bounded(tmp_path: Path) -> None:
    locks = tmp_path / "a" / "b"
    got = try_reserve("auto", "c" * 10_000 + "\x1b[31m", directory=locks, allowed=[0, 1])
    assert isinstance(got, Reservation)
    assert stat.S_IMODE(os.stat(locks).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "a").st_mode) == 0o700
    (record,) = [p for p in locks.iterdir() if p.name.startswith("run-")]
    assert json.loads(record.read_text())["pid"] == os.getpid()
    assert active_runs(locks) == []  # our own record is left out
    got.close()
    assert not record.exists()
    # a forged record, held: read at most 4 KiB, text cleaned and cut, pid only printed
    forged = locks / "run-1-forged.json"
    forged.write_text(json.dumps({"pid": 1, "campaign": "\x1b]0;owned\x07" + "z" * 3000}))
    huge = locks / "run-2-huge.json"
    huge.write_text(json.dumps({"pid": 2, "campaign": "z" * 9000}))  # cut at 4 KiB: no JSON
    fds = [os.open(p, os.O_RDONLY) for p in (forged, huge)]
    for fd in fds:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another open file description: as another process
    try:
        holder, cut = active_runs(locks)
    finally:
        for fd in fds:
            os.close(fd)
    assert holder.pid == 1 and holder.cpus == ()
    assert "\x1b" not in holder.campaign and len(holder.campaign) == 200
    assert (cut.pid, cut.campaign) == (None, "?")
    assert active_runs(locks) == []  # unlocked now: dead runs' records, ignored


def test_lock_directory_choice() -> None:
    assert lock_directory({"BENCHRUN_CPU_LOCK_DIR": "/x/y"}, euid=1000) == Path("/x/y")
    assert lock_directory({}, euid=0) == Path("/run/benchrun/cpus")
    if not Path("/run/benchrun/cpus").is_dir():
        assert lock_directory({"XDG_RUNTIME_DIR": "/run/user/7"}, euid=7) == Path(
            "/run/user/7/benchrun/cpus"
        )
        assert lock_directory({}, euid=7) == Path("/tmp/benchrun-7/cpus")


def test_pin_none_announces_itself_without_cpus(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; "
            "from benchrun.runner.execute.reservation import register_unpinned; "
            "r = register_unpinned('floating', Path(sys.argv[1])); print('ok', flush=True); "
            "time.sleep(60)",
            str(locks),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ok"
        (holder,) = active_runs(locks)
        assert (holder.pid, holder.cpus, holder.campaign) == (proc.pid, (), "floating")
        assert "not pinned" in holder.describe()
        got = try_reserve("auto", "me", directory=locks, allowed=[0, 1])  # no CPU held
        assert isinstance(got, Reservation)
        got.close()
    finally:
        proc.kill()
        proc.wait()
    (tmp_path / "file").write_text("")
    assert register_unpinned("x", tmp_path / "file" / "x") is None  # unusable: no record


# -- the "machine is loaded" line ----------------------------------------------------------


@pytest.mark.parametrize(("cpus", "limit"), [(1, 0.5), (2, 0.5), (4, 1.0), (8, 2.0), (64, 16.0)])
def test_loaded_threshold(cpus: int, limit: float) -> None:
    assert loaded_threshold(cpus) == limit


def test_load_note_names_the_load_and_the_other_runs() -> None:
    calm = lambda: 0.0  # noqa: E731  (no CPU pressure)
    quiet = load_note([], loadavg=lambda: (0.5, 0.0, 0.0), cpu_count=2, pressure=calm)
    assert quiet is None  # 0.5 is not above 0.5
    loaded = load_note([], loadavg=lambda: (1.92, 0.0, 0.0), cpu_count=2, pressure=calm)
    assert loaded == "machine is loaded: 1-min load average 1.92 on 2 CPUs (above 0.50)"
    joined = load_note(["pid 7 (x)"], loadavg=lambda: (0.1, 0.0, 0.0), cpu_count=8, pressure=calm)
    assert joined == "machine is loaded: other benchrun runs: pid 7 (x)"
    waited = load_note([], loadavg=lambda: (0.1, 0.0, 0.0), cpu_count=2, pressure=lambda: 35.2)
    assert waited == "machine is loaded: tasks waited for a CPU 35 % of the last 10 s"
    at = load_note([], loadavg=lambda: (0.1, 0.0, 0.0), cpu_count=2, pressure=lambda: 10.0)
    assert at is None  # 10 % is not above PRESSURE_NOTED


def test_cpu_pressure_reads_the_some_line_of_psi(tmp_path: Path) -> None:
    """The format of the kernel's accounting/psi.rst: ``some`` and ``full`` lines of
    avg10/avg60/avg300 percentages and a total in microseconds."""
    psi = tmp_path / "cpu"
    psi.write_text(
        "some avg10=12.50 avg60=3.04 avg300=0.71 total=5803216\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    )
    assert cpu_pressure_avg10(str(psi)) == 12.5
    psi.write_text("full avg10=40.00 avg60=0.00 avg300=0.00 total=0\n")  # no some line
    assert cpu_pressure_avg10(str(psi)) is None
    psi.write_text("some avg10=nan avg60=0 avg300=0 total=0\n")
    assert cpu_pressure_avg10(str(psi)) is None
    psi.write_text("some avg10=250.0 avg60=0 avg300=0 total=0\n")  # not a percentage
    assert cpu_pressure_avg10(str(psi)) is None
    assert cpu_pressure_avg10(str(tmp_path / "missing")) is None  # a kernel without PSI
    if Path(CPU_PRESSURE).exists():  # this machine's, when it has PSI: a percentage
        value = cpu_pressure_avg10()
        assert value is not None and 0.0 <= value <= 100.0


RACER = """
import sys, time
from pathlib import Path
from benchrun.runner.execute.reservation import Reservation, try_reserve
start = float(sys.argv[2])
while time.time() < start:
    pass
r = try_reserve("auto", "racer", directory=Path(sys.argv[1]), allowed=[0, 1, 2, 3])
print(",".join(map(str, r.cpus)) if isinstance(r, Reservation) else "busy", flush=True)
time.sleep(1.5)
"""


def test_runs_started_at_the_same_moment_share_out_the_cores(tmp_path: Path) -> None:
    """Six processes choose at the same instant among four CPUs (unknown topology here:
    each CPU a core): exactly two get a pair, disjoint; the others are refused. (On this
    2-CPU VM the racers rarely interleave inside the choice; the next test shows the
    choice is serialised.)"""
    locks = tmp_path / "locks"
    os.close(open_lock_directory(locks))
    start = time.time() + 1.0
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(locks), repr(start)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    said = [p.communicate(timeout=30)[0].strip() for p in procs]
    got = [s for s in said if s != "busy"]
    assert len(got) == 2, said
    cpus = [set(map(int, s.split(","))) for s in got]
    assert cpus[0].isdisjoint(cpus[1]) and cpus[0] | cpus[1] == {0, 1, 2, 3}


def test_choosing_is_serialised_and_a_stuck_choosing_lock_is_named(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    os.close(open_lock_directory(locks))
    fd = os.open(locks / "choose.lock", os.O_RDONLY | os.O_CREAT, 0o444)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a run in the middle of its choice
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(locks)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        # it waits for the choice in progress: nothing said within 1.5 s ...
        assert select.select([proc.stdout], [], [], 1.5)[0] == []
        fcntl.flock(fd, fcntl.LOCK_UN)
        assert proc.stdout.readline().strip() == "Reservation"  # ... and chooses after it
        fcntl.flock(fd, fcntl.LOCK_EX)
        other = os.open(locks / "choose.lock", os.O_RDONLY)
        try:
            with pytest.raises(UserError, match="choose.lock has been locked") as err:
                _lock_within(other, locks / "choose.lock", 0.3)
        finally:
            os.close(other)
        assert err.value.exit_code == EXIT_CPUS_BUSY
    finally:
        os.close(fd)
        proc.kill()
        proc.wait()


RUNUSER = Path("/usr/sbin/runuser")
SYSTEM_PYTHON = Path("/usr/bin/python3")


@pytest.mark.skipif(
    os.geteuid() != 0 or not RUNUSER.exists() or not SYSTEM_PYTHON.exists(),
    reason="needs root, runuser and /usr/bin/python3 to run as another user",
)
def test_runs_of_two_users_meet_in_a_sticky_common_directory() -> None:
    """As in /run/benchrun/cpus: root's run holds the CPUs of a sticky world-writable
    directory; user nobody's run (a copy of the package it can read) is refused naming
    root's run, then takes them once root's run ends, through the lock files root made."""
    import shutil
    import tempfile

    import benchrun.runner as package

    tmp_path = Path(tempfile.mkdtemp(prefix="benchrun-users-"))  # pytest's is 0700
    try:
        _two_users(tmp_path, shutil.copytree, Path(package.__file__).parent)
    finally:
        shutil.rmtree(tmp_path)


def _two_users(tmp_path: Path, copytree: Any, source: Path) -> None:
    common = tmp_path / "common"
    common.mkdir()
    os.chmod(common, 0o1777)
    os.chmod(tmp_path, 0o755)
    copy = tmp_path / "pkg" / "benchrun" / "runner"
    copytree(source, copy)
    for root, dirs, files in os.walk(tmp_path / "pkg"):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755)
    os.chmod(tmp_path / "pkg", 0o755)
    code = (
        "from pathlib import Path; from benchrun.runner.execute.reservation import "
        f"try_reserve; r = try_reserve('auto', 'nobody-campaign', directory=Path('{common}'), "
        "allowed=[0, 1]); print(type(r).__name__, getattr(r, 'line', lambda: '')())"
    )

    def as_nobody() -> str:
        done = subprocess.run(
            [str(RUNUSER), "-u", "nobody", "--", str(SYSTEM_PYTHON), "-c", code],
            capture_output=True,
            text=True,
            env={"PYTHONPATH": str(tmp_path / "pkg"), "PATH": "/usr/bin:/bin"},
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    held = try_reserve("auto", "root-campaign", directory=common, allowed=[0, 1])
    assert isinstance(held, Reservation)
    try:
        refused = as_nobody()
    finally:
        held.close()
    assert refused.startswith("CpusBusy ")
    assert f"pid {os.getpid()} (user root, campaign root-campaign, CPUs 0-1" in refused
    assert as_nobody() == "Reservation"
    assert {p.stat().st_uid for p in common.glob("cpu*.lock")} == {0}


def test_a_run_record_of_the_wrong_shape_reads_as_unknown() -> None:
    # another user may write the records: a field of another type is shown as unknown
    from benchrun.runner.execute import reservation

    uid = os.getuid()
    odd = reservation._holder_from(
        {"pid": True, "campaign": 5, "cpus": "0-3", "started": "now"}, uid
    )
    assert odd is not None
    assert (odd.pid, odd.campaign, odd.cpus, odd.started) == (None, "?", (), None)
    fine = reservation._holder_from(
        {"pid": 12, "campaign": "c\x1b", "cpus": [3, 1, -1, 70000, "2"], "started": 5}, uid
    )
    assert fine is not None
    assert (fine.pid, fine.campaign, fine.cpus, fine.started) == (12, "c?", (1, 3), 5.0)
    assert reservation._holder_from([1], uid) is None
