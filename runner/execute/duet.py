"""Duets: the two workloads of a comparison run at the same time, one CPU each (docs/duet.md).

A duet starts both children, each pinned to its own CPU before it runs anything, and holds
them at a barrier: each child is ``/bin/sh`` reading one line from its stdin (one pipe both
share), which prints one marker byte to its stderr once it waits there; when both markers
arrived the runner writes two newlines to that pipe in one ``write``, and each shell execs
the workload (stdin from ``/dev/null``). One write for both sides, not one per side: a
runner that shares a CPU with a side and is preempted by the side it woke first would
otherwise hold the other side back (by milliseconds on a loaded machine, always the same
side). Both rounds are timed from that release (one monotonic instant) to their
own exit, and watched and reaped with ``wait4`` (CPU times, max RSS) by the loop that
watches a round of :class:`runner.execute.local.LocalExecutor`
(:func:`runner.execute.watch.watch`, both sides in one loop); each has its own timeout,
and its own process group killed on a timeout or an interrupt.

:func:`plan_duet` picks the two CPUs (two physical cores where the machine has them) and
the runner's CPUs (off both, when a third is left; else the runner shares one, which
:attr:`DuetPlan.shares` says); :func:`duet_cpus` swaps the two every duet.
"""

from __future__ import annotations

import os
import resource
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from benchrun.runner.config.cpulist import format_cpu_list, parse_cpu_list
from benchrun.runner.errors import UserError
from benchrun.runner.execute.containment import clear_inflight, kill_group, record_inflight
from benchrun.runner.execute.contention import open_schedstat, read_run_delay_ns
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec
from benchrun.runner.execute.local import LocalExecutor
from benchrun.runner.execute.pinning import SYSFS_CPU, allowed_cpus, physical_cores
from benchrun.runner.execute.readings import check_readings_spec
from benchrun.runner.execute.spawn import argv_of, limit_as, not_run
from benchrun.runner.execute.watch import POLL_IN, Child, Stream, Watched, killpg, watch

#: the barrier: announce the wait on stderr, read the release line, run the workload
BARRIER_SCRIPT = 'printf R >&2; IFS= read -r _go || exit 125; exec "$@" </dev/null'
#: the byte each child prints to stderr once it waits at the barrier
READY_MARK = b"R"
#: longest wait for both children to reach the barrier (s); released anyway after it
READY_WAIT_S = 5.0


@dataclass(frozen=True)
class DuetPlan:
    """Where a duet's two sides and the runner run.

    ``cpus``: the two CPUs, one per side (swapped every duet, :func:`duet_cpus`).
    ``runner_cpus``: the CPUs the runner keeps to (None: it is not moved, and shares a
    CPU with a side). ``shares``: whether the runner shares a CPU with a workload.
    ``smt``: each duet CPU's SMT siblings (itself included) as the kernel lists them.
    """

    cpus: tuple[int, int]
    runner_cpus: tuple[int, ...] | None
    shares: bool
    smt: dict[int, tuple[int, ...]] = field(default_factory=dict)
    reason: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "cpus": list(self.cpus),
            "runner_cpus": None if self.runner_cpus is None else list(self.runner_cpus),
            "runner_shares_cpu": self.shares,
            "smt_siblings": {str(c): list(s) for c, s in self.smt.items()},
            "reason": self.reason,
        }


def smt_siblings(cpu: int, sysfs: Path = SYSFS_CPU) -> tuple[int, ...] | None:
    """The CPUs sharing ``cpu``'s core (``thread_siblings_list``); None when unreadable."""
    for name in ("thread_siblings_list", "core_cpus_list"):
        try:
            return tuple(parse_cpu_list((sysfs / f"cpu{cpu}" / "topology" / name).read_text()))
        except (OSError, ValueError):
            continue
    return None


