"""The report's figures (matplotlib, Agg, PNG bytes); each comes with its caption.

Readable where they are shown: figures are at most :data:`WIDTH` inches wide at
:data:`DPI`, so the HTML report (a 1200 px column) shows them at their own pixel size, and
no text is smaller than :data:`MIN_FONT` points (:data:`RC`), which is
``MIN_FONT * DPI / 72`` ≈ 13.9 px on screen (tests/report/test_figures_readable.py measures
it in headless Chromium).

Every axis says what it shows and in which unit, one unit per workload
(:func:`runner.report.panels.display_of`: ms for a 37 ms workload stored in seconds, as in the
tables); a dimensionless axis has a plain label ("lag k", "ratio to the best"). A panel
with nothing to show is left out and its caption says why (runner/report/panels.py). Lines
join points only where reading between them makes sense (the CI-width curve, the
percentiles of a quantile regression); autocorrelations are stems.

Figures are built with :class:`matplotlib.figure.Figure` directly (no pyplot global
state), so reports can be written from any thread and nothing opens a window.
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, ParamSpec, TypeVar

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter
from PIL import Image
from scipy import stats as sps

from benchrun.runner.format import DisplayUnit
from benchrun.runner.report.analysis import Group, QuantileFit, Suite
from benchrun.runner.report.model import WorkloadView
from benchrun.runner.report.panels import Panel, display_of, workload_panels

#: pixels per inch of the PNGs: WIDTH x DPI = 1140 px fits the HTML report's column
DPI = 100
#: width of the widest figure [in]
WIDTH = 11.4
#: the smallest font size of any text in a figure [pt]
MIN_FONT = 10.0
#: font sizes [pt] of every figure (matplotlib rcParams, applied while a figure is built)
RC: dict[Any, Any] = {
    "font.size": 11.0,
    "axes.titlesize": 12.0,
    "axes.labelsize": 11.0,
    "xtick.labelsize": MIN_FONT,
    "ytick.labelsize": MIN_FONT,
    "legend.fontsize": MIN_FONT,
    "legend.title_fontsize": MIN_FONT,
    "figure.titlesize": 12.0,
}
#: matplotlib 3.10 replaced ``vert=False`` by ``orientation="horizontal"``
_HORIZONTAL: dict[str, str | bool] = (
    {"orientation": "horizontal"}
    if tuple(int(p) for p in matplotlib.__version__.split(".")[:2]) >= (3, 10)
    else {"vert": False}
)
COLOURS = {
    "": "#1f77b4",
    "warmup-round": "#ff7f0e",
    "warmup-reading": "#ffbb78",
    "outlier": "#d62728",
    "failed": "#7f7f7f",
    "contended": "#9467bd",  # left out: it waited for a CPU (docs/contention.md)
}
#: colours of the workloads overlaid in one figure, in order
SERIES = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
#: workloads per overlaid-distributions figure (more would hide each other)
OVERLAY_MAX = 4
#: overlaid-distributions figures per comparison group
OVERLAY_FIGURES = 6

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Plot:
    """One PNG figure with its caption (``name`` is a file-name stem)."""

    name: str
    title: str
    png: bytes
    caption: str


def _readable(fn: Callable[P, R]) -> Callable[P, R]:
    """Build (and save) the figure of ``fn`` with the font sizes of :data:`RC`."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with matplotlib.rc_context(RC):
            return fn(*args, **kwargs)

    return wrapper


def _png(fig: Figure) -> bytes:
    """``fig`` drawn at :data:`DPI` as a PNG of 256 colours (an adaptive palette: a third of
    the size of a true-colour PNG, which the report embeds, at no visible loss for plots)."""
    fig.set_dpi(DPI)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    rgb = Image.fromarray(np.asarray(canvas.buffer_rgba())[..., :3])
    img = rgb.quantize(256, method=Image.Quantize.FASTOCTREE)
    palette = img.getpalette() or []
    corner = img.getpixel((0, 0))  # a palette index: the background colour's entry
    i = 3 * corner if isinstance(corner, int) else 0
    if palette[i : i + 3] and min(palette[i : i + 3]) >= 248:
        palette[i : i + 3] = [255, 255, 255]  # the averaged white back to white
        img.putpalette(palette)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _percent(value: float) -> str:
    return f"{value:g} %"


