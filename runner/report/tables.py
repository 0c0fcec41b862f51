"""The report's tables as plain strings (headers, rows), shared by HTML and Markdown.

Every value of a workload is shown in its one display unit (``WorkloadView.display``,
chosen from its mean: "37.59 ms ± 1.991 ms", never seconds in one cell and milliseconds
in the next); the estimate reads as every output prints it
(runner/format.py ``estimate_text``); p-values have three significant digits;
ratios are unitless.
"""

from __future__ import annotations

import math
import shlex
from typing import Any

from benchrun.runner.format import display_unit, format_number, format_percent
from benchrun.runner.report.analysis import Group, Row, Suite
from benchrun.runner.report.document import Report
from benchrun.runner.report.model import CampaignModel, Estimate, WorkloadView
from benchrun.runner.report.table import Table
from benchrun.runner.report.verdicts import StoredComparison, StoredVerdicts
from benchrun.runner.results.workloads import drift_from, node_line
from benchrun.stats.speedup import ShareResult

#: the row of the subsession choice, in every table that shows one (``run``, ``show``,
#: the report, ``analyze``): q readings per subsession × n_q subsession means
SUBSESSIONS = "subsession size q × means n_q"


def ratio_text(r: float | None, lo: float | None, hi: float | None) -> str:
    if r is None:
        return "-"
    if r == 1.0 and lo == 1.0 and hi == 1.0:
        return "1 (best)"
    if lo is None or hi is None:
        return f"{r:.4g}"
    return f"{r:.4g} [{lo:.4g}, {hi:.4g}]"


#: after a relative width or a ratio interval that is not certified (docs/methods.md §4.1)
NOT_CERTIFIED = "not certified"


def _estimate_cell(r: Row) -> str:
    """The estimate as every output prints it (``Row.text``: the CI, the uncertified
    interval with its mark, or "no CI" only without any interval), and the note of a
    workload whose CI was not required (compared paired)."""
    if r.note is None:
        return r.text
    if r.interval_low is None or r.interval_high is None:
        return f"{display_unit(r.unit, r.mean).text(r.mean)} (no CI: {r.note})"
    return f"{r.text} ({r.note})"


def _width_cell(r: Row) -> str:
    """The relative half-width of the interval shown, marked when it is not certified."""
    if r.certified or r.interval_rel_half_width is None:
        return format_percent(r.rel_half_width)
    return f"{format_percent(r.interval_rel_half_width)} ({NOT_CERTIFIED})"


def _ratio_cell(r: Row) -> str:
    """The ratio to the best with its CI, or with the uncertified interval of
    :func:`runner.report.analysis.uncertified_ratio`, marked."""
    if r.ratio_certified or r.ratio_interval_low is None or r.ratio_interval_high is None:
        return ratio_text(r.ratio, r.ratio_low, r.ratio_high)
    text = ratio_text(r.ratio, r.ratio_interval_low, r.ratio_interval_high)
    return f"{text} ({NOT_CERTIFIED})"


def baseline_cell(c: StoredComparison | None) -> str:
    """A workload's comparison with its baseline in one cell: the verdict, then the ratio
    headline ("slower: w is 1.046x [1.038, 1.054] slower than stored baseline (Welch)")."""
    return "-" if c is None else f"{c.verdict}: {c.headline}"


