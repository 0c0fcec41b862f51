"""Counter metrics of a round's whole process tree: perf_event_open, or cachegrind.

A counter metric (``instructions``, ``cycles``, ``branch_misses``, ``cache_misses``,
``task_clock``, ``context_switches``, ``page_faults``) is counted by the kernel through
``perf_event_open(2)`` (called through ``ctypes``): one counter per metric opened on the
round's barrier shell (pid = the child, cpu = -1) with ``inherit`` (every process the round
forks is counted; a child's counts are added to its parent's when it exits) and
``enable_on_exec`` (counting starts when the barrier shell execs the workload, so the shell
itself is not counted). The counters are read once the round's processes are reaped.

Where the kernel has no PMU (a VM: "PMU not available due to virtualization"), hardware
events are refused with ENOENT/EOPNOTSUPP; ``instructions`` then comes from valgrind's
cachegrind (``--cache-sim=no --trace-children=yes``): the instructions executed by every
process of the round, summed over the per-process output files. Software events
(``task_clock``, ``context_switches``, ``page_faults``) need no PMU. docs/metrics.md says
what each costs per round and when to use which.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import shutil
import struct
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchrun.runner.errors import UserError
from benchrun.runner.execute.executor import CounterReading

#: perf_event_open's syscall number per machine (``platform.machine()``)
_SYSCALL_NR = {"x86_64": 298, "amd64": 298, "aarch64": 241, "arm64": 241}
#: perf_event_attr.type
_TYPE_HARDWARE = 0
_TYPE_SOFTWARE = 1
#: perf_event_attr flag bits (include/uapi/linux/perf_event.h)
_DISABLED = 1 << 0
_INHERIT = 1 << 1
_EXCLUDE_KERNEL = 1 << 5
_EXCLUDE_HV = 1 << 6
_ENABLE_ON_EXEC = 1 << 12
#: read_format: the value, then time enabled and time running (ns), to scale a multiplexed count
_READ_FORMAT = 1 | 2  # PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING
_FD_CLOEXEC = 8  # PERF_FLAG_FD_CLOEXEC
#: PERF_ATTR_SIZE_VER0: the fields up to bp_addr, which every kernel since 2.6.31 accepts
_ATTR_SIZE = 64

#: the source names stored with each value
SOURCE_PERF = "perf_event"
SOURCE_CACHEGRIND = "cachegrind"
#: scopes: every process of the round, kernel included, or user space only
SCOPE_TREE = "process tree"
SCOPE_TREE_USER = "process tree, user space"


@dataclass(frozen=True)
class CounterEvent:
    """One counter metric: the perf event (type, config), its unit and how a raw count
    becomes a value in that unit (``scale``: value = count * scale)."""

    type: int
    config: int
    unit: str
    scale: float = 1.0
    hardware: bool = False


#: the counter metrics and their perf events (PERF_COUNT_HW_* / PERF_COUNT_SW_*)
COUNTER_EVENTS: Mapping[str, CounterEvent] = {
    "instructions": CounterEvent(_TYPE_HARDWARE, 1, "instructions", hardware=True),
    "cycles": CounterEvent(_TYPE_HARDWARE, 0, "cycles", hardware=True),
    "cache_misses": CounterEvent(_TYPE_HARDWARE, 3, "misses", hardware=True),
    "branch_misses": CounterEvent(_TYPE_HARDWARE, 5, "misses", hardware=True),
    "task_clock": CounterEvent(_TYPE_SOFTWARE, 1, "s", scale=1e-9),  # ns -> s
    "page_faults": CounterEvent(_TYPE_SOFTWARE, 2, "faults"),
    "context_switches": CounterEvent(_TYPE_SOFTWARE, 3, "switches"),
}
COUNTER_METRICS: tuple[str, ...] = tuple(COUNTER_EVENTS)


def _perf_event_open(attr: bytes, pid: int, cpu: int) -> int:
    """``perf_event_open(attr, pid, cpu, -1, FD_CLOEXEC)``: the new fd; OSError on failure."""
    nr = _SYSCALL_NR.get(platform.machine().lower())
    if nr is None:
        raise OSError(errno.ENOSYS, f"perf_event_open: unknown machine {platform.machine()}")
    libc = _libc()
    buf = ctypes.create_string_buffer(attr, len(attr))
    fd = libc.syscall(
        ctypes.c_long(nr), buf, ctypes.c_int(pid), ctypes.c_int(cpu), ctypes.c_int(-1),
        ctypes.c_ulong(_FD_CLOEXEC),
    )  # fmt: skip
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return int(fd)


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    """This process's C library, for ``syscall(2)`` (errno kept for :func:`ctypes.get_errno`)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _attr(event: CounterEvent, flags: int) -> bytes:
    """A PERF_ATTR_SIZE_VER0 ``perf_event_attr`` counting ``event`` (no sampling)."""
    return struct.pack(
        "=IIQQQQQIIQ", event.type, _ATTR_SIZE, event.config, 0, 0, _READ_FORMAT, flags, 0, 0, 0
    )