# --------------------------------------------------------------------------- workload figure
#: the figures of this process by layout (the panels shown), reused: creating axes and their
#: ticks costs about as much as drawing them, and most workloads share a layout
_WORKLOAD_FIGS: dict[tuple[str, ...], tuple[Figure, dict[str, Axes]]] = {}


def _layout(keys: tuple[str, ...]) -> tuple[Figure, dict[str, Axes]]:
    """A figure with one axes per panel key: ``readings`` across the top, the others two to
    a row below it (a last one alone spans the row); the distribution is a box-plot strip over a histogram (``box`` and
    ``distribution``, sharing their x axis)."""
    rest = [k for k in keys if k != "readings"]
    rows = (len(rest) + 1) // 2
    fig = Figure(figsize=(WIDTH, 3.1 + 3.4 * rows + 0.2), layout="constrained")
    grid = fig.add_gridspec(1 + rows, 2, height_ratios=[3.1] + [3.4] * rows)
    axes: dict[str, Axes] = {"readings": fig.add_subplot(grid[0, :])}
    for i, key in enumerate(rest):
        last_alone = i == len(rest) - 1 and i % 2 == 0
        cell = grid[1 + i // 2, :] if last_alone else grid[1 + i // 2, i % 2]
        if key == "distribution":
            sub = cell.subgridspec(2, 1, height_ratios=[1, 4], hspace=0.0)
            axes["distribution"] = fig.add_subplot(sub[1])
            axes["box"] = fig.add_subplot(sub[0], sharex=axes["distribution"])
        else:
            axes[key] = fig.add_subplot(cell)
    return fig, axes


def _workload_axes(keys: tuple[str, ...]) -> tuple[Figure, dict[str, Axes]]:
    """The reusable figure of layout ``keys``, emptied of the previous workload's artists."""
    if keys not in _WORKLOAD_FIGS:
        _WORKLOAD_FIGS[keys] = _layout(keys)
        return _WORKLOAD_FIGS[keys]
    fig, axes = _WORKLOAD_FIGS[keys]
    for ax in axes.values():
        for art in [*ax.lines, *ax.collections, *ax.patches, *ax.texts, *ax.images]:
            art.remove()
        if ax.legend_ is not None:
            ax.legend_.remove()
        ax.set_xscale("linear")
        ax.relim()
        ax.set_autoscale_on(True)
        ax.set_prop_cycle(None)  # the same colours for every workload
    return fig, axes


def _legend_above(ax: Any, **kwargs: Any) -> None:
    """The legend above the axes, right-aligned (the title is on the left), off the data."""
    ax.legend(
        loc="lower right", bbox_to_anchor=(1.0, 1.0), frameon=False, borderaxespad=0.1, **kwargs
    )


def _bins(x: np.ndarray, lo: float, hi: float, most: int = 60) -> int:
    """Histogram bins over [lo, hi] for ``x``: the Freedman-Diaconis width (2 IQR / n^(1/3),
    robust to outliers), at least 5 and at most ``most`` bins."""
    q1, q3 = np.percentile(x, [25, 75])
    width = 2 * float(q3 - q1) / x.size ** (1 / 3)
    if width <= 0 or hi <= lo:
        return min(most, max(5, int(math.sqrt(x.size))))
    return int(min(most, max(5, math.ceil((hi - lo) / width))))


#: how an uncertified interval (docs/methods.md §4.1) is drawn: hatched between dashed
#: lines, or a dashed whisker, where a CI is a plain shaded band or a solid whisker
UNCERTIFIED_LS: Final = "--"
UNCERTIFIED_HATCH = "///"


def _uncertified_band(span: Any, line: Any, lo: float, hi: float, colour: str) -> None:
    """An uncertified interval as a band: hatched, edged by dashed lines (``span`` and
    ``line`` are ``ax.axhspan``/``ax.axhline`` or their vertical twins)."""
    span(lo, hi, facecolor="none", edgecolor=colour, alpha=0.45, hatch=UNCERTIFIED_HATCH, lw=0)
    for v in (lo, hi):
        line(v, color=colour, ls=UNCERTIFIED_LS, lw=1, alpha=0.8)


def _interval_words(e: Any, pct: str, band: str) -> str:
    """What the band of an estimate ``e`` shows, for a caption: its CI, or its interval
    marked as not certified, with what that assumes."""
    if e is not None and e.uncertified:
        what = f" ({e.interval_note})" if e.interval_note else ""
        return (
            f"the hatched band between dashed lines its {pct} interval, not certified{what}: "
            "too few readings to certify independence (docs/methods.md §4.1)"
        )
    if e is not None and e.certified and e.ci_low is not None:
        return f"the {band} band its {pct} CI over subsession means"
    return "no band: no CI (not enough data)"


def _readings_panel(ax: Any, w: WorkloadView, du: DisplayUnit) -> None:
    idx = np.arange(w.all_values.size)
    values = w.all_values / du.factor
    flags = np.asarray(w.all_flags, dtype=object)
    labels = {
        "": "steady",
        "warmup-round": "warm-up round",
        "warmup-reading": "warm-up reading (MSER-5)",
        "outlier": "Tukey outlier",
        "failed": "failed round",
        "contended": "contended round (left out)",
    }
    # Tukey outliers are steady readings (analysed, only marked): the steady count is the
    # tables' "steady", outliers included, and the outliers' label says they are part of it
    outliers = int((flags == "outlier").sum()) if flags.size else 0
    for tag, colour in COLOURS.items():
        sel = flags == tag if flags.size else np.zeros(0, bool)
        if sel.any():
            count = f"{int(sel.sum())}"
            if tag == "" and outliers:
                count = f"{int(sel.sum()) + outliers} analysed"
            label = f"{labels[tag]} ({count})"
            if tag == "outlier":
                label = f"of which {labels[tag]}s ({count})"
            ax.plot(
                idx[sel],
                values[sel],
                ".",
                ms=4 if tag else 3,
                color=colour,
                label=label,
                rasterized=True,
            )
    e = w.estimate
    if e is not None:
        ax.axhline(e.mean / du.factor, color="k", lw=1)
        if e.certified and e.ci_low is not None and e.ci_high is not None:
            ax.axhspan(e.ci_low / du.factor, e.ci_high / du.factor, color="k", alpha=0.15, lw=0)
        elif e.uncertified:
            assert e.interval_low is not None and e.interval_high is not None
            _uncertified_band(
                ax.axhspan, ax.axhline, e.interval_low / du.factor, e.interval_high / du.factor, "k"
            )
    ax.set_xlabel("reading number (launch order)")
    ax.set_ylabel(du.axis(w.metric))
    if w.all_values.size:
        _legend_above(ax, ncols=min(5, len(ax.lines)), markerscale=2)
    else:
        ax.text(0.5, 0.5, "no readings (every round failed)", ha="center", transform=ax.transAxes)


def robust_kde(sample: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Gaussian kernel density of ``sample`` at ``grid`` (1/unit of the values) with
    Silverman's robust bandwidth ``0.9 min(sd, IQR/1.34) n^(-1/5)`` (Silverman, *Density
    Estimation*, 1986, eq. 3.31). scipy's default (Scott's rule, from the sd) lets a few
    far readings widen every kernel, so the curve's peak fell far below the histogram's
    tallest bar on heavy-tailed timings; the IQR keeps the bandwidth at the bulk's scale."""
    sd = float(np.std(sample, ddof=1))
    q75, q25 = np.percentile(sample, [75, 25])
    spread = min(sd, float(q75 - q25) / 1.34) or sd
    if not spread > 0:
        return np.asarray(sps.gaussian_kde(sample)(grid), dtype=float)
    h = 0.9 * spread * sample.size ** (-0.2)
    return np.asarray(sps.gaussian_kde(sample, bw_method=h / sd)(grid), dtype=float)