def headline(group: Group, confidence: float) -> Table:
    pc = f"{100 * confidence:g} %"
    base = bool(group.baselines)
    rows = [
        (
            str(r.rank) if r.rank else "-",
            r.name,
            _estimate_cell(r),
            r.display or "-",
            _width_cell(r),
            _ratio_cell(r) if group.compared else "-",
            r.verdict_next or "",
            *((baseline_cell(group.baselines.get(r.name)),) if base else ()),
        )
        for r in group.rows
    ]
    rows += [
        (
            "-",
            name,
            why,
            group.unit or "-",
            "-",
            "-",
            "",
            *((baseline_cell(group.baselines.get(name)),) if base else ()),
        )
        for name, why in group.excluded
    ]
    if not group.compared:
        caption = (
            "The experiment's compare: compares these workloads with nothing: each has its "
            "own estimate and CI (Student t over subsession means, docs/methods.md §3-4), no rank, "
            "ratio or verdict."
        )
    else:
        who = (
            "the stopping controller's verdict"
            if group.computed is None
            else "the verdict of the stopping controller's tests at one look over every "
            "stored round (a fixed campaign)"
        )
        how = (
            f"{who}; the ratio to the best is the controller's "
            "where it compared the two (paired: exp of the mean per-pass log ratio and its "
            "CI, docs/methods.md §13), else the delta method"
            if group.source == "controller"
            else "CIs disjoint, Holm-corrected Welch, or TOST; the ratio to the best has a "
            "delta-method CI"
        )
        caption = (
            "Best first. The CI is Student t over subsession means (docs/methods.md §3-4); the "
            f"verdict compares each workload with the next one down ({how})."
        )
        if any(r.note for r in group.rows):
            caption += (
                ' "not required: compared paired": every comparison of the workload is '
                "paired, so the stopping rule bounded their ratio CIs instead of its own CI."
            )
    if any(not r.certified and r.interval_low is not None for r in group.rows):
        caption += (
            ' "independence not certified: assumes tau <= T, Fx the i.i.d. width" after an '
            "estimate: too few readings to certify that the subsession means are independent, so the interval "
            "is the t interval that assumes the integrated autocorrelation time is at most T "
            "readings, F times as wide as if the readings were independent (docs/methods.md "
            "§4.1); its relative width and the ratio intervals built on it are marked "
            f'"{NOT_CERTIFIED}".'
        )
    caption += " Unit: the one each workload is shown in, chosen from its mean."
    if base:
        caption += (
            " vs baseline: the workload's verdict against its baseline and the ratio "
            "workload/baseline with its CI (the comparisons)."
        )
    return Table(
        f"{group.heading} ({group.direction.replace('_', ' ')})",
        (
            "rank",
            "workload",
            f"mean ± {pc} CI",
            "unit",
            "CI ±/mean",
            f"vs best [{pc} CI]",
            "verdict with next",
            *(("vs baseline",) if base else ()),
        ),
        rows,
        caption,
    )


def stored_comparisons(verdicts: StoredVerdicts, confidence: float) -> Table:
    """The campaign's comparisons, each led by its ratio headline (one row per pair and
    baseline comparison, baselines first, as :func:`runner.ui.display.verdicts_table`): the
    stopping controller's stored verdicts, or a fixed campaign's computed when read."""
    pc = f"{100 * (verdicts.confidence or confidence):g} %"
    rows = []
    for c in (*verdicts.baselines, *verdicts.pairs):
        note = "; ".join(c.notes)
        if c.verdict == "undecided" and c.rounds_needed:
            note = f"~{c.rounds_needed} more rounds"
        if c.verdict == "equivalent" and verdicts.margin is not None:
            note = f"within {100 * verdicts.margin:g} %"
        if c.independent_p is not None:
            note = "; ".join(x for x in (note, f"Welch p {format_number(c.independent_p)}") if x)
        at = "-" if c.look is None else f"look {c.look}, alpha {format_number(c.alpha)}"
        kind = "baseline" if c.kind == "baseline" else "pair"
        rows.append(
            (
                c.headline,
                kind,
                c.verdict,
                c.test_name,
                format_number(c.p),
                format_number(c.p_holm),
                format_number(c.tost_p),
                at,
                note,
            )
        )
    margin = "" if verdicts.margin is None else f" within ±{100 * verdicts.margin:g} %"
    title = (
        "comparisons (the stopping controller's verdicts)"
        if verdicts.computed is None
        else "comparisons (the stopping controller's tests at one look, a fixed campaign)"
    )
    return Table(
        title,
        (
            f"ratio [{pc} CI]",
            "kind",
            "verdict",
            "test",
            "p",
            "Holm p",
            "TOST p",
            "decided at",
            "note",
        ),
        rows,
        "The ratio is b/a (a workload against its baseline: workload/baseline) with its CI, "
        "turned round when below 1 so the factor is >= 1. Test: paired = the two workloads "
        "ran in the same passes, compared pass by pass on the log ratio of their rounds "
        "(one-sample t on subsession means of the log ratios; ratio and CI are exp of the "
        "mean log ratio and its CI, docs/methods.md §13); Welch = Welch's t-test on each "
        "workload's own subsession means (§7). p: that test's p at the latest look; Holm p: "
        f"Holm-adjusted over the pairs of a group (or the baselines) tested at the look; TOST p: equivalence{margin}. A "
        "verdict is declared only at a look, at that look's share of alpha (§10). Note: "
        "Welch p = Welch's test on the two own series, shown beside a paired verdict.",
    )