def _flags(user_only: bool) -> int:
    """``perf_event_attr`` flags: disabled until the exec, inherited by every child, and
    with ``user_only`` the kernel's and the hypervisor's part left out."""
    base = _DISABLED | _INHERIT | _ENABLE_ON_EXEC
    return base | (_EXCLUDE_KERNEL | _EXCLUDE_HV if user_only else 0)


#: errors that say the kernel or the machine has no such event (no PMU, no perf at all)
_MISSING = (errno.ENOENT, errno.EOPNOTSUPP, errno.ENODEV, errno.ENOSYS, errno.EINVAL)
#: errors that say the kernel refuses to count the kernel's part (perf_event_paranoid)
_REFUSED = (errno.EACCES, errno.EPERM)


@dataclass(frozen=True)
class PerfProbe:
    """Whether the kernel counts ``metric`` for a child of this process: ``user_only`` when
    only user space may be counted (perf_event_paranoid), ``error`` (one line) when not."""

    metric: str
    available: bool
    user_only: bool = False
    error: str | None = None


@functools.cache
def probe_perf(metric: str) -> PerfProbe:
    """Open (and close) a disabled counter of ``metric`` on this process to learn whether
    the kernel offers it: ENOENT/EOPNOTSUPP (no PMU) and the like mean not available;
    EACCES/EPERM are retried counting user space only."""
    event = COUNTER_EVENTS[metric]
    last: OSError | None = None
    for user_only in (False, True):
        try:
            fd = _perf_event_open(_attr(event, _flags(user_only)), 0, -1)
        except OSError as exc:
            last = exc
            if exc.errno in _REFUSED and not user_only:
                continue
            break
        os.close(fd)
        return PerfProbe(metric, True, user_only)
    why = last.strerror if last is not None and last.strerror else str(last)
    if last is not None and last.errno in _MISSING:
        return PerfProbe(metric, False, error=f"the kernel has no {metric} event here ({why})")
    return PerfProbe(metric, False, error=f"perf_event_open refused {metric}: {why}")


@dataclass(frozen=True)
class CounterPlan:
    """How each counter metric of a round is counted: ``perf`` the metrics counted through
    perf_event_open (with ``user_only`` per metric), ``cachegrind`` whether ``instructions``
    comes from valgrind at ``valgrind`` (the round's command then runs under it)."""

    perf: tuple[str, ...] = ()
    user_only: tuple[bool, ...] = ()
    cachegrind: bool = False
    valgrind: str | None = None

    @property
    def metrics(self) -> tuple[str, ...]:
        """Every counter metric of the plan, perf first, then cachegrind's."""
        return self.perf + (("instructions",) if self.cachegrind else ())

    def sources(self) -> dict[str, tuple[str, str]]:
        """metric -> (source, scope), as stored with each value and in the metadata."""
        out = {
            m: (SOURCE_PERF, SCOPE_TREE_USER if u else SCOPE_TREE)
            for m, u in zip(self.perf, self.user_only, strict=True)
        }
        if self.cachegrind:
            out["instructions"] = (SOURCE_CACHEGRIND, SCOPE_TREE_USER)
        return out


