"""Per-workload results of a stored campaign (fixed mode), computed with ``stats``.

The series of a workload is the metric value of each ok, non-warm-up round in launch
order (METHODS.md §3 "Rounds": one value per round). Its summary is ``stats.summarize``,
which applies the warm-up, autocorrelation and interval rules of METHODS.md §1-5.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import stats
from runner.store import CampaignRow, RoundRow, Store, WorkloadRow


@dataclass(frozen=True)
class WorkloadResult:
    """One row of the results table (values in ``unit``)."""

    name: str
    unit: str
    direction: str
    rounds: int  # rounds stored
    steady: int  # ok rounds after warm-up
    warmup: int
    failed: int
    status: str
    status_reason: str | None
    summary: dict[str, Any] | None  # stats.summarize(...).to_dict(); None if no data
    last_failure: str | None


def round_values(workload: WorkloadRow, rounds: list[RoundRow]) -> np.ndarray:
    """Per-round metric values of the ok, non-warm-up rounds, in launch order.

    A round with several readings contributes their mean (units as stored).
    """
    values = [
        float(np.mean(r.readings))
        for r in rounds
        if r.status == "ok" and not r.warmup and r.readings
    ]
    return np.asarray(values, dtype=float)


def workload_results(
    store: Store, campaign: CampaignRow, confidence: float
) -> list[WorkloadResult]:
    """Summaries of every workload of ``campaign``."""
    out: list[WorkloadResult] = []
    rounds_by_workload: dict[int, list[RoundRow]] = {}
    for r in store.rounds(campaign.id):
        rounds_by_workload.setdefault(r.workload_id, []).append(r)
    for w in store.workloads(campaign.id):
        rounds = rounds_by_workload.get(w.id, [])
        values = round_values(w, rounds)
        summary = None
        if values.size:
            # whole warm-up rounds are already excluded; MSER-5 over rounds would discard
            # real data of short fixed campaigns, so it is not applied here
            summary = stats.summarize(values, confidence=confidence, warmup="none").to_dict()
        failures = [r for r in rounds if r.status != "ok"]
        out.append(
            WorkloadResult(
                name=w.name,
                unit=w.unit,
                direction=w.direction,
                rounds=len(rounds),
                steady=int(values.size),
                warmup=sum(1 for r in rounds if r.warmup),
                failed=len(failures),
                status=w.status,
                status_reason=w.status_reason,
                summary=summary,
                last_failure=(
                    f"round {failures[-1].round_index}: {failures[-1].status}: {failures[-1].reason}"
                    if failures
                    else None
                ),
            )
        )
    return out
