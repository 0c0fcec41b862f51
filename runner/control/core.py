"""What the stopping controller knows of one campaign, and the questions every part asks.

:class:`ControllerCore` holds the campaign's workloads (direction, group, stored baselines,
the reference), the campaign's looks (:class:`runner.control.looks.CampaignLooks`), the
verdicts declared so far and the tests behind them, each paired comparison's own look state,
and what :meth:`runner.control.controller.Controller.decide` sets at each call (the paired
series, the workloads retired or past ``max_rounds``). Its methods answer the questions the
tests (runner/control/pairtests.py, ownlooks.py), the allocation (allocation.py) and the
status (status.py) share: has a workload enough data, is a comparison paired, what are the
comparisons of now and in which order. The rule: docs/controller.md "The stopping rule".
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeGuard

from benchrun.runner.control.collector import WorkloadStats
from benchrun.runner.control.looks import CampaignLooks
from benchrun.runner.control.pairing import PairSource
from benchrun.runner.control.pairlooks import PairLookState, PairTestResult, look_tests, look_units
from benchrun.runner.control.params import DIRECTIONS, ControllerParams
from benchrun.runner.control.verdictbook import BaselineRecord, PairRecord
from benchrun.stats.sequential import Sample

__all__ = ["NODES_DIFFER", "NOT_TESTED", "ControllerCore", "LastTest", "Reported", "Side", "known"]

#: how the reason of a workload stopped for node variation starts (docs/methods.md §14)
NODES_DIFFER = "nodes differ"


class Side(NamedTuple):
    """One side of a Welch comparison: a workload's subsession summary (or a stored one)."""

    mean: float
    var: float  # s_q^2
    n: int  # n_q
    rounds: int  # rounds behind it (for scaling estimates); 0 = fixed (a stored baseline)

    @property
    def sample(self) -> Sample:
        """The side as a :class:`stats.sequential.Sample` (mean, s_q², n_q)."""
        return Sample(self.mean, self.var, self.n)


@dataclass
class Reported:
    """What the change events of the last pass reported (runner/control/progress.py):
    which workloads had enough data and were done, the active set, whether it stopped."""

    enough: dict[str, bool] = field(default_factory=dict)
    done: dict[str, bool] = field(default_factory=dict)
    active: list[str] | None = None
    stopped: bool = False


@dataclass(frozen=True)
class LastTest:
    """The last test of a comparison, shown while it is undecided: ``welch_p`` the raw
    two-sided p (Welch's, or the paired test's), ``welch_p_holm`` after Holm (an own look's
    p as it is), ``tost_p`` the TOST p of equivalence, ``test`` what ran ("welch" or
    "paired"; None: not tested yet), ``rel`` the relative difference b/a - 1 (None for a
    baseline), ``level`` the nominal level of an own look (None at the campaign's looks)."""

    welch_p: float | None
    welch_p_holm: float | None
    tost_p: float | None
    test: str | None
    rel: float | None = None
    level: float | None = None


#: the last test of a comparison not tested yet
NOT_TESTED = LastTest(None, None, None, None)


def known(s: WorkloadStats | None) -> WorkloadStats:
    """``s``, which the caller knows is set (the workload passed :meth:`ControllerCore.enough`)."""
    if s is None:
        raise AssertionError("a workload the controller compares has no statistics")
    return s


