"""A duet's two sides in the shared watch loop (runner/execute/watch.py): an interrupt,
a timeout of one side, descendants left behind. Real processes; the references are the
kernel's exit statuses (a side ended by SIGTERM reports -15) and /proc."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from benchrun.runner.execute.duet import local_duet
from benchrun.runner.execute.executor import RoundSpec
from benchrun.runner.execute.local import LocalExecutor

ENV = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}


@pytest.fixture
def ex() -> Iterator[LocalExecutor]:
    executor = LocalExecutor(kill_grace=0.3, drain_grace=0.3, use_cgroup=False)
    yield executor
    executor.close()


def _side(script: str, timeout: float = 60.0) -> RoundSpec:
    return RoundSpec(workload="w", argv=(script,), shell=True, env=ENV, timeout=timeout)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in (b"Z", b"X")


def test_an_interrupt_ends_both_sides(ex: LocalExecutor) -> None:
    """Ctrl-C during a duet: both sides end "interrupted", each killed by SIGTERM (the
    kernel's status), and the interrupt is taken (the next round is not refused)."""
    timer = threading.Timer(2.0, ex.interrupt)
    timer.start()
    try:
        a, b = local_duet(ex, _side("exec sleep 60"), _side("exec sleep 60"))
    finally:
        timer.cancel()
    for out in (a, b):
        assert out.status == "interrupted", out.reason
        assert out.exit_code == -signal.SIGTERM
    after = ex.launch(_side("exit 0"))
    assert after.status == "ok"


def test_one_side_times_out_while_the_other_finishes(ex: LocalExecutor) -> None:
    """Each side has its own timeout: the slow side is killed at its own, the quick side
    exits with its own code and output."""
    started = time.monotonic()
    quick, slow = local_duet(ex, _side("echo quick; exit 4"), _side("exec sleep 60", timeout=0.5))
    assert time.monotonic() - started < 30  # not the 60 s of sleep
    assert quick.status == "failed" and quick.exit_code == 4
    assert quick.stdout_tail == "quick\n"
    assert slow.status == "timeout" and slow.exit_code == -signal.SIGTERM


def test_a_descendant_holding_a_sides_pipe_is_killed(ex: LocalExecutor) -> None:
    """A side that exits 0 leaving a background process on its stdout: the process is
    killed after drain_grace and the side says so; the other side is untouched."""
    leaver, plain = local_duet(ex, _side("sleep 60 & echo $!; exit 0"), _side("echo plain"))
    assert leaver.status == "ok" and plain.status == "ok"
    assert leaver.extra.get("descendants_killed") is True
    assert "descendants_killed" not in plain.extra
    descendant = int(leaver.stdout_tail.split()[0])
    deadline = time.monotonic() + 5
    while _alive(descendant) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _alive(descendant)
    assert plain.stdout_tail == "plain\n"