def plan_duet(
    pin: str | Iterable[int], *, allowed: Iterable[int] | None = None, sysfs: Path = SYSFS_CPU
) -> DuetPlan:
    """The two CPUs of a duet for ``pin`` (``auto`` or a CPU list; ``none`` is refused).

    ``auto``: the first CPU of each of the last two physical cores (of one core's SMT
    siblings when the machine has one core); an explicit list: its first two CPUs. The
    runner keeps to the allowed CPUs outside the cores of both; with none left it is not
    moved and shares a CPU (:attr:`DuetPlan.shares`). :class:`UserError` with fewer than
    two usable CPUs.
    """
    usable = tuple(sorted(set(allowed))) if allowed is not None else allowed_cpus()
    if isinstance(pin, str):
        if pin != "auto":
            raise UserError(f"duet: pin {pin!r} cannot run duets; use pin: auto or two CPUs")
        if len(usable) < 2:
            raise UserError(
                f"duet needs two CPUs; this process may use only CPU {format_cpu_list(usable)}"
            )
        cores, _ = physical_cores(usable, sysfs)
        if len(cores) >= 2:
            chosen = (cores[-2][0], cores[-1][0])
        else:
            chosen = (cores[0][0], cores[0][1])
    else:
        listed = tuple(pin)
        missing = sorted(set(listed) - set(usable))
        if missing or len(listed) < 2:
            raise UserError(
                f"duet needs two usable CPUs, pin lists {list(listed)}; "
                f"valid CPUs: {format_cpu_list(usable)}"
            )
        chosen = (listed[0], listed[1])
    smt = {c: smt_siblings(c, sysfs) or (c,) for c in chosen}
    taken = {c for s in smt.values() for c in s} | set(chosen)
    runner = tuple(c for c in usable if c not in taken)
    shared_core = chosen[1] in smt[chosen[0]]
    words = f"duet on CPUs {chosen[0]} and {chosen[1]}"
    if shared_core:
        words += " (SMT siblings of one core: the sides share its execution units)"
    if runner:
        words += f"; runner on CPU{'s' if len(runner) > 1 else ''} {format_cpu_list(runner)}"
        return DuetPlan(chosen, runner, False, smt, words)
    words += "; the runner shares a CPU with one side (no third CPU), swapped every duet"
    return DuetPlan(chosen, None, True, smt, words)


#: passes over which the random CPU pattern is balanced (each side on each CPU half of them)
CPU_BLOCK = 4
#: second word of the random pattern's seed, so it draws apart from the pass order's
_CPU_STREAM = 0x64756574  # "duet"


def duet_swapped(duet_index: int, pattern: str = "alternate", seed: int = 1) -> bool:
    """Whether the sides swap CPUs in duet ``duet_index`` (the second side on the first CPU).

    ``alternate``: every odd duet. ``random``: in each block of :data:`CPU_BLOCK` duets
    (indices ``4k .. 4k+3``) a permutation of (no, no, yes, yes) drawn from
    ``numpy.random.default_rng([seed, "duet", k])``: each side gets each CPU in exactly two
    duets of every block, the order unpredictable, and the same for a given seed whatever
    was run before (a resumed campaign continues the pattern).
    """
    if pattern == "alternate":
        return duet_index % 2 == 1
    if pattern != "random":
        raise ValueError(f"unknown duet CPU pattern {pattern!r}; use alternate or random")
    block, at = divmod(duet_index, CPU_BLOCK)
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, _CPU_STREAM, block])
    half = CPU_BLOCK // 2
    return bool(rng.permutation([0] * half + [1] * half)[at])


def duet_cpus(
    plan: DuetPlan, duet_index: int, pattern: str = "alternate", seed: int = 1
) -> tuple[tuple[int], tuple[int]]:
    """The CPU of the first and of the second side in duet ``duet_index``: swapped as
    :func:`duet_swapped` says, so that neither side keeps a faster core (or the runner's)."""
    a, b = plan.cpus
    return ((b,), (a,)) if duet_swapped(duet_index, pattern, seed) else ((a,), (b,))


class DuetCapable(Protocol):
    """An executor that can run a duet itself (the fake executor)."""

    def launch_duet(self, a: RoundSpec, b: RoundSpec) -> tuple[RoundOutcome, RoundOutcome]: ...


def launch_duet(executor: object, a: RoundSpec, b: RoundSpec) -> tuple[RoundOutcome, RoundOutcome]:
    """Run rounds ``a`` and ``b`` as one duet through ``executor``: its own
    ``launch_duet`` when it has one, else :func:`local_duet` for a local executor."""
    own = getattr(executor, "launch_duet", None)
    if own is not None:
        return own(a, b)
    if isinstance(executor, LocalExecutor):
        return local_duet(executor, a, b)
    raise UserError("duet runs on this machine only (the local executor)")