def _distribution_panel(ax: Any, box: Any, x: np.ndarray, w: WorkloadView, du: DisplayUnit) -> None:
    ax.hist(
        x,
        bins=_bins(x, float(x.min()), float(x.max())),
        density=True,
        color="#9ecae1",
        edgecolor="white",
    )
    if float(np.ptp(x)) > 0 and x.size >= 3:
        grid = np.linspace(float(x.min()), float(x.max()), 200)
        sample = x if x.size <= 4000 else x[np.linspace(0, x.size - 1, 4000).astype(int)]
        ax.plot(grid, robust_kde(sample, grid), color="#08519c", lw=1.5)
    ax.set_xlabel(du.axis(w.metric))
    ax.set_ylabel(f"density [1/{du.label}]" if du.label else "density")
    box.boxplot([x], whis=1.5, widths=0.6, flierprops={"markersize": 3}, **_HORIZONTAL)
    box.set_yticks([])
    box.tick_params(axis="x", labelbottom=False)


def _qq_panel(ax: Any, w: WorkloadView, du: DisplayUnit) -> None:
    assert w.normality is not None
    th = np.asarray(w.normality["qq_theoretical"], float)
    sm = np.asarray(w.normality["qq_sample"], float) / du.factor
    ax.plot(th, sm, "o", ms=4)
    slope, icpt = np.polyfit(th, sm, 1)
    ends = np.array([th.min(), th.max()])
    ax.plot(ends, icpt + slope * ends, "r-", lw=1.2)
    p = w.normality.get("p_value")
    ax.text(
        0.03,
        0.95,
        "Shapiro-Wilk p = " + ("-" if p is None else f"{p:.3g}"),
        transform=ax.transAxes,
        va="top",
    )
    ax.set_xlabel("standard normal quantile")
    ax.set_ylabel(du.axis("subsession mean"))


