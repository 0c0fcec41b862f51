"""One report, assembled once and rendered by every format (HTML, Markdown, JSON, CSV).

:func:`build_report` runs the analysis (runner/report/analysis.py), writes the methods
paragraph and the rules checklist (runner/report/methods.py) and, when asked, draws the
figures (runner/report/plots.py). The renderers only lay this object out, so every format
says the same thing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import multiprocessing as mp
import os
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

from benchrun.runner.machine.describe import describe_machine
from benchrun.runner.machine.facts import MachineFacts
from benchrun.runner.machine.nodes import node_differences
from benchrun.runner.machine.noise import unknown_noise_settings
from benchrun.runner.report import plots
from benchrun.runner.report.analysis import (
    Group,
    Suite,
    analyse_suite,
    certified,
    find_suite,
    rank_groups,
)
from benchrun.runner.report.fleet import Fleet, find_fleet, node_records
from benchrun.runner.report.history import SeriesView, history_figure, history_of, series_doc
from benchrun.runner.report.methods import (
    METHODS_REFERENCES,
    RuleStatus,
    machine_warnings,
    methods_paragraph,
    rules_checklist,
)
from benchrun.runner.report.model import CampaignModel, WorkloadView, display_dict
from benchrun.runner.report.panels import display_of
from benchrun.runner.report.verdicts import StoredComparison, drift_line, is_paired

#: section ids, in order: every format has each of them (tests check the HTML for them)
SECTIONS: tuple[tuple[str, str], ...] = (
    ("headline", "Headline"),
    ("workloads", "Per workload"),
    ("comparisons", "Comparisons"),
    ("machine", "The machine"),
    ("methods", "Methods"),
    ("rules", "Hoefler & Belli's twelve rules"),
)
#: the same sections when the campaign has comparisons (the stopping controller's stored
#: verdicts, or a fixed campaign's computed when read): they come first, each with its
#: ratio headline
SECTIONS_COMPARISONS_FIRST: tuple[tuple[str, str], ...] = (
    SECTIONS[2],
    SECTIONS[0],
    SECTIONS[1],
    *SECTIONS[3:],
)
#: the section of a fleet (docs/slurm.md, Fleet): first, since it is what a fleet asks
FLEET_SECTION = ("fleet", "Fleet: the hardware comparison")
#: the section of a store whose campaigns measured several revisions (docs/history.md):
#: before the machine
HISTORY_SECTION = ("history", "History")


def comparison_line(c: StoredComparison) -> str:
    """One comparison's verdict in a sentence, as the report leads with it:
    ``"slower: w is 1.046x [1.038, 1.054] slower than stored baseline (Welch)"`` (a
    baseline comparison) or ``"separated: b is 1.100x [...] slower than a (paired, 34
    passes)"`` (a pair): the verdict, then the ratio headline every output prints."""
    return f"{c.verdict}: {c.headline}"


def no_comparison_reason(model: CampaignModel, groups: list[Group]) -> str:
    """Why no two workloads of ``model`` are compared, precisely: each compared group has
    one workload, or its workloads lack the data a comparison needs (which, and why), or
    an adaptive campaign did not reach its end."""
    compared = [g for g in groups if g.compared]
    several = [g for g in compared if len(g.members) >= 2]
    if model.adaptive and model.verdicts is None and several:
        return (
            "No comparison yet: the campaign did not reach the end of its stopping rule "
            f"(status {model.campaign.status}); `benchrun run FILE --resume` continues it."
        )
    if not several:
        if not compared:
            return (
                "No comparison: the experiment's compare: compares no two workloads, and "
                "there is no baseline."
            )
        labels = ", ".join(f"{g.label}: {', '.join(g.members)}" for g in compared)
        return (
            "No comparison: every group of workloads compared with each other (one metric "
            f"and unit, or a compare: group) has one workload ({labels}), and there is no "
            "baseline."
        )
    parts = []
    for g in several:
        why = "; ".join(f"{n}: {r}" for n, r in g.excluded) or "no pair could be tested"
        parts.append(f"{g.label} ({why})")
    return "No pair could be compared: " + "; ".join(parts) + "."


