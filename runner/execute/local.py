"""The local executor: one child process per round on this machine, pinned, timed, reaped.

The parts it composes: :mod:`runner.execute.spawn` starts the child (argv, memory limit,
the pinned spawner thread), :mod:`runner.execute.watch` watches it until it is reaped (the
loop duets share), :mod:`runner.execute.outcome` turns what was seen into the outcome;
:mod:`runner.execute.containment` keeps its descendants from outliving it and
:mod:`runner.execute.local_counters` counts its counter metrics.
"""

from __future__ import annotations

import functools
import math
import os
import resource
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from benchrun.runner.config.experiment import ReadingsSpec
from benchrun.runner.execute.containment import (
    Containment,
    clear_inflight,
    discard_spare,
    record_inflight,
)
from benchrun.runner.execute.contention import SOURCE_PRESSURE, open_schedstat
from benchrun.runner.execute.counters import CounterPlan, PerfCounters
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec
from benchrun.runner.execute.local_counters import LocalCounters
from benchrun.runner.execute.outcome import ParseInterrupted, round_outcome
from benchrun.runner.execute.readings import check_readings_spec, parse_readings
from benchrun.runner.execute.spawn import (
    Spawned,
    Spawner,
    argv_of,
    not_run,
    pin_reason,
    start_child,
)
from benchrun.runner.execute.watch import Child, Stream, Watched, exit_pipe, killpg, watch

#: with readings configured, stdout is kept whole up to this many bytes for parsing
DEFAULT_READINGS_STDOUT_LIMIT = 64 * 1024 * 1024
#: a running child's pid enters the in-flight record after this many seconds
RECORD_AFTER_S = 0.005