def pairs(group: Group) -> Table:
    rows = [
        (
            p.a,
            p.b,
            p.verdict,
            format_percent(_finite(p.relative_difference), signed=True),
            _number(p.welch_p),
            _number(p.welch_p_holm),
            _number(p.tost_p),
            _number(p.effect_size),
            str(p.required_n) if p.required_n else "",
        )
        for p in group.pairs
    ]
    return Table(
        f"neighbour verdicts: {group.heading}",
        (
            "better",
            "next",
            "verdict",
            "difference",
            "Welch p",
            "Holm p",
            "TOST p",
            "Cohen's d",
            "n needed",
        ),
        rows,
        "Welch's t-test on subsession means (two-sided), Holm-adjusted over the adjacent "
        "pairs; TOST p for equivalence within the margin; Cohen's d = difference / pooled SD of "
        "subsession means; n needed: subsession means per side for power 0.8 (undecided only).",
    )


def _rel_width(e: Estimate | None) -> str:
    """The relative half-width of the interval shown, marked when it is not certified."""
    if e is None:
        return "-"
    if e.uncertified:
        return f"{format_percent(e.interval_rel_half_width)} ({NOT_CERTIFIED})"
    return format_percent(e.rel_half_width)


def workload_stats(w: WorkloadView) -> Table:
    s = w.description
    e = w.estimate
    du = w.display

    def val(v: Any) -> str:
        return du.text(v)

    rows = [
        (
            "rounds (stored / steady / warm-up / failed)",
            f"{w.rounds} / {w.steady_rounds} / {w.warmup_rounds} / {w.failed_rounds}",
        ),
        ("readings analysed", str(e.n if e else 0)),
        ("warm-up readings discarded", str(e.warmup_readings if e else 0)),
        ("mean ± CI", e.interval_text(du) if e else "-"),
        (SUBSESSIONS, f"{e.q} × {e.n_q}" if e and e.q else "-"),
        ("relative CI half-width", _rel_width(e)),
        ("integrated autocorrelation time", format_number(e.tau) if e else "-"),
        (
            "median [CI] (per-round values)",
            f"{val(s.median)} [{val(s.median_ci_low)}, {val(s.median_ci_high)}]",
        ),
        ("std / CoV (per-round values)", f"{val(s.std)} / {format_percent(s.cov)}"),
        ("min / Q1 / Q3 / max", " / ".join(val(v) for v in (s.min, s.q1, s.q3, s.max))),
        ("p90 / p99", f"{val(s.p90)} / {val(s.p99)}"),
        ("Tukey outliers among the steady readings (kept)", str(w.outliers)),
        ("Shapiro-Wilk p (subsession means)", format_number((w.normality or {}).get("p_value"))),
    ]
    if w.drift is not None:
        d = drift_from(w.drift)
        drifted = d is not None and d.drifted
        text = str(w.drift.get("text")) if drifted else "no drift detected"
        vn, p = (d.von_neumann, d.p_value) if d is not None else (None, None)
        if not drifted and vn is not None and p is not None:
            text += f" (von Neumann ratio {vn:.2f}, p {p:.2g})"
        rows.append(("drift of the steady rounds (stats/drift.py)", str(text)))
    if e is not None and e.nodes:
        rows.append(("nodes (docs/methods.md §14)", str(node_line(w.name, w.collected, du))))
    if w.direction == "higher_is_better":
        rows.append(("harmonic mean (rate)", val(w.harmonic_mean)))
    if w.status != "active":
        rows.append(("status", f"{w.status}: {w.status_reason or ''}"))
    if w.last_failure:
        rows.append(("last failure", w.last_failure))
    if e is not None and e.notes:
        rows.append(("notes", "; ".join(e.notes)))
    return Table(
        f"statistics of {w.name}",
        ("statistic", "value"),
        rows,
        "Median, quartiles and percentiles are over per-round values (docs/methods.md §1); "
        f"values in {du.label or 'the workload’s unit'}, chosen from the mean. q × n_q: "
        "n_q subsession means of q readings each.",
    )


