"""Which CPUs the workload and the runner use, and the one place that pins the runner.

docs/design.md "Processes": the runner pins itself away from the workload CPUs when it
can; on a 2-core machine the runner runs on CPU 0 and the workload on CPU 1 (``pin: auto``).
Only CPUs in the current affinity mask are considered (a container or ``taskset`` may allow
fewer CPUs than the machine has), and SMT siblings (hyperthreads of one physical core) are
never split between runner and workload, because siblings share the core's execution units
and caches and would disturb each other.

``pinned_runner`` is the single place that changes the runner's affinity; it records the
old masks and restores them on exit, also when an exception leaves the block
(docs/design.md "Keep state changes to the machine ... in one place").
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from benchrun.runner.config.cpulist import format_cpu_list
from benchrun.runner.config.cpulist import parse_kernel_cpu_list as parse_cpu_list
from benchrun.runner.errors import UserError

__all__ = [
    "PinPlan",
    "allowed_cpus",
    "format_cpu_list",
    "parse_cpu_list",
    "physical_cores",
    "pinned_runner",
    "plan_pinning",
]

SYSFS_CPU = Path("/sys/devices/system/cpu")


@dataclass(frozen=True)
class PinPlan:
    """Where the workload and the runner run.

    ``workload_cpus``: CPUs each round's child is pinned to (``None``: not pinned).
    ``runner_cpus``: CPUs the runner process is pinned to (``None``: left as it is).
    ``reason``: one line saying why, for the campaign metadata and the report.
    """

    workload_cpus: tuple[int, ...] | None
    runner_cpus: tuple[int, ...] | None
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {
            "workload_cpus": None if self.workload_cpus is None else list(self.workload_cpus),
            "runner_cpus": None if self.runner_cpus is None else list(self.runner_cpus),
            "reason": self.reason,
        }


def allowed_cpus() -> tuple[int, ...]:
    """CPUs in the calling thread's affinity mask (what this process may run on)."""
    return tuple(sorted(os.sched_getaffinity(0)))


def physical_cores(
    cpus: Iterable[int], sysfs: Path = SYSFS_CPU
) -> tuple[tuple[tuple[int, ...], ...], bool]:
    """Group ``cpus`` by physical core, using the kernel's SMT sibling lists.

    Reads ``cpuN/topology/core_cpus_list`` (or the older name ``thread_siblings_list``).
    Returns ``(cores, known)``: each core is the sorted tuple of its CPUs that are in
    ``cpus``; cores are ordered by their lowest CPU. If any sibling list is unreadable,
    ``known`` is False and every CPU is treated as its own core.
    """
    wanted = sorted(set(cpus))
    groups: dict[tuple[int, ...], None] = {}
    for cpu in wanted:
        siblings: tuple[int, ...] | None = None
        for name in ("core_cpus_list", "thread_siblings_list"):
            try:
                siblings = parse_cpu_list((sysfs / f"cpu{cpu}" / "topology" / name).read_text())
                break
            except (OSError, ValueError):
                continue
        if not siblings or cpu not in siblings:
            return tuple((c,) for c in wanted), False
        groups[tuple(c for c in siblings if c in wanted)] = None
    return tuple(sorted(groups, key=min)), True


def _cpu_word(cpus: Iterable[int]) -> str:
    cpus = tuple(cpus)
    return f"CPU{'s' if len(cpus) > 1 else ''} {format_cpu_list(cpus)}"


def plan_pinning(
    pin: str | Iterable[int],
    *,
    allowed: Iterable[int] | None = None,
    sysfs: Path = SYSFS_CPU,
) -> PinPlan:
    """Decide the workload and runner CPUs for ``pin`` = ``"auto"``, ``"none"`` or CPU list.

    ``auto``: the last physical core (all of its allowed SMT siblings) runs the workload;
    every other allowed CPU runs the runner. With one usable CPU, or when all usable CPUs
    are siblings of one core, nothing is pinned. ``none``: nothing is pinned. An explicit
    list pins the workload there (each CPU must be allowed, else :class:`UserError` naming
    the valid CPUs) and the runner on the allowed CPUs outside the workload's cores.
    ``allowed`` defaults to the current affinity mask; ``sysfs`` is for tests.
    """
    usable = tuple(sorted(set(allowed))) if allowed is not None else allowed_cpus()
    if not usable:
        raise UserError("pin: this process may not run on any CPU (empty affinity mask)")
    if isinstance(pin, str):
        if pin == "none":
            return PinPlan(None, None, "pin: none; workload and runner not pinned")
        if pin != "auto":
            raise UserError(
                f"pin: {pin!r} is not valid; use 'auto', 'none' or a list of CPUs "
                f"from {format_cpu_list(usable)}"
            )
        return _plan_auto(usable, sysfs)
    return _plan_explicit(tuple(pin), usable, sysfs)


