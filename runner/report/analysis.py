"""The comparisons a report shows, computed by ``stats`` from a :class:`CampaignModel`.

- Ranking and neighbour verdicts (docs/methods.md §7): workloads compared with each other (one
  metric and unit, and with the experiment's ``compare:`` one of its groups) are sorted
  best first and each adjacent pair is decided by :func:`stats.rank_results` (CIs
  disjoint / Holm-corrected Welch / TOST). Where the campaign's comparisons decided a
  group's pairs (the stopping controller's stored verdicts of an adaptive campaign, or a
  fixed campaign's computed once when read by the same controller,
  runner/results/comparisons.py), the group follows their order, verdicts, tests (paired
  or Welch, §13) and ratios (alpha spent over its looks, §10; :mod:`runner.report.verdicts`):
  no second verdict is computed beside them.
- Relative to the best: the controller's ratio when it compared the two, else the ratio
  ``r = m_i / m_best`` with a CI from the delta method on the log scale,
  ``log r ± t_{ν}·sqrt(v_i/m_i² + v_b/m_b²)`` where ``v = s_q²/n_q`` and ν the
  Welch-Satterthwaite df (§6.1); unitless.
- Quantile regression of each neighbour pair (§7, HOEFLER Rule 8) on a systematic subsample
  of the steady readings (at most :data:`QUANTREG_MAX` per side, so the LP stays fast).
- Suites (§8, §9, §6.2): when the workloads come from a matrix with a system factor, each
  other system is compared with the first: HPT and r-speedup, the Speedup-Test, the
  bootstrap CI of the ratio of geometric means; a biplot over all systems.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from functools import partial
from typing import TypeVar

import numpy as np

from benchrun.runner.report.model import CampaignModel, WorkloadView
from benchrun.runner.report.verdicts import StoredComparison
from benchrun.runner.results.estimate import Estimate
from benchrun.stats.hpt import HptResult, RSpeedupResult, hpt, r_speedup
from benchrun.stats.intervals import Interval
from benchrun.stats.multi import PairVerdict, Ranking, rank_results
from benchrun.stats.paired import ratio_of_means_ci
from benchrun.stats.quantreg import QuantileRegressionResult, quantile_regression
from benchrun.stats.resampling import BiplotResult, biplot, gmean_ratio_ci
from benchrun.stats.results import jsonable
from benchrun.stats.speedup import SpeedupSuiteResult, speedup_suite

#: readings per side in the quantile-regression plot (systematic subsample beyond this)
QUANTREG_MAX = 400
#: neighbour pairs with a quantile-regression plot, per metric group
QUANTREG_PAIRS = 6
#: percentiles of the quantile-regression plot (HOEFLER Fig. 4 spans 5th..95th)
QUANTILES = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
#: matrix factors recognised as "the system" of a suite (``node_type``: a fleet's node
#: types, docs/slurm.md "Fleet")
SYSTEM_FACTORS = (
    "node_type",
    "system",
    "machine",
    "version",
    "variant",
    "impl",
    "implementation",
    "compiler",
)
T = TypeVar("T")

#: bootstrap resamples in reports (docs/methods.md §9 asks >= 10 000 for published CIs)
BOOTSTRAP_RESAMPLES = 10_000


@dataclass
class Row:
    """One headline row: rank within its group, estimate, CI, ratio to the best with CI.

    ``rank`` 0: the workload is compared with nothing (``compare:``), so it has no rank.
    ``note`` says why a CI is missing when that is by design (paired comparisons).
    Values are in the base unit ``unit``; ``text`` is the estimate as every output prints
    it (runner/format.py ``estimate_text``, in the workload's display unit
    ``display``, :attr:`runner.report.model.WorkloadView.display`).

    ``ci_low``/``ci_high`` and ``ratio_low``/``ratio_high`` are certified CIs (None
    otherwise). ``interval_low``/``interval_high`` are the interval shown: the CI when
    ``certified``, else the uncertified interval (docs/methods.md §4.1) that assumes tau <=
    ``tau_bound`` at ``width_factor`` times the i.i.d. width. ``ratio_interval_low``/
    ``ratio_interval_high`` likewise for the ratio to the best: its CI when
    ``ratio_certified``, else :func:`uncertified_ratio` of the two intervals."""

    rank: int
    name: str
    unit: str
    mean: float
    ci_low: float | None
    ci_high: float | None
    rel_half_width: float | None
    ratio: float | None
    ratio_low: float | None
    ratio_high: float | None
    verdict_next: str | None  # verdict with the next (worse) workload
    note: str | None = None
    text: str = ""
    display: str = ""
    certified: bool = False
    interval_low: float | None = None
    interval_high: float | None = None
    interval_rel_half_width: float | None = None
    tau_bound: float | None = None
    width_factor: float | None = None
    ratio_certified: bool = False
    ratio_interval_low: float | None = None
    ratio_interval_high: float | None = None


@dataclass(frozen=True)
class RankedPair:
    """An adjacent pair of a ranked group (docs/methods.md §7): ``a`` the better, ``b`` the
    next, its verdict and tests, and the record that decided it: the campaign's stored
    comparison (``stored``: the controller's test, ratio, passes, look) or the pair of
    :func:`stats.rank_results` (``ranked``: Welch, Holm, TOST, Cohen's d, n needed).

    ``relative_difference`` is ``(mean_b - mean_a) / |mean_a|`` (a fraction);
    ``effect_size`` Cohen's d of a Welch comparison (unitless), None for a paired one;
    ``required_n`` subsession means per side for power 0.8 (an undecided computed pair).
    """

    a: str
    b: str
    verdict: str
    rank: int
    welch_p: float | None
    welch_p_holm: float | None
    tost_p: float | None
    relative_difference: float | None
    effect_size: float | None
    required_n: int | None
    stored: StoredComparison | None = None
    ranked: PairVerdict | None = None

    @classmethod
    def of_stored(cls, c: StoredComparison, rank: int, computed: PairVerdict | None) -> RankedPair:
        """A stored pair, with Cohen's d of the same pair in :func:`stats.rank_results`
        (``computed``) when the pair was tested by Welch (d describes a Welch comparison)."""
        return cls(
            a=c.a,
            b=c.b,
            verdict=c.verdict,
            rank=rank,
            welch_p=c.p,
            welch_p_holm=c.p_holm,
            tost_p=c.tost_p,
            relative_difference=c.relative_difference,
            effect_size=None if computed is None or c.test == "paired" else computed.effect_size,
            required_n=None,
            stored=c,
        )

    @classmethod
    def of_ranking(cls, p: PairVerdict, rank: int) -> RankedPair:
        """A pair of :func:`stats.rank_results`."""
        return cls(
            a=p.a,
            b=p.b,
            verdict=p.verdict,
            rank=rank,
            welch_p=p.welch_p,
            welch_p_holm=p.welch_p_holm,
            tost_p=p.tost_p,
            relative_difference=p.relative_difference,
            effect_size=p.effect_size,
            required_n=p.required_n,
            ranked=p,
        )

    def to_dict(self) -> dict[str, object]:
        """The report JSON's pair: the stored comparison's fields under the names of
        :func:`stats.rank_results`' pairs with ``controller: true``, or that function's
        pair as it writes it; ``rank`` last."""
        c = self.stored
        if c is None:
            assert self.ranked is not None
            p = self.ranked
            out: dict[str, object] = {g.name: jsonable(getattr(p, g.name)) for g in fields(p)}
            out["rank"] = self.rank
            return out
        return {
            "a": c.a,
            "b": c.b,
            "verdict": c.verdict,
            "test": c.test,
            "headline": c.headline,
            "ratio": c.ratio,
            "ratio_low": c.ratio_low,
            "ratio_high": c.ratio_high,
            "passes": c.passes,
            "welch_p": c.p,
            "welch_p_holm": c.p_holm,
            "tost_p": c.tost_p,
            "relative_difference": c.relative_difference,
            "look": c.look,
            "alpha": c.alpha,
            "rounds_needed": c.rounds_needed,
            "independent_p": c.independent_p,
            "effect_size": self.effect_size,
            "required_n": None,
            "controller": True,
            "rank": self.rank,
        }


@dataclass(frozen=True)
class QuantileFit:
    """The quantile regression of one pair's steady readings (``b`` against ``a``, values in
    ``unit``; :func:`stats.quantile_regression`)."""

    a: str
    b: str
    unit: str
    fit: QuantileRegressionResult

    def to_dict(self) -> dict[str, object]:
        """The fit's JSON form with ``a``, ``b`` and ``unit`` after its fields."""
        return {**self.fit.to_dict(), "a": self.a, "b": self.b, "unit": self.unit}


@dataclass
class Group:
    """Workloads compared with each other, ranked (docs/methods.md §7): one metric and unit,
    and with the experiment's ``compare:`` one of its groups. ``compared`` False: the
    workloads ``compare:`` compares with nothing (listed, not ranked)."""

    key: str
    unit: str
    direction: str
    rows: list[Row]
    pairs: list[RankedPair]
    excluded: list[tuple[str, str]]
    quantiles: list[QuantileFit] = field(default_factory=list)
    source: str = "computed"  # or "controller"
    notes: list[str] = field(default_factory=list)
    compared: bool = True
    #: how the campaign's comparisons of a "controller" group were made when not stored by
    #: the stopping controller (a fixed campaign's, runner/results/comparisons.py)
    computed: str | None = None
    #: workload name -> its comparison with its baseline (a stored baseline or the
    #: experiment's reference), for the workloads of the group that have one
    baselines: dict[str, StoredComparison] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``wall_time [s]``: the metric and its unit, for people (and the ``compare:``
        group, or that its workloads are compared with nothing)."""
        base, _, index = self.key.partition("#")
        metric, _, unit = base.partition(":")
        text = f"{metric} [{unit or 'no unit'}]"
        if not self.compared:
            return text + ", compared with nothing (compare:)"
        return text + (f", compare: group {index}" if index else "")

    @property
    def heading(self) -> str:
        """``wall_time, measured in s``: :attr:`label` for a table whose rows each carry
        the unit they are shown in (a heading "[s]" above values in ms misleads)."""
        base, _, index = self.key.partition("#")
        metric, _, unit = base.partition(":")
        text = f"{metric}, measured in {unit}" if unit else f"{metric}, no unit"
        if not self.compared:
            return text + ", compared with nothing (compare:)"
        return text + (f", compare: group {index}" if index else "")

    @property
    def members(self) -> list[str]:
        """Every workload of the group: ranked rows, then the excluded ones."""
        return [r.name for r in self.rows] + [n for n, _ in self.excluded]


def _subsample(x: np.ndarray, k: int) -> np.ndarray:
    if x.size <= k:
        return x
    return x[np.linspace(0, x.size - 1, k).round().astype(int)]


def _grouped(model: CampaignModel) -> list[tuple[str, bool, list[WorkloadView]]]:
    """(key, compared, workloads) of every group, in the order of the first workload:
    :meth:`CampaignModel.comparison_group`; workloads ``compare:`` compares with nothing
    are gathered per metric and unit in a group that is not compared."""
    out: dict[str, tuple[bool, list[WorkloadView]]] = {}
    for w in model.workloads:
        g = model.comparison_group(w)
        key, compared = (g, True) if g is not None else (f"{w.group}|alone", False)
        out.setdefault(key, (compared, []))[1].append(w)
    return [(k.removesuffix("|alone"), c, v) for k, (c, v) in out.items()]


def _chain(pairs: list[StoredComparison]) -> list[str] | None:
    """The controller's order of a group from its adjacent pairs (stored in that order:
    each pair shares one workload with the next); None when they do not form a chain."""
    if not pairs:
        return None
    sets = [{p.a, p.b} for p in pairs]
    if len(pairs) == 1:
        return [pairs[0].a, pairs[0].b]
    start = sets[0] - sets[1]
    if len(start) != 1:
        return None
    order = [next(iter(start))]
    for s in sets:
        rest = s - {order[-1]}
        if order[-1] not in s or len(rest) != 1:
            return None
        nxt = next(iter(rest))
        if nxt in order:
            return None
        order.append(nxt)
    return order


def _sort_key(w: WorkloadView) -> float:
    assert w.estimate is not None
    return -w.estimate.mean if w.direction == "higher_is_better" else w.estimate.mean


def _ratio_to_best(
    best: WorkloadView, w: WorkloadView, stored: dict[frozenset, StoredComparison], c: float
) -> tuple[float | None, float | None, float | None]:
    """w / best: the controller's ratio when it compared the two (paired or Welch), else
    the delta-method ratio of the two estimates, else the ratio of the means (no CI)."""
    sp = stored.get(frozenset((best.name, w.name)))
    if sp is not None and sp.ratio is not None and sp.ratio > 0:
        if sp.a == best.name:
            return sp.ratio, sp.ratio_low, sp.ratio_high
        lo = 1.0 / sp.ratio_high if sp.ratio_high else None
        hi = 1.0 / sp.ratio_low if sp.ratio_low else None
        return 1.0 / sp.ratio, lo, hi
    eb, ew = best.estimate, w.estimate
    assert eb is not None and ew is not None
    if eb.usable and ew.usable:
        assert eb.variance is not None and ew.variance is not None and eb.n_q and ew.n_q
        return ratio_of_means_ci(eb.mean, eb.variance, eb.n_q, ew.mean, ew.variance, ew.n_q, c)
    return (ew.mean / eb.mean if eb.mean else None), None, None


def uncertified_ratio(
    best: WorkloadView, w: WorkloadView, ratio: float | None
) -> tuple[float, float] | None:
    """An interval of ``ratio`` = w / best when it has no CI and at least one of the two
    workloads has only an uncertified interval (docs/methods.md §4.1): the delta method
    on the log scale over the two intervals, ``ratio · exp(±sqrt(h_w² + h_best²))`` with
    h the relative half-width of each interval shown. Not certified, as the intervals it
    is made of; None when a workload has no interval or a mean <= 0."""
    eb, ew = best.estimate, w.estimate
    if ratio is None or ratio <= 0 or eb is None or ew is None:
        return None
    if not (eb.has_interval and ew.has_interval) or (eb.certified and ew.certified):
        return None
    if eb.mean <= 0 or ew.mean <= 0:
        return None
    hb, hw = eb.interval_rel_half_width, ew.interval_rel_half_width
    assert hb is not None and hw is not None
    h = math.sqrt(hb * hb + hw * hw)
    return ratio * math.exp(-h), ratio * math.exp(h)


def _row(
    rank: int,
    w: WorkloadView,
    ratio: tuple,
    verdict: str | None,
    note: str | None,
    best: WorkloadView | None = None,
) -> Row:
    e = w.estimate
    assert e is not None
    r, lo, hi = ratio
    du = w.display
    row = Row(
        rank=rank,
        name=w.name,
        unit=w.unit,
        mean=e.mean,
        ci_low=e.ci_low,
        ci_high=e.ci_high,
        rel_half_width=e.rel_half_width,
        ratio=r,
        ratio_low=lo,
        ratio_high=hi,
        verdict_next=verdict,
        note=note,
        text=e.interval_text(du),
        display=du.label,
        certified=e.certified,
        interval_low=e.interval_low,
        interval_high=e.interval_high,
        interval_rel_half_width=e.interval_rel_half_width,
        tau_bound=e.tau_bound,
        width_factor=e.width_factor,
    )
    if lo is not None and hi is not None:
        row.ratio_certified, row.ratio_interval_low, row.ratio_interval_high = True, lo, hi
    elif best is not None and best is not w:
        u = uncertified_ratio(best, w, r)
        if u is not None:
            row.ratio_interval_low, row.ratio_interval_high = u
    return row


def rank_groups(model: CampaignModel, quantreg: bool = True) -> list[Group]:
    """Rank the workloads of every group and decide each adjacent pair (§7).

    Where the campaign's comparisons decided a group's pairs (``model.verdicts``: the
    stopping controller's, or a fixed campaign's computed when read), the group is in
    their order with their verdicts, tests and ratios (:mod:`runner.report.verdicts`).
    Other groups (a campaign whose experiment no longer parses) are ranked here by
    :func:`stats.rank_results`.
    """
    return [
        _rank_group(model, key, compared, views, quantreg)
        for key, compared, views in _grouped(model)
    ]


def _rank_group(
    model: CampaignModel, key: str, compared: bool, views: list[WorkloadView], quantreg: bool
) -> Group:
    """One group of :func:`rank_groups`: its order, pairs, rows and quantile fits."""
    verdicts = model.verdicts
    names = {w.name for w in views}
    by = {w.name: w for w in views}
    usable = [w for w in views if w.estimate is not None and w.estimate.usable]
    unit, direction = views[0].unit, views[0].direction
    group = Group(key, unit, direction, [], [], [], compared=compared)
    if verdicts is not None:
        group.baselines = {b.b: b for b in verdicts.baselines if b.b in names}
    if not compared:
        for w in sorted((w for w in views if w.estimate is not None), key=_sort_key):
            group.rows.append(_row(0, w, (None, None, None), None, None))
        group.excluded = [(w.name, "no data") for w in views if w.estimate is None]
        return group
    ctl = [p for p in (verdicts.pairs if verdicts else ()) if p.a in names and p.b in names]
    stored = {frozenset((p.a, p.b)): p for p in ctl}
    for b in verdicts.baselines if verdicts else ():  # a reference inside the group
        if b.a in names and b.b in names:
            stored.setdefault(frozenset((b.a, b.b)), b)
    ranking = _ranking(model, usable, direction) if len(usable) >= 2 else None
    if ctl or stored:
        group.computed = None if verdicts is None else verdicts.computed
    order = _order(group, views, by, usable, ctl, stored, ranking)
    _add_rows(group, model, by, order, stored)
    if quantreg:
        _add_quantiles(group, by, model.confidence)
    return group


def _ranking(model: CampaignModel, usable: list[WorkloadView], direction: str) -> Ranking:
    """:func:`stats.rank_results` of the usable workloads (at the campaign's alpha,
    margin and confidence)."""
    return rank_results(
        [
            {
                "name": w.name,
                "mean": w.estimate.mean,
                "variance": w.estimate.variance,
                "n": w.estimate.n_q,
                "ci_low": w.estimate.ci_low,
                "ci_high": w.estimate.ci_high,
                "direction": direction,
            }
            for w in usable
            if w.estimate is not None
        ],
        alpha=float(model.settings.alpha),
        margin=float(model.settings.margin),
        confidence=model.confidence,
    )


def _order(
    group: Group,
    views: list[WorkloadView],
    by: dict[str, WorkloadView],
    usable: list[WorkloadView],
    ctl: list[StoredComparison],
    stored: dict[frozenset, StoredComparison],
    ranking: Ranking | None,
) -> list[str]:
    """The group's ranking (best first) and, on ``group``, its pairs, source, notes and
    excluded workloads: the controller's chain of pairs, else the reference comparisons,
    else the ranking computed here, else the usable workloads as they come (``by``:
    ``views`` by name)."""
    computed = {} if ranking is None else {frozenset((p.a, p.b)): p for p in ranking.pairs}
    if ctl:
        group.source = "controller"
        order = _chain(ctl) or [
            w.name for w in sorted((w for w in views if w.estimate), key=_sort_key)
        ]
        order = [n for n in order if by[n].estimate is not None]
        group.pairs = [
            RankedPair.of_stored(p, i + 1, computed.get(frozenset((p.a, p.b))))
            for i, p in enumerate(ctl)
        ]
        group.excluded = [
            (w.name, "no data" if w.estimate is None else "not in the controller's comparisons")
            for w in views
            if w.name not in order
        ]
        return order
    if len(stored) > 0:
        # the group's question is each workload against the experiment's reference
        # (stored as baseline comparisons): no neighbour is compared with the next
        group.source = "controller"
        refs = sorted({b.a for b in stored.values()})
        group.notes.append(
            f"Each workload is compared with the reference {', '.join(refs)} (see the "
            "comparisons), not with its neighbour."
        )
        group.excluded = [(w.name, "no data") for w in views if w.estimate is None]
        return [w.name for w in sorted((w for w in views if w.estimate), key=_sort_key)]
    group.excluded = [
        (w.name, "no data" if w.estimate is None else "not enough data for a CI")
        for w in views
        if w not in usable
    ]
    if ranking is None:
        return [w.name for w in usable]
    group.notes.extend(ranking.notes)
    group.pairs.extend(RankedPair.of_ranking(p, i + 1) for i, p in enumerate(ranking.pairs))
    return list(ranking.names)


def _add_rows(
    group: Group,
    model: CampaignModel,
    by: dict[str, WorkloadView],
    order: list[str],
    stored: dict[frozenset, StoredComparison],
) -> None:
    """A row per ranked workload: its ratio to the best and the verdict on its next."""
    verdicts = model.verdicts
    paired_only = {
        n
        for n in order
        if verdicts is not None and verdicts.computed is None and verdicts.all_paired(n)
    }
    by_pair = {frozenset((p.a, p.b)): p for p in group.pairs}
    for i, name in enumerate(order):
        w = by[name]
        ratio = (
            (1.0, 1.0, 1.0) if i == 0 else _ratio_to_best(by[order[0]], w, stored, model.confidence)
        )
        nxt = None
        if i + 1 < len(order):
            p = by_pair.get(frozenset((name, order[i + 1])))
            nxt = None if p is None else p.verdict
        e = w.estimate
        note = None
        if name in paired_only and e is not None and not _certified(e, model):
            note = "not required: compared paired"
        group.rows.append(_row(i + 1, w, ratio, nxt, note, by[order[0]]))


def _add_quantiles(group: Group, by: dict[str, WorkloadView], confidence: float) -> None:
    """Quantile regression of the first pairs' steady readings (at least 10 each)."""
    for pair in group.pairs[:QUANTREG_PAIRS]:
        xa, xb = by[pair.a].steady, by[pair.b].steady
        if xa.size < 10 or xb.size < 10:
            continue
        fit = quantile_regression(
            _subsample(xa, QUANTREG_MAX),
            _subsample(xb, QUANTREG_MAX),
            confidence=confidence,
            n_boot=500,
            seed=1,
        )
        group.quantiles.append(QuantileFit(pair.a, pair.b, group.unit, fit))