class ControllerCore:
    """The state of one campaign's stopping rule and the predicates shared by its parts.

    ``workloads``: ``(name, direction)`` or ``(name, direction, group)`` in file order;
    only workloads of one direction and group are ranked together (default group: all
    of one direction), and the reference's group is not ranked: its question is each
    workload against the reference. ``baseline``: stored results to compare against, name ->
    ``(mean, variance of subsession means, n_q, q)`` (PILOT "Comparing Results"), or
    ``None``. ``reference``: a workload of this campaign every other one of its group is
    compared with (``settings.baseline``). ``state``: what :meth:`state` returned before
    (stored in the data of "plan"/"look" events), to resume without re-spending α.

    Kept between passes: ``schedule`` (the campaign's looks), ``verdicts`` (declared pair
    verdicts by pair) and ``base_verdicts`` (by workload), ``order`` (each ranked group's
    order at its last look), ``latest`` (the last test results, by "pair:a|b" or
    "base:name"), ``pair_looks`` (each paired comparison's own look state), ``units`` (its
    tests by series length), ``pair_active`` (the workloads given rounds for a pair at the
    last look), ``prev`` (what the last change events reported). Set by each
    ``decide``: ``retired``, ``src`` (the paired series), ``covered`` (workloads whose
    comparisons are all paired), ``extended`` (past ``max_rounds``), ``pace`` (seconds per
    pass), ``own_next`` (the clock of the next own look of a comparison).
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
        self.baseline: dict[str, Side] = {}
        for name, value in (baseline or {}).items():
            if name not in self.direction:
                raise ValueError(f"baseline for unknown workload {name!r}")
            mean, var, n_q, _q = value
            if not (math.isfinite(mean) and math.isfinite(var) and var >= 0 and int(n_q) >= 2):
                raise ValueError(f"{name}: baseline needs a finite mean, variance >= 0, n_q >= 2")
            self.baseline[name] = Side(float(mean), float(var), int(n_q), 0)
        if reference is not None and reference not in self.direction:
            raise ValueError(f"reference {reference!r} is not a workload")
        self.reference = reference
        self.schedule = CampaignLooks(self.params)
        self.verdicts: dict[frozenset[str], PairRecord] = {}
        self.base_verdicts: dict[str, BaselineRecord] = {}
        self.order: dict[tuple[str, str], list[str]] = {}
        self.latest: dict[str, LastTest] = {}  # last test results, by key
        self.prev = Reported()
        self.pair_active: set[str] | None = None  # fixed between looks (no churn)
        self.retired: dict[str, str] = {}
        self.src: PairSource | None = None
        self.covered: dict[str, bool] = {}
        self.pair_looks: dict[frozenset[str], PairLookState] = {}
        self.units: dict[tuple[str, str], tuple[int, PairTestResult]] = {}
        self.extended: set[str] = set()  # past max_rounds, deciding within max_time
        self.pace: float | None = None  # campaign seconds per pass so far
        self.own_next: int | None = None  # clock of the next own look of a comparison
        if state:
            self.restore(state)

    def state(self) -> dict[str, Any]:
        """JSON-serialisable state: the look plan, α spent, and every declared verdict."""
        return {
            **self.schedule.state(),
            "verdicts": [v.to_json() for v in self.verdicts.values()],
            "baseline_verdicts": [v.to_json() for v in self.base_verdicts.values()],
            "order": [[list(k), v] for k, v in self.order.items()],
            "pair_looks": [[sorted(k), v.to_dict()] for k, v in self.pair_looks.items()],
        }

    def restore(self, s: Mapping[str, Any]) -> None:
        """Take back what :meth:`state` returned (a resumed campaign, docs/controller.md)."""
        self.schedule.restore(s)
        for v in s.get("verdicts", []):
            rec = PairRecord.from_json(v)
            self.verdicts[rec.key] = rec
        for v in s.get("baseline_verdicts", []):
            base = BaselineRecord.from_json(v)
            self.base_verdicts[base.name] = base
        for k, v in s.get("order", []):
            self.order[(k[0], k[1])] = list(v)
        for k, v in s.get("pair_looks", []):
            self.pair_looks[frozenset(k)] = PairLookState.from_dict(v)

    def enough(self, s: WorkloadStats | None, rounds: int) -> TypeGuard[WorkloadStats]:
        """Has a workload enough data for its own CI to be tested: a certified CI, >=
        ``min_rounds`` steady rounds, >= ``min_subsessions`` subsession means and >=
        ``min_series`` readings?"""
        return bool(
            s is not None
            and s.enough
            and s.s2_q is not None
            and rounds >= self.params.min_rounds
            and (s.n_q or 0) >= self.params.subsessions
            and s.n >= self.params.min_series
        )

    def started(self, s: WorkloadStats | None, rounds: int) -> bool:
        """Enough of a workload whose comparisons are paired: min_rounds steady rounds."""
        return s is not None and s.mean is not None and rounds >= self.params.min_rounds

    def is_covered(self, name: str) -> bool:
        """Is every comparison of ``name`` paired (docs/paired.md)? Then ``ci_rel_width``
        and "enough data" apply to its log-ratio series, not to its own series (a mean of
        a drifting machine describes the period measured; docs/controller.md)."""
        if self.src is None or name in self.baseline:
            return False
        others = [m for m in self.names if m != name and self.group[m] == self.group[name]]
        return bool(others) and all(self.src.possible(name, m) for m in others)

    def pair(self, a: str, b: str) -> WorkloadStats | None:
        """Statistics of d = ln b - ln a over shared passes, when the pair is paired."""
        if self.src is None or not (self.covered.get(a) and self.covered.get(b)):
            return None
        return self.src.stats(a, b)

    def paired(self, a: str, b: str) -> bool:
        """Is a~b compared on its per-pass log ratios (both workloads covered, docs/paired.md)?"""
        return self.src is not None and bool(self.covered.get(a) and self.covered.get(b))

    def ready(self, a: str, b: str, enough: Mapping[str, bool]) -> bool:
        """Can the comparison a~b be tested (paired series, or both sides for Welch)?"""
        if self.paired(a, b):
            if self.own_paired(a, b):  # its looks are its own (runner/control/ownlooks.py)
                return True
            s = self.pair(a, b)
            return s is not None and self.enough(s, s.rounds)
        return bool(enough[a] and enough[b])

    def own_paired(self, a: str, b: str) -> bool:
        """Is a~b paired and tested at looks on its own passes (``pair_looks: own``)? Not
        while its series is too short for the exact test to decide at the group's level
        (``2/2^n > alpha_pair``) and it has had no look yet: then, as for a series too short
        to certify, Welch on the two sides decides when it can (a fixed campaign of a few
        long rounds)."""
        if self.params.pair_looks != "own" or not self.paired(a, b):
            return False
        if frozenset((a, b)) in self.pair_looks:
            return True
        assert self.src is not None
        d = self.src.series(a, b)
        return d is not None and 2.0 / 2.0 ** min(d.size, 1000) <= self.family_alpha(a, b)

    def alpha_pair(self, k: int) -> float:
        """Level of a separation in a group of k workloads: alpha over the C(k, 2) pairs
        it can form (Bonferroni: which pairs are adjacent depends on the data)."""
        return self.params.alpha / max(1, k * (k - 1) // 2)

    def ref_pairs(self) -> list[tuple[str, str]]:
        """(reference, workload) of every comparison with this campaign's reference."""
        return [(lab, n) for n, lab in self.baseline_pairs() if lab != "@stored"]

    def family_alpha(self, a: str, b: str) -> float:
        """Level of a separation of a~b at its own looks: alpha over the comparisons with
        the reference when one of them is the reference (k - 1 of them: the family is
        fixed in advance), else :meth:`alpha_pair` of their group."""
        if self.reference is not None and self.reference in (a, b):
            return self.params.alpha / max(1, len(self.ref_pairs()))
        return self.alpha_pair(sum(1 for n in self.names if self.group[n] == self.group[a]))

    def comparisons(self, st: Mapping[str, WorkloadStats | None]) -> list[tuple[str, str]]:
        """The comparisons of now: adjacent pairs of each group's order, reference pairs."""
        out: list[tuple[str, str]] = []
        for key, members in self.ranked_groups().items():
            order = self.order.get(key)
            if order is None or set(order) != set(members):
                order = self.rank(members, st)
            out.extend(zip(order, order[1:], strict=False))
        out.extend((lab, n) for n, lab in self.baseline_pairs() if lab != "@stored")
        return out

    def rank(self, members: Sequence[str], st: Mapping[str, WorkloadStats | None]) -> list[str]:
        """Best first by mean; then neighbours whose paired series says the other way
        round are swapped (bubble passes), so drift between workloads cannot misorder a
        pair that was measured in the same passes."""
        order = sorted(members, key=lambda n: self.sort_key(n, st[n]))
        for _ in range(len(order)):
            swapped = False
            for i in range(len(order) - 1):
                a, b = order[i], order[i + 1]
                s = self.pair(a, b)
                if s is not None and s.mean is not None and self.b_ahead(a, s.mean):
                    order[i], order[i + 1] = b, a
                    swapped = True
            if not swapped:
                break
        return order

    def b_ahead(self, a: str, mean_d: float) -> bool:
        """Does a mean log ratio ln(b/a) put b in front of a in a's direction?"""
        return mean_d < 0 if self.direction[a] == "lower_is_better" else mean_d > 0

    def out(self, name: str, rounds: Mapping[str, int]) -> bool:
        """No more rounds for ``name``: its budget is used up (``max_rounds``, unless a
        comparison it is in will decide within the time left: :func:`runner.control.allocation.extended_workloads`), or it
        was retired."""
        return (
            rounds[name] >= self.params.max_rounds and name not in self.extended
        ) or name in self.retired

    def width_ok(self, s: WorkloadStats | None) -> bool:
        """Is the CI relative half-width of ``s`` at most ``ci_rel_width`` (always, when
        that is null; a mean of 0 passes only with a zero-width CI)?"""
        target = self.params.ci_rel_width
        if target is None:
            return True
        if s is None or s.ci_low is None or s.ci_high is None:
            return False
        if s.rel_half_width is None:  # mean 0: only an exact (deterministic) value passes
            return s.ci_low == s.ci_high
        return s.rel_half_width <= target

    def node_limited(self, s: WorkloadStats | None) -> float | None:
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
        if s.mean is None or s.mean == 0 or self.width_ok(s):
            return None
        floor = float(nodes.get("floor_half_width") or 0.0) / abs(s.mean)
        return floor if floor > target else None

    def side(self, s: WorkloadStats, rounds: int) -> Side:
        """The Welch side of a workload with enough data: its subsession summary, or its
        k node means when its CI is the node-level one (§14)."""
        assert s.mean is not None and s.s2_q is not None and s.n_q is not None
        nodes = s.nodes
        if nodes and nodes.get("ci_from") == "nodes":  # Welch on the k node means (§14)
            means = [float(m) for m in nodes["means"]]
            return Side(float(s.mean), statistics.variance(means), len(means), max(1, rounds))
        return Side(float(s.mean), float(s.s2_q), int(s.n_q), max(1, rounds))

    def groups(self) -> dict[tuple[str, str], list[str]]:
        """The workloads of each (direction, group), in file order."""
        out: dict[tuple[str, str], list[str]] = {}
        for n in self.names:
            out.setdefault(self.group[n], []).append(n)
        return out

    def ranked_groups(self) -> dict[tuple[str, str], list[str]]:
        """The groups whose neighbours are compared: every group but the reference's,
        whose question is each workload against the reference (:meth:`baseline_pairs`)."""
        ref = None if self.reference is None else self.group[self.reference]
        return {k: v for k, v in self.groups().items() if k != ref}

    def baseline_pairs(self) -> list[tuple[str, str]]:
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

    def pair_result(self, a: str, b: str) -> PairTestResult | None:
        """The tests of a~b on its units now (cached per pass count): the passes of its
        log-ratio series, or means of q of them (:func:`runner.control.pairlooks.look_units`);
        None without 2 units. Every steady pass counts: a prefix cut chosen by the data
        (MSER-5, which the collector's certification of the series still uses) would make
        the statistic of one look not a continuation of the last one's."""
        assert self.src is not None
        s, d = self.pair(a, b), self.src.series(a, b)
        if s is None or d is None:
            return None
        cached = self.units.get((a, b))
        if cached is not None and cached[0] == d.size:
            return cached[1]
        if d.size < 2:
            return None
        p = self.params
        units, q, inflation = look_units(
            d, s.tau, shift=p.pair_lag1_shift, full_until=p.pair_lag1_full
        )
        r = look_tests(units, q, p.paired_test, p.margin, p.confidence, inflation)  # type: ignore[arg-type]
        self.units[(a, b)] = (d.size, r)
        return r

    def sort_key(self, name: str, s: WorkloadStats | None) -> tuple[int, float]:
        """Best first by mean in the workload's direction; without a mean, last."""
        if s is None or s.mean is None:
            return (1, 0.0)
        sign = 1.0 if self.direction[name] == "lower_is_better" else -1.0
        return (0, sign * s.mean)
