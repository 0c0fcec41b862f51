"""The process-watch loop: N running children watched by one ``poll`` loop until reaped.

One loop serves a round of :class:`runner.execute.local.LocalExecutor` (one child) and a
duet of :mod:`runner.execute.duet` (two children released together). Each child is a
session leader (its pid is its process group id) whose stdout and stderr are pipes read
here; its exit is seen through a file descriptor that becomes readable when it has exited
(a pidfd, or :func:`exit_pipe` where the kernel has none), and it is reaped with
``os.wait4`` (exit status, CPU times, max RSS).

Per child, the rules are those of a round (docs/loop.md): on its timeout or an interrupt
its process group gets SIGTERM, then SIGKILL after ``kill_grace``; once it has exited, a
killed child's group gets SIGKILL before the reap (the zombie keeps the group id from being
reused), so no descendant of a killed round survives; after a normal exit, descendants
holding the pipes open get ``drain_grace`` before the group is killed and reading stops.
"""

from __future__ import annotations

import math
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from benchrun.runner.execute.contention import SOURCE_SCHEDSTAT, read_run_delay_ns
from benchrun.runner.execute.executor import CounterReading

#: bytes read from a pipe at once (a Linux pipe holds 64 KiB by default)
READ_CHUNK = 65536
#: after the process group got SIGKILL, how long to keep reading pipes (s)
AFTER_KILL_READ = 0.2
POLL_IN = select.POLLIN | select.POLLHUP | select.POLLERR


class Stream:
    """The bytes read from one pipe: the last ``limit`` bytes, and everything if asked.

    ``whole`` keeps every chunk while the total stays within ``whole_limit`` (for parsing
    readings); past it ``whole`` is dropped and ``overflow`` set. The tail buffer is trimmed
    when it grows past twice the limit, so memory stays O(limit) for a chatty child.
    """

    __slots__ = ("limit", "tail", "whole", "whole_limit", "overflow", "total")

    def __init__(self, limit: int, whole_limit: int | None) -> None:
        self.limit = max(0, limit)
        self.tail = bytearray()
        self.whole: list[bytes] | None = [] if whole_limit is not None else None
        self.whole_limit = whole_limit or 0
        self.overflow = False
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        if self.whole is not None:
            if self.total <= self.whole_limit:
                self.whole.append(data)
            else:
                self.whole = None
                self.overflow = True
        if self.limit:
            self.tail += data
            if len(self.tail) > 2 * self.limit + READ_CHUNK:
                del self.tail[: -self.limit]

    def tail_text(self) -> str:
        kept = bytes(self.tail[-self.limit :]) if self.limit else b""
        return kept.decode("utf-8", errors="replace")

    def whole_text(self) -> str:
        return b"".join(self.whole or ()).decode("utf-8", errors="replace")


@dataclass
class Watched:
    """What watching a child produced, filled in as it happens (so a caller seeing an
    exception knows whether the child was already reaped: ``end_ns`` is then set)."""

    cause: Literal["timeout", "interrupted"] | None = None
    wait_status: int | None = None
    rusage: object = None
    #: monotonic ns of the child's exit (0: not reaped yet)
    end_ns: int = 0
    extra: dict[str, object] = field(default_factory=dict)
    #: an open /proc/PID/schedstat of the child, read before the reap (-1: none)
    schedstat_fd: int = -1
    #: the round's CPU wait in ns and its source (runner/execute/contention.py)
    wait_ns: int | None = None
    wait_source: str | None = None
    #: the round's counter metrics, read once every process of it is gone
    counters: tuple[CounterReading, ...] = ()
    #: why a counter asked for could not be read (the round then fails)
    counter_error: str | None = None


@dataclass(slots=True)
class Child:
    """One running child handed to :func:`watch`.

    ``streams``: its pipes' read ends and what is read from each. ``deadline``: the
    monotonic second of its timeout. ``on_running``: called once, while the child still
    runs, at the first wake-up at or after the monotonic second ``record_at``.
    ``delay0``: its run-queue wait (ns, ``watched.schedstat_fd``) when its clock started;
    the growth until its exit is its CPU wait (None: not measured this way).
    """

    pid: int
    streams: dict[int, Stream]
    deadline: float
    watched: Watched
    on_running: Callable[[], None] | None = None
    record_at: float = math.inf
    delay0: int | None = 0
    # the loop's state
    exit_fd: int = -1
    exited_ns: list[int] = field(default_factory=list)
    open_fds: dict[int, Stream] = field(default_factory=dict)
    kill_at: float | None = None
    killed: bool = False
    stop_reading_at: float = math.inf
    done: bool = False


def killpg(pgid: int, signum: int) -> None:
    """Send ``signum`` to process group ``pgid``; nothing when the group is gone."""
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone


def exit_pipe(pid: int) -> tuple[int, list[int]]:
    """A pipe that becomes readable when child ``pid`` has exited (not reaped), for
    kernels without pidfds: written by a short-lived thread blocked in
    ``waitid(WEXITED | WNOWAIT)``, which also notes the exit's monotonic ns in the returned
    list (the thread owns and closes the write end)."""
    exit_r, exit_w = os.pipe2(os.O_CLOEXEC)
    exited_ns: list[int] = []

    def wait_for_exit() -> None:
        try:
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:
            pass  # already reaped by the launching thread after an exception
        exited_ns.append(time.monotonic_ns())
        try:
            os.write(exit_w, b"x")
        except OSError:
            pass  # the launching thread gave up and closed the read end
        finally:
            os.close(exit_w)

    threading.Thread(target=wait_for_exit, name=f"benchrun-wait-{pid}", daemon=True).start()
    return exit_r, exited_ns


