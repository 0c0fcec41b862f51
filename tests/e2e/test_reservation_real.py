"""Two real ``benchrun run`` on this machine never time rounds on a shared CPU at the same
time (issue 27, docs/reservation.md): the second one refuses with one line naming the
first, or waits for it; ``pin: none`` warns. The rounds' start times, walls and CPUs are
read back from both stores with plain sqlite3."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_util import benchrun_argv, cli, query, rounds_stored, write_experiment

EXPERIMENT = """\
name: {name}
output: out
settings:
  rounds: {rounds}
  warmup_rounds: 0
  min_round_time: 0
  pin: {pin}
workloads:
  - name: s
    command: [sleep, "{sleep}"]
"""

pytestmark = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs (runner and workload)"
)


def _start(cwd: Path, *args: str, locks: Path, quiet: bool = True) -> subprocess.Popen[str]:
    env = {**os.environ, "BENCHRUN_CPU_LOCK_DIR": str(locks)}
    return subprocess.Popen(
        [*benchrun_argv(), "run", *args, *(["-q"] if quiet else [])],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def _intervals(db: Path) -> list[tuple[float, float, frozenset[int]]]:
    """(start, end, CPUs) of every stored round, from the store itself."""
    rows = query(db, "SELECT started_at, wall_ns, cpus FROM round")
    return [
        (start, start + wall / 1e9, frozenset(int(c) for c in (cpus or "").split(",") if c))
        for start, wall, cpus in rows
    ]


def _shared(a: Path, b: Path) -> int:
    """Pairs of rounds of the two stores timed at the same time on a common CPU."""
    return sum(
        1
        for s1, e1, c1 in _intervals(a)
        for s2, e2, c2 in _intervals(b)
        if c1 & c2 and s1 < e2 and s2 < e1
    )


def _two_runs(
    tmp_path: Path, pin: str, *, second: tuple[str, ...], same_locks: bool = True
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str], Path, Path]:
    """Run A (8 rounds of 0.4 s) and B (4 rounds, with ``second`` options) 1.5 s later, or
    once A has stored its first round if that takes longer (a loaded machine: B must find
    A measuring, and B's own start-up of 1-3 s still leaves A rounds to go)."""
    for name, rounds in (("a", 8), ("b", 4)):
        write_experiment(
            tmp_path,
            EXPERIMENT.format(name=name, rounds=rounds, pin=pin, sleep=0.4),
            f"{name}.yaml",
        )
    a = _start(tmp_path, "a.yaml", locks=tmp_path / "locks")
    time.sleep(1.5)
    _first_round(tmp_path / "out/a/benchrun.db", a)
    b = _start(tmp_path, "b.yaml", *second, locks=tmp_path / ("locks" if same_locks else "own"))
    outs = []
    for proc in (a, b):
        out, err = proc.communicate(timeout=60)
        outs.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return outs[0], outs[1], tmp_path / "out/a/benchrun.db", tmp_path / "out/b/benchrun.db"


def _first_round(db: Path, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    """Wait until ``db`` holds a round (or ``proc`` ended)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if rounds_stored(db) >= 1:
            return
        time.sleep(0.05)


def test_without_the_reservation_the_check_sees_shared_rounds(tmp_path: Path) -> None:
    """The control: with separate lock directories (as before issue 27) two runs pinned to
    CPU 1 time rounds there together, and the overlap check counts them."""
    ra, rb, da, db = _two_runs(tmp_path, "[1]", second=(), same_locks=False)
    assert ra.returncode == 0 and rb.returncode == 0, (ra.stderr, rb.stderr)
    assert _shared(da, db) > 0


def test_the_second_run_refuses_with_one_line_naming_the_first(tmp_path: Path) -> None:
    ra, rb, da, db = _two_runs(tmp_path, "auto", second=())
    assert ra.returncode == 0, ra.stderr
    assert rb.returncode == 4, rb.stderr
    (line,) = rb.stderr.strip().splitlines()
    assert line.startswith("benchrun: error: ")
    assert f"pid {_pid_of(da)} (user " in line
    assert str(tmp_path / "out" / "a") in line and "CPUs 0-1" in line
    assert "--wait-for-cpus" in line and "Traceback" not in rb.stderr
    assert rounds_stored(db) == 0


def _pid_of(db: Path) -> str:
    """The pid that ran the campaign of ``db``: the campaign lock file beside it holds it
    (written by runner/campaign/session.py, not by the reservation)."""
    return (db.parent / ".benchrun.lock").read_text().strip()


def test_the_second_run_waits_and_never_shares_a_cpu_in_time(tmp_path: Path) -> None:
    ra, rb, da, db = _two_runs(tmp_path, "auto", second=("--wait-for-cpus", "60s"))
    assert ra.returncode == 0 and rb.returncode == 0, (ra.stderr, rb.stderr)
    assert len(_intervals(da)) == 8 and len(_intervals(db)) == 4
    assert _shared(da, db) == 0
    assert "waiting for CPUs" in rb.stderr and "CPUs free after" not in rb.stderr  # -q
    assert min(s for s, _, _ in _intervals(db)) >= max(e for _, e, _ in _intervals(da))
    assert f"pid {_pid_of(da)}" in rb.stderr


@contextlib.contextmanager
def _while_a_holds_the_cpus(tmp_path: Path, b_pin: str, b_sleep: float) -> Iterator[int]:
    """Run A (20 pinned rounds of 0.3 s) until its first round is stored, write B's
    experiment (``b.yaml``: 2 rounds with ``b_pin``), yield A's pid, then kill A."""
    write_experiment(tmp_path, EXPERIMENT.format(name="a", rounds=20, pin="auto", sleep=0.3))
    write_experiment(
        tmp_path, EXPERIMENT.format(name="b", rounds=2, pin=b_pin, sleep=b_sleep), "b.yaml"
    )
    a = _start(tmp_path, "exp.yaml", locks=tmp_path / "locks")
    try:
        time.sleep(1.5)
        _first_round(tmp_path / "out/a/benchrun.db", a)  # A measures: CPUs held
        yield a.pid
    finally:
        a.kill()
        a.communicate()


def test_wait_for_cpus_gives_up_after_its_duration(tmp_path: Path) -> None:
    with _while_a_holds_the_cpus(tmp_path, "auto", 0.1):
        t0 = time.monotonic()
        b = _start(tmp_path, "b.yaml", "--wait-for-cpus", "2s", locks=tmp_path / "locks")
        _, err = b.communicate(timeout=30)
        took = time.monotonic() - t0
    assert b.returncode == 4, err
    assert 2.0 <= took < 15
    assert "CPUs still reserved after waiting 2 s" in err.strip().splitlines()[-1]
    assert err.strip().splitlines()[0].startswith("benchrun: waiting for CPUs (at most 2 s")


def test_pin_none_warns_when_another_run_is_active(tmp_path: Path) -> None:
    with _while_a_holds_the_cpus(tmp_path, "none", 0.05) as a_pid:
        b = _start(tmp_path, "b.yaml", locks=tmp_path / "locks", quiet=False)
        _, err = b.communicate(timeout=30)
    assert b.returncode == 0, err
    warning = next(line for line in err.splitlines() if "warning: pin: none" in line)
    assert f"pid {a_pid}" in warning and "CPUs 0-1" in warning
    (loaded,) = [line for line in err.splitlines() if "machine is loaded" in line]
    assert f"other benchrun runs: pid {a_pid} (" in loaded
    events = query(
        tmp_path / "out/b/benchrun.db", "SELECT message FROM event WHERE kind = 'machine-load'"
    )
    assert sorted(m for (m,) in events) == sorted([warning[len("benchrun: ") :], loaded[10:]])


def test_a_sigkilled_runner_leaves_its_cpus_free(tmp_path: Path) -> None:
    write_experiment(tmp_path, EXPERIMENT.format(name="a", rounds=50, pin="auto", sleep=0.2))
    write_experiment(
        tmp_path, EXPERIMENT.format(name="b", rounds=2, pin="auto", sleep=0.05), "b.yaml"
    )
    a = _start(tmp_path, "exp.yaml", locks=tmp_path / "locks")
    db = tmp_path / "out/a/benchrun.db"
    _first_round(db, a, timeout=30)  # until it measures (its CPUs reserved)
    a.kill()  # SIGKILL: no cleanup of its own
    a.communicate()
    b = _start(tmp_path, "b.yaml", locks=tmp_path / "locks")  # no --wait-for-cpus
    _, err = b.communicate(timeout=30)
    assert b.returncode == 0, err
    assert "reserved" not in err


def test_the_option_without_a_value_before_the_experiment(tmp_path: Path) -> None:
    write_experiment(tmp_path, EXPERIMENT.format(name="a", rounds=1, pin="auto", sleep=0.01))
    p = subprocess.run(
        [*benchrun_argv(), "run", "--wait-for-cpus", "exp.yaml", "-q"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "BENCHRUN_CPU_LOCK_DIR": str(tmp_path / "locks")},
    )
    assert p.returncode == 0, p.stderr
    bad = subprocess.run(
        [*benchrun_argv(), "run", "exp.yaml", "--wait-for-cpus", "soon", "-q"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "BENCHRUN_CPU_LOCK_DIR": str(tmp_path / "locks")},
    )
    assert bad.returncode == 2 and bad.stderr.startswith("benchrun: error: --wait-for-cpus soon")


def test_system_lists_who_holds_which_cpu(tmp_path: Path) -> None:
    write_experiment(tmp_path, EXPERIMENT.format(name="a", rounds=20, pin="[1]", sleep=0.3))
    locks = tmp_path / "locks"
    a = _start(tmp_path, "exp.yaml", locks=locks)
    try:
        time.sleep(1.5)
        _first_round(tmp_path / "out/a/benchrun.db", a)  # A measures: CPUs held
        shown = cli("system", "--json", env={"BENCHRUN_CPU_LOCK_DIR": str(locks)})
        text = cli("system", env={"BENCHRUN_CPU_LOCK_DIR": str(locks)})
    finally:
        a.kill()
        a.communicate()
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)["cpu_reservations"]
    assert doc["directory"] == str(locks)
    (run,) = doc["runs"]
    # pin: [1] on two CPUs: CPU 1 for the workload, CPU 0 for the runner
    assert (run["pid"], run["cpus"], run["campaign"]) == (a.pid, [0, 1], str(tmp_path / "out/a"))
    assert f"pid {a.pid} (" in text.stdout and "CPUs 0-1" in text.stdout


def test_an_explicit_pin_that_is_taken_waits_for_the_setting_then_refuses(
    tmp_path: Path,
) -> None:
    from benchrun.runner.execute.reservation import Reservation, try_reserve

    locks = tmp_path / "locks"
    held = try_reserve([1], "held-here", directory=locks, allowed=[0, 1])  # this process
    assert isinstance(held, Reservation)
    write_experiment(
        tmp_path,
        EXPERIMENT.format(name="a", rounds=1, pin="[1]", sleep=0.01),
    )
    try:
        t0 = time.monotonic()
        b = _start(tmp_path, "exp.yaml", "--set", "wait_for_cpus=1s", locks=locks)
        _, err = b.communicate(timeout=30)
        took = time.monotonic() - t0
    finally:
        held.close()
    assert b.returncode == 4, err
    assert took >= 1.0
    last = err.strip().splitlines()[-1]
    assert last.startswith("benchrun: error: CPUs still reserved after waiting 1 s: ")
    assert "needs CPU 1 (pin: [1])" in last and f"pid {os.getpid()} (" in last
    assert "held-here" in last