def _finite(value: float | None) -> float | None:
    """``value``, or None when it is NaN or infinite (as the JSON form has it)."""
    return value if value is not None and math.isfinite(value) else None


def _number(value: float | None) -> str:
    """:func:`format_number` of a statistic, ``-`` when it is missing, NaN or infinite."""
    return format_number(_finite(value))


def suite_tables(suite: Suite) -> list[Table]:
    out: list[Table] = []
    for cmp in suite.comparisons:
        a, b = cmp.a, cmp.b
        h, rs, sp, gm = cmp.hpt, cmp.r_speedup, cmp.speedup_test, cmp.gmean_ratio
        if h:
            out.append(
                Table(
                    f"HPT: {a} vs {b}",
                    (
                        "benchmark",
                        f"median {a}",
                        f"median {b}",
                        "rank-sum p",
                        "winner",
                        "d",
                        "rank",
                    ),
                    [
                        (
                            r.benchmark,
                            display_unit(suite.unit, r.median_a).text(r.median_a),
                            display_unit(suite.unit, r.median_a).text(r.median_b),
                            _number(r.p_value),
                            r.winner,
                            _number(r.d),
                            _number(r.rank),
                        )
                        for r in h.benchmarks
                    ],
                    f"Hierarchical Performance Testing (docs/methods.md §8): confidence that {a} "
                    f"outperforms {b} = {_number(h.confidence)} ({h.verdict}); "
                    + (
                        f"r-speedup at r = 0.95: {_number(rs.gamma)}, geometric-mean speedup "
                        f"{_number(rs.gmean_speedup)} held with confidence "
                        f"{_number(rs.gmean_confidence)}."
                        if rs
                        else ""
                    ),
                )
            )
        if sp:
            out.append(
                Table(
                    f"Speedup-Test: {b} (initial) -> {a}",
                    (
                        "benchmark",
                        "speedup of means",
                        "mean verdict",
                        "speedup of medians",
                        "median verdict",
                    ),
                    [
                        (
                            n,
                            _number(r.speedup_mean),
                            str(r.mean_verdict),
                            _number(r.speedup_median),
                            str(r.median_verdict),
                        )
                        for n, r in zip(sp.names, sp.results, strict=True)
                    ],
                    f"Touati's Speedup-Test (docs/methods.md §6.2) at alpha {sp.alpha:g}: overall "
                    f"speedup of means {_number(sp.overall_speedup_mean)}, of medians "
                    f"{_number(sp.overall_speedup_median)}; share of benchmarks with a significant "
                    f"speedup of the mean {_share(sp.share_mean)}.",
                )
            )
        if gm:
            out.append(
                Table(
                    f"ratio of geometric means: {a} / {b}",
                    ("estimate", "low", "high", "confidence", "method"),
                    [
                        (
                            _number(gm.estimate),
                            _number(gm.low),
                            _number(gm.high),
                            f"{100 * gm.confidence:g} %",
                            gm.method,
                        )
                    ],
                    "Hierarchical bootstrap resampling runs within each benchmark (docs/methods.md §9); "
                    "unitless; below 1 means smaller values for " + a + ".",
                )
            )
    return out