def workload_notes(model: CampaignModel, view: WorkloadView) -> list[str]:
    """What a reader of ``view``'s numbers must know, in sentences.

    - Drift: the drift line of ``benchrun run`` when the steady rounds drifted
      (stats/drift.py: von Neumann ratio, block levels).
    - Contended: how many of its rounds waited for a CPU past ``contended_threshold`` and
      what the analysis did with them (docs/contention.md).
    - Paired: when every comparison of the workload is paired and its own CI is not
      certified (none, or wider than ``ci_rel_width``): its mean describes the period
      measured and its CI was not required, since the stopping rule bounded the ratio CI
      of each paired comparison instead (docs/methods.md §13, docs/controller.md).
    """
    out: list[str] = []
    paired = is_paired(view.name, model.verdicts, model.experiment, model.settings)
    line = drift_line(view.name, view.drift, paired)
    if line is not None:
        out.append(line)
    if view.contended_rounds:  # docs/contention.md
        policy = str(model.settings.contended or "exclude")
        threshold = float(model.settings.contended_threshold)
        done = (
            "analysed all the same (contended: keep)"
            if policy == "keep"
            else f"left out of the analysis (contended: {policy})"
        )
        out.append(
            f"contended: {view.name}: {view.contended_rounds} rounds waited for a CPU longer "
            f"than {100 * threshold:.3g} % of their wall time (another process shared its "
            f"CPUs); {done}."
        )
    stopped_by_rule = model.verdicts is not None and model.verdicts.computed is None
    if stopped_by_rule and model.verdicts is not None and model.verdicts.all_paired(view.name):
        if not certified(view, model):
            e = view.estimate
            target = model.settings.ci_rel_width
            if e is not None and e.uncertified and e.interval_note:
                why = f"its own interval is not certified ({e.interval_note})"
            elif e is None or e.ci_low is None or e.rel_half_width is None:
                why = "it has no CI of its own (not enough data for one)"
            else:
                why = f"its own CI (±{100 * e.rel_half_width:.3g} %) is wider than the target"
                if target is not None:
                    why += f" {100 * float(target):g} %"
            out.append(
                f"{view.name}: its comparisons are paired and {why}: its mean describes the "
                "period measured, and its CI was not required; the ratio CI of each paired "
                "comparison is what the stopping rule bounded."
            )
    return out


