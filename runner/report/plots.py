"""The report's figures (matplotlib, Agg, PNG bytes); each comes with its caption.

Every axis carries its unit; every caption says what the markers, whiskers and bands
mean. Figures are built with :class:`matplotlib.figure.Figure` directly (no pyplot global
state), so reports can be written from any thread and nothing opens a window.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Any

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter, ScalarFormatter
from scipy import stats as sps

from benchrun.runner.report.analysis import Group, Suite
from benchrun.runner.report.model import WorkloadView

DPI = 72
#: matplotlib 3.10 replaced ``vert=False`` by ``orientation="horizontal"``
_HORIZONTAL: dict[str, Any] = (
    {"orientation": "horizontal"}
    if tuple(int(p) for p in matplotlib.__version__.split(".")[:2]) >= (3, 10)
    else {"vert": False}
)
COLOURS = {"": "#1f77b4", "warmup-round": "#ff7f0e", "warmup-reading": "#ffbb78",
           "outlier": "#d62728", "failed": "#7f7f7f"}  # fmt: skip


@dataclass(frozen=True)
class Plot:
    """One PNG figure with its caption (``name`` is a file-name stem)."""

    name: str
    title: str
    png: bytes
    caption: str


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def _unit(unit: str) -> str:
    return f" [{unit}]" if unit else " [no unit]"


#: the six-panel figure of this process, reused: creating axes and their ticks costs about
#: as drawing them, and every workload figure has the same layout
_WORKLOAD_FIG: tuple[Figure, Any] | None = None


def _workload_axes() -> tuple[Figure, Any]:
    """The reusable 2 x 3 figure, emptied of the previous workload's artists."""
    global _WORKLOAD_FIG
    if _WORKLOAD_FIG is None:
        fig = Figure(figsize=(13, 7))
        fig.subplots_adjust(left=0.06, right=0.99, bottom=0.08, top=0.95, wspace=0.28,
                            hspace=0.38)  # fmt: skip
        _WORKLOAD_FIG = (fig, fig.subplots(2, 3))
        return _WORKLOAD_FIG
    fig, axes = _WORKLOAD_FIG
    for ax in axes.flat:
        for art in [*ax.lines, *ax.collections, *ax.patches, *ax.texts, *ax.images]:
            art.remove()
        if ax.legend_ is not None:
            ax.legend_.remove()
        ax.relim()
        ax.set_autoscale_on(True)
        ax.set_prop_cycle(None)  # the same colours for every workload
    return fig, axes


