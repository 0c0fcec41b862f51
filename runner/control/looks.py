"""The campaign's looks and the α spent at them (docs/methods.md §10, stats.sequential).

Verdicts that are not decided at a paired comparison's own looks (Welch pairs, stored
baselines, a reference comparison too short for its exact test) are declared only at looks
on a geometric schedule (``look_ratio``) that starts when every workload first has enough
data and ends at ``max_rounds``; look j tests at level α_j with Σ α_j <= α. A budget stop
makes one last look with the α that is left. :class:`CampaignLooks` holds the plan, the
looks made and the α spent; its state is stored with the "plan" and "look" events, so a
resumed campaign does not spend α again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from benchrun.runner.control.params import ControllerParams
from benchrun.stats.sequential import LookPlan, look_schedule, plan_looks

__all__ = ["CampaignLooks"]


class CampaignLooks:
    """The look plan of one campaign (None until every workload has enough data), the
    index of the last scheduled point looked at, the α spent (a fraction, <= ``alpha``)
    and the number of looks made (the campaign's and, counted with them, none other)."""

    def __init__(self, params: ControllerParams) -> None:
        self.params = params
        self.plan: LookPlan | None = None
        self.last_point = -1
        self.spent = 0.0
        self.looks = 0

    def state(self) -> dict[str, Any]:
        """The JSON-serialisable part of ``Controller.state`` this class holds."""
        return {
            "plan": None if self.plan is None else self.plan.to_dict(),
            "last_point": self.last_point,
            "spent": self.spent,
            "looks": self.looks,
        }

    def restore(self, s: Mapping[str, Any]) -> None:
        """Take back what :meth:`state` returned (missing keys: a fresh campaign's values)."""
        p = s.get("plan")
        if p is not None:
            self.plan = LookPlan(
                tuple(p["schedule"]), tuple(p["alphas"]), p["alpha"], p["ratio"], p["spending"]
            )
        self.last_point = int(s.get("last_point", -1))
        self.spent = float(s.get("spent", 0.0))
        self.looks = int(s.get("looks", 0))

    def start(self, clock: int) -> LookPlan:
        """Make the plan when every workload first has enough data after ``clock`` rounds:
        looks from ``max(clock, min_rounds)`` to ``max_rounds``, α split by ``spending``."""
        p = self.params
        first = max(clock, p.min_rounds)
        self.plan = plan_looks(first, max(p.max_rounds, first), p.alpha, p.look_ratio, p.spending)
        return self.plan

    def due(self, clock: int) -> float | None:
        """The α of a look due after ``clock`` rounds (the α of the scheduled points passed
        since the last look, at most what is left), marking it looked at; None when none is."""
        if self.plan is None or self.remaining() <= 0:
            return None
        j = self.plan.point_index(clock)
        if j is None or j <= self.last_point:
            return None
        alpha = min(self.remaining(), self.plan_cum(j) - self.spent)
        self.last_point = j
        return alpha

    def spend(self, alpha: float) -> int:
        """Count a look at level ``alpha``; returns its number (1 for the first)."""
        self.looks += 1
        self.spent += alpha
        return self.looks

    def remaining(self) -> float:
        """α not spent yet (0 once what is left is a rounding error)."""
        return (
            max(0.0, self.params.alpha - self.spent)
            if self.spent < self.params.alpha * (1 - 1e-12)
            else 0.0
        )

    def plan_cum(self, j: int) -> float:
        """α of the plan's points 0..j together (at most ``alpha``)."""
        assert self.plan is not None
        return min(self.params.alpha, math.fsum(self.plan.alphas[: j + 1]))

    def next_look(self) -> int | None:
        """Rounds after which the next scheduled look comes; None without one."""
        if self.plan is None or self.remaining() <= 0:
            return None
        nxt = self.last_point + 1
        return self.plan.schedule[nxt] if nxt < self.plan.n_looks else None

    def alpha_estimate(self) -> float:
        """Level a pair will likely be tested at: the next look's α (else α/K from now)."""
        p = self.params
        if self.plan is not None:
            nxt = self.last_point + 1
            if nxt < self.plan.n_looks:
                return max(self.plan_cum(nxt) - self.spent, 1e-12)
            return max(self.remaining(), 1e-12)
        return p.alpha / len(
            look_schedule(p.min_rounds, max(p.max_rounds, p.min_rounds + 1), p.look_ratio)
        )