def _certified(e: Estimate, model: CampaignModel) -> bool:
    """Has the estimate a CI within the campaign's ``ci_rel_width`` (when it has one)?"""
    if e.ci_low is None or e.rel_half_width is None:
        return False
    target = model.settings.ci_rel_width
    return target is None or e.rel_half_width <= float(target)


def certified(view: WorkloadView, model: CampaignModel) -> bool:
    """Is ``view``'s own CI one the stopping rule would accept (a CI, within target)?"""
    return view.estimate is not None and _certified(view.estimate, model)


# ----------------------------------------------------------------------------- suites
@dataclass(frozen=True)
class SuiteComparison:
    """One system ``a`` compared with the first system ``b`` over a suite's benchmarks:
    HPT, r-speedup, the Speedup-Test and the ratio of geometric means a/b with its
    bootstrap CI (each None when it could not be computed; the suite's notes say why)."""

    a: str
    b: str
    hpt: HptResult | None = None
    r_speedup: RSpeedupResult | None = None
    speedup_test: SpeedupSuiteResult | None = None
    gmean_ratio: Interval | None = None

    def to_dict(self) -> dict[str, object]:
        """The JSON form: ``a``, ``b`` and each result's ``to_dict()`` (or null)."""
        return {
            "a": self.a,
            "b": self.b,
            "hpt": None if self.hpt is None else self.hpt.to_dict(),
            "r_speedup": None if self.r_speedup is None else self.r_speedup.to_dict(),
            "speedup_test": None if self.speedup_test is None else self.speedup_test.to_dict(),
            "gmean_ratio": None if self.gmean_ratio is None else self.gmean_ratio.to_dict(),
        }


