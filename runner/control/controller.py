"""The adaptive stopping controller (docs/methods.md §10).

:meth:`Controller.decide` takes every workload's latest statistics after a pass and says:
stop or go on, why, which workloads run next, every status and verdict, the events to
store. The rule and its error-rate argument: docs/controller.md "The stopping rule".
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, NamedTuple, TypeGuard

from benchrun.runner.config.experiment import Settings
from benchrun.runner.control.collector import WorkloadStats
from benchrun.runner.control.decision import (
    BaselineStatus,
    BaselineVerdict,
    Decision,
    Event,
    PairStatus,
    TestKind,
    WorkloadStatus,
)
from benchrun.runner.control.pairing import PairSource
from benchrun.runner.control.pairlooks import (
    FIRST_SHARE,
    PAIRED_TESTS,
    SPEND_RHO,
    PairLookState,
    PairTestResult,
    first_look,
    look_tests,
    look_units,
)
from benchrun.runner.errors import UserError
from benchrun.runner.format import format_duration, format_percent
from benchrun.stats.autocorr import MIN_SUBSESSIONS
from benchrun.stats.compare import tost_from_summary, welch_from_summary
from benchrun.stats.multi import EQUIVALENT, SEPARATED, UNDECIDED, holm, rank_results
from benchrun.stats.paired import (
    confirm_paired,
    paired_growth_needed,
    paired_test,
    ratio_of_means_ci,
)
from benchrun.stats.sequential import (
    SPENDING_KINDS,
    LookPlan,
    Sample,
    baseline_tests,
    confirm_separations,
    growth_needed,
    look_schedule,
    plan_looks,
)

__all__ = [
    "ControllerParams",
    "Controller",
    "Decision",
    "WorkloadStatus",
    "PairStatus",
    "BaselineStatus",
    "Event",
]

DIRECTIONS = ("lower_is_better", "higher_is_better")
#: how two workloads of one campaign are compared (``settings.comparison``)
COMPARISONS = ("paired", "independent")
#: where a paired comparison's looks come from: its own passes (docs/controller.md,
#: "Decision efficiency") or the campaign's look schedule (the rule before issue 28)
PAIR_LOOKS = ("own", "campaign")
_DEFAULTS = Settings()


@dataclass(frozen=True)
class _Status:
    """What :meth:`Controller._status` found at one pass: every workload's, pair's and
    baseline's status, the workloads that get a round next, and what is still unmet."""

    workloads: dict[str, WorkloadStatus]
    pairs: list[PairStatus]
    baselines: list[BaselineStatus]
    active: list[str]
    all_done: bool
    unmet: list[str]
    can_test: bool


def _known(s: WorkloadStats | None) -> WorkloadStats:
    """``s``, which the caller knows is set (the workload passed :meth:`Controller._enough`)."""
    if s is None:
        raise AssertionError("a workload the controller compares has no statistics")
    return s


@dataclass(frozen=True)
class ControllerParams:
    """Settings of the stopping rule (the adaptive keys of ``runner.config.experiment.Settings``).

    Not in the config file (defaults chosen by docs/controller.md's simulation):
    ``look_ratio`` growth of the look schedule (§10); ``spending`` how α is split over the
    looks ("uniform" = Bonferroni, "pocock", "obrien-fleming": stats.sequential);
    ``allocation_share`` the share of a pair's remaining uncertainty a workload must hold
    to get rounds for that pair (see Controller); ``min_series`` fewest readings in a
    workload's series before it counts as having enough data; ``check_2q`` whether a
    separation must also hold with subsessions of 2q; ``pair_looks`` "own" (each paired
    comparison looks on its own passes with group-sequential boundaries,
    runner/control/pairlooks.py) or "campaign" (at the campaign's looks, α split evenly,
    on the subsession summary: the rule before issue 28); ``pair_look_ratio`` the growth
    of a comparison's own looks; ``pair_first_share``, ``pair_spend_rho`` their α
    spending (runner/control/pairlooks.py ``cumulative_spend``); ``extend_rounds``: a
    paired comparison estimated to decide within the time left of ``max_time`` keeps its
    workloads running past ``max_rounds`` (None: on when ``max_rounds`` is the default).
    """

    # the settings' defaults are the experiment file's (one source: Settings)
    confidence: float = _DEFAULTS.confidence
    ci_rel_width: float | None = _DEFAULTS.ci_rel_width
    alpha: float = _DEFAULTS.alpha
    margin: float = _DEFAULTS.margin
    min_rounds: int = _DEFAULTS.min_rounds
    min_subsessions: int | None = _DEFAULTS.min_subsessions
    max_rounds: int = _DEFAULTS.max_rounds
    max_time: float | None = _DEFAULTS.max_time
    look_ratio: float = 1.5
    spending: str = "uniform"
    allocation_share: float = 1.0 / 3.0
    min_series: int = 8
    check_2q: bool = True
    comparison: str = _DEFAULTS.comparison
    paired_test: str = _DEFAULTS.paired_test
    pair_looks: str = "own"
    pair_look_ratio: float = 1.1
    extend_rounds: bool | None = None
    pair_first_share: float = FIRST_SHARE
    pair_spend_rho: float = SPEND_RHO

    def __post_init__(self) -> None:
        def bad(key: str, why: str) -> UserError:
            return UserError(f"settings.{key}: {why}")

        if not 0 < self.confidence < 1:
            raise bad("confidence", f"must be in (0, 1), got {self.confidence}")
        if self.ci_rel_width is not None and not self.ci_rel_width > 0:
            raise bad("ci_rel_width", f"must be > 0 or null, got {self.ci_rel_width}")
        if not 0 < self.alpha < 0.5:
            raise bad("alpha", f"must be in (0, 0.5), got {self.alpha}")
        if not 0 < self.margin < 1:
            raise bad("margin", f"must be in (0, 1), got {self.margin}")
        if self.min_rounds < 1 or self.max_rounds < self.min_rounds:
            raise bad("max_rounds", f"need 1 <= min_rounds ({self.min_rounds}) <= max_rounds")
        if self.min_subsessions is not None and self.min_subsessions < 2:
            raise bad("min_subsessions", f"must be >= 2, got {self.min_subsessions}")
        if self.max_time is not None and not self.max_time > 0:
            raise bad("max_time", f"must be > 0, got {self.max_time}")
        if not self.look_ratio > 1:
            raise bad("look_ratio", f"must be > 1, got {self.look_ratio}")
        if self.spending not in SPENDING_KINDS:
            raise bad("spending", f"must be one of {SPENDING_KINDS}, got {self.spending!r}")
        if self.comparison not in COMPARISONS:
            raise bad("comparison", f"must be one of {COMPARISONS}, got {self.comparison!r}")
        if self.paired_test not in PAIRED_TESTS:
            raise bad("paired_test", f"must be one of {PAIRED_TESTS}, got {self.paired_test!r}")
        if self.pair_looks not in PAIR_LOOKS:
            raise bad("pair_looks", f"must be one of {PAIR_LOOKS}, got {self.pair_looks!r}")
        if not self.pair_look_ratio > 1:
            raise bad("pair_look_ratio", f"must be > 1, got {self.pair_look_ratio}")
        if not 0 < self.pair_first_share < 1:
            raise bad("pair_first_share", f"must be in (0, 1), got {self.pair_first_share}")
        if not self.pair_spend_rho > 0:
            raise bad("pair_spend_rho", f"must be > 0, got {self.pair_spend_rho}")
        if not 0 < self.allocation_share <= 0.5:
            raise bad("allocation_share", f"must be in (0, 0.5], got {self.allocation_share}")
        if self.extend_rounds is None:  # as the loader resolves it: on at the default cap
            object.__setattr__(self, "extend_rounds", self.max_rounds == _DEFAULTS.max_rounds)

    @classmethod
    def from_settings(cls, settings: Any, **overrides: Any) -> ControllerParams:
        """Take every field that ``settings`` (e.g. runner.config.experiment.Settings) has."""
        values = {
            f.name: getattr(settings, f.name) for f in fields(cls) if hasattr(settings, f.name)
        }
        values.update(overrides)
        return cls(**values)

    @property
    def subsessions(self) -> int:
        return MIN_SUBSESSIONS if self.min_subsessions is None else self.min_subsessions


#: how the reason of a workload stopped for node variation starts (docs/methods.md §14)
NODES_DIFFER = "nodes differ"


# ----------------------------------------------------------------------------- helpers
class _Side(NamedTuple):
    mean: float
    var: float  # s_q^2
    n: int  # n_q
    rounds: int  # rounds behind it (for scaling estimates); 0 = fixed (a stored baseline)

    @property
    def sample(self) -> Sample:
        return Sample(self.mean, self.var, self.n)