@dataclass
class _Side:
    """One child of a duet in flight (internal)."""

    spec: RoundSpec
    proc: subprocess.Popen[bytes] | None = None
    applied: tuple[int, ...] | None = None
    out_r: int = -1
    err_r: int = -1
    stdout: Stream | None = None
    stderr: Stream | None = None
    ready: bool = False
    watched: Watched = field(default_factory=Watched)
    not_run: RoundOutcome | None = None
    #: the child's run-queue wait (ns, /proc/PID/schedstat) at the release: the side's CPU
    #: wait is its growth until the exit (docs/contention.md)
    delay0: int | None = None


def _start(executor: LocalExecutor, side: _Side, go_r: int, started_at: float) -> None:
    """Spawn ``side``'s barrier shell pinned to its CPUs, its stdin the release pipe's read
    end ``go_r`` (the launching thread is pinned for the spawn and restored after it);
    ``side.not_run`` when it cannot start."""
    spec = side.spec
    argv = argv_of(spec)
    if "/" not in argv[0] and shutil.which(argv[0], path=spec.env.get("PATH")) is None:
        side.not_run = not_run(
            spec, started_at, "failed", f"cannot execute {argv[0]!r}: not found", spec.cpus
        )
        return
    side.out_r, out_w = os.pipe2(os.O_CLOEXEC)
    side.err_r, err_w = os.pipe2(os.O_CLOEXEC)
    saved = os.sched_getaffinity(0)
    try:
        if spec.cpus is not None:
            try:
                os.sched_setaffinity(0, spec.cpus)
            except (OSError, ValueError) as exc:
                why = getattr(exc, "strerror", None) or str(exc)
                side.not_run = not_run(
                    spec, started_at, "failed", f"cannot pin to CPUs {list(spec.cpus)}: {why}", None
                )
                return
            side.applied = tuple(sorted(os.sched_getaffinity(0)))
        try:
            side.proc = subprocess.Popen(
                ("/bin/sh", "-c", BARRIER_SCRIPT, "benchrun-duet", *argv),
                stdin=go_r,
                stdout=out_w,
                stderr=err_w,
                env=executor._child_env(spec.env),
                cwd=spec.cwd,
                start_new_session=True,
                preexec_fn=None if spec.memory_limit is None else limit_as(spec.memory_limit),
            )
        except (OSError, ValueError) as exc:
            why = getattr(exc, "strerror", None) or str(exc)
            side.not_run = not_run(spec, started_at, "failed", f"cannot start: {why}", None)
    finally:
        if spec.cpus is not None:
            os.sched_setaffinity(0, saved)
        for fd in (out_w, err_w):
            os.close(fd)


