"""What the adaptive controller says after each pass (docs/methods.md §10; docs/controller.md).

Plain records, no logic: :class:`Decision` (stop or go on, why, the active workloads, the
events to store) with the status of every workload (:class:`WorkloadStatus`), adjacent
pair (:class:`PairStatus`) and baseline comparison (:class:`BaselineStatus`). They are
what :mod:`runner.campaign.adaptive` stores, what ``status.json`` and the live display show, and
what :mod:`runner.control.controller` produces. Units: those of the workload's readings; rates
and widths relative (0.05 = 5 %).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, NamedTuple

from benchrun.stats.results import jsonable

__all__ = [
    "BaselineVerdict",
    "BaselineStatus",
    "Decision",
    "Event",
    "PairStatus",
    "PairVerdict",
    "TestKind",
    "WorkloadStatus",
]

#: a pair of workloads: told apart, shown equivalent (TOST), or not yet either (§7)
PairVerdict = Literal["separated", "equivalent", "undecided"]
#: a workload against its baseline, in the metric's direction (worse = "slower")
BaselineVerdict = Literal["slower", "faster", "equivalent", "undecided", "no data"]
#: what decides a comparison: per-pass log ratios (docs/paired.md) or Welch
TestKind = Literal["paired", "welch"]


class Event(NamedTuple):
    """Something that changed since the previous call: ``kind``, one-line ``message``, ``data``."""

    kind: str
    message: str
    data: dict[str, Any]


@dataclass(frozen=True)
class WorkloadStatus:
    """One workload now. ``rel_half_width`` vs ``target``; ``rounds_needed`` = estimated
    more rounds for it (None when it needs none or no estimate exists); ``unmet`` lists
    its own conditions not yet met, and ``waiting_for`` the undecided pairs it is in."""

    name: str
    rounds: int
    n: int
    q: int | None
    n_q: int | None
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    rel_half_width: float | None
    target: float | None
    enough: bool
    width_ok: bool
    done: bool
    active: bool
    exhausted: bool
    rounds_needed: int | None
    unmet: tuple[str, ...]
    waiting_for: tuple[str, ...]


@dataclass(frozen=True)
class PairStatus:
    """Verdict on adjacent workloads a (better or equal) and b (§7), declared at ``look``
    with level ``alpha`` (None while undecided). p-values are from the latest look that
    tested the pair, of the test that decides it (``test``: the paired one-sample t on
    the per-pass log ratios, docs/paired.md, or Welch), despite the field names kept for
    readers of earlier versions; ``rounds_needed`` estimates more rounds per side
    (undecided only)."""

    a: str
    b: str
    verdict: PairVerdict
    look: int | None
    alpha: float | None
    welch_p: float | None
    welch_p_holm: float | None
    tost_p: float | None
    relative_difference: float | None
    rounds_needed: int | None
    #: what decides the pair: "paired" (per-pass log ratios, docs/paired.md) or "welch"
    test: TestKind | None = None
    #: b/a and its CI at the campaign's confidence (now, not at the look); passes in the
    #: paired series (None for Welch)
    ratio: float | None = None
    ratio_low: float | None = None
    ratio_high: float | None = None
    passes: int | None = None
    #: Welch's two-sided p on the two workloads' own subsession means, shown beside a
    #: paired verdict when both series are trusted (None otherwise, or for Welch pairs,
    #: whose ``welch_p`` it is)
    independent_p: float | None = None
    #: what ``ratio`` estimates: "median per-pass ratio" (Hodges-Lehmann, the rank test)
    #: or "geometric-mean ratio" (exp of the mean log ratio); None for Welch (ratio of means)
    estimand: str | None = None


@dataclass(frozen=True)
class BaselineStatus:
    """A workload against its baseline: "slower"/"faster" (worse/better in the metric's
    direction, significant at the look's level, Holm over baselines), "equivalent"
    (TOST within ``margin``), "undecided", or "no data". ``relative_change`` =
    (mean - baseline)/|baseline|."""

    name: str
    baseline: str
    verdict: BaselineVerdict
    look: int | None
    alpha: float | None
    mean: float | None
    baseline_mean: float
    relative_change: float | None
    welch_p: float | None
    welch_p_holm: float | None
    tost_p: float | None
    rounds_needed: int | None
    notes: tuple[str, ...] = ()
    #: as in PairStatus; the ratio is workload / baseline
    test: TestKind | None = None
    ratio: float | None = None
    ratio_low: float | None = None
    ratio_high: float | None = None
    passes: int | None = None


@dataclass(frozen=True)
class Decision:
    """What :meth:`Controller.decide` concluded (see the module docstring)."""

    stop: bool
    reason: str
    active: tuple[str, ...]
    look: int | None
    alpha_spent: float
    workloads: dict[str, WorkloadStatus]
    pairs: tuple[PairStatus, ...]
    baselines: tuple[BaselineStatus, ...]
    events: tuple[Event, ...]
    next_look_at: int | None
    #: every condition of the stopping rule holds (False on a budget stop, even when the
    #: final look then decided every pair)
    met: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict (floats or None, lists instead of tuples)."""

        return jsonable(
            {
                "stop": self.stop,
                "reason": self.reason,
                "active": list(self.active),
                "look": self.look,
                "alpha_spent": self.alpha_spent,
                "workloads": {k: asdict(w) for k, w in self.workloads.items()},
                "pairs": [asdict(p) for p in self.pairs],
                "baselines": [asdict(b) for b in self.baselines],
                "events": [
                    {"kind": e.kind, "message": e.message, "data": e.data} for e in self.events
                ],
                "next_look_at": self.next_look_at,
                "met": self.met,
            }
        )
