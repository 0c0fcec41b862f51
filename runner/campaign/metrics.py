"""A round's metric values: the deciding one (the round's reading) and every one of a
``metric:`` list, each with its source and scope; and, before a campaign starts, whether
this machine and executor can count its counter metrics (docs/metrics.md)."""

from __future__ import annotations

from benchrun.runner.config.experiment import COUNTER_METRICS, Experiment, Workload
from benchrun.runner.errors import UserError
from benchrun.runner.execute.counters import plan_counters
from benchrun.runner.execute.executor import Executor, RoundOutcome
from benchrun.runner.execute.local import LocalExecutor
from benchrun.runner.store.database import RoundMetric

#: deciding metrics whose rounds are never flagged contended (docs/contention.md): the
#: instructions a program executes do not change while it waits for a CPU, so a round that
#: waited is as good as one that did not (its wait is still stored)
CONTENTION_FREE_METRICS: tuple[str, ...] = ("instructions",)

#: source and scope of the metrics measured without counters
_PLAIN_SOURCES: dict[str, tuple[str, str]] = {
    "wall_time": ("clock", "round"),  # monotonic clock, spawn (with perf: release) to reap
    "cpu_time": ("wait4", "process tree (reaped)"),  # rusage user + sys
    "max_rss": ("wait4", "largest process"),  # rusage ru_maxrss
}


def metric_value(
    workload: Workload, outcome: RoundOutcome, metric: str | None = None
) -> float | None:
    """The per-round value of ``metric`` (default: the workload's deciding metric) in its
    unit: ``wall_time`` wall_ns / 1e9 s; ``cpu_time`` user + sys s; ``max_rss`` KiB;
    ``readings`` the mean of the round's readings (each is stored separately too); a
    counter metric the value the executor counted (a count, or seconds for
    ``task_clock``); None when the round has no such value."""
    name = workload.metric if metric is None else metric
    if name == "wall_time":
        return outcome.wall_ns / 1e9
    if name == "cpu_time":
        return outcome.user_s + outcome.sys_s
    if name == "max_rss":
        return float(outcome.max_rss_kib)
    if name in COUNTER_METRICS:
        return next((c.value for c in outcome.counters if c.metric == name), None)
    if outcome.readings:
        return sum(outcome.readings) / len(outcome.readings)
    return None


def round_metrics(workload: Workload, outcome: RoundOutcome) -> tuple[RoundMetric, ...]:
    """Every metric of ``workload``'s ``metric:`` list for an ok round, in list order, with
    its source and scope (as stored in ``round_metric``); () for a round that did not end
    ok and for a workload with one metric that is not a counter (its value is the round's
    reading, its source always the same). With instructions from cachegrind, the other
    metrics were measured under valgrind, which their source says."""
    if outcome.status != "ok" or not (workload.extra_metrics or workload.counters):
        return ()
    counted = {c.metric: c for c in outcome.counters}
    simulated = any(c.source == "cachegrind" for c in outcome.counters)
    out: list[RoundMetric] = []
    for name in workload.metrics:
        value = metric_value(workload, outcome, name)
        if value is None:
            continue
        if name in counted:
            source, scope = counted[name].source, counted[name].scope
            if simulated and source != "cachegrind":
                source += ", under cachegrind"  # it counted valgrind running the round
        else:
            source, scope = _PLAIN_SOURCES.get(name, ("readings", "output"))
            if simulated:
                source += ", under cachegrind"
        out.append(RoundMetric(name, value, source, scope))
    return tuple(out)


def counter_sources(experiment: Experiment, executor: Executor) -> dict[str, dict[str, str]]:
    """metric -> {"source", "scope"} of every counter metric the experiment's workloads
    name, as this machine counts them (stored in the campaign's metadata), {} when none;
    one :class:`UserError` line when they cannot be counted: the executor is not the
    local one, duet mode is on, or the machine counts a metric neither way."""
    wanted = tuple(dict.fromkeys(m for w in experiment.workloads for m in w.counters))
    if not wanted:
        return {}
    if experiment.settings.duet is not None:
        raise UserError(
            f"metric {wanted[0]}: counter metrics are not counted in duet mode; "
            "drop settings.duet or measure wall_time"
        )
    if not isinstance(executor, LocalExecutor):
        raise UserError(
            f"metric {wanted[0]}: counter metrics are counted by the local executor only "
            "(not on Slurm nodes yet); use executor: local or another metric"
        )
    plan = plan_counters(wanted)
    return {m: {"source": src, "scope": scope} for m, (src, scope) in plan.sources().items()}