def _acf_panel(ax: Any, w: WorkloadView) -> None:
    assert w.acf_raw is not None
    n = max(w.steady.size, 1)
    lags = np.arange(1, len(w.acf_raw))
    ax.axhspan(-1.96 / math.sqrt(n), 1.96 / math.sqrt(n), color="grey", alpha=0.2, lw=0)
    ax.vlines(lags - 0.12, 0, w.acf_raw[1:], color=SERIES[0], lw=1.5)
    ax.plot(lags - 0.12, w.acf_raw[1:], "o", ms=4, color=SERIES[0], label=f"readings (n = {n})")
    if w.acf_means:
        q = w.estimate.q if w.estimate else None
        n_q = w.steady.size // q if q else len(w.acf_means)
        lags = np.arange(1, len(w.acf_means))
        ax.vlines(lags + 0.12, 0, w.acf_means[1:], color=SERIES[4], lw=1.5)
        ax.plot(
            lags + 0.12,
            w.acf_means[1:],
            "s",
            ms=4,
            color=SERIES[4],
            label=f"means of q = {q} readings (n = {n_q})",
        )
        if n_q:
            band = 1.96 / math.sqrt(n_q)
            for y in (-band, band):
                ax.axhline(y, color=SERIES[4], ls=":", lw=1)
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xlabel("lag k")
    ax.set_ylabel("autocorrelation r_k")
    ax.legend(loc="best", framealpha=0.85)


def _convergence_panel(ax: Any, w: WorkloadView, target: float | None) -> None:
    pts = [(k, 100 * v) for k, v in w.convergence if v is not None]
    ax.plot(*zip(*pts, strict=True), "o-", ms=4)
    if target is not None:
        ax.axhline(
            100 * target, color="g", ls="--", lw=1.2, label=f"target {_percent(100 * target)}"
        )
        _legend_above(ax)
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("steady rounds analysed (log scale)")
    ax.set_ylabel("relative CI half-width [%]")


