"""The history page's figures and tables (``benchrun history DIR --html FILE``, issue 31):
per series, each campaign's estimate over the revisions with its CI, the change points
and the outlying campaigns marked, and the numbers below it (docs/history.md, "The
history page").

Everything shown comes from the objects ``benchrun history`` prints as text and as
``--json``: the series of runner/results/history.py and the change points
stats/changepoint.py found in it (:class:`~benchrun.stats.changepoint.ChangePoints`),
computed once by the command. Figures follow the report's (runner/report/plots.py): the
same width, fonts and 256-colour PNG; values in one display unit per series
(runner/format.py ``display_unit`` from the median estimate); names are plain text here
and escaped by the renderer (runner/report/html.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from benchrun.runner.format import DisplayUnit, display_unit, printable
from benchrun.runner.report import plots
from benchrun.runner.report.table import Table
from benchrun.runner.results.history import (
    HistorySeries,
    LatestCheck,
    change_word,
    find_series_changes,
    load_history,
)
from benchrun.stats.changepoint import ChangePoint, ChangePoints

#: longest revision label on the figure's x axis (the table shows it whole)
TICK_LABEL = 24
#: most revisions labelled on the x axis (every k-th beyond; changes and outliers always)
MAX_TICKS = 40
#: colours: the estimates, a change point, an outlying campaign, a level
COLOURS = {"point": plots.SERIES[0], "change": "#d62728", "outlier": "#ff7f0e", "level": "#555555"}


@dataclass(frozen=True)
class SeriesView:
    """One series as the page shows it: the series and the change points found in it
    (None: not analysed), its figure (None without figures), the table of its campaigns,
    the table of its changes and the sentence on the analysis."""

    series: HistorySeries
    result: ChangePoints | None
    title: str
    plot: plots.Plot | None
    points: Table
    changes: Table | None
    summary: str


def series_title(s: HistorySeries) -> str:
    """``"a of hist on Intel Xeon, 2 CPUs, SMT off"``."""
    return f"{s.workload} of {s.experiment} on {s.machine}"


def unit_of(s: HistorySeries) -> DisplayUnit:
    """The one unit a series is shown in, chosen from its median estimate."""
    return display_unit(s.unit, float(np.median([p.mean for p in s.points])))


def change_text(s: HistorySeries, c: ChangePoint) -> str:
    """``"r18: 1.0497x [1.0421, 1.0574] slower"``: where a new level starts, the ratio
    new/old with its CI and what it means for the metric."""
    return (
        f"{s.points[c.index].label}: {c.ratio:.4f}x [{c.ratio_low:.4f}, {c.ratio_high:.4f}] "
        f"{change_word(c.ratio, s.direction)}"
    )


def summary_line(s: HistorySeries, r: ChangePoints | None) -> str:
    """What the analysis of the series found, in one sentence (as the text output says it)."""
    head = f"{len(s.points)} campaigns in {s.ordered_by}"
    if r is None:
        return f"{head}; not analysed: change points need 3 or more campaigns, each with a CI."
    tau = f"tau {100 * r.tau:.2g} % ({'estimated' if r.tau_estimated else 'given'})"
    found = (
        "no change found"
        if not r.changes
        else f"{len(r.changes)} change{'s' if len(r.changes) > 1 else ''} found"
    )
    outliers = f", {len(r.outliers)} outlying campaign(s) set aside" if r.outliers else ""
    return f"{head}; {found}{outliers} (alpha {r.alpha:g} over this history; {tau})."


def _ticks(s: HistorySeries, r: ChangePoints | None) -> list[int]:
    n = len(s.points)
    step = max(1, math.ceil(n / MAX_TICKS))
    marked = set(r.indices) | set(r.outliers) if r is not None else set()
    return sorted({*range(0, n, step), n - 1, *marked})


def _drawn(text: str) -> str:
    """A name as a figure shows it: escaped as every output escapes it (runner/format.py
    ``printable``: a glyph-less control character would vanish), and ``$`` kept literal
    (matplotlib reads text between two ``$`` as mathematics)."""
    return printable(text).replace("$", r"\$")


def _short(label: str) -> str:
    label = printable(label)
    return _drawn(label if len(label) <= TICK_LABEL else label[: TICK_LABEL - 1] + "…")


def _tick_labels(s: HistorySeries, ticks: list[int]) -> list[str]:
    """Each labelled revision's label, with its date where the date differs from the
    label before it (the first has it); only the labels when every campaign has one
    date (the axis title says it)."""
    if len({p.date for p in s.points}) == 1:
        return [_short(s.points[i].label) for i in ticks]
    out, last = [], None
    for i in ticks:
        p = s.points[i]
        out.append(_short(p.label) + (f"  {p.date}" if p.date != last else ""))
        last = p.date
    return out


def _x_title(s: HistorySeries) -> str:
    dates = {p.date for p in s.points}
    if len(dates) == 1:
        return f"revision ({s.ordered_by}; every campaign dated {dates.pop()})"
    return f"revision and date ({s.ordered_by})"


@plots._readable
def history_figure(s: HistorySeries, r: ChangePoints | None) -> plots.Plot:
    """One series over its revisions: each campaign's estimate with its CI as whiskers
    (dashed: an interval that is not certified, docs/methods.md §4.1), the levels between
    change points, a dashed vertical line before the first revision of each new level
    labelled with the ratio and its CI, outlying campaigns circled; revision labels and
    dates on the x axis."""
    pts = s.points
    du = unit_of(s)
    x = np.arange(len(pts))
    y = np.array([p.mean for p in pts]) / du.factor
    fig = Figure(figsize=(plots.WIDTH, 6.0), layout="constrained")
    ax = fig.subplots()
    colour = COLOURS["point"]
    kinds = {
        "certified": [i for i, p in enumerate(pts) if p.certified and p.ci_low is not None],
        "marked": [
            i
            for i, p in enumerate(pts)
            if not p.certified and p.ci_low is not None and p.ci_high is not None
        ],
    }
    ax.plot(x, y, "o", ms=5, color=colour, label="campaign estimate", zorder=3)
    for kind, idx in kinds.items():
        if not idx:
            continue
        lo = np.array([pts[i].ci_low for i in idx], float) / du.factor
        hi = np.array([pts[i].ci_high for i in idx], float) / du.factor
        err = ax.errorbar(
            x[idx], y[idx], yerr=[y[idx] - lo, hi - y[idx]], fmt="none", ecolor=colour, capsize=3
        )
        if kind == "marked":
            for part in err.lines[2]:
                part.set_linestyle(plots.UNCERTIFIED_LS)
            ax.plot([], [], color=colour, ls=plots.UNCERTIFIED_LS, label="interval not certified")
    if r is not None and r.changes:
        bounds = [0, *r.indices, len(pts)]
        levels = [r.changes[0].level_before, *(c.level_after for c in r.changes)]
        for j, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
            ax.hlines(levels[j] / du.factor, a - 0.4, b - 0.6, color=COLOURS["level"], lw=2,
                      alpha=0.7, label="level" if j == 0 else "_nolegend_")  # fmt: skip
        for j, c in enumerate(r.changes):
            ax.axvline(c.index - 0.5, color=COLOURS["change"], ls="--", lw=1.5,
                       label="change point" if j == 0 else "_nolegend_")  # fmt: skip
            right = c.index < 0.6 * len(pts)
            ax.annotate(
                _drawn(change_text(s, c)),
                xy=(c.index - 0.5, 0.97 - 0.08 * (j % 3)),
                xycoords=("data", "axes fraction"),
                xytext=(4 if right else -4, 0),
                textcoords="offset points",
                ha="left" if right else "right",
                va="top",
                color=COLOURS["change"],
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.85},
            )
    if r is not None and r.outliers:
        idx = list(r.outliers)
        ax.plot(x[idx], y[idx], "o", ms=13, mfc="none", mec=COLOURS["outlier"], mew=2,
                label="outlying campaign (not a level)", zorder=4)  # fmt: skip
    ticks = _ticks(s, r)
    ax.set_xticks(ticks, _tick_labels(s, ticks), rotation=90)
    ax.set_xlim(-0.7, len(pts) - 0.3)
    if r is not None and r.changes:
        lo_y, hi_y = ax.get_ylim()
        ax.set_ylim(lo_y, hi_y + 0.25 * (hi_y - lo_y))  # room for the labels above the data
    ax.set_xlabel(_x_title(s))
    ax.set_ylabel(_drawn(du.axis(f"estimate of {s.workload}")))
    # above the legend row: a long machine name cannot run into the legend
    fig.suptitle(_drawn(series_title(s)), x=0.01, ha="left")
    plots._legend_above(ax, ncols=4)
    return plots.Plot(
        f"history-{plots._slug(s.experiment)}-{plots._slug(s.workload)}-{plots._slug(s.machine)}",
        f"history of {series_title(s)}",
        plots._png(fig),
        _caption(s, r, du),
    )


def _caption(s: HistorySeries, r: ChangePoints | None, du: DisplayUnit) -> str:
    parts = [
        f"{series_title(s)}: each campaign's estimate (dot)"
        + (f" in {du.label}" if du.label else "")
        + f", one per revision in {s.ordered_by}, with its CI (whiskers; dashed: an interval "
        "not certified, too few readings to certify independence, docs/methods.md §4.1; "
        "none: no interval)."
    ]
    if r is not None and r.changes:
        parts.append(
            "Dashed red lines: change points, before the first revision of each new level, "
            f"labelled with the ratio new/old level and its {100 * r.confidence:g} % CI; grey "
            "lines: the levels (weighted geometric means). "
            + "; ".join(f"Change at {change_text(s, c)} (p {c.p_value:.2g})" for c in r.changes)
            + "."
        )
    if r is not None and r.outliers:
        parts.append(
            "Circled: outlying campaigns, set aside by the change-point search (one "
            "campaign is not a level): " + ", ".join(s.points[i].label for i in r.outliers) + "."
        )
    parts.append(summary_line(s, r))
    return " ".join(parts)


def _num(value: float | None, du: DisplayUnit) -> str:
    """A value of the series in its display unit, 6 significant digits (the JSON holds it
    in the base unit)."""
    return "-" if value is None or not math.isfinite(value) else f"{value / du.factor:.6g}"


def points_table(s: HistorySeries, r: ChangePoints | None) -> Table:
    """One row per campaign: revision, date, commit, campaign, estimate, CI, and its mark
    (the first revision of a new level, an outlying campaign)."""
    du = unit_of(s)
    unit = f" [{du.label}]" if du.label else ""
    starts = {c.index: c for c in r.changes} if r is not None else {}
    outliers = set(r.outliers) if r is not None else set()
    rows = []
    for i, p in enumerate(s.points):
        mark = ""
        if i in starts:
            c = starts[i]
            mark = f"new level: {c.ratio:.4f}x {change_word(c.ratio, s.direction)}"
        elif i in outliers:
            mark = "outlying campaign (not a level)"
        ci = "-" if p.ci_low is None else ("certified" if p.certified else "not certified")
        rows.append(
            (p.label, p.date, (p.revision.commit or "")[:12] if p.revision else "",
             str(p.campaign), _num(p.mean, du), _num(p.ci_low, du), _num(p.ci_high, du), ci,
             mark)
        )  # fmt: skip
    return Table(
        "Campaigns",
        ("revision", "date", "commit", "campaign", f"estimate{unit}", f"CI low{unit}",
         f"CI high{unit}", "CI", "mark"),
        rows,
        f"One row per finished campaign in {s.ordered_by}; the estimate and CI each campaign "
        "shows (benchrun show), 6 significant digits"
        + (f", in {du.label}" if du.label else "")
        + "; 'new level' marks the first revision after a change point.",
    )  # fmt: skip


def changes_table(s: HistorySeries, r: ChangePoints | None) -> Table | None:
    """One row per change point: where the new level starts, the ratio with its CI, the
    evidence and the two levels; None without a change."""
    if r is None or not r.changes:
        return None
    du = unit_of(s)
    unit = f" [{du.label}]" if du.label else ""
    rows = [
        (s.points[c.index].label, f"{c.ratio:.4f}", f"{c.ratio_low:.4f}", f"{c.ratio_high:.4f}",
         change_word(c.ratio, s.direction), f"{c.p_value:.2g}", f"{c.z:.3g}",
         str(c.n_before), str(c.n_after), _num(c.level_before, du), _num(c.level_after, du))
        for c in r.changes
    ]  # fmt: skip
    pct = f"{100 * r.confidence:g} %"
    return Table(
        "Change points",
        ("first revision of the new level", "ratio new/old", f"{pct} CI low", f"{pct} CI high",
         "meaning", "p", "z", "revisions before", "revisions after", f"level before{unit}",
         f"level after{unit}"),
        rows,
        f"stats/changepoint.py ({r.method}): the ratio of the weighted geometric means of the "
        f"two adjacent levels with its {pct} CI, the permutation p-value of the segment test "
        "that found it, and the step over its standard error (z, log scale).",
    )  # fmt: skip


def series_view(s: HistorySeries, r: ChangePoints | None, with_plot: bool = True) -> SeriesView:
    """The figure (when ``with_plot``) and tables of one series."""
    return SeriesView(
        series=s,
        result=r,
        title=series_title(s),
        plot=history_figure(s, r) if with_plot else None,
        points=points_table(s, r),
        changes=changes_table(s, r),
        summary=summary_line(s, r),
    )


def series_doc(
    s: HistorySeries, r: ChangePoints | None, gate: LatestCheck | None = None
) -> dict[str, object]:
    """One series as JSON (``benchrun history --json`` and the report's ``history``): its
    campaigns, the changes (each with the ``revision`` that starts the new level), the
    outlying campaigns and, with ``gate``, the check of the latest revision."""
    points = [
        {
            "revision": p.label,
            "commit": p.revision.commit if p.revision else None,
            "date": p.date,
            "store": p.store,
            "campaign": p.campaign,
            "mean": p.mean,
            "se": p.se,
            "ci_low": p.ci_low,
            "ci_high": p.ci_high,
            "certified": p.certified,
        }
        for p in s.points
    ]
    changes = [{"revision": s.points[c.index].label, **c.to_dict()} for c in r.changes] if r else []
    doc: dict[str, object] = {
        "experiment": s.experiment,
        "machine": s.machine,
        "workload": s.workload,
        "unit": s.unit,
        "direction": s.direction,
        "ordered_by": s.ordered_by,
        "points": points,
        "changes": changes,
        "analysed": r is not None,
    }
    if r is not None:
        doc.update(
            tau=r.tau,
            tau_estimated=r.tau_estimated,
            outliers=[s.points[i].label for i in r.outliers],
            alpha=r.alpha,
        )
    if gate is not None:
        doc["latest"] = dict(gate.__dict__)
    return doc


def history_of(database: Path, experiment: str) -> list[SeriesView]:
    """The report's History section: the series of ``experiment`` in the store
    ``database`` (every workload on every machine, change points found with the defaults
    of ``benchrun history``), without figures; empty unless its finished campaigns
    measured two or more revisions (``--revision`` or git, docs/history.md)."""
    from benchrun.runner.machine.facts import MachineFacts
    from benchrun.runner.results.campaigns import DONE
    from benchrun.runner.store.database import Store

    if not database.is_file():
        return []
    with Store.open(database) as store, store.snapshot():
        labels = {
            rev.label
            for c in store.campaigns()
            if c.status == DONE and c.name == experiment
            for rev in [MachineFacts.from_stored(c.metadata).stored.revision]
            if rev is not None
        }
    if len(labels) < 2:
        return []
    return [
        series_view(s, find_series_changes(s), with_plot=False)
        for s in load_history([database])
        if s.experiment == experiment
    ]