# ----------------------------------------------------------------------------- controller
class Controller:
    """Stopping rule and round allocation for one campaign (docs/methods.md §10).

    ``workloads``: ``(name, direction)`` or ``(name, direction, group)`` in file order;
    only workloads of one direction and group are ranked together (default group: all
    of one direction), and the reference's group is not ranked: its question is each
    workload against the reference. ``baseline``: stored results to compare against, name ->
    ``(mean, variance of subsession means, n_q, q)`` (PILOT "Comparing Results"), or
    ``None``. ``reference``: a workload of this campaign every other one of its group is
    compared with (``settings.baseline``). ``state``: what :meth:`state` returned before
    (stored in the data of "plan"/"look" events), to resume without re-spending α.

    Allocation (``Decision.active``): a workload gets rounds while its own conditions are
    unmet, or while it is in an undecided pair and holds at least ``allocation_share``
    (1/3) of that pair's remaining uncertainty, measured as the variance a round removes,
    ``(s_q²/n_q)/rounds`` (the other side has it all if it is deterministic or out of
    budget). Finished workloads get no rounds unless a pair they are in is undecided.
    """

    def __init__(
        self,
        params: Any,
        workloads: Sequence[tuple[str, str] | tuple[str, str, str]],
        baseline: Mapping[str, tuple[float, float, int, int]] | None = None,
        *,
        reference: str | None = None,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        self.params = (
            params
            if isinstance(params, ControllerParams)
            else ControllerParams.from_settings(params)
        )
        self.names: list[str] = []
        self.direction: dict[str, str] = {}
        self.group: dict[str, tuple[str, str]] = {}
        for w in workloads:
            name, direction = str(w[0]), str(w[1])
            if direction not in DIRECTIONS:
                raise ValueError(
                    f"{name}: direction must be one of {DIRECTIONS}, got {direction!r}"
                )
            if name in self.direction:
                raise ValueError(f"workload {name!r} is listed twice")
            self.names.append(name)
            self.direction[name] = direction
            self.group[name] = (direction, str(w[2]) if len(w) > 2 else "")
        if not self.names:
            raise ValueError("the controller needs at least one workload")
        self.baseline: dict[str, _Side] = {}
        for name, value in (baseline or {}).items():
            if name not in self.direction:
                raise ValueError(f"baseline for unknown workload {name!r}")
            mean, var, n_q, _q = value
            if not (math.isfinite(mean) and math.isfinite(var) and var >= 0 and int(n_q) >= 2):
                raise ValueError(f"{name}: baseline needs a finite mean, variance >= 0, n_q >= 2")
            self.baseline[name] = _Side(float(mean), float(var), int(n_q), 0)
        if reference is not None and reference not in self.direction:
            raise ValueError(f"reference {reference!r} is not a workload")
        self.reference = reference
        self._plan: LookPlan | None = None
        self._last_point = -1
        self._spent = 0.0
        self._looks = 0
        self._verdicts: dict[frozenset[str], dict[str, Any]] = {}
        self._base_verdicts: dict[str, dict[str, Any]] = {}
        self._order: dict[tuple[str, str], list[str]] = {}
        self._latest: dict[str, dict[str, Any]] = {}  # last test results, by key
        self._prev: dict[str, Any] = {}
        self._pair_active: set[str] | None = None  # fixed between looks (no churn)
        self._retired: dict[str, str] = {}
        self._src: PairSource | None = None
        self._covered: dict[str, bool] = {}
        self._pair_looks: dict[frozenset[str], PairLookState] = {}
        self._units: dict[tuple[str, str], tuple[int, PairTestResult]] = {}
        self._extended: set[str] = set()  # past max_rounds, deciding within max_time
        self._pace: float | None = None  # campaign seconds per pass so far
        self._own_next: int | None = None  # clock of the next own look of a comparison
        if state:
            self._restore(state)

    # ------------------------------------------------------------------ state (resume)
    def state(self) -> dict[str, Any]:
        """JSON-serialisable state: the look plan, α spent, and every declared verdict."""
        return {
            "plan": None if self._plan is None else self._plan.to_dict(),
            "last_point": self._last_point,
            "spent": self._spent,
            "looks": self._looks,
            "verdicts": [dict(v) for v in self._verdicts.values()],
            "baseline_verdicts": [dict(v) for v in self._base_verdicts.values()],
            "order": [[list(k), v] for k, v in self._order.items()],
            "pair_looks": [[sorted(k), v.to_dict()] for k, v in self._pair_looks.items()],
        }

    def _restore(self, s: Mapping[str, Any]) -> None:
        p = s.get("plan")
        if p is not None:
            self._plan = LookPlan(
                tuple(p["schedule"]), tuple(p["alphas"]), p["alpha"], p["ratio"], p["spending"]
            )
        self._last_point = int(s.get("last_point", -1))
        self._spent = float(s.get("spent", 0.0))
        self._looks = int(s.get("looks", 0))
        for v in s.get("verdicts", []):
            self._verdicts[frozenset((v["a"], v["b"]))] = dict(v)
        for v in s.get("baseline_verdicts", []):
            self._base_verdicts[v["name"]] = dict(v)
        for k, v in s.get("order", []):
            self._order[(k[0], k[1])] = list(v)
        for k, v in s.get("pair_looks", []):
            self._pair_looks[frozenset(k)] = PairLookState.from_dict(v)

    # ------------------------------------------------------------------ main entry
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
        self._retired = dict(retired or {})
        self._src = pairs if p.comparison == "paired" else None
        for name in list(stats) + list(rounds_used):
            if name not in self.direction:
                raise ValueError(f"unknown workload {name!r}")
        st = {n: stats.get(n) for n in self.names}
        rounds = {n: int(rounds_used.get(n, 0)) for n in self.names}
        clock = max(rounds.values())
        events: list[Event] = []
        enough = {n: self._enough(st[n], rounds[n]) for n in self.names}
        self._covered = {n: self._is_covered(n) for n in self.names}
        for n in self.names:  # a CI only more nodes can narrow: no more rounds (§14)
            if enough[n] and not self._covered[n] and n not in self._retired:
                if self._node_limited(st[n]) is not None:
                    k = _known(st[n]).nodes or {}
                    self._retired[n] = (
                        f"{NODES_DIFFER}: more rounds do not narrow a CI from {k.get('k')} "
                        "node means; run on more nodes"
                    )
        all_enough = all(
            enough[n] or (self._covered[n] and self._started(st[n], rounds[n])) for n in self.names
        ) and all(self._ready(a, b, enough) for a, b in self._comparisons(st))
        if all_enough and self._plan is None:
            first = max(clock, p.min_rounds)
            self._plan = plan_looks(
                first, max(p.max_rounds, first), p.alpha, p.look_ratio, p.spending
            )
            sched = ", ".join(map(str, self._plan.schedule))
            events.append(
                Event(
                    "plan",
                    f"every workload and comparison has enough data after {clock} rounds: verdicts at looks after "
                    f"{sched} rounds, alpha {p.alpha:g} split {p.spending} over {self._plan.n_looks} looks",
                    {"plan": self._plan.to_dict(), "state": None},
                )
            )
        look_alpha = None
        if self._plan is not None and all_enough and self._remaining() > 0:
            j = self._plan.point_index(clock)
            if j is not None and j > self._last_point:
                look_alpha = min(self._remaining(), self._plan_cum(j) - self._spent)
                self._last_point = j
        looked = look_alpha is not None and look_alpha > 0
        if look_alpha is not None and looked:
            events.extend(self._look(st, rounds, look_alpha, clock, final=False))
        own = self._own_looks(st, clock, final=False)
        events.extend(own)
        looked = looked or any(e.kind == "look" for e in own)
        time_out = p.max_time is not None and elapsed_s >= p.max_time
        self._extended = self._extend(st, rounds, elapsed_s)
        status = self._status(st, rounds, enough, realloc=looked)
        budget = (time_out or not status.active) and not status.all_done
        unmet_before = list(status.unmet)
        if budget:
            # budget stop: a last look with whatever alpha is left (still <= alpha in total)
            if self._plan is not None and all_enough and self._remaining() > 0:
                events.extend(self._look(st, rounds, self._remaining(), clock, final=True))
            events.extend(self._own_looks(st, clock, final=True))
            status = self._status(st, rounds, enough, realloc=True)
        stop = time_out or not status.active or budget
        reason = self._reason(status, rounds, time_out, elapsed_s, budget, unmet_before)
        events = self._changes(status, stop, reason, early=True) + events
        events.extend(self._changes(status, stop, reason, early=False))
        for e in events:
            if e.kind == "plan":
                e.data["state"] = self.state()
        return Decision(
            stop=stop,
            reason=reason,
            active=() if stop else tuple(status.active),
            look=self._looks if any(e.kind == "look" for e in events) else None,
            alpha_spent=self._spent,
            workloads=status.workloads,
            pairs=tuple(status.pairs),
            baselines=tuple(status.baselines),
            events=tuple(events),
            next_look_at=min(
                (x for x in (self._next_look(), self._own_next) if x is not None), default=None
            ),
            met=bool(status.all_done) and not budget,
        )

    # ------------------------------------------------------------------ pieces
    def _enough(self, s: WorkloadStats | None, rounds: int) -> TypeGuard[WorkloadStats]:
        return bool(
            s is not None
            and s.enough
            and s.s2_q is not None
            and rounds >= self.params.min_rounds
            and (s.n_q or 0) >= self.params.subsessions
            and s.n >= self.params.min_series
        )

    def _started(self, s: WorkloadStats | None, rounds: int) -> bool:
        """Enough of a workload whose comparisons are paired: min_rounds steady rounds."""
        return s is not None and s.mean is not None and rounds >= self.params.min_rounds

    def _is_covered(self, name: str) -> bool:
        """Is every comparison of ``name`` paired (docs/paired.md)? Then ``ci_rel_width``
        and "enough data" apply to its log-ratio series, not to its own series (a mean of
        a drifting machine describes the period measured; docs/controller.md)."""
        if self._src is None or name in self.baseline:
            return False
        others = [m for m in self.names if m != name and self.group[m] == self.group[name]]
        return bool(others) and all(self._src.possible(name, m) for m in others)

    def _pair(self, a: str, b: str) -> WorkloadStats | None:
        """Statistics of d = ln b - ln a over shared passes, when the pair is paired."""
        if self._src is None or not (self._covered.get(a) and self._covered.get(b)):
            return None
        return self._src.stats(a, b)

    def _paired(self, a: str, b: str) -> bool:
        return self._src is not None and bool(self._covered.get(a) and self._covered.get(b))

    def _ready(self, a: str, b: str, enough: Mapping[str, bool]) -> bool:
        """Can the comparison a~b be tested (paired series, or both sides for Welch)?"""
        if self._paired(a, b):
            if self._own_paired(a, b):  # its looks are its own (see _own_looks)
                return True
            s = self._pair(a, b)
            return s is not None and self._enough(s, s.rounds)
        return bool(enough[a] and enough[b])

    def _own_paired(self, a: str, b: str) -> bool:
        """Is a~b paired and tested at looks on its own passes (``pair_looks: own``)? Not
        while its series is too short for the exact test to decide at the group's level
        (``2/2^n > alpha_pair``) and it has had no look yet: then, as for a series too short
        to certify, Welch on the two sides decides when it can (a fixed campaign of a few
        long rounds)."""
        if self.params.pair_looks != "own" or not self._paired(a, b):
            return False
        if frozenset((a, b)) in self._pair_looks:
            return True
        assert self._src is not None
        d = self._src.series(a, b)
        return d is not None and 2.0 / 2.0 ** min(d.size, 1000) <= self._family_alpha(a, b)

    def _alpha_pair(self, k: int) -> float:
        """Level of a separation in a group of k workloads: alpha over the C(k, 2) pairs
        it can form (Bonferroni: which pairs are adjacent depends on the data)."""
        return self.params.alpha / max(1, k * (k - 1) // 2)

    def _ref_pairs(self) -> list[tuple[str, str]]:
        """(reference, workload) of every comparison with this campaign's reference."""
        return [(lab, n) for n, lab in self._baseline_pairs() if lab != "@stored"]

    def _family_alpha(self, a: str, b: str) -> float:
        """Level of a separation of a~b at its own looks: alpha over the comparisons with
        the reference when one of them is the reference (k - 1 of them: the family is
        fixed in advance), else :meth:`_alpha_pair` of their group."""
        if self.reference is not None and self.reference in (a, b):
            return self.params.alpha / max(1, len(self._ref_pairs()))
        return self._alpha_pair(sum(1 for n in self.names if self.group[n] == self.group[a]))

    def _comparisons(self, st: Mapping[str, WorkloadStats | None]) -> list[tuple[str, str]]:
        """The comparisons of now: adjacent pairs of each group's order, reference pairs."""
        out: list[tuple[str, str]] = []
        for key, members in self._ranked_groups().items():
            order = self._order.get(key)
            if order is None or set(order) != set(members):
                order = self._rank(members, st)
            out.extend(zip(order, order[1:], strict=False))
        out.extend((lab, n) for n, lab in self._baseline_pairs() if lab != "@stored")
        return out

    def _rank(self, members: Sequence[str], st: Mapping[str, WorkloadStats | None]) -> list[str]:
        """Best first by mean; then neighbours whose paired series says the other way
        round are swapped (bubble passes), so drift between workloads cannot misorder a
        pair that was measured in the same passes."""
        order = sorted(members, key=lambda n: self._sort_key(n, st[n]))
        for _ in range(len(order)):
            swapped = False
            for i in range(len(order) - 1):
                a, b = order[i], order[i + 1]
                s = self._pair(a, b)
                if s is not None and s.mean is not None and self._b_ahead(a, s.mean):
                    order[i], order[i + 1] = b, a
                    swapped = True
            if not swapped:
                break
        return order

    def _b_ahead(self, a: str, mean_d: float) -> bool:
        """Does a mean log ratio ln(b/a) put b in front of a in a's direction?"""
        return mean_d < 0 if self.direction[a] == "lower_is_better" else mean_d > 0

    def _out(self, name: str, rounds: Mapping[str, int]) -> bool:
        """No more rounds for ``name``: its budget is used up (``max_rounds``, unless a
        comparison it is in will decide within the time left: :meth:`_extend`), or it
        was retired."""
        return (
            rounds[name] >= self.params.max_rounds and name not in self._extended
        ) or name in self._retired

    def _extend(
        self, st: Mapping[str, WorkloadStats | None], rounds: Mapping[str, int], elapsed_s: float
    ) -> set[str]:
        """Workloads past ``max_rounds`` that keep running: both sides of an undecided
        paired comparison (at its own looks) whose estimated passes still needed fit in the
        time left of ``max_time`` at the campaign's pace so far (the budget is time;
        max_rounds does not cut a comparison that is about to decide)."""
        p = self.params
        clock = max(rounds.values())
        self._pace = elapsed_s / clock if clock and elapsed_s > 0 else None
        if not p.extend_rounds or p.max_time is None or self._pace is None or p.pair_looks != "own":
            return set()
        left = p.max_time - elapsed_s
        out: set[str] = set()
        for key, members in self._ranked_groups().items():
            order = self._order.get(key)
            if order is None or set(order) != set(members):
                order = self._rank(members, st)
            for a, b in zip(order, order[1:], strict=False):
                if frozenset((a, b)) in self._verdicts or not self._own_paired(a, b):
                    continue
                if max(rounds[a], rounds[b]) < p.max_rounds:
                    continue
                if a in self._retired or b in self._retired:
                    continue
                more, _ = self._own_need(a, b)
                if more is not None and more * self._pace <= left:
                    out.update((a, b))
        for ref, name in self._ref_pairs():
            if name in self._base_verdicts or not self._own_paired(ref, name):
                continue
            if max(rounds[ref], rounds[name]) < p.max_rounds or {ref, name} & set(self._retired):
                continue
            more, _ = self._own_need(ref, name)
            if more is not None and more * self._pace <= left:
                out.update((ref, name))
        return out

    def _remaining(self) -> float:
        return (
            max(0.0, self.params.alpha - self._spent)
            if self._spent < self.params.alpha * (1 - 1e-12)
            else 0.0
        )

    def _plan_cum(self, j: int) -> float:
        assert self._plan is not None
        return min(self.params.alpha, math.fsum(self._plan.alphas[: j + 1]))

    def _next_look(self) -> int | None:
        if self._plan is None or self._remaining() <= 0:
            return None
        nxt = self._last_point + 1
        return self._plan.schedule[nxt] if nxt < self._plan.n_looks else None

    def _width_ok(self, s: WorkloadStats | None) -> bool:
        target = self.params.ci_rel_width
        if target is None:
            return True
        if s is None or s.ci_low is None or s.ci_high is None:
            return False
        if s.rel_half_width is None:  # mean 0: only an exact (deterministic) value passes
            return s.ci_low == s.ci_high
        return s.rel_half_width <= target

    def _node_limited(self, s: WorkloadStats | None) -> float | None:
        """The relative half-width the CI of ``s`` keeps with any number of rounds, when it
        is the CI from node means (the nodes differ, docs/methods.md §14), it misses
        ``ci_rel_width`` and even infinitely many rounds per node would leave it wider
        (``floor_half_width``, the between-node part alone); else None.

        The F test is re-applied after every round, so "the nodes differ" must hold at
        ``alpha / max_rounds`` (Bonferroni over every check the campaign can make): over
        a campaign of identical nodes the chance of stopping for node variation stays
        below ``alpha``."""
        target = self.params.ci_rel_width
        nodes = s.nodes if s is not None else None
        if target is None or s is None or not nodes or nodes.get("ci_from") != "nodes":
            return None
        p_value = nodes.get("p_value")
        if p_value is None or p_value >= self.params.alpha / max(1, self.params.max_rounds):
            return None
        if s.mean is None or s.mean == 0 or self._width_ok(s):
            return None
        floor = float(nodes.get("floor_half_width") or 0.0) / abs(s.mean)
        return floor if floor > target else None

    def _side(self, s: WorkloadStats, rounds: int) -> _Side:
        assert s.mean is not None and s.s2_q is not None and s.n_q is not None
        nodes = s.nodes
        if nodes and nodes.get("ci_from") == "nodes":  # Welch on the k node means (§14)
            means = [float(m) for m in nodes["means"]]
            return _Side(float(s.mean), statistics.variance(means), len(means), max(1, rounds))
        return _Side(float(s.mean), float(s.s2_q), int(s.n_q), max(1, rounds))

    def _groups(self) -> dict[tuple[str, str], list[str]]:
        out: dict[tuple[str, str], list[str]] = {}
        for n in self.names:
            out.setdefault(self.group[n], []).append(n)
        return out

    def _ranked_groups(self) -> dict[tuple[str, str], list[str]]:
        """The groups whose neighbours are compared: every group but the reference's,
        whose question is each workload against the reference (:meth:`_baseline_pairs`)."""
        ref = None if self.reference is None else self.group[self.reference]
        return {k: v for k, v in self._groups().items() if k != ref}

    def _baseline_pairs(self) -> list[tuple[str, str]]:
        """(workload, baseline label) of every baseline comparison; label "@stored" or a name."""
        pairs = [(n, "@stored") for n in self.names if n in self.baseline]
        if self.reference is not None:
            g = self.group[self.reference]
            pairs += [
                (n, self.reference)
                for n in self.names
                if n != self.reference and self.group[n] == g
            ]
        return pairs

    def _look(
        self,
        st: Mapping[str, WorkloadStats | None],
        rounds: Mapping[str, int],
        alpha: float,
        clock: int,
        final: bool,
    ) -> list[Event]:
        """Test every adjacent pair and baseline at level ``alpha``; record new verdicts."""
        p = self.params
        self._looks += 1
        self._spent += alpha
        look = self._looks
        events: list[Event] = []
        for key, members in self._ranked_groups().items():
            if len(members) < 2:
                self._order[key] = list(members)
                continue
            k = len(members)
            if any(self._covered.get(n) for n in members):
                events.extend(self._look_paired(key, members, st, rounds, alpha, look))
                continue
            rows = [
                {
                    "name": n,
                    "mean": _known(st[n]).mean,
                    "variance": _known(st[n]).s2_q,
                    "n": _known(st[n]).n_q,
                    "direction": self.direction[n],
                }
                for n in members
            ]
            # CIs at the Bonferroni level, so "CIs disjoint" never bypasses Holm (§7)
            conf = 1 - alpha / (k - 1)
            if conf >= 1.0 - 1e-15:  # a look with (numerically) no alpha decides nothing
                self._order[key] = sorted(members, key=lambda n: self._sort_key(n, st[n]))
                continue
            ranking = rank_results(rows, alpha=alpha, margin=p.margin, confidence=conf)
            self._order[key] = list(ranking.names)
            confirmed = (
                self._coarse_ok([(x.a, x.b) for x in ranking.pairs], st, alpha)
                if p.check_2q
                else [True] * len(ranking.pairs)
            )
            for pair, ok_2q in zip(ranking.pairs, confirmed, strict=True):
                pk = frozenset((pair.a, pair.b))
                self._latest["pair:" + "|".join(sorted(pk))] = {
                    "welch_p": pair.welch_p,
                    "welch_p_holm": pair.welch_p_holm,
                    "tost_p": pair.tost_p,
                    "rel": pair.relative_difference,
                    "test": "welch",
                }
                if pair.verdict == UNDECIDED:
                    continue
                if pair.verdict == SEPARATED and not ok_2q:
                    continue  # not confirmed by the subsessions of 2q (§3 robustness)
                old = self._verdicts.get(pk)
                new = {
                    "a": pair.a,
                    "b": pair.b,
                    "verdict": pair.verdict,
                    "look": look,
                    "alpha": alpha,
                    "welch_p_holm": pair.welch_p_holm,
                    "tost_p": pair.tost_p,
                    "relative_difference": pair.relative_difference,
                    "test": "welch",
                }
                if old is None:
                    self._verdicts[pk] = new
                    events.append(Event("pair-verdict", self._verdict_text(new), new))
                elif (
                    old["verdict"] == SEPARATED and pair.verdict == SEPARATED and old["a"] != pair.a
                ):
                    self._verdicts[pk] = new
                    events.append(
                        Event(
                            "pair-revised",
                            f"{pair.a} and {pair.b} were separated in the other order at look "
                            f"{old['look']}; look {look} separates them this way",
                            new,
                        )
                    )
        events.extend(self._look_baselines(st, rounds, alpha, look))
        where = "final look (budget)" if final else f"look {look}"
        events.insert(
            0,
            Event(
                "look",
                f"{where} after {clock} rounds: tests at alpha {alpha:.3g} "
                f"(spent {self._spent:.3g} of {p.alpha:g})",
                {
                    "look": look,
                    "clock": clock,
                    "alpha": alpha,
                    "spent": self._spent,
                    "final": final,
                    "state": self.state(),
                },
            ),
        )
        return events

    def _pair_result(self, a: str, b: str) -> PairTestResult | None:
        """The tests of a~b on its units now (cached per pass count): the passes of its
        log-ratio series, or means of q of them (:func:`runner.control.pairlooks.look_units`);
        None without 2 units. Every steady pass counts: a prefix cut chosen by the data
        (MSER-5, which the collector's certification of the series still uses) would make
        the statistic of one look not a continuation of the last one's."""
        assert self._src is not None
        s, d = self._pair(a, b), self._src.series(a, b)
        if s is None or d is None:
            return None
        cached = self._units.get((a, b))
        if cached is not None and cached[0] == d.size:
            return cached[1]
        if d.size < 2:
            return None
        units, q, inflation = look_units(d, s.tau)
        p = self.params
        r = look_tests(units, q, p.paired_test, p.margin, p.confidence, inflation)  # type: ignore[arg-type]
        self._units[(a, b)] = (d.size, r)
        return r

    def _own_looks(
        self, st: Mapping[str, WorkloadStats | None], clock: int, final: bool
    ) -> list[Event]:
        """Look at every paired comparison whose own next look is due (``final``: a last
        look with all that is left, on a budget stop): docs/controller.md, "Decision
        efficiency". The separation test of a group of k workloads runs at α/C(k, 2)
        (Bonferroni over the pairs the group can form, whichever become adjacent), that of
        a workload against the reference at α/(k - 1) (the comparisons with the reference),
        the equivalence tests at α; boundaries from stats.groupseq."""
        p = self.params
        self._own_next = None
        if p.pair_looks != "own" or self._src is None:
            return []
        events: list[Event] = []
        for key, members in self._ranked_groups().items():
            k = len(members)
            if k < 2 or not any(self._covered.get(n) for n in members):
                continue
            order = self._rank(members, st)
            self._order[key] = order
            for a, b in zip(order, order[1:], strict=False):
                if self._own_paired(a, b) and frozenset((a, b)) not in self._verdicts:
                    events.extend(self._own_step(a, b, clock, final, reference=False))
        for ref, name in self._ref_pairs():
            if self._own_paired(ref, name) and name not in self._base_verdicts:
                events.extend(self._own_step(ref, name, clock, final, reference=True))
        return events

    def _own_step(self, a: str, b: str, clock: int, final: bool, reference: bool) -> list[Event]:
        """One comparison at its own looks: its look state (made at its first look, at the
        level of its family, :meth:`_family_alpha`), the look if one is due (``final``:
        with all that is left), and its next look in ``_own_next``. ``reference``: a is
        the campaign's reference and a verdict goes to the baseline verdicts."""
        p = self.params
        pk = frozenset((a, b))
        s = self._pair(a, b)
        if s is None:
            return []
        n = s.rounds
        look = self._pair_looks.get(pk)
        if look is None:
            level = self._family_alpha(a, b)
            look = PairLookState(
                first_look(level, p.min_rounds, p.pair_first_share),
                level,
                p.alpha,
                p.pair_look_ratio,
                p.pair_first_share,
                p.pair_spend_rho,
            )
            self._pair_looks[pk] = look
        events: list[Event] = []
        if n >= 2 and not look.spent_all and (final or look.due(n)):
            r = self._pair_result(a, b)
            if r is not None:
                lev_sep, lev_eq = look.levels(n, final)
                if reference:
                    events = self._own_base_verdict(a, b, r, s, look, lev_sep, lev_eq, n, final)
                else:
                    events = self._own_verdict(a, b, r, s, look, lev_sep, lev_eq, n, final)
        decided = b in self._base_verdicts if reference else pk in self._verdicts
        if not decided and not look.spent_all:
            at = clock + max(1, look.next - n)
            self._own_next = at if self._own_next is None else min(self._own_next, at)
        return events

    def _own_look_event(
        self,
        a: str,
        b: str,
        look: PairLookState,
        lev_sep: float,
        lev_eq: float,
        n: int,
        final: bool,
    ) -> Event:
        """The "look" event of a~b at its own passes (its state is filled in by the caller
        once the look's verdict, if any, is recorded)."""
        where = "final look (budget)" if final else f"look {look.looks}"
        return Event(
            "look",
            f"{a}~{b}: {where} after {n} passes: separation at p <= {lev_sep:.3g}, "
            f"equivalence at p <= {lev_eq:.3g}",
            {
                "look": self._looks,
                "pair": sorted((a, b)),
                "pair_look": look.looks,
                "clock": n,
                "alpha": lev_sep,
                "spent": look.sep.spent[-1],
                "final": final,
                "state": self.state(),
            },
        )

    def _own_base_verdict(
        self,
        ref: str,
        name: str,
        r: PairTestResult,
        s: WorkloadStats,
        look: PairLookState,
        lev_sep: float,
        lev_eq: float,
        n: int,
        final: bool,
    ) -> list[Event]:
        """Record a look of ``name`` against the reference ``ref`` at their own passes and
        the verdict it reaches: slower or faster than the reference (in ``name``'s
        direction), or equivalent; ``r.estimate`` estimates ln(name/ref)."""
        rel = math.expm1(r.estimate)
        self._latest["base:" + name] = {
            "welch_p": r.p,
            "welch_p_holm": r.p,
            "tost_p": r.tost_p,
            "test": "paired",
            "level": lev_sep,
        }
        events = [self._own_look_event(ref, name, look, lev_sep, lev_eq, n, final)]
        lower = self.direction[name] == "lower_is_better"
        if r.p <= lev_sep:
            verdict = "slower" if (r.estimate > 0) == lower else "faster"
        elif r.tost_p <= lev_eq:
            verdict = EQUIVALENT
        else:
            return events
        rec = {
            "name": name,
            "baseline": ref,
            "verdict": verdict,
            "look": look.looks,
            "alpha": lev_sep if verdict != EQUIVALENT else lev_eq,
            "relative_change": rel,
            "welch_p_holm": r.p,
            "tost_p": r.tost_p,
            "test": "paired",
            "paired_test": self.params.paired_test,
            "estimand": r.estimand,
            "passes": n,
            "units": r.units,
            "q": r.q,
            "certified": bool(s.enough),
        }
        self._base_verdicts[name] = rec
        p_name = "signed-rank p" if self.params.paired_test == "rank" else "t p"
        mark = (
            ""
            if s.enough
            else "; independence of the passes not yet checked (a certified series needs "
            "more passes)"
        )
        events.append(
            Event(
                "baseline-verdict",
                f"{name} vs {ref}: {verdict} ({name}/{ref} {1 + rel:.4g}; paired, {p_name} "
                f"{r.p:.3g}, TOST p {r.tost_p:.3g}) at its look {look.looks} after {n} passes, "
                f"level {rec['alpha']:.3g}{mark}",
                rec,
            )
        )
        events[0].data["state"] = self.state()
        return events

    def _own_verdict(
        self,
        a: str,
        b: str,
        r: PairTestResult,
        s: WorkloadStats,
        look: PairLookState,
        lev_sep: float,
        lev_eq: float,
        n: int,
        final: bool,
    ) -> list[Event]:
        """Record a look of a~b at its own passes and the verdict it reaches, if any."""
        pk = frozenset((a, b))
        if self._b_ahead(a, r.estimate):
            a, b, est = b, a, -r.estimate
        else:
            est = r.estimate
        rel = math.expm1(est)
        self._latest["pair:" + "|".join(sorted(pk))] = {
            "welch_p": r.p,
            "welch_p_holm": r.p,
            "tost_p": r.tost_p,
            "rel": rel,
            "test": "paired",
            "level": lev_sep,
        }
        events = [self._own_look_event(a, b, look, lev_sep, lev_eq, n, final)]
        if r.p <= lev_sep:
            verdict = SEPARATED
        elif r.tost_p <= lev_eq:
            verdict = EQUIVALENT
        else:
            return events
        new = {
            "a": a,
            "b": b,
            "verdict": verdict,
            "look": look.looks,
            "alpha": lev_sep if verdict == SEPARATED else lev_eq,
            "welch_p_holm": r.p,
            "tost_p": r.tost_p,
            "relative_difference": rel,
            "test": "paired",
            "paired_test": self.params.paired_test,
            "estimand": r.estimand,
            "passes": n,
            "units": r.units,
            "q": r.q,
            "certified": bool(s.enough),
        }
        self._verdicts[pk] = new
        events.append(Event("pair-verdict", self._verdict_text(new), new))
        events[0].data["state"] = self.state()
        return events

    def _test_pair(
        self,
        a: str,
        b: str,
        st: Mapping[str, WorkloadStats | None],
        rounds: Mapping[str, int],
        alpha: float,
    ) -> dict[str, Any] | None:
        """Raw test of a~b at a look: paired on the log ratios when the pair is paired and
        its series has enough data (docs/paired.md), else Welch and TOST on the two sides'
        subsession means (§6.1, §6.4) when both have enough; None when neither can run.
        ``rel`` = b/a - 1 (the ratio's excess; a positive rel means b is larger)."""
        p = self.params
        if self._paired(a, b):
            s = self._pair(a, b)
            if s is None or not self._enough(s, s.rounds):
                return None
            assert s.mean is not None and s.s2_q is not None and s.n_q is not None
            pt = paired_test(s.mean, s.s2_q, s.n_q, margin=p.margin, alpha=alpha)
            return {
                "test": "paired",
                "p": pt.p_value,
                "tost_p": pt.tost_p,
                "rel": pt.ratio - 1.0,
                "mean_d": s.mean,
                "stats": s,
            }
        sa, sb = st[a], st[b]
        if not (self._enough(sa, rounds[a]) and self._enough(sb, rounds[b])):
            return None
        assert sa is not None and sb is not None
        assert sa.mean is not None and sb.mean is not None
        assert sa.s2_q is not None and sa.n_q is not None  # _enough: a CI, hence both
        assert sb.s2_q is not None and sb.n_q is not None
        w = welch_from_summary(sa.mean, sa.s2_q, sa.n_q, sb.mean, sb.s2_q, sb.n_q)
        t = tost_from_summary(
            sa.mean,
            sa.s2_q,
            sa.n_q,
            sb.mean,
            sb.s2_q,
            sb.n_q,
            margin=p.margin,
            relative=sa.mean != 0,
            alpha=alpha,
        )
        rel = (sb.mean - sa.mean) / abs(sa.mean) if sa.mean != 0 else None
        return {
            "test": "welch",
            "p": w.p_value,
            "tost_p": t.p_value,
            "rel": rel,
            "mean_d": sb.mean - sa.mean,
            "stats": None,
        }

    def _confirmed(
        self,
        tests: Sequence[tuple[str, str, dict[str, Any]]],
        st: Mapping[str, WorkloadStats | None],
        alpha: float,
    ) -> list[bool]:
        """ "Pass at q and 2q" (§3) for separations "a better than b": paired ones on the
        2q summary of their log ratios (sign checked), Welch ones by :meth:`_coarse_ok`;
        Holm within each kind."""
        if not self.params.check_2q:
            return [True] * len(tests)
        out = [False] * len(tests)
        paired = [i for i, (_, _, r) in enumerate(tests) if r["test"] == "paired"]
        welch = [i for i, (_, _, r) in enumerate(tests) if r["test"] != "paired"]
        summaries: list[tuple[float, float, int]] = []
        for i in paired:
            s: WorkloadStats = tests[i][2]["stats"]
            if s.mean_2q is not None and s.s2_2q is not None and s.n_2q is not None:
                summaries.append((s.mean_2q, s.s2_2q, s.n_2q))
            else:  # no 2q summary: cannot be confirmed
                summaries.append((0.0, 1.0, 2))
        for i, good in zip(paired, confirm_paired(summaries, alpha), strict=True):
            a, b, r = tests[i]
            s = r["stats"]
            out[i] = good and s.mean_2q is not None and self._b_ahead(b, -s.mean_2q)
        for i, good in zip(
            welch,
            self._coarse_ok([(tests[i][0], tests[i][1]) for i in welch], st, alpha),
            strict=True,
        ):
            out[i] = good
        return out

    def _look_paired(
        self,
        key: tuple[str, str],
        members: Sequence[str],
        st: Mapping[str, WorkloadStats | None],
        rounds: Mapping[str, int],
        alpha: float,
        look: int,
    ) -> list[Event]:
        """A look at one group whose comparisons are paired (docs/paired.md): order the
        group, test each adjacent pair (paired, or Welch where it cannot be), Holm over
        the group's tests, confirm separations at 2q, record new verdicts."""
        order = self._rank(members, st)
        self._order[key] = order
        tests = []
        for a, b in zip(order, order[1:], strict=False):
            if self._own_paired(a, b):
                continue  # tested at its own looks (_own_looks)
            r = self._test_pair(a, b, st, rounds, alpha)
            if r is not None:
                tests.append((a, b, r))
        adjusted = holm([r["p"] for _, _, r in tests]) if tests else ()
        seps = [
            (a, b, r) if not self._b_ahead(a, r["mean_d"]) else (b, a, self._flip(r))
            for (a, b, r), ph in zip(tests, adjusted, strict=True)
        ]
        confirmed = self._confirmed(seps, st, alpha)
        events: list[Event] = []
        for (a, b, r), ph, ok_2q in zip(seps, adjusted, confirmed, strict=True):
            pk = frozenset((a, b))
            self._latest["pair:" + "|".join(sorted(pk))] = {
                "welch_p": r["p"],
                "welch_p_holm": ph,
                "tost_p": r["tost_p"],
                "rel": r["rel"],
                "test": r["test"],
            }
            if ph < alpha and ok_2q:
                verdict = SEPARATED
            elif r["tost_p"] < alpha:
                verdict = EQUIVALENT
            else:
                continue
            old = self._verdicts.get(pk)
            new = {
                "a": a,
                "b": b,
                "verdict": verdict,
                "look": look,
                "alpha": alpha,
                "welch_p_holm": ph,
                "tost_p": r["tost_p"],
                "relative_difference": r["rel"],
                "test": r["test"],
            }
            if old is None:
                self._verdicts[pk] = new
                events.append(Event("pair-verdict", self._verdict_text(new), new))
            elif old["verdict"] == SEPARATED and verdict == SEPARATED and old["a"] != a:
                self._verdicts[pk] = new
                events.append(
                    Event(
                        "pair-revised",
                        f"{a} and {b} were separated in the other order at look {old['look']}; "
                        f"look {look} separates them this way",
                        new,
                    )
                )
        return events

    @staticmethod
    def _flip(r: dict[str, Any]) -> dict[str, Any]:
        """The raw test of a~b seen as b~a (log ratio and relative excess inverted)."""
        out = dict(r)
        out["mean_d"] = -r["mean_d"]
        if r["rel"] is not None:
            out["rel"] = 1.0 / (1.0 + r["rel"]) - 1.0 if r["rel"] > -1 else None
        if r["stats"] is not None:
            s = r["stats"]
            out["stats"] = replace(
                s,
                mean=-s.mean if s.mean is not None else None,
                mean_2q=-s.mean_2q if s.mean_2q is not None else None,
                ci_low=-s.ci_high if s.ci_high is not None else None,
                ci_high=-s.ci_low if s.ci_low is not None else None,
            )
        return out

    def _coarse_ok(
        self,
        pairs: Sequence[tuple[str, str]],
        st: Mapping[str, WorkloadStats | None],
        alpha: float,
        fixed: Mapping[str, _Side] | None = None,
    ) -> list[bool]:
        """Do the separations (a better than b) hold with subsessions of 2q? (§3 robustness,
        :func:`stats.sequential.confirm_separations`); ``fixed``: stored sides by label."""

        def coarse(n: str) -> Sample | None:
            if fixed is not None and n in fixed:
                return fixed[n].sample
            x = st.get(n)
            if x is None or x.n_2q is None or x.s2_2q is None or x.mean_2q is None:
                return None
            return Sample(x.mean_2q, x.s2_2q, x.n_2q)

        sides = [(coarse(a), coarse(b)) for a, b in pairs]
        usable = [i for i, (x, y) in enumerate(sides) if x is not None and y is not None]
        lower = [
            (self.direction.get(pairs[i][0]) or self.direction[pairs[i][1]]) == "lower_is_better"
            for i in usable
        ]
        ok = confirm_separations([sides[i] for i in usable], alpha, lower)  # type: ignore[misc]
        out = [False] * len(pairs)
        for i, v in zip(usable, ok, strict=True):
            out[i] = v
        return out

    def _baseline_side(
        self,
        label: str,
        st: Mapping[str, WorkloadStats | None],
        rounds: Mapping[str, int],
        name: str,
    ) -> _Side | None:
        if label == "@stored":
            return self.baseline[name]
        s = st.get(label)
        return self._side(s, rounds[label]) if self._enough(s, rounds[label]) else None

    def _look_baselines(
        self,
        st: Mapping[str, WorkloadStats | None],
        rounds: Mapping[str, int],
        alpha: float,
        look: int,
    ) -> list[Event]:
        """Test every baseline comparison at level ``alpha`` (Holm over them); record
        verdicts. A reference workload of this campaign is compared on the paired series
        when the pair is paired (docs/paired.md); stored baselines by Welch/TOST."""
        todo: list[tuple[str, str, _Side, dict[str, Any]]] = []
        for name, label in self._baseline_pairs():
            if label != "@stored" and self._own_paired(label, name):
                continue  # tested at its own looks (_own_looks)
            if label != "@stored" and self._paired(label, name):
                r = self._test_pair(label, name, st, rounds, alpha)
                if r is not None:
                    todo.append((name, label, _Side(0.0, 0.0, 2, 0), r))
                continue
            s, base = st.get(name), self._baseline_side(label, st, rounds, name)
            if base is not None and self._enough(s, rounds[name]):
                cur = self._side(s, rounds[name])
                raw = baseline_tests(
                    [(cur.sample, base.sample)],
                    alpha,
                    self.params.margin,
                    [self.direction[name] == "lower_is_better"],
                )[0]
                todo.append(
                    (
                        name,
                        label,
                        base,
                        {
                            "test": "welch",
                            "p": raw.welch_p,
                            "tost_p": raw.tost_p,
                            "rel": raw.relative_change,
                            "mean_d": cur.mean - base.mean,
                            "stats": None,
                        },
                    )
                )
        if not todo:
            return []
        adjusted = holm([r["p"] for *_, r in todo])
        events = []
        for (name, label, base, r), ph in zip(todo, adjusted, strict=True):
            self._latest["base:" + name] = {
                "welch_p": r["p"],
                "welch_p_holm": ph,
                "tost_p": r["tost_p"],
                "test": r["test"],
            }
            if name in self._base_verdicts:
                continue
            lower = self.direction[name] == "lower_is_better"
            if ph < alpha:
                verdict = "slower" if (r["mean_d"] > 0) == lower else "faster"
            elif r["tost_p"] < alpha:
                verdict = EQUIVALENT
            else:
                continue
            if verdict != EQUIVALENT and self.params.check_2q:
                if r["test"] == "paired":
                    x: WorkloadStats = r["stats"]
                    ok = (
                        x.mean_2q is not None
                        and x.s2_2q is not None
                        and x.n_2q is not None
                        and confirm_paired([(x.mean_2q, x.s2_2q, x.n_2q)], alpha / len(todo))[0]
                        and (x.mean_2q > 0) == (r["mean_d"] > 0)
                    )
                else:
                    pair = (label, name) if verdict == "slower" else (name, label)
                    fixed = {label: base} if label == "@stored" else None
                    ok = self._coarse_ok([pair], st, alpha / len(todo), fixed)[0]
                if not ok:
                    continue  # not confirmed with subsessions of 2q (§3)
            rec = {
                "name": name,
                "baseline": label,
                "verdict": verdict,
                "look": look,
                "alpha": alpha,
                "relative_change": r["rel"],
                "welch_p_holm": ph,
                "tost_p": r["tost_p"],
                "test": r["test"],
            }
            self._base_verdicts[name] = rec
            base_name = "its stored baseline" if label == "@stored" else label
            test = "paired" if r["test"] == "paired" else "Welch"
            events.append(
                Event(
                    "baseline-verdict",
                    f"{name} vs {base_name}: {verdict} ({format_percent(r['rel'], missing='n/a')}; {test}, Holm p "
                    f"{ph:.3g}, TOST p {r['tost_p']:.3g}, level {alpha:.3g} at look {look})",
                    rec,
                )
            )
        return events

    def _verdict_text(self, v: Mapping[str, Any]) -> str:
        test = "paired" if v.get("test") == "paired" else "Welch"
        own = "passes" in v  # decided at the pair's own looks
        p_name = "signed-rank p" if v.get("paired_test") == "rank" else ("t p" if own else "Holm p")
        if v["verdict"] == SEPARATED:
            rel = v["relative_difference"]
            apart = (
                f"b/a {1 + rel:.4g}"
                if test == "paired" and rel is not None
                else f"{format_percent(rel, missing='n/a')} apart"
            )
            what = f"{v['a']} is better than {v['b']} ({apart}; {test}, {p_name} {v['welch_p_holm']:.3g})"
        else:
            what = (
                f"{v['a']} and {v['b']} are equivalent within {format_percent(self.params.margin, missing='n/a')} "
                f"({test}, TOST p {v['tost_p']:.3g})"
            )
        if own:
            mark = (
                ""
                if v.get("certified")
                else "; independence of the passes not yet checked (a certified series needs "
                "more passes)"
            )
            return f"{what} at its look {v['look']} after {v['passes']} passes, level {v['alpha']:.3g}{mark}"
        return f"{what} at look {v['look']}, level {v['alpha']:.3g}"

    def _alpha_estimate(self) -> float:
        """Level a pair will likely be tested at: the next look's α (else α/K from now)."""
        p = self.params
        if self._plan is not None:
            nxt = self._last_point + 1
            if nxt < self._plan.n_looks:
                return max(self._plan_cum(nxt) - self._spent, 1e-12)
            return max(self._remaining(), 1e-12)
        return p.alpha / len(
            look_schedule(p.min_rounds, max(p.max_rounds, p.min_rounds + 1), p.look_ratio)
        )

    # ------------------------------------------------------------------ status
    def _own(self, name: str, s: WorkloadStats | None, r: int) -> tuple[list[str], int | None]:
        """(unmet own conditions as text, estimated more rounds) of one workload."""
        p = self.params
        unmet: list[str] = []
        need: list[int] = []
        if r < p.min_rounds:
            unmet.append(f"{r} of min_rounds {p.min_rounds} steady rounds")
            need.append(p.min_rounds - r)
        if s is None or s.mean is None:
            unmet.append("no steady readings yet")
            need.append(max(1, p.subsessions - r))
        elif self._covered.get(name):
            pass  # its data and width conditions are its paired comparisons' (docs/paired.md)
        elif s.level_shift_at is not None:
            change = s.level_shift_change
            size = "" if change is None else f" ({100 * change:+.0f} %)"
            unmet.append(
                f"level shift at round {s.level_shift_at + 1}{size}: no CI across it "
                "(docs/methods.md §2.1)"
            )
        elif not s.enough:
            more = s.rounds_needed
            unmet.append(
                f"not enough data for its correlation time (tau {max(s.tau, 1.0):.3g} readings) yet, "
                f"about {more} more rounds"
                if s.tau is not None
                else f"not enough data yet, about {more} more rounds"
            )
            if more is not None:
                need.append(more)
        elif s.n < p.min_series:
            per_round = s.n / max(1, s.rounds)
            more = max(1, math.ceil((p.min_series - s.n) / per_round))
            unmet.append(f"{s.n} of min_series {p.min_series} readings, about {more} more rounds")
            need.append(more)
        elif (s.n_q or 0) < p.subsessions:
            unmet.append(f"{s.n_q} of min_subsessions {p.subsessions} subsession means")
            need.append(math.ceil(r * (p.subsessions / max(1, s.n_q or 1) - 1)) + 1)
        floor = self._node_limited(s)
        if floor is not None and s is not None and not self._covered.get(name):
            unmet.append(
                f"CI from {(s.nodes or {}).get('k')} node means, half-width "
                f"{format_percent(s.rel_half_width, missing='n/a')} > target "
                f"{format_percent(p.ci_rel_width, missing='n/a')}: the nodes differ, and "
                f"with any number of rounds it stays >= {format_percent(floor)}"
            )
        elif p.ci_rel_width is not None and not self._width_ok(s) and not self._covered.get(name):
            if s is not None and s.rel_half_width is not None and s.enough:
                more = max(1, math.ceil(r * ((s.rel_half_width / p.ci_rel_width) ** 2 - 1)))
                unmet.append(
                    f"CI half-width {format_percent(s.rel_half_width, missing='n/a')} > target "
                    f"{format_percent(p.ci_rel_width, missing='n/a')}, about {more} more rounds"
                )
                need.append(more)
            elif s is not None and s.enough:
                unmet.append("mean is 0: the relative CI width is undefined")
        return unmet, (max(need) if need else None)

    def _pair_need(
        self,
        a: str,
        b: str | None,
        sa: _Side | None,
        sb: _Side | None,
        rounds: Mapping[str, int],
        k: int,
    ) -> tuple[dict[str, float], int | None, str]:
        """Shares of the remaining uncertainty per live side, rounds needed, note."""
        p = self.params
        if sa is None or sb is None:
            return {}, None, "waiting for enough data on both sides"
        live = {}
        for name, side in ((a, sa), (b, sb)):
            if name is not None and side.rounds and not self._out(name, rounds):
                live[name] = side.var / side.n / side.rounds
        total = sum(live.values())
        shares = {n: (u / total if total > 0 else 1.0 / len(live)) for n, u in live.items()}
        alpha = self._alpha_estimate()
        fixed = (sa.rounds == 0, sb.rounds == 0)
        sep = growth_needed(sa.sample, sb.sample, p.margin, alpha / max(1, k - 1), fixed=fixed)[0]
        eq = growth_needed(sa.sample, sb.sample, p.margin, alpha, fixed=fixed)[1]
        options = [f for f in (sep, eq) if f is not None]
        if not options:
            return (
                shares,
                None,
                "no number of rounds can decide it (a stored side is too imprecise)",
            )
        f = min(options)
        r_max = max(s.rounds for s in (sa, sb))
        more = math.ceil(r_max * (f - 1.0))
        nxt = self._next_look()
        clock = max(rounds.values())
        if nxt is not None:
            more = max(more, nxt - clock)
        return shares, max(more, 0), ""

    def _ratio(
        self, a: str, b: str, st: Mapping[str, WorkloadStats | None], rounds: Mapping[str, int]
    ) -> tuple[float | None, float | None, float | None, int | None]:
        """b/a now, its CI at the campaign's confidence and the passes behind it: from the
        paired series when the pair is paired (at its own looks: exp of the estimate and CI
        of :meth:`_pair_result`; else exp of its mean and CI), else the ratio of
        the two means (delta method; :func:`stats.paired.ratio_of_means_ci`)."""
        if self._own_paired(a, b):
            s, res = self._pair(a, b), self._pair_result(a, b)
            if s is None or res is None:
                return None, None, None, None
            n = s.rounds
            if res.low is None or res.high is None or not s.enough:
                # no CI before the series' independence is certified (docs/methods.md
                # §4.1): outputs show the marked interval instead
                return math.exp(res.estimate), None, None, n
            return math.exp(res.estimate), math.exp(res.low), math.exp(res.high), n
        if self._paired(a, b):
            s = self._pair(a, b)
            if s is None or s.mean is None:
                return None, None, None, None
            if s.ci_low is None or s.ci_high is None or not self._enough(s, s.rounds):
                return math.exp(s.mean), None, None, s.rounds
            return math.exp(s.mean), math.exp(s.ci_low), math.exp(s.ci_high), s.rounds
        sa, sb = st.get(a), st.get(b)
        if not (self._enough(sa, rounds[a]) and self._enough(sb, rounds[b])):
            return None, None, None, None
        assert sa is not None and sb is not None
        assert sa.mean is not None and sa.s2_q is not None and sa.n_q is not None
        assert sb.mean is not None and sb.s2_q is not None and sb.n_q is not None
        r, lo, hi = ratio_of_means_ci(
            sa.mean, sa.s2_q, sa.n_q, sb.mean, sb.s2_q, sb.n_q, self.params.confidence
        )
        return r, lo, hi, None

    def _estimand(self, a: str, b: str) -> str | None:
        """What the ratio of a~b estimates (None for Welch: the ratio of the two means)."""
        if self._own_paired(a, b) and self.params.paired_test == "rank":
            return "median per-pass ratio"
        return "geometric-mean ratio" if self._paired(a, b) else None

    @staticmethod
    def _independent_p(a: str, b: str, side: Mapping[str, _Side | None]) -> float | None:
        """Welch's two-sided p on the two sides' own subsession means, when both are
        trusted (shown beside a paired verdict; it decides nothing)."""
        sa, sb = side.get(a), side.get(b)
        if sa is None or sb is None:
            return None
        return welch_from_summary(sa.mean, sa.var, sa.n, sb.mean, sb.var, sb.n).p_value

    def _wide(self, a: str, b: str) -> tuple[str, int] | None:
        """Is the ratio CI of the paired comparison a~b wider than ``ci_rel_width``?
        (half-width of the CI of ln(b/a), which is the ratio's relative half-width to
        first order). Returns (what is unmet, more passes) or None when it is met."""
        target = self.params.ci_rel_width
        s = self._pair(a, b)
        if target is None or s is None:
            return None
        if self._own_paired(a, b):
            r = self._pair_result(a, b)
            if r is None or r.low is None or r.high is None or not s.enough:
                more = max(1, s.rounds_needed or 0, self.params.min_rounds - s.rounds)
                return f"no certified ratio CI yet, about {more} more passes", more
            hw = (r.high - r.low) / 2.0
        elif not self._enough(s, s.rounds):
            return None
        else:
            assert s.ci_low is not None and s.ci_high is not None
            hw = (s.ci_high - s.ci_low) / 2.0
        if hw <= target:
            return None
        more = max(1, math.ceil(s.rounds * ((hw / target) ** 2 - 1)))
        return (
            f"ratio CI ±{format_percent(hw, missing='n/a')} > target {format_percent(target, missing='n/a')}, about {more} more passes",
            more,
        )

    def _paired_need(
        self, a: str, b: str, rounds: Mapping[str, int], k: int
    ) -> tuple[dict[str, float], int | None, str]:
        """Like :meth:`_pair_need` for a paired comparison: both sides run (shares 1),
        and the passes needed come from the log-ratio series (normal approximation)."""
        p = self.params
        shares = {a: 1.0, b: 1.0}
        s = self._pair(a, b)
        if self._own_paired(a, b):
            return shares, *self._own_need(a, b)
        if s is None or not self._enough(s, s.rounds):
            need = s.rounds_needed if s is not None and s.rounds_needed else None
            if s is not None and s.enough:  # min_rounds, min_series or min_subsessions
                need = max(1, p.min_rounds - s.rounds, p.min_series - s.n)
            return shares, need, "waiting for enough passes with both workloads"
        assert s.mean is not None and s.s2_q is not None and s.n_q is not None
        alpha = self._alpha_estimate()
        sep = paired_growth_needed(s.mean, s.s2_q, s.n_q, p.margin, alpha / max(1, k - 1))[0]
        eq = paired_growth_needed(s.mean, s.s2_q, s.n_q, p.margin, alpha)[1]
        options = [f for f in (sep, eq) if f is not None]
        if not options:
            return shares, None, "the log ratio sits on the margin: no number of passes decides it"
        more = math.ceil(s.rounds * (min(options) - 1.0))
        nxt = self._next_look()
        if nxt is not None:
            more = max(more, nxt - max(rounds.values()))
        return shares, max(more, 0), ""

    def _own_need(self, a: str, b: str) -> tuple[int | None, str]:
        """More passes a~b needs at its own looks (normal approximation on its units, at
        the level of its next look), and a note."""
        p = self.params
        s, r = self._pair(a, b), self._pair_result(a, b)
        look = self._pair_looks.get(frozenset((a, b)))
        n = 0 if s is None else s.rounds
        first = (
            look.next
            if look is not None
            else first_look(self._family_alpha(a, b), p.min_rounds, p.pair_first_share)
        )
        if s is None or r is None or r.units < 3:
            return max(1, first - n), "waiting for enough passes with both workloads"
        level = look.sep.nominal() if look is not None and look.sep.info else p.alpha / 4
        sep, eq = paired_growth_needed(r.estimate, r.var, r.units, p.margin, level)
        options = [f for f in (sep, eq) if f is not None]
        if not options:
            return None, "the log ratio sits on the margin: no number of passes decides it"
        more = math.ceil(n * (min(options) - 1.0))
        return max(more, first - n if look is None or not look.looks else look.next - n, 0), ""

    def _status(
        self,
        st: Mapping[str, WorkloadStats | None],
        rounds: Mapping[str, int],
        enough: Mapping[str, bool],
        realloc: bool,
    ) -> _Status:
        """Every workload's, pair's and baseline's status, the active set and unmet list.

        Rounds for undecided pairs go to the sides that hold >= ``allocation_share`` of the
        pair's remaining uncertainty, chosen at a look and kept until the next one (or until
        a chosen side runs out of budget), so allocation does not flap between looks.
        """
        p = self.params
        can_test = self._plan is None or self._remaining() > 0
        if self._pair_active is not None and any(self._out(n, rounds) for n in self._pair_active):
            realloc = True
        pair_active: dict[str, bool] = {n: False for n in self.names}
        waiting: dict[str, list[str]] = {n: [] for n in self.names}
        pair_more: dict[str, int] = {}
        unmet_pairs: list[str] = []
        side = {
            n: (self._side(_known(st[n]), rounds[n]) if enough[n] else None) for n in self.names
        }

        forced: set[str] = set()  # both sides of an unfinished paired comparison

        def enlist(
            names: Sequence[str],
            what: str,
            shares: Mapping[str, float],
            more: int | None,
            paired: bool = False,
        ) -> None:
            """Record that ``names`` wait for the comparison ``what``; those holding enough
            of its remaining uncertainty get rounds, unless no number of rounds can decide
            it (``more`` None). A paired comparison keeps its block whole: both sides run
            in every pass until it is finished (docs/paired.md)."""
            for n in names:
                waiting[n].append(what)
                if (
                    paired
                    and not self._out(n, rounds)
                    and not any(self._out(m, rounds) for m in names)
                ):
                    forced.add(n)
                    if more is not None:
                        pair_more[n] = max(pair_more.get(n, 0), more)
                elif can_test and more is not None and shares.get(n, 0.0) >= share_min:
                    pair_active[n] = True
                    pair_more[n] = max(pair_more.get(n, 0), more)

        share_min = p.allocation_share - 1e-12
        pairs: list[PairStatus] = []
        for key, members in self._ranked_groups().items():
            order = self._order.get(key)
            if order is None or set(order) != set(members):
                order = self._rank(members, st)
            k = len(order)
            for a, b in zip(order, order[1:], strict=False):
                pk = frozenset((a, b))
                rec = self._verdicts.get(pk)
                latest = self._latest.get("pair:" + "|".join(sorted(pk)), {})
                paired = self._paired(a, b)
                if rec is not None:
                    pair_ratio = self._ratio(rec["a"], rec["b"], st, rounds)
                    wide = self._wide(rec["a"], rec["b"]) if paired else None
                    if wide is not None:
                        enlist((a, b), f"{a}~{b} ratio CI", {}, wide[1], paired=True)
                        unmet_pairs.append(f"pair {a}~{b}: {wide[0]}")
                    pairs.append(
                        PairStatus(
                            a=rec["a"],
                            b=rec["b"],
                            verdict=rec["verdict"],
                            look=rec["look"],
                            alpha=rec["alpha"],
                            welch_p=latest.get("welch_p"),
                            welch_p_holm=rec["welch_p_holm"],
                            tost_p=rec["tost_p"],
                            relative_difference=rec["relative_difference"],
                            rounds_needed=None,
                            test=rec.get("test"),
                            **_ratio_fields(pair_ratio),
                            independent_p=self._independent_p(a, b, side) if paired else None,
                            estimand=self._estimand(a, b),
                        )
                    )
                    continue
                if paired:
                    shares, more, note = self._paired_need(a, b, rounds, k)
                else:
                    shares, more, note = self._pair_need(a, b, side[a], side[b], rounds, k)
                enlist((a, b), f"{a}~{b}", shares, more, paired=paired)
                pairs.append(
                    PairStatus(
                        a=a,
                        b=b,
                        verdict=UNDECIDED,
                        look=None,
                        alpha=None,
                        welch_p=latest.get("welch_p"),
                        welch_p_holm=latest.get("welch_p_holm"),
                        tost_p=latest.get("tost_p"),
                        relative_difference=latest.get("rel"),
                        rounds_needed=more,
                        test="paired" if paired else "welch",
                        **_ratio_fields(self._ratio(a, b, st, rounds)),
                        independent_p=self._independent_p(a, b, side) if paired else None,
                        estimand=self._estimand(a, b),
                    )
                )
                detail = (
                    f"Holm p {latest['welch_p_holm']:.3g}, TOST p {latest['tost_p']:.3g} at the last look"
                    if latest
                    else note or "not tested yet"
                )
                est = f", about {more} more rounds" if more is not None else ""
                if more is not None and paired and self._pace is not None:
                    est += f" (~{format_duration(more * self._pace)} at this pace)"
                unmet_pairs.append(f"pair {a}~{b} undecided ({detail}{est})")
        baselines: list[BaselineStatus] = []
        for name, label in self._baseline_pairs():
            base = self._baseline_side(label, st, rounds, name)
            s = st[name]
            rec = self._base_verdicts.get(name)
            latest = self._latest.get("base:" + name, {})
            base_mean = (
                base.mean
                if base is not None
                else (_known(st[label]).mean if st.get(label) else None)
            )
            cur_mean = s.mean if s is not None else None
            rel = (
                (cur_mean - base_mean) / abs(base_mean)
                if cur_mean is not None and base_mean not in (None, 0)
                else None
            )
            label_text = "stored baseline" if label == "@stored" else label
            paired = label != "@stored" and self._paired(label, name)
            if label == "@stored":
                ratio: tuple[float | None, float | None, float | None, int | None] = (
                    None,
                    None,
                    None,
                    None,
                )
                mine = side[name]
                if mine is not None and base is not None:
                    ratio = (
                        *ratio_of_means_ci(
                            base.mean, base.var, base.n, mine.mean, mine.var, mine.n, p.confidence
                        ),
                        None,
                    )
            else:
                ratio = self._ratio(label, name, st, rounds)
            test: TestKind = "paired" if paired else "welch"
            if rec is not None:
                wide = self._wide(label, name) if paired else None
                if wide is not None:
                    enlist((name, label), f"{name} vs {label_text} ratio CI", {}, wide[1], True)
                    unmet_pairs.append(f"{name} vs {label_text}: {wide[0]}")
                baselines.append(
                    BaselineStatus(
                        name=name,
                        baseline=label_text,
                        verdict=rec["verdict"],
                        look=rec["look"],
                        alpha=rec["alpha"],
                        mean=cur_mean,
                        baseline_mean=base_mean if base_mean is not None else float("nan"),
                        relative_change=rec["relative_change"],
                        welch_p=latest.get("welch_p"),
                        welch_p_holm=rec["welch_p_holm"],
                        tost_p=rec["tost_p"],
                        rounds_needed=None,
                        notes=(),
                        test=rec.get("test", "welch"),
                        **_ratio_fields(ratio),
                    )
                )
                continue
            if paired:
                shares, more, note = self._paired_need(label, name, rounds, 2)
            else:
                shares, more, note = self._pair_need(
                    name, None if label == "@stored" else label, side[name], base, rounds, 2
                )
            sides = (name,) if label == "@stored" else (name, label)
            enlist(sides, f"{name} vs {label_text}", shares, more, paired=paired)
            has_data = (s is not None and s.mean is not None) if paired else side[name] is not None
            verdict: BaselineVerdict = UNDECIDED if has_data else "no data"
            notes = (note,) if note else ()
            baselines.append(
                BaselineStatus(
                    name=name,
                    baseline=label_text,
                    verdict=verdict,
                    look=None,
                    alpha=None,
                    mean=cur_mean,
                    baseline_mean=base_mean if base_mean is not None else float("nan"),
                    relative_change=rel,
                    welch_p=latest.get("welch_p"),
                    welch_p_holm=latest.get("welch_p_holm"),
                    tost_p=latest.get("tost_p"),
                    rounds_needed=more,
                    notes=notes,
                    test=test,
                    **_ratio_fields(ratio),
                )
            )
            est = (
                f", about {more} more rounds"
                if more is not None
                else (f" ({note})" if note else "")
            )
            unmet_pairs.append(f"{name} vs {label_text} undecided{est}")
        if realloc or self._pair_active is None:
            self._pair_active = {n for n, v in pair_active.items() if v}
        pair_active = {
            n: (n in self._pair_active and bool(waiting[n])) or n in forced for n in self.names
        }
        workloads: dict[str, WorkloadStatus] = {}
        active: list[str] = []
        unmet_own: list[str] = []
        for n in self.names:
            s, r = st[n], rounds[n]
            own, own_more = self._own(n, s, r)
            exhausted = self._out(n, rounds)
            done = not own and not waiting[n]
            is_active = not exhausted and (bool(own) or pair_active[n])
            if is_active:
                active.append(n)
            unmet_own.extend(f"{n}: {u}" for u in own)
            more = max([v for v in (own_more, pair_more.get(n)) if v is not None], default=None)
            workloads[n] = WorkloadStatus(
                name=n,
                rounds=r,
                n=s.n if s else 0,
                q=s.q if s else None,
                n_q=s.n_q if s else None,
                mean=s.mean if s else None,
                ci_low=s.ci_low if s else None,
                ci_high=s.ci_high if s else None,
                rel_half_width=s.rel_half_width if s else None,
                target=None if self._covered.get(n) else p.ci_rel_width,
                enough=enough[n],
                width_ok=self._width_ok(s) or bool(self._covered.get(n)),
                done=done,
                active=is_active,
                exhausted=exhausted,
                rounds_needed=None if done else more,
                unmet=tuple(own),
                waiting_for=tuple(waiting[n]),
            )
        return _Status(
            workloads=workloads,
            pairs=pairs,
            baselines=baselines,
            active=active,
            all_done=all(w.done for w in workloads.values()),
            unmet=unmet_own + unmet_pairs,
            can_test=can_test,
        )

    def _sort_key(self, name: str, s: WorkloadStats | None) -> tuple[int, float]:
        if s is None or s.mean is None:
            return (1, 0.0)
        sign = 1.0 if self.direction[name] == "lower_is_better" else -1.0
        return (0, sign * s.mean)

    # ------------------------------------------------------------------ reason, events
    def _reason(
        self,
        status: _Status,
        rounds: Mapping[str, int],
        time_out: bool,
        elapsed: float,
        budget: bool = False,
        unmet_before: Sequence[str] = (),
    ) -> str:
        """One line: all conditions met, the budget that ended the campaign and what was
        unmet, or what the campaign still waits for. A budget stop never reads "met", even
        when the final look then decided every pair (it says so)."""
        p = self.params
        clock = max(rounds.values())
        unmet = status.unmet
        if budget and status.all_done:
            unmet = [
                f"{u} (before the final look, which then decided every pair)" for u in unmet_before
            ]
        if status.all_done and not budget:
            pairs = status.pairs
            n_sep = sum(1 for x in pairs if x.verdict == SEPARATED)
            n_eq = sum(1 for x in pairs if x.verdict == EQUIVALENT)
            width = (
                f" and CI half-width <= {format_percent(p.ci_rel_width, missing='n/a')}"
                if p.ci_rel_width is not None
                else ""
            )
            covered = [n for n in self.names if self._covered.get(n)]
            if covered and len(covered) == len(self.names):
                text = f"all conditions met after {clock} rounds: every comparison is paired, has enough passes{width.replace('CI', 'ratio CI')}"
            elif covered:
                text = f"all conditions met after {clock} rounds: every comparison and every unpaired workload has enough data{width}"
            else:
                text = f"all conditions met after {clock} rounds: every workload has enough data{width}"
            if pairs:
                n_paired = sum(1 for x in pairs if x.test == "paired")
                how = f", {n_paired} paired" if n_paired else ""
                text += f"; {len(pairs)} adjacent pair(s) decided ({n_sep} separated, {n_eq} equivalent within {format_percent(p.margin, missing='n/a')}{how})"
            if status.baselines:
                text += "; baseline comparisons decided"
            return text
        listing = "; ".join(unmet) if unmet else "nothing left that more rounds can decide"
        if time_out:
            return f"max_time {p.max_time:g} s reached after {elapsed:.0f} s; unmet: {listing}"
        if not status.active:
            out = [n for n in self.names if rounds[n] >= p.max_rounds]
            gone = [f"{n} ({why})" for n, why in self._retired.items()]
            if gone:
                listing = f"stopped: {', '.join(gone)}; {listing}"
            if out:
                return f"max_rounds {p.max_rounds} reached ({', '.join(out)}); unmet: {listing}"
            if any(why.startswith(NODES_DIFFER) for why in self._retired.values()):
                return f"no workload can make progress; unmet: {listing}"
            if not status.can_test:
                return f"alpha {p.alpha:g} spent at the final look; unmet: {listing}"
            return f"no workload can make progress; unmet: {listing}"
        nxt = self._next_look()
        at = f"; next look after {nxt} rounds" if nxt is not None else ""
        shown = "; ".join(unmet[:4]) + (f"; and {len(unmet) - 4} more" if len(unmet) > 4 else "")
        return f"continue: {shown}{at}"

    def _changes(self, status: _Status, stop: bool, reason: str, early: bool) -> list[Event]:
        """Events for what changed since the last call: data first (``early``, listed before
        any look of this call), then done/reopened workloads, allocation and the stop."""
        prev = self._prev
        events: list[Event] = []
        wl: Mapping[str, WorkloadStatus] = status.workloads
        if early:
            for n, w in wl.items():
                was = prev.get("enough", {}).get(n, False)
                if w.enough and not was:
                    msg = (
                        f"{n}: enough data (q = {w.q}, {w.n_q} subsession means of {w.n} readings)"
                    )
                    events.append(
                        Event("enough-data", msg, {"workload": n, "q": w.q, "n_q": w.n_q})
                    )
                elif was and not w.enough:
                    msg = f"{n}: no longer enough data ({'; '.join(w.unmet)})"
                    events.append(Event("not-enough-data", msg, {"workload": n}))
            prev["enough"] = {n: w.enough for n, w in wl.items()}
            return events
        for n, w in wl.items():
            was_done = prev.get("done", {}).get(n, False)
            if w.done and not was_done:
                how = (
                    "its comparisons are paired and finished"
                    if self._covered.get(n)
                    else f"CI half-width {format_percent(w.rel_half_width, missing='n/a')}"
                )
                msg = f"{n}: done after {w.rounds} rounds ({how})"
                events.append(Event("workload-done", msg, {"workload": n, "rounds": w.rounds}))
            elif was_done and not w.done:
                why = "; ".join(list(w.unmet) + [f"{x} undecided" for x in w.waiting_for])
                msg = f"{n}: needs more data again ({why})"
                events.append(Event("workload-reopened", msg, {"workload": n}))
        active = [] if stop else list(status.active)
        if not stop and active != prev.get("active"):
            idle = [n for n in self.names if n not in active]
            msg = f"rounds go to {', '.join(active)}" + (
                f" (not {', '.join(idle)})" if idle else ""
            )
            events.append(Event("allocation", msg, {"active": active}))
        if stop and not prev.get("stopped"):
            events.append(Event("stop", reason, {"state": self.state()}))
        prev["done"] = {n: w.done for n, w in wl.items()}
        prev["active"] = active
        prev["stopped"] = stop
        return events


def _ratio_fields(
    ratio: tuple[float | None, float | None, float | None, int | None],
) -> dict[str, Any]:
    """``(ratio, low, high, passes)`` as the keyword fields of ``PairStatus`` and
    ``BaselineStatus`` (the ratio b/a with its CI, and the passes of a paired one)."""
    return dict(zip(("ratio", "ratio_low", "ratio_high", "passes"), ratio, strict=True))