@dataclass
class _Pipes:
    """A round's pipes: stdout, stderr, and the counters' release pipe (-1: none, or
    closed). The child's ends are closed once it is spawned; :meth:`close` closes the rest."""

    out_r: int
    out_w: int
    err_r: int
    err_w: int
    release_r: int = -1
    release_w: int = -1

    @classmethod
    def open(cls, release: bool) -> _Pipes:
        """stdout's and stderr's pipes, and the release pipe when ``release``."""
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        pipes = cls(out_r, out_w, err_r, err_w)
        if release:
            pipes.release_r, pipes.release_w = os.pipe2(os.O_CLOEXEC)
        return pipes

    def close(self, *names: str) -> None:
        """Close the named ends (all when none is named) that are still open."""
        for name in names or ("out_r", "out_w", "err_r", "err_w", "release_r", "release_w"):
            fd = getattr(self, name)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)


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
        self._spawner: Spawner | None = None
        self._parsing = False
        self._containment: Containment | None = None
        #: where the in-flight record of each round is written (the campaign sets it)
        self.inflight_path: Path | None = None
        #: the campaign id written into the in-flight record
        self.inflight_campaign: int | None = None
        #: the counter metrics of its rounds (runner/execute/local_counters.py)
        self._counters = LocalCounters()

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
        counters = getattr(self, "_counters", None)
        if counters is not None:
            counters.close()

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
            raise ParseInterrupted

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
        argv = argv_of(spec)
        if spec.readings is not None:
            check_readings_spec(spec.readings)
        plan = self._counters.plan(spec)
        started_at = time.time()
        if self._interrupt_pending:
            self._interrupt_pending = False
            return not_run(spec, started_at, "interrupted", "interrupted before start", None)
        whole = self.readings_stdout_limit if spec.readings is not None else None
        stdout = Stream(spec.output_limit, whole)
        stderr = Stream(spec.output_limit, None)
        pipes = _Pipes.open(release=plan is not None and bool(plan.perf))
        argv = self._counters.argv(plan, argv)
        # The kernel folds the spawner's peak RSS into the child's ru_maxrss at exec (the
        # old mm's high-water mark is kept), so a child's max RSS is never below this.
        rss_floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            started = self._start(spec, argv, pipes, started_at, plan)
            if isinstance(started, RoundOutcome):
                return started
            (proc, t0, applied), wait_before = started
            watched, t0 = self._run(spec, proc, t0, pipes, plan, (stdout, stderr), wait_before)
        finally:
            pipes.close()
        watched.extra["max_rss_floor_kib"] = rss_floor
        return self._outcome(spec, watched, t0, started_at, applied, stdout, stderr)

    def _start(
        self,
        spec: RoundSpec,
        argv: tuple[str, ...],
        pipes: _Pipes,
        started_at: float,
        plan: CounterPlan | None,
    ) -> tuple[Spawned, int | None] | RoundOutcome:
        """Spawn the round's child in the rounds' cgroup, the in-flight record written
        first; the child and the cgroup's stall total before it (µs, None without cgroup
        pressure), or the outcome of a round that could not start (all undone)."""
        containment = self.containment
        wait_before: int | None = None
        if self.inflight_path is not None:  # before the spawn: a crash may come at any time
            record_inflight(self.inflight_path, None, containment.cgroup, self.inflight_campaign)
        try:
            containment.enter()  # the child starts in the rounds' cgroup
        except OSError as exc:
            why = f"cannot enter the rounds' cgroup {containment.cgroup}: {exc.strerror or exc}"
            spawned: Spawned | RoundOutcome = not_run(spec, started_at, "failed", why, None)
        else:
            # the cgroup's stall total before the round (one pread, untimed)
            wait_before = containment.cpu_wait_us()
            release_r = None if pipes.release_r < 0 else pipes.release_r
            try:
                spawned = self._spawn(spec, argv, pipes.out_w, pipes.err_w, started_at, release_r)
            except BaseException:
                containment.leave()
                raise
        pipes.close("out_w", "err_w", "release_r")
        if isinstance(spawned, RoundOutcome):
            containment.leave()
            if self.inflight_path is not None:
                clear_inflight(self.inflight_path)
            self._counters.discard(plan)
            return spawned
        return spawned, wait_before

    def _run(
        self,
        spec: RoundSpec,
        proc: subprocess.Popen[bytes],
        t0: int,
        pipes: _Pipes,
        plan: CounterPlan | None,
        streams: tuple[Stream, Stream],
        wait_before: int | None,
    ) -> tuple[Watched, int]:
        """Release (with counters), watch and reap the started child, then end what it
        left behind; what was watched and the round's start (monotonic ns: the release
        when counters held the child at their barrier, else ``t0``)."""
        containment = self.containment
        watched = Watched()
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
            if pipes.release_w >= 0:
                assert plan is not None
                perf, t0 = self._counters.release(plan, proc.pid, pipes.release_w, watched, t0)
                pipes.close("release_w")
            stdout, stderr = streams
            self._watch(
                proc.pid, spec, t0, {pipes.out_r: stdout, pipes.err_r: stderr}, watched, record_pid
            )
            if wait_before is not None:
                wait_after = containment.cpu_wait_us()
                if wait_after is not None:
                    watched.wait_ns = max(0, wait_after - wait_before) * 1000
                    watched.wait_source = SOURCE_PRESSURE
        except BaseException:
            # e.g. KeyboardInterrupt raised by a signal handler: never leave the
            # group running or the child unreaped
            if watched.end_ns == 0:
                killpg(proc.pid, signal.SIGKILL)
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
                self._counters.read(plan, perf, watched)
        return watched, t0

    def _spawn(
        self,
        spec: RoundSpec,
        argv: tuple[str, ...],
        out_w: int,
        err_w: int,
        started_at: float,
        stdin: int | None = None,
    ) -> Spawned | RoundOutcome:
        """Start the child pinned to ``spec.cpus``; an outcome instead if it cannot start.

        Pinned, the child is started by the executor's spawner thread, which is pinned to
        ``spec.cpus`` for good, so the child inherits that mask and this thread stays on
        the runner's CPUs (handing the spawn over costs two thread wake-ups where moving
        this thread there and back cost two migrations; ``pin_by_thread=False`` moves it).
        """

        stdio = (self._devnull if stdin is None else stdin, out_w, err_w)
        env = self._child_env(spec.env)

        def start(applied: tuple[int, ...] | None) -> Spawned | RoundOutcome:
            return start_child(spec, argv, stdio, env, started_at, applied)

        if spec.cpus is None:
            return start(None)
        if self.pin_by_thread:
            spawner = self._spawner
            if spawner is None or spawner.cpus != tuple(spec.cpus):
                if spawner is not None:
                    spawner.close()
                spawner = self._spawner = Spawner(tuple(spec.cpus))
            if spawner.error is not None:
                self._spawner = None
                return not_run(spec, started_at, "failed", pin_reason(spec, spawner.error), None)
            applied = spawner.applied
            return spawner.call(lambda: start(applied))
        saved_mask = os.sched_getaffinity(0)
        try:
            os.sched_setaffinity(0, spec.cpus)
        except (OSError, ValueError, TypeError) as exc:
            return not_run(spec, started_at, "failed", pin_reason(spec, exc), None)
        try:
            return start(tuple(sorted(os.sched_getaffinity(0))))
        finally:
            os.sched_setaffinity(0, saved_mask)

    def _exit_fd(self, pid: int) -> tuple[int, list[int]]:
        """A file descriptor that becomes readable when the child has exited (not reaped):
        a pidfd where the kernel offers one, else :func:`runner.execute.watch.exit_pipe`
        (which also notes the exit time in the returned list)."""
        if self.use_pidfd:
            try:
                return os.pidfd_open(pid), []
            except OSError:
                self.use_pidfd = False  # e.g. ENOSYS under an old kernel or seccomp
        return exit_pipe(pid)

    def _take_interrupt(self) -> bool:
        """Whether an interrupt is pending; it is taken (cleared) when it is."""
        if self._interrupt_pending:
            self._interrupt_pending = False
            return True
        return False

    def _watch(
        self,
        pid: int,
        spec: RoundSpec,
        t0: int,
        streams: dict[int, Stream],
        w: Watched,
        on_running: Callable[[], None] | None = None,
    ) -> None:
        """Read the pipes until the child is reaped and the pipes are closed (or given up),
        by the rules of :func:`runner.execute.watch.watch`, the timeout ``spec.timeout``
        counted from ``t0`` (monotonic ns). Results go into ``w`` as they happen.
        ``on_running`` is called once the child has run :data:`RECORD_AFTER_S`, while it
        runs (a round that ends sooner never waits for it).
        """
        record_at = t0 / 1e9 + RECORD_AFTER_S if on_running is not None else math.inf
        child = Child(pid, streams, t0 / 1e9 + spec.timeout, w, on_running, record_at)
        watch(
            (child,),
            wake_r=self._wake_r,
            take_interrupt=self._take_interrupt,
            kill_grace=self.kill_grace,
            drain_grace=self.drain_grace,
            exit_fd=self._exit_fd,
        )

    def _parse_readings(self, stdout: str, spec: ReadingsSpec) -> tuple[float, ...]:
        """:func:`parse_readings`, marked as under way so that :meth:`interrupt` aborts it."""
        self._parsing = True
        try:
            return parse_readings(stdout, spec)
        finally:
            self._parsing = False

    def _outcome(
        self,
        spec: RoundSpec,
        w: Watched,
        t0: int,
        started_at: float,
        applied: tuple[int, ...] | None,
        stdout: Stream,
        stderr: Stream,
    ) -> RoundOutcome:
        """The round's outcome (:func:`runner.execute.outcome.round_outcome`)."""
        return round_outcome(
            spec,
            w,
            t0,
            started_at,
            applied,
            stdout,
            stderr,
            readings_stdout_limit=self.readings_stdout_limit,
            parse=self._parse_readings,
        )
