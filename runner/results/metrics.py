"""Every metric of a ``metric:`` list, per workload of a stored campaign: the median, mean
and spread of each over the analysed rounds, with the source that measured it and its
scope (table ``round_metric``, schema 5; docs/metrics.md). ``show`` and the report put
them side by side (instructions beside wall time)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from benchrun.runner.config.experiment import METRIC_UNITS
from benchrun.runner.results.settings import StoredSettings
from benchrun.runner.results.workloads import analysed_rounds
from benchrun.runner.store.database import RoundMetric, RoundRow, WorkloadRow


@dataclass(frozen=True)
class MetricSummary:
    """One metric of one workload over its analysed rounds (ok, steady, not left out as
    contended). ``median``/``mean`` in ``unit``; ``cov``: sample standard deviation / mean
    (None below 2 rounds or at a zero mean); ``sources``/``scopes``: every distinct
    source and scope the rounds stored, joined by ", "; ``deciding``: the first of the
    workload's list (the metric its estimate and comparisons use)."""

    workload: str
    metric: str
    unit: str
    n: int
    median: float
    mean: float
    cov: float | None
    source: str
    scope: str
    deciding: bool


def metric_summaries(
    workloads: Sequence[WorkloadRow],
    rounds: list[RoundRow],
    metrics: Mapping[int, tuple[RoundMetric, ...]],
    settings: StoredSettings,
) -> list[MetricSummary]:
    """A :class:`MetricSummary` per stored metric of each workload (in file order, each
    workload's metrics in its list's order): the workloads with a ``metric:`` list or a
    counter metric; [] when no round stored any."""
    by_workload: dict[int, list[RoundRow]] = {}
    for r in analysed_rounds(rounds, settings):
        if r.id in metrics:
            by_workload.setdefault(r.workload_id, []).append(r)
    out: list[MetricSummary] = []
    for w in workloads:
        values: dict[str, list[RoundMetric]] = {}
        for r in by_workload.get(w.id, ()):
            for m in metrics[r.id]:
                values.setdefault(m.name, []).append(m)
        for i, (name, got) in enumerate(values.items()):
            xs = [m.value for m in got]
            mean = statistics.fmean(xs)
            cov = statistics.stdev(xs) / abs(mean) if len(xs) > 1 and mean != 0 else None
            out.append(
                MetricSummary(
                    workload=w.name,
                    metric=name,
                    unit=METRIC_UNITS.get(name, (w.unit, ""))[0],
                    n=len(xs),
                    median=statistics.median(xs),
                    mean=mean,
                    cov=cov,
                    source=", ".join(dict.fromkeys(m.source for m in got)),
                    scope=", ".join(dict.fromkeys(m.scope for m in got)),
                    deciding=i == 0 and name == w.metric,
                )
            )
    return out