def _share(s: ShareResult) -> str:
    return f"{s.a}/{s.b} [{_number(s.ci_low)}, {_number(s.ci_high)}]"


def machine(report: Report) -> Table:
    return Table(
        "machine",
        ("section", "fact", "value"),
        [(s, k, v) for s, k, v in report.machine],
        "Recorded once when the campaign started (docs/methods.md §11).",
    )


def compute_nodes(report: Report) -> Table | None:
    """The compute nodes a Slurm campaign's rounds ran on, each with the facts compared
    between nodes (runner/machine/nodes.py), and which of them differ; None for a
    campaign measured on this machine only."""
    from benchrun.runner.machine.nodes import COMPARED_FACTS, node_differences, node_rows

    if not report.node_records:
        return None
    differ = node_differences(report.node_records)
    if differ:
        caption = (
            "FLAGGED: these nodes differ ("
            + "; ".join(differ)
            + "): rounds from them differ for reasons of their own, so they are not one "
            "level of a comparison (docs/slurm.md, Node metadata)."
        )
    elif len(report.node_records) > 1:
        caption = "The nodes agree on every compared fact."
    else:
        caption = "Collected on the node by benchrun's agent (docs/slurm.md, Node metadata)."
    return Table(
        "compute nodes",
        ("node", *(f.label for f in COMPARED_FACTS)),
        node_rows(report.node_records),
        caption,
    )


def warnings(report: Report) -> Table:
    rows = [(w["setting"], w["found"], w["why"], w["fix_command"]) for w in report.warnings]
    rows += [(s, "not checked", r, "") for s, r in report.unchecked]
    return Table(
        "noise warnings",
        ("setting", "found", "why it matters", "fix"),
        rows,
        "The checks of `benchrun system` applied to the stored record.",
    )


def rules(report: Report) -> Table:
    return Table(
        "rules",
        ("rule", "status", "this campaign"),
        [(f"{r.number}. {r.rule}", r.status, r.detail) for r in report.rules],
        "T. Hoefler, R. Belli, Scientific Benchmarking of Parallel Computing Systems, SC 2015.",
    )


def metrics(model: CampaignModel) -> Table | None:
    """Every metric of each workload's ``metric:`` list side by side: median, mean and CoV
    over the analysed rounds, the source that measured it and its scope
    (runner/results/metrics.py); None when no workload has a list or a counter metric."""
    if not model.metrics:
        return None
    rows = []
    for m in model.metrics:
        du = display_unit(m.unit, m.median)
        rows.append(
            (
                m.workload,
                m.metric + (" *" if m.deciding else ""),
                du.text(m.median),
                du.text(m.mean),
                format_percent(m.cov, digits=2),
                str(m.n),
                m.source,
                m.scope,
            )
        )
    return Table(
        "metrics",
        ("workload", "metric", "median", "mean", "CoV", "rounds", "source", "scope"),
        rows,
        "Every metric of each workload's metric: list, measured in the same rounds "
        "(the analysed ones); * the metric that decides (estimates and comparisons). "
        "docs/metrics.md says what each source counts.",
    )


def commands(model: CampaignModel) -> Table | None:
    """What each workload ran (its stored command line, shell-quoted); None when no
    workload has a stored command (an imported campaign)."""
    rows = []
    for w in model.workloads:
        cmd = w.command
        if cmd is None:
            continue
        rows.append((w.name, cmd if isinstance(cmd, str) else shlex.join(str(a) for a in cmd)))
    if not rows:
        return None
    caption = "As run, with the matrix values filled in."
    if any("{work}" in cmd for _, cmd in rows):
        caption += " {work} is the work amount per round (chosen by calibration or fixed)."
    return Table("commands", ("workload", "command line"), rows, caption)