@dataclass
class Report:
    """Everything a report shows (module docstring); figures only when drawn."""

    model: CampaignModel
    groups: list[Group]
    suite: Suite | None
    methods: str
    rules: list[RuleStatus]
    warnings: list[dict[str, str]]
    unchecked: list[tuple[str, str]]
    machine: list[tuple[str, str, str]]
    #: each compute node's metadata record (a Slurm campaign's ``node-metadata`` events)
    node_records: dict[str, Mapping[str, object]] = field(default_factory=dict)
    workload_plots: dict[str, plots.Plot] = field(default_factory=dict)
    ranking_plots: list[plots.Plot] = field(default_factory=list)
    quantile_plots: list[plots.Plot] = field(default_factory=list)
    #: the steady readings of the workloads of each comparison group overlaid (best first)
    distribution_plots: list[plots.Plot] = field(default_factory=list)
    biplot: plots.Plot | None = None
    #: per workload: :func:`workload_notes`
    notes: dict[str, list[str]] = field(default_factory=dict)
    #: a fleet's node types compared (runner/report/fleet.py); None for other campaigns
    fleet: Fleet | None = None
    #: the experiment's series over the revisions its campaigns in this store measured
    #: (runner/report/history.py :func:`history_of`); empty with fewer than two revisions
    history: list[SeriesView] = field(default_factory=list)

    @property
    def hardware_suite(self) -> Suite | None:
        """The suite across a fleet's node types (HPT, Speedup-Test: the hardware
        comparison, shown in the Fleet section rather than under the comparisons)."""
        if self.fleet is not None and self.suite is not None and self.suite.factor == "node_type":
            return self.suite
        return None

    @property
    def sections(self) -> tuple[tuple[str, str], ...]:
        """(id, title) of the sections in the order every format shows them: the
        comparisons first when the campaign has any (:attr:`CampaignModel.verdicts`)."""
        base = SECTIONS_COMPARISONS_FIRST if self.model.verdicts is not None else SECTIONS
        if self.history:
            at = [sid for sid, _ in base].index("machine")
            base = (*base[:at], HISTORY_SECTION, *base[at:])
        return base if self.fleet is None else (FLEET_SECTION, *base)

    @property
    def headlines(self) -> list[str]:
        """The verdict of every comparison in one sentence each, baselines first: the
        first lines of every format (:func:`comparison_line`)."""
        v = self.model.verdicts
        if v is None:
            return []
        return [comparison_line(c) for c in (*v.baselines, *v.pairs)]

    def no_comparison(self) -> str | None:
        """Why the comparisons section has no comparison (None when it has one)."""
        v = self.model.verdicts
        if v is not None and v.comparisons:
            return None
        if any(g.pairs for g in self.groups):
            return None
        return no_comparison_reason(self.model, self.groups)

    @property
    def title(self) -> str:
        c = self.model.campaign
        return f"benchrun report: {c.name} (campaign {c.id})"

    @property
    def generated(self) -> str:
        return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    @property
    def stop_text(self) -> str:
        c = self.model.campaign
        return f"{c.status}: {c.stop_reason}" if c.stop_reason else c.status

    def description(self) -> str | None:
        """The experiment's ``description:`` line, read from the stored config text."""
        import yaml

        try:
            doc = yaml.safe_load(self.model.campaign.config_text)
        except yaml.YAMLError:
            return None
        text = doc.get("description") if isinstance(doc, dict) else None
        return str(text).strip() if text else None

    def to_dict(self, raw: bool = False) -> dict[str, object]:
        """The JSON form (``benchrun report --format json``)."""
        c = self.model.campaign
        return {
            "format": "benchrun-report",
            "version": 1,
            "campaign": {
                "id": c.id,
                "name": c.name,
                "database": str(self.model.database),
                "status": c.status,
                "stop_reason": c.stop_reason,
                "created_at": c.created_at,
                "updated_at": c.updated_at,
                "benchrun_version": c.benchrun_version,
                "adaptive": self.model.adaptive,
                "settings": c.settings,
                "description": self.description(),
            },
            "confidence": self.model.confidence,
            "sections": [sid for sid, _ in self.sections],
            "headlines": self.headlines,
            "comparisons": None if self.model.verdicts is None else self.model.verdicts.to_dict(),
            "no_comparison": self.no_comparison(),
            # every metric of each workload's metric: list, with its source (docs/metrics.md)
            "metrics": [dataclasses.asdict(m) for m in self.model.metrics],
            "headline": [
                {
                    "group": g.key,
                    "label": g.label,
                    "compared": g.compared,
                    "unit": g.unit,
                    "direction": g.direction,
                    "verdict_source": g.source,
                    "rows": [
                        {
                            **{k: v for k, v in r.__dict__.items() if k != "display"},
                            "display_unit": display_dict(self.model.view(r.name).display),
                        }
                        for r in g.rows
                    ],
                    "pairs": [p.to_dict() for p in g.pairs],
                    "excluded": [{"name": n, "reason": why} for n, why in g.excluded],
                    "quantile_regression": [q.to_dict() for q in g.quantiles],
                    "notes": g.notes,
                }
                for g in self.groups
            ],
            "workloads": [
                {**w.to_dict(raw), "notes": self.notes.get(w.name, [])}
                for w in self.model.workloads
            ],
            "suite": None
            if self.suite is None
            else {
                "factor": self.suite.factor,
                "systems": self.suite.systems,
                "benchmarks": self.suite.benchmarks,
                "comparisons": [c.to_dict() for c in self.suite.comparisons],
                "biplot": None if self.suite.biplot is None else self.suite.biplot.to_dict(),
                "notes": self.suite.notes,
            },
            "fleet": None
            if self.fleet is None
            else {
                **self.fleet.to_dict(),
                # HPT, r-speedup, Speedup-Test across the node types: the suite's comparisons
                "hardware_comparison": None
                if self.hardware_suite is None
                else [c.to_dict() for c in self.hardware_suite.comparisons],
            },
            "machine": {
                "record": c.metadata,
                "rows": [{"section": s, "label": k, "text": v} for s, k, v in self.machine],
                # the Slurm nodes' records (node-metadata events) and what differs between them
                "nodes": self.node_records,
                "node_differences": node_differences(self.node_records),
                "noise_warnings": self.warnings,
                "not_checked": [{"setting": s, "reason": r} for s, r in self.unchecked],
            },
            "history": [series_doc(v.series, v.result) for v in self.history] or None,
            "methods": self.methods,
            "references": list(METHODS_REFERENCES),
            "rules": [r.to_dict() for r in self.rules],
        }