@dataclass
class Suite:
    """A campaign whose workloads are (system x benchmark) cells of a matrix."""

    factor: str
    systems: list[str]
    benchmarks: list[str]
    #: system -> benchmark -> steady series
    cells: dict[str, dict[str, np.ndarray]]
    unit: str
    direction: str
    comparisons: list[SuiteComparison] = field(default_factory=list)
    biplot: BiplotResult | None = None
    notes: list[str] = field(default_factory=list)


def _benchmark_label(w: WorkloadView, factor: str) -> str:
    rest = {k: v for k, v in w.params.items() if k != factor}
    base = w.base_name or w.name.split("[")[0]
    return base + (("[" + ",".join(f"{k}={v}" for k, v in rest.items()) + "]") if rest else "")


def find_suite(model: CampaignModel, factor: str | None = None) -> Suite | None:
    """The suite layout of ``model`` (system factor given or recognised), or None."""
    views = [w for w in model.workloads if w.params]
    if not views:
        return None
    names = factor and [factor] or [f for f in SYSTEM_FACTORS if all(f in w.params for w in views)]
    if not names or not all(names[0] in w.params for w in views):
        return None
    f = names[0]
    cells: dict[str, dict[str, np.ndarray]] = {}
    for w in views:
        cells.setdefault(str(w.params[f]), {})[_benchmark_label(w, f)] = w.steady
    systems = list(cells)
    benchmarks = [b for b in cells[systems[0]] if all(b in cells[s] for s in systems)]
    if len(systems) < 2 or len(benchmarks) < 2 or len({w.group for w in views}) != 1:
        return None
    return Suite(f, systems, benchmarks, cells, views[0].unit, views[0].direction)


