"""The process-watch loop (runner/execute/watch.py) with several real children at once.

References are outside the loop: the exit statuses the kernel reports (``os.WEXITSTATUS``,
``os.WTERMSIG``), the bytes the children print, and /proc for whether a process is gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from benchrun.runner.execute.watch import Child, Stream, Watched, exit_pipe, watch

ExitFd = Callable[[int], tuple[int, list[int]]]


def _pidfd(pid: int) -> tuple[int, list[int]]:
    return os.pidfd_open(pid), []


@pytest.fixture(params=["pidfd", "waitid-thread"])
def exit_fd(request: pytest.FixtureRequest) -> ExitFd:
    if request.param == "pidfd":
        if not hasattr(os, "pidfd_open"):
            pytest.skip("no pidfd_open")
        return _pidfd
    return exit_pipe


@pytest.fixture
def wake() -> Iterator[tuple[int, int]]:
    r, w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    yield r, w
    os.close(r)
    os.close(w)


def _start(script: str, timeout: float) -> tuple[Child, list[int]]:
    """A session leader running ``sh -c script``, its pipes' read ends in a Child; the
    write ends are closed here (the child holds its own)."""
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    proc = subprocess.Popen(
        ("/bin/sh", "-c", script),
        stdin=subprocess.DEVNULL,
        stdout=out_w,
        stderr=err_w,
        start_new_session=True,
    )
    proc.returncode = -1  # reaped by the loop: Popen must never wait on it
    os.close(out_w)
    os.close(err_w)
    streams = {out_r: Stream(4096, None), err_r: Stream(4096, None)}
    deadline = time.monotonic() + timeout
    return Child(proc.pid, streams, deadline, Watched()), [out_r, err_r]


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def _alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (its state from /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in (b"Z", b"X")


def test_three_children_each_by_its_own_rules(exit_fd: ExitFd, wake: tuple[int, int]) -> None:
    """One loop: a child exiting 3 with output, one timed out (SIGTERM), one ignoring
    SIGTERM (SIGKILL after kill_grace), each with its own outcome."""
    ok, fds_ok = _start("printf hello; printf oops >&2; exit 3", timeout=60)
    slow, fds_slow = _start("exec sleep 60", timeout=0.3)
    stubborn, fds_stubborn = _start("trap '' TERM; while :; do sleep 0.05; done", timeout=0.3)
    try:
        watch(
            (ok, slow, stubborn),
            wake_r=wake[0],
            take_interrupt=lambda: False,
            kill_grace=0.3,
            drain_grace=1.0,
            exit_fd=exit_fd,
        )
    finally:
        _close(fds_ok + fds_slow + fds_stubborn)
    status = ok.watched.wait_status
    assert status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 3
    assert ok.watched.cause is None
    assert ok.streams[fds_ok[0]].tail_text() == "hello"
    assert ok.streams[fds_ok[1]].tail_text() == "oops"
    status = slow.watched.wait_status
    assert status is not None and os.WIFSIGNALED(status)
    assert os.WTERMSIG(status) == signal.SIGTERM and slow.watched.cause == "timeout"
    status = stubborn.watched.wait_status
    assert status is not None and os.WIFSIGNALED(status)
    assert os.WTERMSIG(status) == signal.SIGKILL and stubborn.watched.cause == "timeout"
    for child in (ok, slow, stubborn):
        assert child.watched.end_ns > 0 and child.watched.rusage is not None
        assert child.exit_fd == -1  # closed by the loop
        assert not _alive(child.pid)


def test_an_interrupt_ends_every_running_child_and_only_those(
    exit_fd: ExitFd, wake: tuple[int, int]
) -> None:
    """An interrupt taken while two children run ends both "interrupted" (SIGTERM), while
    a child that had already exited keeps its own exit status and no cause."""
    quick, fds_quick = _start("exit 7", timeout=60)
    a, fds_a = _start("exec sleep 60", timeout=60)
    b, fds_b = _start("exec sleep 60", timeout=60)
    pending = threading.Event()
    taken: list[float] = []

    def take() -> bool:
        if pending.is_set():
            pending.clear()
            taken.append(time.monotonic())
            return True
        return False

    def interrupt_later() -> None:
        time.sleep(0.5)
        pending.set()
        os.write(wake[1], b"!")

    thread = threading.Thread(target=interrupt_later)
    thread.start()
    try:
        watch(
            (quick, a, b),
            wake_r=wake[0],
            take_interrupt=take,
            kill_grace=0.5,
            drain_grace=1.0,
            exit_fd=exit_fd,
        )
    finally:
        thread.join()
        _close(fds_quick + fds_a + fds_b)
    assert len(taken) == 1  # taken once, for both children
    status = quick.watched.wait_status
    assert status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 7
    assert quick.watched.cause is None
    for child in (a, b):
        status = child.watched.wait_status
        assert status is not None and os.WIFSIGNALED(status)
        assert os.WTERMSIG(status) == signal.SIGTERM
        assert child.watched.cause == "interrupted"


def test_descendants_holding_the_pipes_are_killed_after_the_drain_grace(
    exit_fd: ExitFd, wake: tuple[int, int]
) -> None:
    """A child that exits 0 leaving a background process holding its stdout: after
    drain_grace the group is killed (the descendant is gone), the exit status stays the
    child's own; a sibling child in the same loop is not affected."""
    leaver, fds_leaver = _start("sleep 60 & echo $!; exit 0", timeout=60)
    plain, fds_plain = _start("echo plain", timeout=60)
    try:
        watch(
            (leaver, plain),
            wake_r=wake[0],
            take_interrupt=lambda: False,
            kill_grace=0.3,
            drain_grace=0.3,
            exit_fd=exit_fd,
        )
    finally:
        _close(fds_leaver + fds_plain)
    status = leaver.watched.wait_status
    assert status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert leaver.watched.extra.get("descendants_killed") is True
    descendant = int(leaver.streams[fds_leaver[0]].tail_text().split()[0])
    deadline = time.monotonic() + 5
    while _alive(descendant) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _alive(descendant)
    assert plain.streams[fds_plain[0]].tail_text() == "plain\n"
    assert "descendants_killed" not in plain.watched.extra