def _caption(
    w: WorkloadView,
    panels: list[Panel],
    letters: dict[str, str],
    du: DisplayUnit,
    target: float | None,
    confidence: float,
) -> str:
    pct = _percent(100 * confidence)
    text = {
        "readings": "Every reading in launch order: steady readings blue, warm-up rounds "
        "orange, readings MSER-5 flagged as within-round warm-up light orange, Tukey outliers "
        "(outside Q1 - 1.5 IQR, Q3 + 1.5 IQR) red, failed rounds grey; the black line is the "
        f"mean and {_interval_words(w.estimate, pct, 'grey')}.",
        "distribution": "Histogram of the steady readings with a Gaussian kernel density "
        "estimate; above it a box plot: box = quartiles, line = median, whiskers = the most "
        "extreme readings within 1.5 IQR of the box, dots beyond.",
        "qq": "Sorted subsession means against standard normal quantiles; the red line is a "
        "least-squares fit, points off it show non-normality (Shapiro-Wilk p in the corner).",
        "acf": "Sample autocorrelation by lag k of the steady readings (blue stems, lag in "
        "readings) and of the subsession means (orange stems, lag in means); the grey band "
        "(readings) and the dotted lines (means) are ±1.96/√n, the approximate 95 % range "
        "for independent data.",
        "convergence": f"Relative half-width of the {pct} CI after the first k steady rounds "
        "(log scale)"
        + (f", dashed: the target {_percent(100 * target)}." if target is not None else "."),
    }
    parts = [f"{w.name}."]
    if du.label:
        parts.append(f"Values in {du.label}.")
    parts += [f"({letters[p.key]}) {text[p.key]}" for p in panels if p.shown]
    hidden = [p for p in panels if not p.shown]
    if hidden:
        parts.append(
            "Not shown, for lack of data: "
            + "; ".join(f"the {p.title} ({p.why})" for p in hidden)
            + "."
        )
    return " ".join(parts)


@_readable
def workload_figure(w: WorkloadView, target: float | None, confidence: float) -> Plot:
    """One workload's figure: readings over time, histogram with density and box plot, Q-Q,
    autocorrelation before/after subsession means, CI width over rounds (docs/methods.md
    §1-5); panels with nothing to show are left out (runner/report/panels.py)."""
    panels = workload_panels(w)
    shown = [p for p in panels if p.shown]
    fig, axes = _workload_axes(tuple(p.key for p in shown))
    du = display_of(w)
    letters = {p.key: "abcdef"[i] for i, p in enumerate(shown)}
    x = w.steady / du.factor
    for p in shown:
        ax = axes[p.key]
        if p.key == "readings":
            _readings_panel(ax, w, du)
        elif p.key == "distribution":
            _distribution_panel(ax, axes["box"], x, w, du)
        elif p.key == "qq":
            _qq_panel(ax, w, du)
        elif p.key == "acf":
            _acf_panel(ax, w)
        elif p.key == "convergence":
            _convergence_panel(ax, w, target)
        top = axes["box"] if p.key == "distribution" else ax
        top.set_title(f"({letters[p.key]}) {p.title}", loc="left", y=1.0)
        ax.locator_params(axis="y", nbins=6)
        if p.key != "convergence":
            ax.locator_params(axis="x", nbins=8)
    caption = _caption(w, panels, letters, du, target, confidence)
    return Plot(f"workload-{_slug(w.name)}", w.name, _png(fig), caption)


# ------------------------------------------------------------------------ comparison figures
def group_title(group: Group) -> str:
    """The group's metric (and ``compare:`` group) without its stored unit: the figures show
    values in the workloads' display unit, and a ratio has none."""
    base, _, index = group.key.partition("#")
    text = base.partition(":")[0]
    if not group.compared:
        return text + ", compared with nothing"
    return text + (f", compare: group {index}" if index else "")