def _plan_auto(usable: tuple[int, ...], sysfs: Path) -> PinPlan:
    if len(usable) == 1:
        return PinPlan(
            None, None, f"pin: auto; only CPU {usable[0]} is usable, so nothing is pinned"
        )
    cores, known = physical_cores(usable, sysfs)
    note = "" if known else " (CPU topology unreadable; each CPU treated as a core)"
    if len(cores) == 1:
        return PinPlan(
            None,
            None,
            f"pin: auto; usable {_cpu_word(usable)} are SMT siblings of one core, "
            "which are never split, so nothing is pinned",
        )
    workload = cores[-1]
    runner = tuple(sorted(c for core in cores[:-1] for c in core))
    return PinPlan(
        workload,
        runner,
        f"pin: auto; workload on {_cpu_word(workload)} (last physical core), "
        f"runner on {_cpu_word(runner)}{note}",
    )


def _plan_explicit(cpus: tuple[int, ...], usable: tuple[int, ...], sysfs: Path) -> PinPlan:
    valid = f"valid CPUs: {format_cpu_list(usable)}"
    if not cpus:
        raise UserError(f"pin: the CPU list is empty; {valid}")
    for cpu in cpus:
        if isinstance(cpu, bool) or not isinstance(cpu, int):
            raise UserError(f"pin: {cpu!r} is not a CPU number; {valid}")
    if len(set(cpus)) != len(cpus):
        raise UserError(f"pin: CPU list {list(cpus)} repeats a CPU; {valid}")
    missing = sorted(set(cpus) - set(usable))
    if missing:
        raise UserError(f"pin: {_cpu_word(missing)} not available to this process; {valid}")
    workload = tuple(sorted(cpus))
    cores, known = physical_cores(usable, sysfs)
    taken = {c for core in cores if set(core) & set(workload) for c in core}
    runner = tuple(c for c in usable if c not in taken)
    if not runner:
        return PinPlan(
            workload,
            None,
            f"pin: workload on {_cpu_word(workload)}; runner not pinned "
            "(no usable CPU outside the workload's cores)",
        )
    note = "" if known else " (CPU topology unreadable; each CPU treated as a core)"
    return PinPlan(
        workload,
        runner,
        f"pin: workload on {_cpu_word(workload)}, runner on {_cpu_word(runner)}{note}",
    )


def _thread_ids() -> list[int]:
    try:
        return sorted(int(t) for t in os.listdir("/proc/self/task"))
    except OSError:
        return [0]  # the calling thread only


@contextmanager
def pinned_runner(plan: PinPlan) -> Iterator[PinPlan]:
    """Pin every thread of the runner to ``plan.runner_cpus``; restore the old masks on exit.

    Linux affinity is per thread, so each thread listed in ``/proc/self/task`` is pinned
    (threads started inside the block inherit the mask of the thread that starts them).
    The previous mask of each thread is restored when the block ends, normally or by an
    exception; threads that ended meanwhile are skipped. With ``runner_cpus`` None this
    changes nothing.
    """
    if plan.runner_cpus is None:
        yield plan
        return
    saved: list[tuple[int, set[int]]] = []
    try:
        for tid in _thread_ids():
            try:
                old = os.sched_getaffinity(tid)
                os.sched_setaffinity(tid, plan.runner_cpus)
            except ProcessLookupError:
                continue
            except OSError as exc:
                raise UserError(
                    f"pin: cannot pin the runner to {_cpu_word(plan.runner_cpus)}: "
                    f"{exc.strerror}; allowed {_cpu_word(allowed_cpus())}"
                ) from None
            saved.append((tid, old))
        yield plan
    finally:
        for tid, old in reversed(saved):
            try:
                os.sched_setaffinity(tid, old)
            except ProcessLookupError:
                pass
