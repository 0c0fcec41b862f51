"""What an executor is: anything with ``launch(RoundSpec) -> RoundOutcome`` and ``interrupt()``.

Implementations: :class:`runner.execute.local.LocalExecutor` (a child process on this
machine); a test double and remote executors follow the same protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

from benchrun.runner.config.experiment import ReadingsSpec

RoundStatus = Literal["ok", "failed", "timeout", "interrupted"]


@dataclass(frozen=True)
class CounterReading:
    """One counter metric of a round (runner/execute/counters.py): ``value`` in the
    metric's unit (a count, or seconds for ``task_clock``), the ``source`` that counted it
    (``"perf_event"``, ``"cachegrind"``) and its ``scope`` (``"process tree"``: every
    process of the round, kernel included; ``"process tree, user space"``)."""

    metric: str
    value: float
    source: str
    scope: str


@dataclass(frozen=True)
class RoundSpec:
    """Everything needed to launch one round.

    ``argv``: the program and its arguments (with ``shell`` a 1-tuple run by ``/bin/sh -c``).
    ``env``: the complete environment of the child. ``cpus``: CPUs the child is pinned to
    before exec (``None`` = not pinned). ``timeout``: seconds, after which the child's
    process group is killed. ``output_limit``: bytes of stdout/stderr tail kept.
    """

    workload: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    timeout: float
    shell: bool = False
    cwd: str | None = None
    cpus: tuple[int, ...] | None = None
    readings: ReadingsSpec | None = None
    output_limit: int = 65536
    #: address-space limit of the child in bytes (RLIMIT_AS, set between fork and exec);
    #: None = no limit (and the fast spawn path without a preexec function)
    memory_limit: int | None = None
    #: "setup", "prepare" or "cleanup" when this is one of the workload's hooks (run and
    #: stored apart from its rounds, never timed as a measurement); None for a round
    hook: str | None = None
    #: the pass this round (or hook) belongs to; a multi-node Slurm job runs every round of
    #: pass p on its node p mod N (docs/slurm.md); None: not part of a pass (a cleanup, a
    #: calibration round), which runs on the job's first node
    pass_index: int | None = None
    #: counter metrics to count for the round's whole process tree (runner/execute/
    #: counters.py COUNTER_METRICS, e.g. ``("instructions",)``); () = none
    counters: tuple[str, ...] = ()


@dataclass(frozen=True)
class RoundOutcome:
    """What one round did.

    ``wall_ns``: wall time from just before spawn to reaping, monotonic clock, nanoseconds.
    ``user_s``/``sys_s``: CPU seconds of the child (and its reaped descendants) from wait4.
    ``max_rss_kib``: peak resident set of the child in KiB (ru_maxrss on Linux; for a
    local child never below the runner's own peak, see :class:`runner.execute.local.LocalExecutor`).
    ``exit_code``: the exit status, or ``-signal`` if killed by a signal.
    ``readings``: values parsed from stdout (empty unless ``spec.readings``).
    ``reason``: for a non-ok status, one line saying why.
    ``started_at``: Unix time (s) at launch. ``cpus``: CPUs the child was pinned to.
    ``wait_ns``: nanoseconds the round's processes were runnable but not running (waiting
    for a CPU) during the round, None when not measured; ``wait_source`` names the signal
    (:mod:`runner.execute.contention`: ``"cgroup cpu.pressure"``, ``"schedstat"``,
    ``"fake"``; docs/contention.md). ``extra["contended"]``: set to True by the campaign
    (runner/campaign/session.py) on the outcome it reports to the display when the round
    was flagged contended. ``counters``: the round's counter metrics (see
    :class:`CounterReading`).
    """

    status: RoundStatus
    wall_ns: int
    user_s: float
    sys_s: float
    max_rss_kib: int
    exit_code: int | None
    started_at: float
    cpus: tuple[int, ...] | None = None
    readings: tuple[float, ...] = ()
    reason: str | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""
    extra: Mapping[str, object] = field(default_factory=dict)
    node: str | None = None  # compute node that ran the round (remote executors); None: here
    wait_ns: int | None = None
    wait_source: str | None = None
    #: the counter metrics ``spec.counters`` asked for, one each, when the round ran to
    #: its end (an ok round that asked for counters has every one of them)
    counters: tuple[CounterReading, ...] = ()


class Executor(Protocol):
    """Anything that can run a round."""

    def launch(self, spec: RoundSpec) -> RoundOutcome:
        """Run one round as ``spec`` says and measure it; never raises for the workload's
        own failure (that is an outcome with status ``failed``/``timeout``)."""
        ...

    def interrupt(self) -> None:
        """Kill the round in flight (if any) from a signal handler; thread-safe."""
        ...