def watch(
    children: Sequence[Child],
    *,
    wake_r: int,
    take_interrupt: Callable[[], bool],
    kill_grace: float,
    drain_grace: float,
    exit_fd: Callable[[int], tuple[int, list[int]]],
) -> None:
    """Read every child's pipes until each is reaped and its pipes are closed (or given
    up), applying the rules of the module docstring to each child on its own.

    ``wake_r``: a pipe whose bytes only wake the loop. ``take_interrupt``: asked while a
    child runs without a cause yet; True (an interrupt came, and is taken) ends every such
    child "interrupted". ``exit_fd(pid)``: the descriptor readable at the child's exit, and
    a list holding the exit's monotonic ns when the notifier noted it. Exit descriptors are
    closed on return.
    """
    poller = select.poll()
    owner: dict[int, Child] = {}
    try:
        for child in children:
            child.open_fds = dict(child.streams)
            for fd in child.open_fds:
                poller.register(fd, select.POLLIN)
                owner[fd] = child
        poller.register(wake_r, select.POLLIN)
        for child in children:
            child.exit_fd, child.exited_ns = exit_fd(child.pid)
            poller.register(child.exit_fd, select.POLLIN)
        while True:
            now = time.monotonic()
            _interrupt(children, take_interrupt)
            wait_s, pending = math.inf, False  # (plain loops: this runs every wake-up)
            for child in children:
                if not child.done:
                    step = _step(child, now, poller, kill_grace)
                    if step is not None:
                        wait_s, pending = min(wait_s, step), True
            if not pending:
                return
            # capped so that an infinite timeout still works (poll wants finite ms)
            events = poller.poll(max(0, math.ceil(min(wait_s, 60.0) * 1000)))
            ready = {fd for fd, ev in events if ev & POLL_IN}
            for child in children:
                if child.watched.end_ns == 0:
                    if child.exit_fd in ready:
                        _reap(child, poller, drain_grace)
                    elif child.on_running is not None and time.monotonic() >= child.record_at:
                        child.on_running()
                        child.on_running, child.record_at = None, math.inf
            for fd in ready:
                reader = owner.get(fd)
                stream = None if reader is None else reader.open_fds.get(fd)
                if stream is not None:
                    data = os.read(fd, READ_CHUNK)
                    if data:
                        stream.add(data)
                    else:  # closed: the child and its descendants let go of it
                        poller.unregister(fd)
                        del reader.open_fds[fd]  # type: ignore[union-attr]
                elif fd == wake_r:
                    try:
                        os.read(fd, 4096)
                    except BlockingIOError:
                        pass
    finally:
        for child in children:
            if child.exit_fd >= 0:
                os.close(child.exit_fd)
                child.exit_fd = -1


def _interrupt(children: Sequence[Child], take_interrupt: Callable[[], bool]) -> None:
    """Mark every child still running without a cause "interrupted" when an interrupt is
    taken; it is asked for only while such a child exists."""
    for child in children:
        if child.watched.end_ns == 0 and child.watched.cause is None:
            if take_interrupt():
                for other in children:
                    if other.watched.end_ns == 0 and other.watched.cause is None:
                        other.watched.cause = "interrupted"
            return


def _step(child: Child, now: float, poller: select.poll, kill_grace: float) -> float | None:
    """Apply ``child``'s timeout and kill rules at monotonic second ``now``; how long the
    loop may sleep for it (s), or None once it is done (reaped, pipes closed or given up)."""
    w, pid = child.watched, child.pid
    if w.end_ns == 0:
        if w.cause is None and now >= child.deadline:
            w.cause = "timeout"
        if w.cause is not None and child.kill_at is None:
            killpg(pid, signal.SIGTERM)
            child.kill_at = now + kill_grace
        if child.kill_at is not None and not child.killed and now >= child.kill_at:
            killpg(pid, signal.SIGKILL)
            child.killed = True
        if w.cause is None:
            wait_s = child.deadline - now
        elif not child.killed:
            wait_s = (child.kill_at or now) - now
        else:
            wait_s = 1.0  # SIGKILL sent: only the exit is awaited
        return min(wait_s, child.record_at - now)
    if not child.open_fds:
        child.done = True
        return None
    if now >= child.stop_reading_at:
        if child.killed:
            w.extra["output_incomplete"] = True
            for fd in child.open_fds:
                poller.unregister(fd)
            child.open_fds = {}
            child.done = True
            return None
        w.extra["descendants_killed"] = True
        killpg(pid, signal.SIGKILL)
        child.killed = True
        child.stop_reading_at = now + AFTER_KILL_READ
    return child.stop_reading_at - now


def _reap(child: Child, poller: select.poll, drain_grace: float) -> None:
    """Reap ``child``, which has exited: SIGKILL its group first when it was killed, read
    its run-queue wait from the zombie, note its end time, start the drain of its pipes."""
    w = child.watched
    if w.cause is not None:
        killpg(child.pid, signal.SIGKILL)
        child.killed = True
    if w.schedstat_fd >= 0 and child.delay0 is not None:
        delay = read_run_delay_ns(w.schedstat_fd)  # the zombie's, before the reap
        if delay is not None:
            w.wait_ns = max(0, delay - child.delay0)
            w.wait_source = SOURCE_SCHEDSTAT
    _, w.wait_status, w.rusage = os.wait4(child.pid, 0)
    w.end_ns = child.exited_ns[0] if child.exited_ns else time.monotonic_ns()
    grace = AFTER_KILL_READ if child.killed else drain_grace
    child.stop_reading_at = time.monotonic() + grace
    poller.unregister(child.exit_fd)
