"""The adaptive stopping controller (docs/methods.md §10).

:meth:`Controller.decide` takes every workload's latest statistics after a pass and says:
stop or go on, why, which workloads run next, every status and verdict, the events to
store. The rule and its error-rate argument: docs/controller.md "The stopping rule".

The parts, each a module of runner/control/: the settings (params.py), what the controller
knows between calls and the questions its parts share (core.py), the campaign's looks and
the α spent (looks.py), the tests at those looks (pairtests.py) and at a paired
comparison's own looks (ownlooks.py), who gets rounds next (allocation.py), the status of
every workload and comparison (status.py), the reason and the change events (progress.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from benchrun.runner.control.allocation import extended_workloads
from benchrun.runner.control.collector import WorkloadStats
from benchrun.runner.control.core import NODES_DIFFER, ControllerCore, known
from benchrun.runner.control.decision import (
    BaselineStatus,
    Decision,
    Event,
    PairStatus,
    WorkloadStatus,
)
from benchrun.runner.control.ownlooks import own_looks
from benchrun.runner.control.pairing import PairSource
from benchrun.runner.control.pairtests import campaign_look
from benchrun.runner.control.params import (
    COMPARISONS,
    DIRECTIONS,
    PAIR_LOOKS,
    ControllerParams,
)
from benchrun.runner.control.progress import change_events, stop_reason
from benchrun.runner.control.status import campaign_status

__all__ = [
    "COMPARISONS",
    "DIRECTIONS",
    "NODES_DIFFER",
    "PAIR_LOOKS",
    "ControllerParams",
    "Controller",
    "Decision",
    "WorkloadStatus",
    "PairStatus",
    "BaselineStatus",
    "Event",
]


class Controller(ControllerCore):
    """Stopping rule and round allocation for one campaign (docs/methods.md §10).

    Made as :class:`runner.control.core.ControllerCore` (``params``, ``workloads``,
    ``baseline``, ``reference``, ``state``: see there).

    Allocation (``Decision.active``, runner/control/allocation.py): a workload gets rounds
    while its own conditions are unmet, or while it is in an undecided pair and holds at
    least ``allocation_share`` (1/3) of that pair's remaining uncertainty, measured as the
    variance a round removes, ``(s_q²/n_q)/rounds`` (the other side has it all if it is
    deterministic or out of budget). Finished workloads get no rounds unless a pair they
    are in is undecided.
    """

    def decide(
        self,
        stats: Mapping[str, WorkloadStats | None],
        rounds_used: Mapping[str, int],
        elapsed_s: float = 0.0,
        retired: Mapping[str, str] | None = None,
        pairs: PairSource | None = None,
    ) -> Decision:
        """Decide after the latest round (see the class and module docstrings).

        ``stats``: the latest :func:`runner.control.collector.collect` result per workload (missing
        or None = no steady data yet); ``rounds_used``: steady rounds per workload;
        ``elapsed_s``: campaign wall-clock time so far (seconds); ``retired``: workloads
        that can get no more rounds (e.g. stopped after repeated failures), name -> why;
        they count as out of budget. ``pairs``: the per-pass log-ratio series of two
        workloads (runner/control/pairing.py); with ``comparison: paired`` the comparisons whose
        workloads share passes are decided on them (docs/paired.md), others by Welch.
        """
        p = self.params
        self.retired = dict(retired or {})
        self.src = pairs if p.comparison == "paired" else None
        for name in list(stats) + list(rounds_used):
            if name not in self.direction:
                raise ValueError(f"unknown workload {name!r}")
        st = {n: stats.get(n) for n in self.names}
        rounds = {n: int(rounds_used.get(n, 0)) for n in self.names}
        clock = max(rounds.values())
        events: list[Event] = []
        enough = {n: self.enough(st[n], rounds[n]) for n in self.names}
        self.covered = {n: self.is_covered(n) for n in self.names}
        self.retire_node_limited(st, enough)
        all_enough = all(
            enough[n] or (self.covered[n] and self.started(st[n], rounds[n])) for n in self.names
        ) and all(self.ready(a, b, enough) for a, b in self.comparisons(st))
        if all_enough and self.schedule.plan is None:
            events.append(self.plan_event(clock))
        look_alpha = self.schedule.due(clock) if all_enough else None
        looked = look_alpha is not None and look_alpha > 0
        if look_alpha is not None and looked:
            events.extend(campaign_look(self, st, rounds, look_alpha, clock, final=False))
        own = own_looks(self, st, clock, final=False)
        events.extend(own)
        looked = looked or any(e.kind == "look" for e in own)
        time_out = p.max_time is not None and elapsed_s >= p.max_time
        self.extended = extended_workloads(self, st, rounds, elapsed_s)
        status = campaign_status(self, st, rounds, enough, realloc=looked)
        budget = (time_out or not status.active) and not status.all_done
        unmet_before = list(status.unmet)
        if budget:
            # budget stop: a last look with whatever alpha is left (still <= alpha in total)
            if self.schedule.plan is not None and all_enough and self.schedule.remaining() > 0:
                events.extend(
                    campaign_look(self, st, rounds, self.schedule.remaining(), clock, final=True)
                )
            events.extend(own_looks(self, st, clock, final=True))
            status = campaign_status(self, st, rounds, enough, realloc=True)
        stop = time_out or not status.active or budget
        reason = stop_reason(self, status, rounds, time_out, elapsed_s, budget, unmet_before)
        events = change_events(self, status, stop, reason, early=True) + events
        events.extend(change_events(self, status, stop, reason, early=False))
        for e in events:
            if e.kind == "plan":
                e.data["state"] = self.state()
        return Decision(
            stop=stop,
            reason=reason,
            active=() if stop else tuple(status.active),
            look=self.schedule.looks if any(e.kind == "look" for e in events) else None,
            alpha_spent=self.schedule.spent,
            workloads=status.workloads,
            pairs=tuple(status.pairs),
            baselines=tuple(status.baselines),
            events=tuple(events),
            next_look_at=min(
                (x for x in (self.schedule.next_look(), self.own_next) if x is not None),
                default=None,
            ),
            met=bool(status.all_done) and not budget,
        )

    def retire_node_limited(
        self, st: Mapping[str, WorkloadStats | None], enough: Mapping[str, bool]
    ) -> None:
        """Retire every workload whose CI only more nodes can narrow (§14): no more rounds."""
        for n in self.names:
            if enough[n] and not self.covered[n] and n not in self.retired:
                if self.node_limited(st[n]) is not None:
                    k = known(st[n]).nodes or {}
                    self.retired[n] = (
                        f"{NODES_DIFFER}: more rounds do not narrow a CI from {k.get('k')} "
                        "node means; run on more nodes"
                    )

    def plan_event(self, clock: int) -> Event:
        """Make the look plan (every workload and comparison has enough data after
        ``clock`` rounds) and the "plan" event saying so (its state filled in later)."""
        p = self.params
        plan = self.schedule.start(clock)
        sched = ", ".join(map(str, plan.schedule))
        return Event(
            "plan",
            f"every workload and comparison has enough data after {clock} rounds: verdicts at looks after "
            f"{sched} rounds, alpha {p.alpha:g} split {p.spending} over {plan.n_looks} looks",
            {"plan": plan.to_dict(), "state": None},
        )
