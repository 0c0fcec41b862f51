"""The comparisons a report shows, computed by ``stats`` from a :class:`CampaignModel`.

- Ranking and neighbour verdicts (METHODS.md §7): workloads of one metric and unit are
  sorted best first and each adjacent pair is decided by :func:`stats.rank_results`
  (CIs disjoint / Holm-corrected Welch / TOST). For an adaptive campaign the stopping
  controller's stored verdict (alpha spent over its looks, §10) replaces the recomputed one.
- Relative to the best: the ratio ``r = m_i / m_best`` with a CI from the delta method on
  the log scale, ``log r ± t_{ν}·sqrt(v_i/m_i² + v_b/m_b²)`` where ``v = s_q²/n_q`` and ν the
  Welch-Satterthwaite df (§6.1); unitless.
- Quantile regression of each neighbour pair (§7, HOEFLER Rule 8) on a systematic subsample
  of the steady readings (at most :data:`QUANTREG_MAX` per side, so the LP stays fast).
- Suites (§8, §9, §6.2): when the workloads come from a matrix with a system factor, each
  other system is compared with the first: HPT and r-speedup, the Speedup-Test, the
  bootstrap CI of the ratio of geometric means; a biplot over all systems.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sps

from runner.report.model import CampaignModel, WorkloadView
from stats.compare import welch_df
from stats.hpt import hpt, r_speedup
from stats.multi import rank_results
from stats.quantreg import quantile_regression
from stats.resampling import biplot, gmean_ratio_ci
from stats.speedup import speedup_suite

#: readings per side in the quantile-regression plot (systematic subsample beyond this)
QUANTREG_MAX = 400
#: neighbour pairs with a quantile-regression plot, per metric group
QUANTREG_PAIRS = 6
#: percentiles of the quantile-regression plot (HOEFLER Fig. 4 spans 5th..95th)
QUANTILES = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
#: matrix factors recognised as "the system" of a suite
SYSTEM_FACTORS = ("system", "machine", "version", "variant", "impl", "implementation", "compiler")
#: bootstrap resamples in reports (METHODS.md §9 asks >= 10 000 for published CIs)
BOOTSTRAP_RESAMPLES = 10_000


@dataclass
class Row:
    """One headline row: rank within its group, estimate, CI, ratio to the best with CI."""

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


@dataclass
class Group:
    """Workloads of one metric and unit, ranked (METHODS.md §7)."""

    key: str
    unit: str
    direction: str
    rows: list[Row]
    pairs: list[dict[str, Any]]
    excluded: list[tuple[str, str]]
    quantiles: list[dict[str, Any]] = field(default_factory=list)
    source: str = "computed"  # or "controller"
    notes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """``wall_time [s]``: the metric and its unit, for people."""
        metric, _, unit = self.key.partition(":")
        return f"{metric} [{unit or 'no unit'}]"


def ratio_ci(
    m_a: float, v_a: float, n_a: int, m_b: float, v_b: float, n_b: int, confidence: float
) -> tuple[float, float | None, float | None]:
    """Ratio m_a/m_b with a delta-method CI on the log scale (module docstring).

    ``v_*`` are s_q² and ``n_*`` the counts n_q; returns (ratio, low, high), bounds None
    when a mean is not positive or there is no variance information."""
    if m_a <= 0 or m_b <= 0:
        return (m_a / m_b if m_b else math.nan), None, None
    r = m_a / m_b
    va, vb = v_a / n_a, v_b / n_b
    se = math.sqrt(va / m_a**2 + vb / m_b**2)
    if se == 0:
        return r, r, r
    df = welch_df(v_a, n_a, v_b, n_b) or float(min(n_a, n_b) - 1)
    t = float(sps.t.ppf(0.5 + confidence / 2, df))
    return r, r * math.exp(-t * se), r * math.exp(t * se)


def _subsample(x: np.ndarray, k: int) -> np.ndarray:
    if x.size <= k:
        return x
    return x[np.linspace(0, x.size - 1, k).round().astype(int)]


def _controller_pairs(model: CampaignModel) -> dict[tuple[str, str], dict[str, Any]]:
    from runner.adaptive import final_verdicts

    doc = final_verdicts(model.events) or {}
    out = {}
    for p in doc.get("pairs") or []:
        out[(p["a"], p["b"])] = p
        out[(p["b"], p["a"])] = p
    return out


def rank_groups(model: CampaignModel, quantreg: bool = True) -> list[Group]:
    """Rank the workloads of every metric group and decide each adjacent pair (§7)."""
    alpha = float(model.settings.get("alpha", 0.01))
    margin = float(model.settings.get("margin", 0.01))
    c = model.confidence
    stored = _controller_pairs(model) if model.adaptive else {}
    groups: dict[str, list[WorkloadView]] = {}
    for w in model.workloads:
        groups.setdefault(w.group, []).append(w)
    out: list[Group] = []
    for key, views in groups.items():
        usable = [w for w in views if w.estimate is not None and w.estimate.usable]
        excluded = [
            (w.name, "no data" if w.estimate is None else "not enough data for a CI")
            for w in views
            if w not in usable
        ]
        unit, direction = views[0].unit, views[0].direction
        group = Group(key, unit, direction, [], [], excluded)
        if not usable:
            out.append(group)
            continue
        if len(usable) == 1:
            e = usable[0].estimate
            assert e is not None
            group.rows.append(
                Row(
                    1,
                    usable[0].name,
                    unit,
                    e.mean,
                    e.ci_low,
                    e.ci_high,
                    e.rel_half_width,
                    1.0,
                    1.0,
                    1.0,
                    None,
                )  # fmt: skip
            )
            out.append(group)
            continue
        ranking = rank_results(
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
            alpha=alpha,
            margin=margin,
            confidence=c,
        ).to_dict()
        group.notes.extend(ranking.get("notes") or [])
        by = {w.name: w for w in usable}
        best = by[ranking["names"][0]].estimate
        assert best is not None
        for i, pair in enumerate(ranking["pairs"]):
            ctl = stored.get((pair["a"], pair["b"]))
            if ctl is not None:
                pair["computed_verdict"] = pair["verdict"]
                pair["verdict"] = ctl["verdict"]
                pair["controller"] = True
                group.source = "controller"
            pair["rank"] = i + 1
            group.pairs.append(pair)
        for i, name in enumerate(ranking["names"]):
            e = by[name].estimate
            assert e is not None and e.variance is not None and e.n_q
            assert best.variance is not None and best.n_q
            r, lo, hi = ratio_ci(e.mean, e.variance, e.n_q, best.mean, best.variance, best.n_q, c)
            if i == 0:
                lo = hi = r = 1.0
            nxt = group.pairs[i]["verdict"] if i < len(group.pairs) else None
            group.rows.append(
                Row(
                    i + 1, name, unit, e.mean, e.ci_low, e.ci_high, e.rel_half_width, r, lo, hi, nxt
                )  # fmt: skip
            )
        if quantreg:
            for pair in group.pairs[:QUANTREG_PAIRS]:
                xa, xb = by[pair["a"]].steady, by[pair["b"]].steady
                if xa.size < 10 or xb.size < 10:
                    continue
                fit = quantile_regression(
                    _subsample(xa, QUANTREG_MAX), _subsample(xb, QUANTREG_MAX),
                    confidence=c, n_boot=500, seed=1,
                ).to_dict()  # fmt: skip
                fit.update(a=pair["a"], b=pair["b"], unit=unit)
                group.quantiles.append(fit)
        out.append(group)
    return out


# ----------------------------------------------------------------------------- suites
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
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    biplot: dict[str, Any] | None = None
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
        doc: dict[str, Any] = {"a": other, "b": base}
        for key, fn in (
            ("hpt", lambda a=a, b=b: hpt(a, b, higher)),
            ("r_speedup", lambda a=a, b=b: r_speedup(a, b, 0.95, higher_is_better=higher)),
            (
                "speedup_test",
                # X = times of the initial version (the first system), Y = the other
                lambda a=a, b=b: speedup_suite(
                    {n: (_times(b[n], higher), _times(a[n], higher)) for n in suite.benchmarks},
                    confidence=confidence,
                ),
            ),
            (
                "gmean_ratio",
                lambda a=a, b=b: gmean_ratio_ci(
                    a, b, confidence=confidence, n_resamples=resamples, seed=1
                ),
            ),
        ):
            try:
                doc[key] = fn().to_dict()
            except ValueError as exc:
                doc[key] = None
                suite.notes.append(f"{other} vs {base}: {key} not computed: {exc}")
        suite.comparisons.append(doc)
    matrix = [
        [float(np.median(suite.cells[s][b])) for b in suite.benchmarks] for s in suite.systems
    ]
    try:
        suite.biplot = biplot(matrix, suite.systems, suite.benchmarks).to_dict()
    except ValueError as exc:
        suite.notes.append(f"biplot not drawn: {exc}")


def _times(x: np.ndarray, higher: bool) -> np.ndarray:
    """The Speedup-Test takes times: rates become time per unit (1/x), §6.2."""
    return 1.0 / x if higher else x
