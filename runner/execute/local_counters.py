"""The counter metrics of a local round: how they are counted, the barrier, the reading.

:class:`LocalCounters` is the part of :class:`runner.execute.local.LocalExecutor` that
counts a round's counter metrics (docs/metrics.md) with :mod:`runner.execute.counters`:
with perf counters the child is :data:`COUNTER_BARRIER`, a shell held on the release pipe
until the counters are opened on it; with cachegrind the command runs under valgrind,
its per-process files in a private directory. The counts are read once every process of
the round is gone.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from benchrun.runner.execute.counters import (
    CounterPlan,
    PerfCounters,
    cachegrind_argv,
    cachegrind_total,
    plan_counters,
)
from benchrun.runner.execute.executor import CounterReading, RoundSpec
from benchrun.runner.execute.watch import Watched

#: with perf counters, the child is this shell waiting for one line on its stdin (the
#: release pipe) before it execs the round's command, so the counters are opened on it
#: first and count from that exec on (enable_on_exec); exit 125 when never released
COUNTER_BARRIER = 'IFS= read -r _go || exit 125; exec "$@" </dev/null'


class LocalCounters:
    """Counting the counter metrics of one executor's rounds (module docstring); owns
    cachegrind's private directory, removed by :meth:`close`."""

    def __init__(self) -> None:
        #: cachegrind's output directory (made at the first round that needs it)
        self._cg_dir: Path | None = None

    def plan(self, spec: RoundSpec) -> CounterPlan | None:
        """How ``spec.counters`` are counted here (None: no counters); a :class:`UserError`
        when this machine can count one of them neither way."""
        if not spec.counters:
            return None
        return plan_counters(spec.counters)

    def argv(self, plan: CounterPlan | None, argv: tuple[str, ...]) -> tuple[str, ...]:
        """The argv that runs ``argv`` counted by ``plan``: under cachegrind, and behind
        :data:`COUNTER_BARRIER` with perf counters (its stdin then the release pipe)."""
        if plan is not None and plan.cachegrind:
            assert plan.valgrind is not None
            argv = cachegrind_argv(plan.valgrind, self.cachegrind_dir(), argv)
        if plan is not None and plan.perf:
            argv = ("/bin/sh", "-c", COUNTER_BARRIER, "benchrun-counters", *argv)
        return argv

    def cachegrind_dir(self) -> Path:
        """The executor's private directory (0700) for cachegrind's per-process files."""
        if self._cg_dir is None:
            self._cg_dir = Path(tempfile.mkdtemp(prefix="benchrun-cachegrind-"))
        return self._cg_dir

    def release(
        self, plan: CounterPlan, pid: int, release_w: int, watched: Watched, t0: int
    ) -> tuple[PerfCounters | None, int]:
        """Open the perf counters on the barrier shell ``pid`` and release it through
        ``release_w`` (the caller closes it); the counters (None when they cannot be
        opened: closing the pipe unread then ends the shell, exit 125, and
        ``watched.counter_error`` says why) and the round's start (monotonic ns)."""
        try:
            perf = PerfCounters(plan, pid)
        except OSError as exc:
            watched.counter_error = (
                f"cannot count {', '.join(plan.perf)}: perf_event_open: {exc.strerror or exc}"
            )
            return None, t0
        t0 = time.monotonic_ns()  # the workload starts now: its wall time
        try:
            os.write(release_w, b"go\n")
        except BaseException:
            perf.close()
            raise
        return perf, t0

    def discard(self, plan: CounterPlan | None) -> None:
        """Forget a round that never started (cachegrind's directory is cleared)."""
        if plan is not None and plan.cachegrind:
            cachegrind_total(self.cachegrind_dir())  # clears the directory

    def read(self, plan: CounterPlan, perf: PerfCounters | None, w: Watched) -> None:
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
            total = cachegrind_total(self.cachegrind_dir())
            if total is None:
                w.counter_error = w.counter_error or "cachegrind wrote no instruction count"
            else:
                source, scope = plan.sources()["instructions"]
                readings.append(CounterReading("instructions", float(total), source, scope))
        w.counters = tuple(readings)

    def close(self) -> None:
        """Remove cachegrind's directory (idempotent)."""
        if self._cg_dir is not None:
            shutil.rmtree(self._cg_dir, ignore_errors=True)
            self._cg_dir = None