def analyse_suite(suite: Suite, confidence: float, resamples: int = BOOTSTRAP_RESAMPLES) -> None:
    """Fill ``suite.comparisons`` (each system vs the first) and ``suite.biplot``."""
    higher = suite.direction == "higher_is_better"
    base = suite.systems[0]
    for other in suite.systems[1:]:
        a = {b: suite.cells[other][b] for b in suite.benchmarks}
        b = {b: suite.cells[base][b] for b in suite.benchmarks}
        pair = f"{other} vs {base}"
        # the Speedup-Test takes X = times of the initial version (the first system), Y = the other
        times = {n: (_times(b[n], higher), _times(a[n], higher)) for n in suite.benchmarks}
        cmp = SuiteComparison(
            other,
            base,
            hpt=_attempt(suite.notes, f"{pair}: hpt", partial(hpt, a, b, higher)),
            r_speedup=_attempt(
                suite.notes,
                f"{pair}: r_speedup",
                partial(r_speedup, a, b, 0.95, higher_is_better=higher),
            ),
            speedup_test=_attempt(
                suite.notes,
                f"{pair}: speedup_test",
                partial(speedup_suite, times, confidence=confidence),
            ),
            gmean_ratio=_attempt(
                suite.notes,
                f"{pair}: gmean_ratio",
                partial(gmean_ratio_ci, a, b, confidence=confidence, n_resamples=resamples, seed=1),
            ),
        )
        suite.comparisons.append(cmp)
    matrix = [
        [float(np.median(suite.cells[s][b])) for b in suite.benchmarks] for s in suite.systems
    ]
    try:
        suite.biplot = biplot(matrix, suite.systems, suite.benchmarks)
    except ValueError as exc:
        suite.notes.append(f"biplot not drawn: {exc}")


def _attempt(notes: list[str], what: str, fn: Callable[[], T]) -> T | None:
    """``fn()``, or None with "``what`` not computed: why" added to ``notes`` when it
    raises ValueError (too few benchmarks, no variation...)."""
    try:
        return fn()
    except ValueError as exc:
        notes.append(f"{what} not computed: {exc}")
        return None


def _times(x: np.ndarray, higher: bool) -> np.ndarray:
    """The Speedup-Test takes times: rates become time per unit (1/x), §6.2."""
    return 1.0 / x if higher else x
