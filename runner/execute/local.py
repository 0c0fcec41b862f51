"""The local executor: one child process per round on this machine, pinned, timed, reaped."""

from __future__ import annotations

import functools
import math
import os
import resource
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar

from benchrun.runner.errors import UserError
from benchrun.runner.execute.containment import (
    Containment,
    clear_inflight,
    discard_spare,
    record_inflight,
)
from benchrun.runner.execute.contention import (
    SOURCE_PRESSURE,
    SOURCE_SCHEDSTAT,
    open_schedstat,
    read_run_delay_ns,
)
from benchrun.runner.execute.counters import (
    CounterPlan,
    PerfCounters,
    cachegrind_argv,
    cachegrind_total,
    plan_counters,
)
from benchrun.runner.execute.executor import CounterReading, RoundOutcome, RoundSpec, RoundStatus
from benchrun.runner.execute.readings import ReadingsError, check_readings_spec, parse_readings

#: bytes read from a pipe at once (a Linux pipe holds 64 KiB by default)
_READ_CHUNK = 65536
#: with readings configured, stdout is kept whole up to this many bytes for parsing
DEFAULT_READINGS_STDOUT_LIMIT = 64 * 1024 * 1024
#: a running child's pid enters the in-flight record after this many seconds
RECORD_AFTER_S = 0.005
#: after the process group got SIGKILL, how long to keep reading pipes (s)
_AFTER_KILL_READ = 0.2
_POLL_IN = select.POLLIN | select.POLLHUP | select.POLLERR
#: with perf counters, the child is this shell waiting for one line on its stdin (the
#: release pipe) before it execs the round's command, so the counters are opened on it
#: first and count from that exec on (enable_on_exec); exit 125 when never released
COUNTER_BARRIER = 'IFS= read -r _go || exit 125; exec "$@" </dev/null'


class _Stream:
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
            if len(self.tail) > 2 * self.limit + _READ_CHUNK:
                del self.tail[: -self.limit]

    def tail_text(self) -> str:
        kept = bytes(self.tail[-self.limit :]) if self.limit else b""
        return kept.decode("utf-8", errors="replace")

    def whole_text(self) -> str:
        return b"".join(self.whole or ()).decode("utf-8", errors="replace")