def local_duet(
    executor: LocalExecutor, a: RoundSpec, b: RoundSpec
) -> tuple[RoundOutcome, RoundOutcome]:
    """Run ``a`` and ``b`` at the same time on this machine (module docstring); each
    pinned to its ``spec.cpus``. Never raises for a workload's failure."""
    for spec in (a, b):
        argv_of(spec)
        if spec.readings is not None:
            check_readings_spec(spec.readings)
    started_at = time.time()
    if executor._interrupt_pending:
        executor._interrupt_pending = False
        return (
            not_run(a, started_at, "interrupted", "interrupted before start", None),
            not_run(b, started_at, "interrupted", "interrupted before start", None),
        )
    sides = [_Side(a), _Side(b)]
    rss_floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    go_r, go_w = os.pipe2(os.O_CLOEXEC)
    try:
        for side in sides:
            _start(executor, side, go_r, started_at)
            whole = executor.readings_stdout_limit if side.spec.readings is not None else None
            side.stdout = Stream(side.spec.output_limit, whole)
            side.stderr = Stream(side.spec.output_limit, None)
        started = tuple(side.proc.pid for side in sides if side.proc is not None)
        if executor.inflight_path is not None and started:
            # a runner killed now leaves both sides for the next run to end (docs/loop.md)
            record_inflight(
                executor.inflight_path, started[0], None, executor.inflight_campaign, started[1:]
            )
        _await_ready(sides)
        for side in sides:  # each side's own wait: the cgroup's would mix both sides
            if side.proc is not None:
                fd = open_schedstat(side.proc.pid)
                if fd is not None:
                    side.watched.schedstat_fd = fd
                    side.delay0 = read_run_delay_ns(fd)
        t0 = time.monotonic_ns()
        started_at = time.time()
        os.close(go_r)  # only the children read it now
        go_r = -1
        try:  # the release: a line for each side, in one write
            os.write(go_w, b"\n" * len(sides))
        except OSError:
            pass  # both children are gone already
        _watch_both(executor, sides, t0)
        for side in sides:  # nothing a side started outlives the duet
            if side.proc is not None and kill_group(side.proc.pid):
                side.watched.extra["leftovers_killed"] = True
        if executor.inflight_path is not None:
            clear_inflight(executor.inflight_path)
    except BaseException:
        for side in sides:
            if side.proc is not None and side.watched.end_ns == 0:
                killpg(side.proc.pid, signal.SIGKILL)
                os.wait4(side.proc.pid, 0)
                side.proc.returncode = -1
        if executor.inflight_path is not None:
            clear_inflight(executor.inflight_path)
        raise
    finally:
        for fd in (go_r, go_w):
            if fd >= 0:
                os.close(fd)
        for side in sides:
            for fd in (side.out_r, side.err_r, side.watched.schedstat_fd):
                if fd >= 0:
                    os.close(fd)
            side.out_r = side.err_r = -1
            side.watched.schedstat_fd = -1
    outcomes = []
    for side in sides:
        if side.not_run is not None:
            outcomes.append(side.not_run)
            continue
        assert side.proc is not None and side.stdout is not None and side.stderr is not None
        side.proc.returncode = -1  # reaped by us: Popen must never wait on this pid
        if side.watched.wait_status is not None and os.WIFEXITED(side.watched.wait_status):
            if os.WEXITSTATUS(side.watched.wait_status) == 125 and not side.ready:
                side.watched.extra["barrier_failed"] = True
        side.watched.extra["max_rss_floor_kib"] = rss_floor
        side.watched.extra["duet"] = True
        out = executor._outcome(
            side.spec, side.watched, t0, started_at, side.applied, side.stdout, side.stderr
        )
        outcomes.append(out)
    return outcomes[0], outcomes[1]


def _await_ready(sides: list[_Side]) -> None:
    """Wait until every started child printed its marker at the barrier (or ended, or
    READY_WAIT_S passed); what a child printed after its marker is kept."""
    deadline = time.monotonic() + READY_WAIT_S
    waiting = {s.err_r: s for s in sides if s.proc is not None}
    poller = select.poll()
    for fd in waiting:
        poller.register(fd, select.POLLIN)
    while waiting:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        for fd, ev in poller.poll(max(1, int(left * 1000))):
            side = waiting.get(fd)
            if side is None or not ev & POLL_IN:
                continue
            data = os.read(fd, 1)
            poller.unregister(fd)
            del waiting[fd]
            if data == READY_MARK:
                side.ready = True
            elif data and side.stderr is not None:
                side.stderr.add(data)


def _watch_both(executor: LocalExecutor, sides: list[_Side], t0: int) -> None:
    """Watch both started children with :func:`runner.execute.watch.watch` (the loop of a
    round of :class:`LocalExecutor`) until both are reaped and their pipes closed (or given
    up); each side's timeout counts from ``t0`` (the release, monotonic ns)."""
    children = []
    for side in sides:
        if side.proc is None:
            continue
        assert side.stdout is not None and side.stderr is not None
        streams = {side.out_r: side.stdout, side.err_r: side.stderr}
        deadline = t0 / 1e9 + side.spec.timeout
        children.append(Child(side.proc.pid, streams, deadline, side.watched, delay0=side.delay0))
    watch(
        children,
        wake_r=executor._wake_r,
        take_interrupt=executor._take_interrupt,
        kill_grace=executor.kill_grace,
        drain_grace=executor.drain_grace,
        exit_fd=executor._exit_fd,
    )