def build_report(
    model: CampaignModel,
    *,
    with_plots: bool = True,
    system_factor: str | None = None,
    resamples: int = 10_000,
) -> Report:
    """Analyse ``model`` and (``with_plots``) draw the figures (module docstring)."""
    groups = rank_groups(model, quantreg=True)
    suite = find_suite(model, system_factor)
    if suite is not None:
        analyse_suite(suite, model.confidence, resamples)
    record = MachineFacts.from_stored(model.campaign.metadata)
    stored = record.stored.present
    fleet = find_fleet(model)
    if fleet is not None and suite is None:
        fleet.notes.append(
            "HPT, r-speedup and the Speedup-Test compare node types across a suite: they "
            f"need at least 2 benchmarks measured on every node type (this fleet has "
            f"{len(fleet.benchmarks)}); each benchmark's verdict is above."
        )
    report = Report(
        model=model,
        groups=groups,
        suite=suite,
        methods=methods_paragraph(model, groups, suite),
        rules=rules_checklist(model, groups, suite),
        warnings=machine_warnings(record),
        unchecked=unknown_noise_settings(record) if stored else [],
        machine=describe_machine(record) if stored else [],
        node_records=node_records(model),
        notes={w.name: workload_notes(model, w) for w in model.workloads},
        fleet=fleet,
        history=history_of(model.database, model.campaign.name),
    )
    if with_plots:
        draw(report)
    return report


#: from this many figures on, they are drawn in worker processes
PARALLEL_FROM = 4

Task = tuple[Callable[..., Any], tuple[Any, ...]]


def _call(task: Task) -> Any:
    fn, args = task
    return fn(*args)


def _draw_all(tasks: list[Task]) -> list[Any]:
    """Run the figure tasks, in order; in parallel processes (fork, one per CPU) when there
    are many, since each figure takes up to a second of matplotlib text layout."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    workers = min(len(tasks), cpus or 1)
    if len(tasks) >= PARALLEL_FROM and workers > 1 and "fork" in mp.get_all_start_methods():
        try:
            with ProcessPoolExecutor(workers, mp_context=mp.get_context("fork")) as pool:
                return list(pool.map(_call, tasks))
        except (OSError, BrokenProcessPool):
            pass  # no processes to spare: draw them here
    return [_call(t) for t in tasks]


def draw(report: Report) -> None:
    """All figures of ``report`` (one per workload, ranking, quantile pair, biplot)."""
    target = report.model.settings.ci_rel_width
    target = float(target) if target is not None else None
    c = report.model.confidence
    views = report.model.workloads
    tasks: list[Task] = [(plots.workload_figure, (w, target, c)) for w in views]
    ranked = [g for g in report.groups if len(g.rows) > 1 and g.compared]
    tasks += [(plots.headline_figure, (g, c)) for g in ranked]
    fits = [fit for g in report.groups for fit in g.quantiles]
    model = report.model
    tasks += [(plots.quantile_figure, (fit, display_of(model.view(fit.a)))) for fit in fits]
    overlays = [
        ([model.view(n) for n in names], plots.group_title(g))
        for g in report.groups
        if g.compared
        for names in plots.distribution_sets(g.members)
    ]
    tasks += [(plots.distributions_figure, (views, label, c)) for views, label in overlays]
    if report.suite is not None:
        tasks.append((plots.biplot_figure, (report.suite,)))
    tasks += [(history_figure, (v.series, v.result)) for v in report.history]
    done = iter(_draw_all(tasks))
    for w in views:
        report.workload_plots[w.name] = next(done)
    report.ranking_plots = [next(done) for _ in ranked]
    report.quantile_plots = [next(done) for _ in fits]
    report.distribution_plots = [p for p in (next(done) for _ in overlays) if p is not None]
    if report.suite is not None:
        report.biplot = next(done)
    report.history = [dataclasses.replace(v, plot=next(done)) for v in report.history]