def distribution_sets(names: list[str]) -> list[list[str]]:
    """The workloads of one comparison group (best first) to overlay, figure by figure.

    Up to :data:`OVERLAY_MAX` workloads per figure, consecutive in the ranking; each figure
    starts with the last workload of the one before, so every neighbour pair shares a
    figure; at most :data:`OVERLAY_FIGURES` figures.

    Examples
    --------
    >>> distribution_sets(["a", "b"])
    [['a', 'b']]
    >>> distribution_sets(list("abcdefg"))
    [['a', 'b', 'c', 'd'], ['d', 'e', 'f', 'g']]
    >>> distribution_sets(["a"])
    []
    """
    out: list[list[str]] = []
    start = 0
    while start < len(names) - 1 and len(out) < OVERLAY_FIGURES:
        out.append(names[start : start + OVERLAY_MAX])
        start += OVERLAY_MAX - 1
    return out


def _draw_distribution(
    ax: Any,
    w: WorkloadView,
    x: np.ndarray,
    colour: str,
    edges: np.ndarray,
    grid: np.ndarray,
    du: DisplayUnit,
) -> int:
    """One workload of :func:`distributions_figure` on ``ax``: its histogram on ``edges``
    (area = share of its readings ``x``, in ``du``), its kernel density over ``grid``,
    its mean (dashed) and CI (shaded; hatched when not certified). Returns how many
    readings lie off the axis."""
    lo, hi = float(edges[0]), float(edges[-1])
    width = float(edges[1] - edges[0])
    inside = x[(x >= lo) & (x <= hi)]
    weights = np.full(inside.size, 1.0 / (x.size * width))  # area = share of readings
    e = w.estimate
    mean = (e.mean if e is not None else float(x.mean() * du.factor)) / du.factor
    ax.hist(
        inside,
        bins=list(edges),
        weights=weights,
        histtype="stepfilled",
        alpha=0.25,
        color=colour,
    )
    ax.hist(inside, bins=list(edges), weights=weights, histtype="step", lw=1, color=colour)
    if float(np.ptp(x)) > 0 and x.size >= 3:
        sample = x if x.size <= 4000 else x[np.linspace(0, x.size - 1, 4000).astype(int)]
        ax.plot(
            grid,
            sps.gaussian_kde(sample)(grid),
            color=colour,
            lw=2,
            label=f"{w.name}: mean {du.text(mean * du.factor)}, n = {x.size}",
        )
    else:
        ax.plot(
            [],
            [],
            color=colour,
            lw=2,
            label=f"{w.name}: mean {du.text(mean * du.factor)}, n = {x.size}",
        )
    if e is not None and e.certified and e.ci_low is not None and e.ci_high is not None:
        ax.axvspan(e.ci_low / du.factor, e.ci_high / du.factor, color=colour, alpha=0.2, lw=0)
    elif e is not None and e.uncertified:
        assert e.interval_low is not None and e.interval_high is not None
        ax.axvspan(
            e.interval_low / du.factor,
            e.interval_high / du.factor,
            facecolor="none",
            edgecolor=colour,
            alpha=0.6,
            hatch=UNCERTIFIED_HATCH,
            lw=0,
        )
    ax.axvline(mean, color=colour, ls="--", lw=1.5)
    return int(x.size - inside.size)