def find_valgrind(path_env: str | None = None) -> str | None:
    """The valgrind on ``path_env`` (None: this process's PATH) that has cachegrind
    (``valgrind --tool=cachegrind --version`` exits 0), or None."""
    path = shutil.which("valgrind", path=path_env)
    if path is None:
        return None
    try:
        done = subprocess.run(
            [path, "--tool=cachegrind", "--version"], capture_output=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if done.returncode == 0 else None


def plan_counters(metrics: Sequence[str], path_env: str | None = None) -> CounterPlan:
    """How to count ``metrics`` (counter metric names) on this machine, or one
    :class:`UserError` line naming the metric neither perf_event_open nor cachegrind can
    count. ``path_env``: the PATH valgrind is looked up in (None: this process's PATH,
    read at each call; the answer is cached per metrics and PATH)."""
    path = os.environ.get("PATH", os.defpath) if path_env is None else path_env
    return _plan_counters(tuple(metrics), path)


@functools.lru_cache(maxsize=64)
def _plan_counters(metrics: tuple[str, ...], path_env: str) -> CounterPlan:
    """:func:`plan_counters` for one PATH (cached: a probe a campaign, not a round)."""
    perf: list[str] = []
    user_only: list[bool] = []
    cachegrind = False
    valgrind: str | None = None
    for metric in metrics:
        if metric not in COUNTER_EVENTS:
            raise UserError(
                f"unknown counter metric {metric!r}; valid: {', '.join(COUNTER_METRICS)}"
            )
        probe = probe_perf(metric)
        if probe.available:
            perf.append(metric)
            user_only.append(probe.user_only)
            continue
        if metric == "instructions":
            valgrind = find_valgrind(path_env)
            if valgrind is not None:
                cachegrind = True
                continue
            raise UserError(
                f"metric instructions: {probe.error} and valgrind with "
                "cachegrind is not on PATH; install valgrind (apt-get install valgrind) "
                "or choose another metric"
            )
        raise UserError(
            f"metric {metric}: {probe.error}; this machine cannot count it "
            "(docs/metrics.md says which metric works where)"
        )
    return CounterPlan(tuple(perf), tuple(user_only), cachegrind, valgrind)


class PerfCounters:
    """The perf counters of one round: opened on the barrier shell's ``pid`` before it is
    released, read after every process of the round is reaped, then closed."""

    def __init__(self, plan: CounterPlan, pid: int) -> None:
        self.plan = plan
        self.fds: list[int] = []
        try:
            for metric, user_only in zip(plan.perf, plan.user_only, strict=True):
                attr = _attr(COUNTER_EVENTS[metric], _flags(user_only))
                self.fds.append(_perf_event_open(attr, pid, -1))
        except BaseException:
            self.close()
            raise

    def read(self) -> tuple[CounterReading, ...]:
        """Each counter's value in its metric's unit (a count scaled by time enabled /
        time running if the kernel multiplexed it)."""
        sources = self.plan.sources()
        out: list[CounterReading] = []
        for metric, fd in zip(self.plan.perf, self.fds, strict=True):
            value, enabled, running = struct.unpack("=QQQ", os.read(fd, 24))
            count = float(value)
            if 0 < running < enabled:
                count *= enabled / running
            source, scope = sources[metric]
            out.append(CounterReading(metric, count * COUNTER_EVENTS[metric].scale, source, scope))
        return tuple(out)

    def close(self) -> None:
        """Close every counter's fd (idempotent)."""
        for fd in self.fds:
            os.close(fd)
        self.fds = []


#: the file name pattern of cachegrind's per-process output (``%p``: the pid)
CACHEGRIND_FILE = "cachegrind.%p.out"


def cachegrind_argv(valgrind: str, out_dir: Path, argv: Sequence[str]) -> tuple[str, ...]:
    """``argv`` run under cachegrind, instruction counts only, every child traced, one
    output file per process in ``out_dir``; valgrind's own messages silenced (``-q``)."""
    return (
        valgrind,
        "-q",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--trace-children=yes",
        f"--cachegrind-out-file={out_dir / CACHEGRIND_FILE}",
        *argv,
    )


def cachegrind_total(out_dir: Path) -> int | None:
    """The instructions (Ir) of every process of a round: the sum of the ``summary:`` lines
    of cachegrind's output files in ``out_dir``, which are removed; None when there is no
    file with a summary (valgrind did not run to the end)."""
    total = 0
    found = False
    for entry in sorted(out_dir.iterdir()):
        try:
            count = _summary(entry)
        finally:
            entry.unlink(missing_ok=True)
        if count is not None:
            total += count
            found = True
    return total if found else None


def _summary(path: Path) -> int | None:
    """The ``summary:`` count of one cachegrind output file (its last lines), or None."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - 4096))
            tail = f.read()
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        if line.startswith(b"summary:"):
            try:
                return int(line.split()[1])
            except (ValueError, IndexError):
                return None
    return None