@dataclass
class _Watched:
    """What watching a child produced (internal)."""

    cause: Literal["timeout", "interrupted"] | None = None
    wait_status: int | None = None
    rusage: object = None
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


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _killpg(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone


_T = TypeVar("_T")

#: a started child, the monotonic ns just before its spawn, the CPUs it was pinned to
_Spawned = tuple[subprocess.Popen[bytes], int, tuple[int, ...] | None]


class _ParseInterrupted(Exception):
    """Raised into the readings search by :meth:`LocalExecutor.interrupt`."""


def _limit_as(limit: int) -> Callable[[], None]:
    """A preexec function setting RLIMIT_AS (soft and hard) to ``limit`` bytes."""

    def preexec() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return preexec


#: what programs print when an allocation fails (CPython, glibc, C++, Go, Rust, Java)
_OOM_WORDS = (
    "MemoryError",
    "Cannot allocate memory",
    "bad_alloc",
    "out of memory",
    "memory allocation of",
    "OutOfMemoryError",
)


def _memory_reason(limit: int, reason: str, stderr_tail: str) -> str:
    """The reason of a failed round that ran under ``memory_limit``: say so, and say that
    the limit was exceeded when the program's output shows a failed allocation."""
    mib = limit / 2**20
    if any(word in stderr_tail for word in _OOM_WORDS):
        return f"exceeded memory_limit {mib:g} MiB (RLIMIT_AS): {reason}"
    return f"{reason} (memory_limit {mib:g} MiB (RLIMIT_AS) was in force)"


def _argv_of(spec: RoundSpec) -> tuple[str, ...]:
    if spec.shell:
        if len(spec.argv) != 1:
            raise UserError(
                f"workload {spec.workload!r}: a shell command must be one string, "
                f"got {len(spec.argv)}"
            )
        return ("/bin/sh", "-c", spec.argv[0])
    if not spec.argv or not spec.argv[0]:
        raise UserError(f"workload {spec.workload!r}: the command is empty")
    return tuple(spec.argv)


def _spawn_reason(exc: OSError, argv: tuple[str, ...], spec: RoundSpec) -> str:
    what = exc.strerror or str(exc)
    if spec.cwd is not None and exc.filename == spec.cwd:
        return f"cannot enter working directory {spec.cwd!r}: {what}"
    return f"cannot execute {argv[0]!r}: {what}"


def _not_run(
    spec: RoundSpec,
    started_at: float,
    status: RoundStatus,
    reason: str,
    cpus: tuple[int, ...] | None,
    wall_ns: int = 0,
) -> RoundOutcome:
    """Outcome of a round whose child never ran: no CPU time, no RSS, no exit code."""
    return RoundOutcome(
        status=status,
        wall_ns=wall_ns,
        user_s=0.0,
        sys_s=0.0,
        max_rss_kib=0,
        exit_code=None,
        started_at=started_at,
        cpus=cpus,
        reason=reason,
        extra={"started": False},
    )


def _pin_reason(spec: RoundSpec, exc: BaseException) -> str:
    why = getattr(exc, "strerror", None) or str(exc)
    return (
        f"cannot pin to CPUs {list(spec.cpus or ())}: {why}; "
        f"this process may use {sorted(os.sched_getaffinity(0))}"
    )


class _Spawner:
    """A thread pinned to ``cpus`` for its whole life that starts children on request, so
    they inherit its CPU mask (docs/loop.md "Pinning"). :attr:`error` is set when it could
    not be pinned (it then ends at once); :attr:`applied` is the mask it got."""

    def __init__(self, cpus: tuple[int, ...]) -> None:
        self.cpus = cpus
        self.error: BaseException | None = None
        self.applied: tuple[int, ...] | None = None
        self._go = threading.Lock()
        self._done = threading.Lock()
        self._go.acquire()
        self._done.acquire()
        self._job: Callable[[], object] | None = None
        self._result: tuple[bool, object] = (True, None)
        self._thread = threading.Thread(target=self._run, name="benchrun-spawner", daemon=True)
        self._thread.start()
        self._done.acquire()  # pinned (or failed to)

    def _run(self) -> None:
        try:
            os.sched_setaffinity(0, self.cpus)
            self.applied = tuple(sorted(os.sched_getaffinity(0)))
        except (OSError, ValueError, TypeError) as exc:
            self.error = exc
            self._done.release()
            return
        self._done.release()
        while True:
            self._go.acquire()
            job = self._job
            if job is None:
                return
            try:
                self._result = (True, job())
            except BaseException as exc:  # handed to the caller
                self._result = (False, exc)
            self._done.release()

    def call(self, job: Callable[[], _T]) -> _T:
        """Run ``job`` in the pinned thread and return what it returned (or raise what it
        raised). Interrupted while waiting (KeyboardInterrupt), it still waits for the job,
        kills the child it started, and re-raises."""
        self._job = job
        self._go.release()
        try:
            self._done.acquire()
        except BaseException:
            while True:
                try:
                    self._done.acquire()
                    break
                except BaseException:
                    continue
            ok, value = self._result
            if ok and isinstance(value, tuple) and isinstance(value[0], subprocess.Popen):
                _killpg(value[0].pid, signal.SIGKILL)
                os.wait4(value[0].pid, 0)
                value[0].returncode = -1
            raise
        ok, value = self._result
        self._result = (True, None)
        if not ok:
            assert isinstance(value, BaseException)
            raise value
        return value  # type: ignore[return-value]

    def close(self) -> None:
        if self.error is None and self._thread.is_alive():
            self._job = None
            self._go.release()
            self._thread.join(timeout=1.0)


class LocalExecutor:
    """Run each round as a child process on this machine (see :class:`Executor`).

    The child gets ``spec.argv`` without a shell (``/bin/sh -c`` only with ``spec.shell``),
    exactly ``spec.env`` as its environment, ``spec.cwd``, stdin from ``/dev/null``, its own
    session and process group, and the affinity ``spec.cpus``, which it inherits from the
    thread that starts it: the executor's spawner thread, pinned to ``spec.cpus`` for its
    whole life (``pin_by_thread``, the default), or with ``pin_by_thread=False`` the
    launching thread, pinned to ``spec.cpus`` right before the spawn and restored right
    after it; either way no ``preexec_fn`` is needed and CPython can spawn with
    ``vfork``. Wall time is ``time.monotonic_ns()`` from just before the spawn to just after
    ``os.wait4`` reaps the child; user/sys CPU seconds and max RSS come from that wait4.
    stdout/stderr are read in the launching thread with ``poll`` (no thread start-up per
    round); the child's exit is seen through a pidfd (Linux >= 5.3), or where pidfds are
    unavailable through a helper thread blocked in ``waitid`` (the end time is then taken
    by that thread when the exit is reported, before the reap).

    ``kill_grace``: seconds between SIGTERM and SIGKILL to the process group on a timeout
    or interrupt. ``drain_grace``: after a normal exit, how long descendants may keep the
    pipes open before the group is killed and reading stops. ``readings_stdout_limit``:
    with readings configured, stdout is kept whole up to this many bytes (64 MiB) for
    parsing; a round printing more fails with a reason instead of being parsed partially.
    ``use_pidfd=False`` forces the thread-based exit notification (tests, old kernels).
    ``stay_in_cgroup``: with cgroup containment, the runner stays in the rounds' cgroup
    between rounds while nothing of a round is left (a campaign's executor: saves two
    cgroup moves a round, and the wait they impose on the next fork; see
    runner/execute/containment.py); :meth:`close` moves it out.
    One executor runs one round at a time.

    Max RSS caveat (Linux): at ``execve`` the kernel keeps the high-water RSS of the
    address space being replaced, which for a child spawned by this (large, Python) process
    is the runner's own peak RSS. So ``max_rss_kib`` is ``max(child's peak, runner's
    peak)``; ``extra["max_rss_floor_kib"]`` records the runner's peak at spawn, and a
    ``max_rss_kib`` at or below it says only "the child's peak was at most this much".
    ``extra`` also holds ``stdout_bytes``/``stderr_bytes`` (totals read), and
    ``descendants_killed`` when descendants kept the pipes open after a normal exit.
    """

    def __init__(
        self,
        *,
        kill_grace: float = 0.5,
        drain_grace: float = 1.0,
        readings_stdout_limit: int = DEFAULT_READINGS_STDOUT_LIMIT,
        use_pidfd: bool = True,
        use_cgroup: bool = True,
        stay_in_cgroup: bool = False,
        pin_by_thread: bool = True,
    ) -> None:
        self.kill_grace = kill_grace
        self.drain_grace = drain_grace
        self.readings_stdout_limit = readings_stdout_limit
        self.use_pidfd = use_pidfd and hasattr(os, "pidfd_open")
        self._interrupt_pending = False
        self._env_cache: tuple[tuple[tuple[str, str], ...], dict[bytes, bytes]] | None = None
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        self._use_cgroup = use_cgroup
        self.stay_in_cgroup = stay_in_cgroup
        self.pin_by_thread = pin_by_thread
        self._spawner: _Spawner | None = None
        self._parsing = False
        self._containment: Containment | None = None
        #: where the in-flight record of each round is written (the campaign sets it)
        self.inflight_path: Path | None = None
        #: the campaign id written into the in-flight record
        self.inflight_campaign: int | None = None
        #: cachegrind's output directory (made at the first round that needs it)
        self._cg_dir: Path | None = None

    @property
    def containment(self) -> Containment:
        """How a round's descendants are contained (made at the first use)."""
        if self._containment is None:
            self._containment = Containment.create(self._use_cgroup)
        return self._containment

    def close(self) -> None:
        """Release the executor's file descriptors and its cgroup (idempotent)."""
        for name in ("_wake_r", "_wake_w", "_devnull"):
            fd = getattr(self, name, -1)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)
        containment = getattr(self, "_containment", None)
        if containment is not None:
            containment.close()
        spawner = getattr(self, "_spawner", None)
        if spawner is not None:
            spawner.close()
            self._spawner = None
        inflight = getattr(self, "inflight_path", None)
        if inflight is not None:
            discard_spare(inflight)
        cg_dir = getattr(self, "_cg_dir", None)
        if cg_dir is not None:
            shutil.rmtree(cg_dir, ignore_errors=True)
            self._cg_dir = None

    def __del__(self) -> None:
        self.close()

    def interrupt(self) -> None:
        """Kill the round in flight; safe from a signal handler or another thread.

        Only sets a flag and wakes the launching thread through a pipe; that thread then
        terminates the round's process group (SIGTERM, SIGKILL after ``kill_grace``) and
        the round ends "interrupted". If no round is in flight, the next ``launch``
        returns "interrupted" at once without starting anything (the caller meant to
        stop; :meth:`clear_interrupt` forgets it). For "finish" mode do not call this.
        """
        self._interrupt_pending = True
        try:
            os.write(self._wake_w, b"!")
        except OSError:
            pass  # pipe full or closed: the flag alone is enough
        if self._parsing:
            # called from a signal handler while a pattern searches the round's output:
            # abort the search (the regex module serves signals while it matches)
            self._interrupt_pending = False
            raise _ParseInterrupted

    def clear_interrupt(self) -> None:
        """Forget an interrupt that arrived while no round was in flight."""
        self._interrupt_pending = False

    def _child_env(self, env: Mapping[str, str]) -> dict[bytes, bytes]:
        """``env`` encoded once and reused while it stays equal (saves ~20 us a round)."""
        items = tuple(env.items())
        if self._env_cache is None or self._env_cache[0] != items:
            encoded = {os.fsencode(k): os.fsencode(v) for k, v in items}
            self._env_cache = (items, encoded)
        return self._env_cache[1]

    def launch(self, spec: RoundSpec) -> RoundOutcome:
        """Run one round and measure it; never raises for a failing workload.

        A bad spec (empty argv, shell with more than one string, unusable readings
        spec) raises :class:`runner.errors.UserError` before anything is started.
        """
        argv = _argv_of(spec)
        if spec.readings is not None:
            check_readings_spec(spec.readings)
        plan = self._counter_plan(spec)
        started_at = time.time()
        if self._interrupt_pending:
            self._interrupt_pending = False
            return _not_run(spec, started_at, "interrupted", "interrupted before start", None)
        whole = self.readings_stdout_limit if spec.readings is not None else None
        stdout = _Stream(spec.output_limit, whole)
        stderr = _Stream(spec.output_limit, None)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        release_r = release_w = -1
        if plan is not None and plan.cachegrind:
            assert plan.valgrind is not None
            argv = cachegrind_argv(plan.valgrind, self._cachegrind_dir(), argv)
        if plan is not None and plan.perf:
            argv = ("/bin/sh", "-c", COUNTER_BARRIER, "benchrun-counters", *argv)
            release_r, release_w = os.pipe2(os.O_CLOEXEC)
        # The kernel folds the spawner's peak RSS into the child's ru_maxrss at exec (the
        # old mm's high-water mark is kept), so a child's max RSS is never below this.
        rss_floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        containment = self.containment
        wait_before: int | None = None
        if self.inflight_path is not None:  # before the spawn: a crash may come at any time
            record_inflight(self.inflight_path, None, containment.cgroup, self.inflight_campaign)
        try:
            try:
                containment.enter()  # the child starts in the rounds' cgroup
            except OSError as exc:
                why = f"cannot enter the rounds' cgroup {containment.cgroup}: {exc.strerror or exc}"
                spawned: _Spawned | RoundOutcome = _not_run(spec, started_at, "failed", why, None)
            else:
                # the cgroup's stall total before the round (one pread, untimed)
                wait_before = containment.cpu_wait_us()
                try:
                    spawned = self._spawn(
                        spec, argv, out_w, err_w, started_at, None if release_r < 0 else release_r
                    )
                except BaseException:
                    containment.leave()
                    raise
            os.close(out_w)
            os.close(err_w)
            out_w = err_w = -1
            if release_r >= 0:
                os.close(release_r)
                release_r = -1
            if isinstance(spawned, RoundOutcome):
                containment.leave()
                if self.inflight_path is not None:
                    clear_inflight(self.inflight_path)
                if plan is not None and plan.cachegrind:
                    cachegrind_total(self._cachegrind_dir())  # clears the directory
                return spawned
            proc, t0, applied = spawned
            watched = _Watched()
            perf: PerfCounters | None = None
            record_pid: Callable[[], None] | None = None
            if self.inflight_path is not None:
                record_pid = functools.partial(
                    record_inflight,
                    self.inflight_path,
                    proc.pid,
                    containment.cgroup,
                    self.inflight_campaign,
                )
            if wait_before is None:  # no cgroup pressure: the leader's schedstat instead
                fd = open_schedstat(proc.pid)
                watched.schedstat_fd = -1 if fd is None else fd
            try:
                if release_w >= 0:
                    assert plan is not None
                    try:
                        perf = PerfCounters(plan, proc.pid)
                    except OSError as exc:  # closing the pipe unread ends the shell (exit 125)
                        watched.counter_error = (
                            f"cannot count {', '.join(plan.perf)}: perf_event_open: "
                            f"{exc.strerror or exc}"
                        )
                    else:
                        t0 = time.monotonic_ns()  # the workload starts now: its wall time
                        os.write(release_w, b"go\n")
                    os.close(release_w)
                    release_w = -1
                self._watch(proc.pid, spec, t0, {out_r: stdout, err_r: stderr}, watched, record_pid)
                if wait_before is not None:
                    wait_after = containment.cpu_wait_us()
                    if wait_after is not None:
                        watched.wait_ns = max(0, wait_after - wait_before) * 1000
                        watched.wait_source = SOURCE_PRESSURE
            except BaseException:
                # e.g. KeyboardInterrupt raised by a signal handler: never leave the
                # group running or the child unreaped
                if watched.end_ns == 0:
                    _killpg(proc.pid, signal.SIGKILL)
                    os.wait4(proc.pid, 0)
                raise
            finally:
                if watched.schedstat_fd >= 0:
                    os.close(watched.schedstat_fd)
                proc.returncode = -1  # reaped by us: Popen must never wait on this pid
                # after the round is timed: nothing it started outlives it
                if containment.end_round(proc.pid, stay=self.stay_in_cgroup):
                    watched.extra["leftovers_killed"] = True
                if self.inflight_path is not None:
                    clear_inflight(self.inflight_path)
                if plan is not None:  # every process of the round is gone: counts complete
                    self._read_counters(plan, perf, watched)
        finally:
            for fd in (out_r, err_r, out_w, err_w, release_r, release_w):
                if fd >= 0:
                    os.close(fd)
        watched.extra["max_rss_floor_kib"] = rss_floor
        return self._outcome(spec, watched, t0, started_at, applied, stdout, stderr)

    def _counter_plan(self, spec: RoundSpec) -> CounterPlan | None:
        """How ``spec.counters`` are counted here (None: no counters); a :class:`UserError`
        when this machine can count one of them neither way."""
        if not spec.counters:
            return None
        return plan_counters(spec.counters)

    def _cachegrind_dir(self) -> Path:
        """The executor's private directory (0700) for cachegrind's per-process files."""
        if self._cg_dir is None:
            self._cg_dir = Path(tempfile.mkdtemp(prefix="benchrun-cachegrind-"))
        return self._cg_dir

    def _read_counters(self, plan: CounterPlan, perf: PerfCounters | None, w: _Watched) -> None:
        """Read the round's counters into ``w`` (and close them): the perf counters, and
        cachegrind's instruction total over its per-process files (which are removed)."""
        readings: list[CounterReading] = []
        if perf is not None:
            try:
                readings.extend(perf.read())
            except OSError as exc:
                w.counter_error = f"cannot read the counters: {exc.strerror or exc}"
            finally:
                perf.close()
        if plan.cachegrind:
            total = cachegrind_total(self._cachegrind_dir())
            if total is None:
                w.counter_error = w.counter_error or "cachegrind wrote no instruction count"
            else:
                source, scope = plan.sources()["instructions"]
                readings.append(CounterReading("instructions", float(total), source, scope))
        w.counters = tuple(readings)

    def _spawn(
        self,
        spec: RoundSpec,
        argv: tuple[str, ...],
        out_w: int,
        err_w: int,
        started_at: float,
        stdin: int | None = None,
    ) -> _Spawned | RoundOutcome:
        """Start the child pinned to ``spec.cpus``; an outcome instead if it cannot start.

        Pinned, the child is started by the executor's spawner thread, which is pinned to
        ``spec.cpus`` for good, so the child inherits that mask and this thread stays on
        the runner's CPUs (handing the spawn over costs two thread wake-ups where moving
        this thread there and back cost two migrations; ``pin_by_thread=False`` moves it).
        """

        def start(applied: tuple[int, ...] | None) -> _Spawned | RoundOutcome:
            t0 = time.monotonic_ns()
            try:
                proc = subprocess.Popen(
                    argv,
                    stdin=self._devnull if stdin is None else stdin,
                    stdout=out_w,
                    stderr=err_w,
                    env=self._child_env(spec.env),
                    cwd=spec.cwd,
                    start_new_session=True,
                    preexec_fn=None if spec.memory_limit is None else _limit_as(spec.memory_limit),
                )
            except OSError as exc:
                wall = time.monotonic_ns() - t0
                reason = _spawn_reason(exc, argv, spec)
                return _not_run(spec, started_at, "failed", reason, applied, wall)
            except ValueError as exc:  # NUL byte in argv/env, '=' in a variable name
                return _not_run(spec, started_at, "failed", f"cannot start: {exc}", applied)
            return proc, t0, applied

        if spec.cpus is None:
            return start(None)
        if self.pin_by_thread:
            spawner = self._spawner
            if spawner is None or spawner.cpus != tuple(spec.cpus):
                if spawner is not None:
                    spawner.close()
                spawner = self._spawner = _Spawner(tuple(spec.cpus))
            if spawner.error is not None:
                self._spawner = None
                return _not_run(spec, started_at, "failed", _pin_reason(spec, spawner.error), None)
            applied = spawner.applied
            return spawner.call(lambda: start(applied))
        saved_mask = os.sched_getaffinity(0)
        try:
            os.sched_setaffinity(0, spec.cpus)
        except (OSError, ValueError, TypeError) as exc:
            return _not_run(spec, started_at, "failed", _pin_reason(spec, exc), None)
        try:
            return start(tuple(sorted(os.sched_getaffinity(0))))
        finally:
            os.sched_setaffinity(0, saved_mask)

    def _exit_fd(self, pid: int) -> tuple[int, list[int]]:
        """A file descriptor that becomes readable when the child has exited (not reaped).

        A pidfd where the kernel offers one; otherwise a pipe written by a short-lived
        thread blocked in ``waitid(WEXITED | WNOWAIT)``, which also notes the exit time in
        the returned list (the thread owns and closes the write end).
        """
        if self.use_pidfd:
            try:
                return os.pidfd_open(pid), []
            except OSError:
                self.use_pidfd = False  # e.g. ENOSYS under an old kernel or seccomp
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

    def _watch(
        self,
        pid: int,
        spec: RoundSpec,
        t0: int,
        streams: dict[int, _Stream],
        w: _Watched,
        on_running: Callable[[], None] | None = None,
    ) -> None:
        """Read the pipes until the child is reaped and the pipes are closed (or given up).

        Results go into ``w`` as they happen (so a caller seeing an exception knows whether
        the child was already reaped).

        The process group id is ``pid`` (the child is a session leader). On timeout or
        interrupt the group gets SIGTERM, then SIGKILL after ``kill_grace``; once the child
        has exited, the group gets SIGKILL before the child is reaped (its zombie keeps the
        group id from being reused), so no descendant of a killed round survives. After a
        normal exit, descendants holding the pipes open get ``drain_grace`` before the
        group is killed and reading stops.
        """
        poller = select.poll()
        for fd in streams:
            poller.register(fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        exit_fd, exited_ns = self._exit_fd(pid)
        poller.register(exit_fd, select.POLLIN)
        open_fds = dict(streams)
        deadline = t0 / 1e9 + spec.timeout
        # the in-flight record of the pid is written once the child has run RECORD_AFTER_S:
        # a round that ends sooner never waits for the write
        record_at = t0 / 1e9 + RECORD_AFTER_S if on_running is not None else math.inf
        kill_at: float | None = None  # when SIGKILL follows SIGTERM
        killed = False
        stop_reading_at = math.inf
        try:
            while True:
                now = time.monotonic()
                if w.end_ns == 0:
                    if w.cause is None and self._interrupt_pending:
                        self._interrupt_pending = False
                        w.cause = "interrupted"
                    elif w.cause is None and now >= deadline:
                        w.cause = "timeout"
                    if w.cause is not None and kill_at is None:
                        _killpg(pid, signal.SIGTERM)
                        kill_at = now + self.kill_grace
                    if kill_at is not None and not killed and now >= kill_at:
                        _killpg(pid, signal.SIGKILL)
                        killed = True
                    if w.cause is None:
                        wait_s = deadline - now
                    elif not killed:
                        wait_s = kill_at - now  # type: ignore[operator]
                    else:
                        wait_s = 1.0  # SIGKILL sent: only the exit is awaited
                    wait_s = min(wait_s, record_at - now)
                else:
                    if not open_fds:
                        break
                    if now >= stop_reading_at:
                        if killed:
                            w.extra["output_incomplete"] = True
                            break
                        w.extra["descendants_killed"] = True
                        _killpg(pid, signal.SIGKILL)
                        killed = True
                        stop_reading_at = now + _AFTER_KILL_READ
                    wait_s = stop_reading_at - now
                # capped so that an infinite timeout still works (poll wants finite ms)
                events = poller.poll(max(0, math.ceil(min(wait_s, 60.0) * 1000)))
                ready = {fd for fd, ev in events if ev & _POLL_IN}
                if on_running is not None and exit_fd not in ready and w.end_ns == 0:
                    if time.monotonic() >= record_at:
                        on_running()
                        on_running, record_at = None, math.inf
                if exit_fd in ready and w.end_ns == 0:
                    if w.cause is not None:
                        _killpg(pid, signal.SIGKILL)
                        killed = True
                    if w.schedstat_fd >= 0:  # the zombie's run-queue wait, before the reap
                        w.wait_ns = read_run_delay_ns(w.schedstat_fd)
                        w.wait_source = None if w.wait_ns is None else SOURCE_SCHEDSTAT
                    _, w.wait_status, w.rusage = os.wait4(pid, 0)
                    w.end_ns = exited_ns[0] if exited_ns else time.monotonic_ns()
                    grace = _AFTER_KILL_READ if killed else self.drain_grace
                    stop_reading_at = time.monotonic() + grace
                    poller.unregister(exit_fd)
                for fd in ready:
                    stream = open_fds.get(fd)
                    if stream is not None:
                        data = os.read(fd, _READ_CHUNK)
                        if data:
                            stream.add(data)
                        else:
                            poller.unregister(fd)
                            del open_fds[fd]
                    elif fd == self._wake_r:
                        try:
                            os.read(fd, 4096)
                        except BlockingIOError:
                            pass
        finally:
            os.close(exit_fd)

    def _outcome(
        self,
        spec: RoundSpec,
        w: _Watched,
        t0: int,
        started_at: float,
        applied: tuple[int, ...] | None,
        stdout: _Stream,
        stderr: _Stream,
    ) -> RoundOutcome:
        assert w.wait_status is not None and w.rusage is not None
        exit_code = os.waitstatus_to_exitcode(w.wait_status)
        status: RoundStatus = "ok"
        reason: str | None = None
        readings: tuple[float, ...] = ()
        if w.cause == "timeout":
            status, reason = "timeout", f"timed out after {float(spec.timeout)} s"
        elif w.cause == "interrupted":
            status, reason = "interrupted", "interrupted; process group killed"
        elif exit_code < 0:
            status, reason = "failed", f"killed by signal {_signal_name(-exit_code)}"
        elif exit_code > 0:
            status, reason = "failed", f"exit code {exit_code}"
        if status == "failed" and spec.memory_limit is not None:
            reason = _memory_reason(spec.memory_limit, reason or "", stderr.tail_text())
        elif status == "ok" and spec.readings is not None:
            if stdout.overflow:
                mib = self.readings_stdout_limit / 2**20
                status = "failed"
                reason = f"stdout exceeded {mib:g} MiB; readings were not parsed"
            else:
                try:
                    self._parsing = True
                    try:
                        readings = parse_readings(stdout.whole_text(), spec.readings)
                    finally:
                        self._parsing = False
                except ReadingsError as exc:
                    status, reason = "failed", str(exc)
                except _ParseInterrupted:
                    status, reason = "interrupted", "interrupted while parsing the readings"
        counters = w.counters
        if w.counter_error is not None and status in ("ok", "failed"):
            status, reason = "failed", w.counter_error
        elif status == "ok":
            missing = [m for m in spec.counters if m not in {c.metric for c in counters}]
            if missing:
                status, reason = "failed", f"no count of {', '.join(missing)}"
        if status != "ok":
            counters = ()
        ru = w.rusage
        extra = dict(w.extra)
        extra.update(stdout_bytes=stdout.total, stderr_bytes=stderr.total)
        return RoundOutcome(
            status=status,
            wall_ns=w.end_ns - t0,
            user_s=float(ru.ru_utime),  # type: ignore[attr-defined]
            sys_s=float(ru.ru_stime),  # type: ignore[attr-defined]
            max_rss_kib=int(ru.ru_maxrss),  # type: ignore[attr-defined]
            exit_code=exit_code,
            started_at=started_at,
            cpus=applied,
            readings=readings,
            reason=reason,
            stdout_tail=stdout.tail_text(),
            stderr_tail=stderr.tail_text(),
            extra=extra,
            wait_ns=w.wait_ns,
            wait_source=w.wait_source,
            counters=counters,
        )