def workload_figure(w: WorkloadView, target: float | None, confidence: float) -> Plot:
    """Six panels of one workload: readings over time, histogram, violin/box, Q-Q,
    autocorrelation before/after subsession means, CI width over rounds (docs/methods.md §1-5)."""
    fig, axes = _workload_axes()
    u = _unit(w.unit)
    # (a) readings over time
    ax = axes[0, 0]
    idx = np.arange(w.all_values.size)
    flags = np.asarray(w.all_flags, dtype=object)
    labels = {"": "steady", "warmup-round": "warm-up round", "warmup-reading":
              "warm-up reading (MSER-5)", "outlier": "Tukey outlier", "failed": "failed round"}  # fmt: skip
    for tag, colour in COLOURS.items():
        sel = flags == tag if flags.size else np.zeros(0, bool)
        if sel.any():
            ax.plot(idx[sel], w.all_values[sel], ".", ms=3 if tag else 2, color=colour,
                    label=f"{labels[tag]} ({int(sel.sum())})", rasterized=True)  # fmt: skip
    if w.estimate and w.estimate.ci_low is not None:
        ax.axhspan(w.estimate.ci_low, w.estimate.ci_high, color="k", alpha=0.15, lw=0)
        ax.axhline(w.estimate.mean, color="k", lw=0.8)
    ax.set(xlabel="reading number in launch order [count]", ylabel=f"{w.metric}{u}",
           title="(a) readings over time")  # fmt: skip
    if w.all_values.size:
        ax.legend(fontsize=7, loc="best")
    else:
        ax.text(0.5, 0.5, "no readings (every round failed)", ha="center", transform=ax.transAxes)
    x = w.steady
    # (b) histogram with density
    ax = axes[0, 1]
    if x.size >= 2:
        ax.hist(x, bins=min(60, max(5, int(math.sqrt(x.size)))), density=True, color="#9ecae1",
                edgecolor="white")  # fmt: skip
        if float(np.ptp(x)) > 0:
            grid = np.linspace(float(x.min()), float(x.max()), 200)
            sample = x if x.size <= 4000 else x[np.linspace(0, x.size - 1, 4000).astype(int)]
            ax.plot(grid, sps.gaussian_kde(sample)(grid), color="#08519c", lw=1.2)
    ax.set(xlabel=f"{w.metric}{u}", ylabel=f"density [1/{w.unit or 'unit'}]",
           title="(b) histogram and kernel density")  # fmt: skip
    # (c) violin + box
    ax = axes[0, 2]
    if x.size >= 2 and float(np.ptp(x)) > 0:
        ax.violinplot([x], showextrema=False, **_HORIZONTAL)
    if x.size >= 1:
        ax.boxplot([x], whis=1.5, **_HORIZONTAL, widths=0.25, flierprops={"markersize": 2})
    ax.set(xlabel=f"{w.metric}{u}", yticks=[], title="(c) violin and box plot")
    # (d) Q-Q
    ax = axes[1, 0]
    if w.normality and w.normality.get("qq_sample"):
        th, sm = w.normality["qq_theoretical"], w.normality["qq_sample"]
        ax.plot(th, sm, ".", ms=3)
        slope, icpt = np.polyfit(th, sm, 1)
        ax.plot([min(th), max(th)], [icpt + slope * min(th), icpt + slope * max(th)], "r-", lw=1)
        p = w.normality.get("p_value")
        ax.text(0.02, 0.95, "Shapiro-Wilk p = " + ("-" if p is None else f"{p:.3g}"),
                transform=ax.transAxes, va="top", fontsize=8)  # fmt: skip
    ax.set(xlabel="standard normal quantile [1]", ylabel=f"subsession mean{u}",
           title="(d) Q-Q plot of subsession means")  # fmt: skip
    # (e) autocorrelation
    ax = axes[1, 1]
    if w.acf_raw:
        lags = np.arange(1, len(w.acf_raw))
        ax.plot(lags, w.acf_raw[1:], "o-", ms=3, label="readings")
    if w.acf_means:
        lags = np.arange(1, len(w.acf_means))
        q = w.estimate.q if w.estimate else None
        ax.plot(lags, w.acf_means[1:], "s-", ms=3, label=f"subsession means (q = {q})")
    if w.acf_raw:
        n = max(x.size, 1)
        ax.axhspan(-1.96 / math.sqrt(n), 1.96 / math.sqrt(n), color="grey", alpha=0.2, lw=0)
        ax.legend(fontsize=7)
    ax.axhline(0, color="k", lw=0.5)
    ax.set(xlabel="lag [readings or subsession means]", ylabel="autocorrelation r_k [1]",
           title="(e) autocorrelation before/after subsession means")  # fmt: skip
    # (f) CI width over rounds
    ax = axes[1, 2]
    pts = [(k, 100 * v) for k, v in w.convergence if v is not None]
    if pts:
        ax.plot(*zip(*pts, strict=True), "o-", ms=3)
    if target is not None:
        ax.axhline(100 * target, color="g", ls="--", lw=1, label=f"target {100 * target:g} %")
        ax.legend(fontsize=7)
    ax.set(xlabel="steady rounds analysed [count]", ylabel="CI half-width / mean [%]",
           title="(f) relative CI half-width over rounds")  # fmt: skip
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    for ax in axes.flat:
        # a fixed title height skips matplotlib's costly search for overlapping tick labels
        ax.set_title(ax.get_title(), y=1.0)
        ax.locator_params(axis="y", nbins=5)
        if ax is not axes[1, 2]:
            ax.locator_params(axis="x", nbins=6)
    pct = f"{100 * confidence:g} %"
    caption = (
        f"{w.name}. (a) Every reading in launch order: steady readings blue, warm-up rounds "
        "orange, readings MSER-5 flagged as within-round warm-up light orange, Tukey outliers "
        f"(outside Q1 - 1.5 IQR, Q3 + 1.5 IQR) red; the black line is the mean and the grey band "
        f"its {pct} CI over subsession means. (b) Histogram of the steady readings with a "
        "Gaussian kernel density estimate. (c) Violin (density) with a box plot: box = "
        "quartiles, line = median, whiskers = the most extreme readings within 1.5 IQR of the "
        "box, dots beyond. (d) Sorted subsession means against standard normal quantiles; the "
        "red line is a least-squares fit, points off it show non-normality. (e) Sample "
        "autocorrelation by lag of the steady readings and of the subsession means; the grey "
        "band is ±1.96/√n, the approximate 95 % range for independent data. (f) Relative "
        f"half-width of the {pct} CI after the first k steady rounds (log scale)"
        + (f", dashed: the target {100 * target:g} %." if target is not None else ".")
    )
    return Plot(f"workload-{_slug(w.name)}", w.name, _png(fig), caption)