@_readable
def distributions_figure(views: list[WorkloadView], label: str, confidence: float) -> Plot | None:
    """The steady readings of the workloads of one comparison, overlaid on one axis in one
    unit (the first workload's, :func:`runner.report.panels.display_of`): histograms on
    shared bins, kernel densities, the means and their CIs. None with fewer than two
    workloads that have two steady readings."""
    views = [w for w in views if w.steady.size >= 2]
    if len(views) < 2:
        return None
    du = display_of(views[0])
    data = [w.steady / du.factor for w in views]
    whole = (min(float(x.min()) for x in data), max(float(x.max()) for x in data))
    lo = min(float(np.percentile(x, 0.5)) for x in data)
    hi = max(float(np.percentile(x, 99.5)) for x in data)
    clipped = whole[1] - whole[0] > 1.5 * (hi - lo) > 0
    if not clipped:
        lo, hi = whole
    if hi <= lo:
        lo, hi = lo - 0.5 * abs(lo or 1.0), hi + 0.5 * abs(hi or 1.0)
    edges = np.linspace(lo, hi, max(_bins(x, lo, hi) for x in data) + 1)
    fig = Figure(figsize=(WIDTH, 4.4), layout="constrained")
    ax = fig.subplots()
    beyond = 0
    pct = _percent(100 * confidence)
    grid = np.linspace(lo, hi, 300)
    for i, (w, x) in enumerate(zip(views, data, strict=True)):
        beyond += _draw_distribution(ax, w, x, SERIES[i % len(SERIES)], edges, grid, du)
    ax.set_xlim(lo, hi)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(du.axis(views[0].metric))
    ax.set_ylabel(f"density [1/{du.label}]" if du.label else "density")
    names = [w.name for w in views]
    ax.set_title(f"{label}: " + " vs ".join(names))
    ax.legend(loc="best", framealpha=0.85)
    marked = [w for w in views if w.estimate is not None and w.estimate.uncertified]
    caption = (
        f"The steady readings of {', '.join(names[:-1])} and {names[-1]} on one axis"
        + (f", in {du.label}" if du.label else "")
        + ": histograms on shared bins (area = share of the workload's readings) with "
        f"Gaussian kernel densities (solid); dashed: the means, shaded: their {pct} CI over "
        "subsession means."
        + (
            f" Hatched instead: the {pct} interval of "
            + ", ".join(
                f"{w.name} ({w.estimate.interval_note})"
                if w.estimate and w.estimate.interval_note
                else w.name
                for w in marked
            )
            + ", not certified: too few readings to certify independence (docs/methods.md §4.1)."
            if marked
            else ""
        )
        + (
            f" {beyond} readings beyond the 0.5th-99.5th percentiles are off the axis."
            if clipped and beyond
            else ""
        )
    )
    name = "distributions-" + "-".join(_slug(n) for n in names)
    return Plot(name, f"distributions: {' vs '.join(names)}", _png(fig), caption)


@_readable
def headline_figure(group: Group, confidence: float) -> Plot:
    """Estimates relative to the best with CIs (one group of the ranking)."""
    rows = [r for r in group.rows if r.ratio is not None]
    fig = Figure(figsize=(9, 0.5 * len(rows) + 1.6), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(rows))[::-1]
    ratio = np.array([r.ratio for r in rows], float)
    lo = np.array([r.ratio_low if r.ratio_low is not None else r.ratio for r in rows], float)
    hi = np.array([r.ratio_high if r.ratio_high is not None else r.ratio for r in rows], float)
    bars = ax.errorbar(ratio, y, xerr=[ratio - lo, hi - ratio], fmt="o", capsize=4)
    marked = [
        (i, r)
        for i, r in enumerate(rows)
        if not r.ratio_certified
        and r.ratio_interval_low is not None
        and r.ratio_interval_high is not None
    ]
    for i, r in marked:
        # an uncertified interval (analysis.uncertified_ratio): a dashed whisker
        assert r.ratio is not None and r.ratio_interval_low is not None
        assert r.ratio_interval_high is not None
        colour = bars.lines[0].get_color()
        err = ax.errorbar(
            [r.ratio],
            [y[i]],
            xerr=[[r.ratio - r.ratio_interval_low], [r.ratio_interval_high - r.ratio]],
            fmt="none",
            capsize=4,
            ecolor=colour,
        )
        for part in err.lines[2]:
            part.set_linestyle(UNCERTIFIED_LS)
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_yticks(y, [f"{r.rank}. {r.name}" for r in rows])
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set(
        xlabel="ratio to the best (estimate / best estimate)",
        ylabel="workload (rank)",
        title=f"{group_title(group)}: relative to the best",
    )
    caption = (
        f"Workloads of {group_title(group)} ({group.direction.replace('_', ' ')}), best "
        "first. Dots: ratio of each workload to the best (unitless); whiskers: "
        f"{100 * confidence:g} % CI of the ratio"
        + (
            " (the stopping controller's where it compared the two: paired ratios are exp of "
            "the mean per-pass log ratio and its CI; else delta method on the log scale, Welch "
            "degrees of freedom; no whisker: no CI)."
            if group.source == "controller"
            else " (delta method on the log scale, Welch degrees of freedom)."
        )
        + (
            " Dashed whiskers: an interval that is not certified, for "
            + ", ".join(r.name for _, r in marked)
            + ": a workload's interval rests on too few readings to certify independence "
            "(docs/methods.md §4.1), so the ratio has no CI; the dashed whisker is the delta "
            "method on the log scale over the two intervals shown, exp(±sqrt(h_a² + h_b²)) "
            "with h each interval's half-width over its mean."
            if marked
            else ""
        )
    )
    return Plot(
        f"ranking-{_slug(group.key)}", f"ranking of {group_title(group)}", _png(fig), caption
    )