def headline_figure(group: Group, confidence: float) -> Plot:
    """Estimates relative to the best with CIs (one group of the ranking)."""
    rows = [r for r in group.rows if r.ratio is not None]
    fig = Figure(figsize=(9, 0.45 * len(rows) + 1.4), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(rows))[::-1]
    ratio = np.array([r.ratio for r in rows], float)
    lo = np.array([r.ratio_low if r.ratio_low is not None else r.ratio for r in rows], float)
    hi = np.array([r.ratio_high if r.ratio_high is not None else r.ratio for r in rows], float)
    ax.errorbar(ratio, y, xerr=[ratio - lo, hi - ratio], fmt="o", capsize=3)
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_yticks(y, [f"{r.rank}. {r.name}" for r in rows])
    ax.set(xlabel="estimate / best estimate [ratio, 1]",
           title=f"{group.label}: relative to the best")  # fmt: skip
    caption = (
        f"Workloads measured in {group.unit or 'no unit'} ({group.direction.replace('_', ' ')}), "
        f"best first. Dots: ratio of each workload to the best; whiskers: {100 * confidence:g} % "
        "CI of the ratio"
        + (
            " (the stopping controller's where it compared the two: paired ratios are exp of "
            "the mean per-pass log ratio and its CI; else delta method on the log scale, Welch "
            "degrees of freedom; no whisker: no CI)."
            if group.source == "controller"
            else " (delta method on the log scale, Welch degrees of freedom)."
        )
    )
    return Plot(f"ranking-{_slug(group.key)}", f"ranking of {group.label}", _png(fig), caption)


def quantile_figure(fit: dict[str, Any]) -> Plot:
    """Difference B - A across percentiles with bootstrap CIs (docs/methods.md §7, HOEFLER Fig. 4)."""
    fig = Figure(figsize=(6.5, 3.6), layout="constrained")
    ax = fig.subplots()
    q = 100 * np.asarray(fit["quantiles"])
    eff = np.asarray(fit["effect"], float)
    ax.fill_between(q, fit["ci_low"], fit["ci_high"], color="#9ecae1", alpha=0.6, lw=0)
    ax.plot(q, eff, "o-", color="#08519c", ms=3)
    ax.axhline(0, color="k", lw=0.6)
    unit = fit.get("unit") or ""
    ax.set(xlabel="percentile [%]", ylabel=f"{fit['b']} - {fit['a']}{_unit(unit)}",
           title=f"{fit['b']} vs {fit['a']}")  # fmt: skip
    caption = (
        f"Quantile regression of {fit['b']} against {fit['a']}: the difference of each "
        f"percentile (dots), band = {100 * fit['confidence']:g} % stratified bootstrap CI "
        f"({fit['n_boot']} resamples) on up to {fit['n_a']} steady readings per side. A flat "
        "line means a pure shift; a slope means the spread or the tail differs."
    )
    return Plot(f"quantiles-{_slug(fit['a'])}-{_slug(fit['b'])}", caption.split(":")[0],
                _png(fig), caption)  # fmt: skip


def biplot_figure(suite: Suite) -> Plot | None:
    """Machines (scores) and benchmarks (loadings) on the first two components (§9)."""
    b = suite.biplot
    if not b:
        return None
    fig = Figure(figsize=(6.5, 5), layout="constrained")
    ax = fig.subplots()
    scores = np.asarray(b["scores"], float)
    loads = np.asarray(b["loadings"], float)
    two = scores.shape[1] >= 2
    sx, sy = scores[:, 0], scores[:, 1] if two else np.zeros(len(scores))
    ax.plot(sx, sy, "o", color="#d62728")
    for name, px, py in zip(b["row_labels"], sx, sy, strict=True):
        ax.annotate(name, (px, py), fontsize=8, color="#d62728")
    scale = float(np.abs(scores).max() or 1.0)
    for name, lv in zip(b["col_labels"], loads, strict=True):
        vx, vy = lv[0] * scale, (lv[1] * scale if two else 0.0)
        ax.annotate("", (vx, vy), (0, 0), arrowprops={"arrowstyle": "->", "color": "#1f77b4"})
        ax.annotate(name, (vx, vy), fontsize=7, color="#1f77b4")
    ex = b["explained"]
    ax.set(xlabel=f"PC1 [log units, {100 * ex[0]:.0f} % of variance]",
           ylabel=f"PC2 [log units, {100 * ex[1]:.0f} % of variance]" if two else "PC2 [-]",
           title="biplot of systems x benchmarks")  # fmt: skip
    caption = (
        "PCA of the log of each (system, benchmark) median, columns centred. Red: systems "
        "(scores); blue arrows: benchmarks (loadings, scaled to the scores). Systems close "
        "together perform alike; an arrow points towards the systems with high values on that"
        " benchmark."
    )
    return Plot("biplot", "biplot", _png(fig), caption)


def _slug(text: str) -> str:
    out = "".join(ch if ch.isalnum() else "-" for ch in text).strip("-").lower()
    return out or "x"