@_readable
def quantile_figure(qf: QuantileFit, du: DisplayUnit | None = None) -> Plot:
    """Difference B - A across percentiles with bootstrap CIs (docs/methods.md §7, HOEFLER
    Fig. 4), in ``du`` (A's display unit; default: the stored unit)."""
    if du is None:
        du = DisplayUnit(qf.unit, qf.unit)
    fit = qf.fit
    fig = Figure(figsize=(8, 4.2), layout="constrained")
    ax = fig.subplots()
    q = 100 * np.asarray(fit.quantiles)
    eff = np.asarray(fit.effect, float) / du.factor
    ax.fill_between(
        q,
        np.asarray(fit.ci_low, float) / du.factor,
        np.asarray(fit.ci_high, float) / du.factor,
        color="#9ecae1",
        alpha=0.6,
        lw=0,
    )
    ax.plot(q, eff, "o-", color="#08519c", ms=4)
    ax.axhline(0, color="k", lw=0.6)
    ax.set(
        xlabel="percentile [%]",
        ylabel=du.axis("difference B - A"),
        title=f"B = {qf.b} vs A = {qf.a}",
    )
    caption = (
        f"Quantile regression of {qf.b} against {qf.a}: the difference of each "
        f"percentile (dots)"
        + (f" in {du.label}" if du.label else "")
        + f", band = {100 * fit.confidence:g} % stratified bootstrap CI "
        f"({fit.n_boot} resamples) on up to {fit.n_a} steady readings per side. A flat "
        "line means a pure shift; a slope means the spread or the tail differs."
    )
    return Plot(f"quantiles-{_slug(qf.a)}-{_slug(qf.b)}", caption.split(":")[0], _png(fig), caption)


@_readable
def biplot_figure(suite: Suite) -> Plot | None:
    """Machines (scores) and benchmarks (loadings) on the first two components (§9)."""
    b = suite.biplot
    if b is None:
        return None
    fig = Figure(figsize=(8, 6), layout="constrained")
    ax = fig.subplots()
    scores = np.asarray(b.scores, float)
    loads = np.asarray(b.loadings, float)
    two = scores.shape[1] >= 2
    sx, sy = scores[:, 0], scores[:, 1] if two else np.zeros(len(scores))
    ax.plot(sx, sy, "o", color="#d62728")
    for name, px, py in zip(b.row_labels, sx, sy, strict=True):
        ax.annotate(name, (px, py), color="#d62728")
    scale = float(np.abs(scores).max() or 1.0)
    for name, lv in zip(b.col_labels, loads, strict=True):
        vx, vy = lv[0] * scale, (lv[1] * scale if two else 0.0)
        ax.annotate("", (vx, vy), (0, 0), arrowprops={"arrowstyle": "->", "color": "#1f77b4"})
        ax.annotate(name, (vx, vy), color="#1f77b4")
    ex = b.explained
    ax.set(
        xlabel=f"PC1 of the log medians ({100 * ex[0]:.0f} % of variance)",
        ylabel=f"PC2 of the log medians ({100 * ex[1]:.0f} % of variance)"
        if two
        else "PC2 (none: one component)",
        title="biplot of systems x benchmarks",
    )
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
