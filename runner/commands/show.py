"""``benchrun show [DIR]``: what a campaign holds (status, rounds per workload, failures).

After the per-workload counts and results (every value of a workload in its one display
unit, the work amount of workloads with ``{work}`` and whether it was calibrated; the
tables fit the width: runner/ui/tables.py): the drift line of every workload whose steady
rounds drifted, the comparisons (:func:`runner.ui.display.verdicts_table`: the ratio
headline first, the verdict, the test that decided, p-values), a plain sentence when
the campaign ended on a budget with a condition unmet, and what the workloads'
setup/prepare/cleanup hooks did (:func:`hook_lines`: per workload and hook, its command,
exit status and the first line of its output; ``--json``: every run in ``hooks``). An
interrupted campaign ends with the command that continues it, ``benchrun run DIR
--resume`` (:func:`resume_command`, as ``benchrun run`` prints it on Ctrl-C), which needs
neither the experiment file nor the options that started it.

:func:`read_summary`, :func:`summary_json` and :func:`print_results` are also the end of
``benchrun run`` (its results and ``--json``), so both print the same numbers.
:func:`read_summary` reads the campaign's read model (runner/results/campaign_view.py:
one snapshot of the store, a campaign being written is one state of it; the stored
experiment decoded, not parsed) and hides secret ``env:`` values unless
``--include-secrets``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shlex
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from rich.console import Console
from rich.markup import escape

from benchrun.runner.errors import UserError
from benchrun.runner.store.database import CampaignRow, HookRow, RoundRow, Store
from benchrun.runner.store.records import MetadataSections
from benchrun.runner.ui.fit import KEEP, wrap_lines
from benchrun.runner.ui.terminal import stdout_console

if TYPE_CHECKING:  # the tables import the statistics (scipy): only when they are drawn
    from benchrun.runner.config.experiment import Experiment, Settings
    from benchrun.runner.results.campaign_view import DisplayUnitJson
    from benchrun.runner.results.metrics import MetricSummary
    from benchrun.runner.results.verdicts import StoredVerdicts
    from benchrun.runner.results.workloads import WorkloadResult
    from benchrun.runner.ui.tables import WorkInfo


def _tables() -> Any:
    """runner/ui/tables.py, imported when a table is drawn (it imports the statistics, so
    `benchrun --help` and the parser of every command need not)."""
    from benchrun.runner.ui import tables

    return tables


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "show",
        help="show what a stored campaign holds",
        description="Show a campaign: its status, rounds per workload, failures and results. "
        "DIR is a campaign directory (<output>/<name>), its benchrun.db, or a folder of "
        "campaigns (default: results), in which case each one is listed. Every value of a "
        "workload is shown in one unit chosen from its mean (--json: numbers in the base "
        "unit, `unit`, with `display_unit`); a calibrated {work} is shown with the file's "
        "value. Tables fit the terminal, or in a pipe COLUMNS (else 160 columns): columns "
        "that do not fit are left out, and a line says which. 'steady' counts the rounds "
        "analysed (warm-up cut); a workload whose level shifted (faster first rounds, or "
        "a step later) has no CI and a note 'level shift at round K (+X %)'.",
    )
    p.add_argument(
        "dir", nargs="?", default="results", metavar="DIR", help="campaign directory or database"
    )
    p.add_argument(
        "--campaign",
        type=int,
        metavar="ID",
        help="campaign id inside the database (default: newest)",
    )
    p.add_argument(
        "--failures", action="store_true", help="print the output tail of every failed round"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="the campaign as JSON (the same document as `benchrun run --json`)",
    )
    add_secrets_option(p)
    p.set_defaults(func=main)


def add_secrets_option(p: argparse.ArgumentParser) -> None:
    """``--include-secrets`` (export, report, show): print secret env values as stored."""
    p.add_argument(
        "--include-secrets",
        action="store_true",
        help="show the values of secret env variables (names with TOKEN, SECRET, "
        "PASSWORD, KEY... or listed in settings.secret_env), otherwise shown as <secret>",
    )


def find_databases(path: Path) -> list[Path]:
    """The benchrun databases that ``path`` names (a file, a campaign dir, or a parent dir)."""
    if path.is_file():
        return [path]
    if (path / "benchrun.db").is_file():
        return [path / "benchrun.db"]
    if path.is_dir():
        found = sorted(path.glob("*/benchrun.db"))
        if found:
            return found
    raise UserError(
        f"{path}: no benchrun campaign here (looked for benchrun.db); run `benchrun run FILE` first"
    )


def _when(t: float) -> str:
    return dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S")


@dataclass
class CampaignSummary:
    """Everything ``show`` and the end of ``run`` print about one stored campaign, read
    from the store once (:func:`read_summary`, from the campaign's read model
    :class:`runner.results.campaign_view.CampaignView`)."""

    db: Path
    campaign: CampaignRow
    n_campaigns: int
    results: list[WorkloadResult]
    states: dict[str, str]
    #: the comparisons every output prints (a fixed campaign's computed when read), in
    #: their stored form, and as typed records
    verdicts: Mapping[str, object] | None
    stored: StoredVerdicts | None
    drift: dict[str, str | None]
    works: dict[str, WorkInfo]
    failed_rounds: list[RoundRow]
    names: dict[int, str]
    #: an adaptive campaign compared workloads independently (Welch) and one of them drifted
    independent_drift: bool = False
    #: every stored run of a setup/prepare/cleanup hook, in the order they ran
    hooks: list[HookRow] = field(default_factory=list)
    #: the newest campaign of its store (the one ``benchrun run DIR --resume`` continues)
    latest: bool = True
    #: each Slurm node's metadata record (its ``node-metadata`` event), by node name
    nodes: dict[str, Mapping[str, object]] = field(default_factory=dict)
    #: a duet campaign's checks (runner/results/duet.py), None without
    duet: dict[str, object] | None = None
    #: a fleet (executor node_types, docs/slurm.md): node type -> the nodes its rounds
    #: ran on, in the experiment's order; None for other campaigns
    fleet: dict[str, list[str]] | None = None
    #: the contended rounds' line (runner/results/workloads.py ``contended_line``); None
    #: when no round was contended
    contended: str | None = None
    #: every metric of each workload's ``metric:`` list (runner/results/metrics.py); []
    #: when no workload has a list or a counter metric
    metrics: list[MetricSummary] = field(default_factory=list)

    @property
    def settings(self) -> Settings:
        """The campaign's settings, typed (runner/results/settings.py)."""
        from benchrun.runner.results.settings import campaign_settings

        return campaign_settings(self.campaign.settings)


def read_summary(
    db: Path,
    campaign_id: int | None = None,
    *,
    include_secrets: bool = False,
    intervals: bool = True,
) -> CampaignSummary:
    """Read campaign ``campaign_id`` (default: the newest) of the store ``db``: its
    results, states, comparisons, drift lines and work amounts (:class:`CampaignSummary`),
    in one snapshot of the store (:func:`runner.results.campaign_view.read_campaign`). The
    campaign's secret ``env:`` values are hidden in the rows it holds
    (runner/store/redact.py) unless ``include_secrets``. ``intervals=False``: each
    workload's ``summary`` without the median CI
    (:func:`runner.results.workloads.describe_rounds`), which the tables of ``show`` do
    not print (``--json`` has it)."""
    # heavy imports (scipy via the statistics) only when called, so that `benchrun --help`
    # and the other commands start fast
    from benchrun.runner.importers.dataset import MAX_MAGNITUDE
    from benchrun.runner.report.verdicts import is_paired
    from benchrun.runner.results.campaign_view import read_campaign
    from benchrun.runner.results.duet import duet_summary
    from benchrun.runner.results.workloads import (
        contended_line,
        drift_from,
        drift_line,
        workload_states,
    )

    with Store.open(db) as store:
        view = read_campaign(
            store,
            campaign_id,
            max_magnitude=MAX_MAGNITUDE,
            include_secrets=include_secrets,
            intervals=intervals,
        )
    results, settings, experiment = view.results, view.settings, view.experiment
    drift = {
        r.name: drift_line(
            r.name, r.drift, is_paired(r.name, view.comparisons, experiment, settings)
        )
        for r in results
    }
    drifted = [r.name for r in results if (d := drift_from(r.drift)) is not None and d.drifted]
    independent_drift = (
        experiment is not None
        and settings.adaptive
        and settings.comparison == "independent"
        and any(experiment.comparison_group(n) is not None for n in drifted)
    )
    names = view.names
    return CampaignSummary(
        db=db,
        campaign=view.campaign,
        n_campaigns=view.n_campaigns,
        results=results,
        states=workload_states(results, view.campaign, view.events),
        verdicts=view.verdicts,
        stored=view.comparisons,
        drift=drift,
        works=_tables().workload_works(view.workloads, view.rounds, view.events),
        failed_rounds=[r for r in view.rounds if r.status != "ok"],
        names=names,
        independent_drift=independent_drift,
        hooks=view.hooks,
        latest=view.latest,
        nodes=view.nodes,
        duet=duet_summary(view.events),
        fleet=fleet_nodes(experiment, names, view.rounds),
        contended=contended_line(results, settings),
        metrics=view.metrics,
    )


def fleet_nodes(
    experiment: Experiment | None, names: dict[int, str], rounds: list[RoundRow]
) -> dict[str, list[str]] | None:
    """Node type -> the nodes (sorted) its rounds ran on (the rounds' ``node`` fact), for
    an experiment with ``executor: {node_types: ...}``; None for any other."""
    spec = None if experiment is None else experiment.executor
    if experiment is None or spec is None or not spec.node_types:
        return None
    out: dict[str, set[str]] = {t: set() for t in spec.node_type_names}
    kinds = {w.name: experiment.node_type_of(w.name) for w in experiment.workloads}
    for r in rounds:
        kind = kinds.get(names.get(r.workload_id, ""))
        if r.node is not None and kind in out:
            out[str(kind)].add(r.node)
    return {t: sorted(ns) for t, ns in out.items()}


def resume_command(campaign_dir: Path) -> str:
    """``benchrun run DIR --resume`` for the campaign directory ``campaign_dir`` (shown
    relative to the current directory when inside it; shell-quoted). The same command as
    runner/commands/run.py ``resume_command`` (not imported: ``run`` imports this module)."""
    where = campaign_dir.absolute()
    try:
        shown = str(where.relative_to(Path.cwd()))
    except ValueError:
        shown = str(where)
    return shlex.join(["benchrun", "run", shown, "--resume"])


#: characters of a hook's output line that ``show`` prints (``--json`` has the stored tail)
OUTPUT_CHARS = 72


def hook_command(argv: Sequence[str]) -> str:
    """A hook's command as written: a one-string argv is a shell command (run by
    ``/bin/sh -c``), a longer one an argument vector (shell-quoted)."""
    return argv[0] if len(argv) == 1 else shlex.join(argv)


def first_output_line(hook: HookRow) -> str | None:
    """The first non-blank line of a hook's stored output (stdout, else stderr), cut to
    :data:`OUTPUT_CHARS`; None when it printed nothing."""
    for tail in (hook.stdout_tail, hook.stderr_tail):
        for line in (tail or "").splitlines():
            if line.strip():
                line = line.strip()
                return line if len(line) <= OUTPUT_CHARS else line[: OUTPUT_CHARS - 3] + "..."
    return None


def _hook_status(hook: HookRow) -> str:
    if hook.status == "ok":
        return "ok" if hook.exit_code in (None, 0) else f"ok (exit {hook.exit_code})"
    return f"{hook.status} ({hook.reason})" if hook.reason else hook.status


def hook_lines(hooks: Sequence[HookRow], names: dict[int, str]) -> list[str]:
    """One line per workload, hook kind and command, in the order they first ran: the
    command, its exit status (a prepare's: how many runs ended how) and duration, and the
    first line of its output (a prepare's: of its first failed run, else its first run)."""
    groups: dict[tuple[int, str, str], list[HookRow]] = {}
    for h in hooks:
        groups.setdefault((h.workload_id, h.kind, hook_command(h.argv)), []).append(h)
    lines = []
    for (workload_id, kind, command), runs in groups.items():
        ms = statistics.median(h.wall_ns for h in runs) / 1e6
        if len(runs) == 1:
            shown = runs[0]
            status = f"{_hook_status(shown)}, {ms:.3g}{KEEP}ms"
        else:
            counts: dict[str, int] = {}
            for h in runs:
                counts[h.status] = counts.get(h.status, 0) + 1
            failed = [h for h in runs if h.status != "ok"]
            shown = failed[0] if failed else runs[0]
            status = f"{len(runs)} runs: " + ", ".join(f"{n} {k}" for k, n in counts.items())
            status += f", median {ms:.3g}{KEEP}ms"
            if failed:
                where = "" if shown.round_index is None else f" before round {shown.round_index}"
                status += f"; first failure{where}: {_hook_status(shown)}"
        output = first_output_line(shown)
        said = f'; printed "{output}"' if output is not None else "; no output"
        lines.append(f"{names.get(workload_id, '?')}: {kind} `{command}`: {status}{said}")
    return lines


def _print_indented(console: Console, text: str) -> None:
    """``text`` indented by 2 (on a terminal wrapped with continuation lines indented by 4;
    elsewhere one line, for grep)."""
    if console.is_terminal:
        for line in wrap_lines(text, console.width - 2, indent=2):
            console.print("  " + line, markup=False, highlight=False, no_wrap=True, crop=False)
    else:
        console.print("  " + text.replace(KEEP, " "), markup=False, highlight=False, soft_wrap=True)


class HookJson(TypedDict):
    """One stored hook run in ``show --json`` and ``benchrun export`` (:func:`hook_dict`)."""

    workload: str | None
    kind: str
    round_index: int | None
    argv: list[str]
    status: str
    reason: str | None
    exit_code: int | None
    started_at: float
    wall_ns: int
    stdout_tail: str | None
    stderr_tail: str | None


class ContendedJson(TypedDict):
    """The contended rounds in ``show --json`` (docs/contention.md)."""

    policy: str
    threshold: float
    rounds: int
    line: str | None


class WorkloadJson(TypedDict):
    """One workload in ``show --json``: numbers in its base ``unit``."""

    name: str
    unit: str
    display_unit: DisplayUnitJson
    work: object
    rounds: int
    steady: int
    warmup: int
    failed: int
    contended: int
    status: str
    status_reason: str | None
    summary: object
    collected: object
    drift: object
    drift_line: str | None


class SummaryJson(TypedDict):
    """The JSON document of ``show --json`` and ``run --json`` (:func:`summary_json`);
    the stored forms it passes on as they are (``verdicts``, ``nodes``, ``duet``,
    ``revision``...) are described where they are written."""

    database: str
    campaign: int
    name: str
    status: str
    stop_reason: str | None
    verdicts: object
    comparisons: object
    nodes: Mapping[str, Mapping[str, object]]
    node_differences: list[str]
    duet: object
    metrics: list[object]
    fleet: dict[str, list[str]] | None
    created_at: float
    updated_at: float
    revision: object
    contended: ContendedJson
    workloads: list[WorkloadJson]
    hooks: list[HookJson]


def hook_dict(h: HookRow, names: dict[int, str]) -> dict[str, Any]:
    """:func:`hook_json` as a plain dict (for ``benchrun export``'s ``hooks``)."""
    return dict(hook_json(h, names))


def hook_json(h: HookRow, names: dict[int, str]) -> HookJson:
    """One stored hook run as JSON (``show --json`` and ``benchrun export``'s ``hooks``):
    its workload's name, kind, round (a prepare's; null for setup and cleanup), argv,
    status, reason, exit code, start (Unix seconds), duration (``wall_ns``, ns) and the
    stored tails of its output."""
    return {
        "workload": names.get(h.workload_id),
        "kind": h.kind,
        "round_index": h.round_index,
        "argv": h.argv,
        "status": h.status,
        "reason": h.reason,
        "exit_code": h.exit_code,
        "started_at": h.started_at,
        "wall_ns": h.wall_ns,
        "stdout_tail": h.stdout_tail,
        "stderr_tail": h.stderr_tail,
    }


def _node_differences(nodes: Mapping[str, Mapping[str, object]]) -> list[str]:
    """:func:`runner.machine.nodes.node_differences` of the campaign's nodes ([] without)."""
    if not nodes:
        return []
    from benchrun.runner.machine.nodes import node_differences

    return node_differences(nodes)


def summary_json(s: CampaignSummary) -> SummaryJson:
    """The JSON document of a campaign (``show --json``, ``run --json``): every number in
    its workload's base unit (``unit``), ``display_unit`` the one the tables show."""
    from benchrun.runner.results.campaign_view import display_dict

    campaign = s.campaign
    return {
        "database": str(s.db),
        "campaign": campaign.id,
        "name": campaign.name,
        "status": campaign.status,
        "stop_reason": campaign.stop_reason,
        "verdicts": s.verdicts,
        "comparisons": None if s.stored is None else s.stored.to_dict(),
        # the compute nodes that measured rounds (executor: slurm): each node's metadata
        # record as collected there, and the facts that differ between nodes
        "nodes": s.nodes,
        "node_differences": _node_differences(s.nodes),
        # a duet campaign's asymmetry check and multi-CPU stops (docs/duet.md)
        "duet": s.duet,
        # every metric of each workload's metric: list, with its source (docs/metrics.md)
        "metrics": [asdict(m) for m in s.metrics],
        # a fleet's node types and the nodes each ran on (None: not a fleet)
        "fleet": s.fleet,
        "created_at": campaign.created_at,
        "updated_at": campaign.updated_at,
        # what the campaign measured (runner/machine/revision.py; None: untagged)
        "revision": campaign.sections.revision,
        # rounds that waited for a CPU (docs/contention.md): the setting, the threshold
        # (share of a round's wall time), how many, and the line the tables print
        "contended": {
            "policy": s.settings.contended or "exclude",
            "threshold": s.settings.contended_threshold,
            "rounds": sum(r.contended for r in s.results),
            "line": s.contended,
        },
        "workloads": [
            {
                "name": r.name,
                "unit": r.unit,
                "display_unit": display_dict(r.display),
                "work": None if r.name not in s.works else s.works[r.name].to_dict(),
                "rounds": r.rounds,
                "steady": r.steady,
                "warmup": r.warmup,
                "failed": r.failed,
                "contended": r.contended,
                "status": s.states[r.name],
                "status_reason": r.status_reason,
                "summary": r.summary,
                "collected": r.collected,
                "drift": r.drift,
                "drift_line": s.drift[r.name],
            }
            for r in s.results
        ],
        "hooks": [hook_json(h, s.names) for h in s.hooks],
    }


#: printed under the results when an independently compared workload drifted
INDEPENDENT_DRIFT_NOTE = (
    "note: comparisons were independent (Welch on each workload's own series) and a "
    "compared workload drifted; drift can make Welch wrong (docs/controller.md: 11 % false "
    "separations under a random walk); --set comparison=paired decides on per-pass "
    "ratios, which cancel it"
)


def print_results(console: Console, s: CampaignSummary, *, after_run: bool = False) -> None:
    """The results of a campaign as ``show`` and the end of ``run`` print them: the
    results table (runner/ui/tables.py, fitted to the console's width, with its notes),
    the drift lines, the comparisons and how the stopping rule ended. ``after_run``: the
    end of ``benchrun run`` (adds "stopped: REASON" for an adaptive campaign that ended)."""
    confidence = float(s.settings.confidence)
    console.print(_tables().results_table(s.results, confidence, s.works))
    metrics = _tables().metrics_table(s.metrics)
    if metrics is not None:
        console.print(metrics)
    if s.contended is not None:
        _tables().print_prose(console, s.contended)
    for line in s.drift.values():
        if line is not None:
            _tables().print_prose(console, line)
    from benchrun.runner.results.workloads import node_line

    for r in s.results:  # workloads measured on several nodes (docs/methods.md §14)
        line = node_line(r.name, r.collected, r.display)
        if line is not None:
            _tables().print_prose(console, line)
    if s.independent_drift:
        _tables().print_prose(console, INDEPENDENT_DRIFT_NOTE)
    table = _tables().verdicts_table(s.stored) if s.stored else None
    if table is not None:
        console.print(table)
    elif s.stored is not None and not after_run:
        console.print(
            "comparisons: none (no two workloads are compared in this experiment, and "
            "there is no baseline)"
        )
    if not after_run:  # the end of `run` said these as they happened
        from benchrun.runner.results.duet import duet_lines

        for line in duet_lines(s.duet):
            _tables().print_prose(console, line)
    if after_run:
        if s.settings.adaptive and s.campaign.stop_reason:
            if s.campaign.status == "done":
                _tables().print_prose(console, f"stopped: {s.campaign.stop_reason}")
    elif s.stored is not None and s.stored.budget_stop:
        _tables().print_prose(console, s.stored.stop_sentence() or "")


def _revision_line(metadata: MetadataSections) -> str:
    """``"\nrevision: v1.2-3-gabc1234 (2026-11-20)"`` for a tagged campaign, else ``""``."""
    from benchrun.runner.machine.revision import Revision

    rev = Revision.from_dict(metadata.revision)
    return "" if rev is None else f"\nrevision: {escape(rev.describe())}"


def _tuning_line(metadata: MetadataSections) -> str:
    """``"\ntuned for the campaign (restored at its end): perf_event_max_sample_rate: ..."``
    when ``settings.tune`` changed the machine for it (docs/tuning.md), else ``""``."""
    record = metadata.tuning
    if not record:
        return ""
    from benchrun.runner.machine.tuning import recorded_changes

    changes = recorded_changes(record)
    if changes is None:
        return ""
    return f"\ntuned for the campaign (restored at its end): {escape(changes)}"


def main(args: argparse.Namespace) -> int:
    dbs = find_databases(Path(args.dir))
    console = stdout_console()
    docs = []
    for db in dbs:
        s = read_summary(
            db, args.campaign, include_secrets=args.include_secrets, intervals=args.json
        )
        campaign = s.campaign
        if args.json:
            docs.append(summary_json(s))
            continue
        console.print(
            f"[bold]{escape(campaign.name)}[/] campaign {campaign.id} of {s.n_campaigns} in "
            f"{escape(str(db))}\nstatus: [bold]{campaign.status}[/]"
            + (f" ({escape(campaign.stop_reason)})" if campaign.stop_reason else "")
            + f"\nstarted {_when(campaign.created_at)}, last write {_when(campaign.updated_at)}, "
            f"benchrun {campaign.benchrun_version}"
            + _revision_line(campaign.sections)
            + _tuning_line(campaign.sections)
        )
        console.print(_tables().counts_table(s.results, s.states))
        print_results(console, s)
        lines = hook_lines(s.hooks, s.names)
        if lines:
            console.print(
                "hooks (untimed; --json has every run and its output):",
                markup=False,
                highlight=False,
            )
            for line in lines:
                _print_indented(console, line)
        if s.fleet is not None:
            console.print(
                f"fleet: {len(s.fleet)} node types, each workload measured on every one and "
                "compared across them (benchrun report: the Fleet section)",
                markup=False,
                highlight=False,
            )
            for kind, names in s.fleet.items():
                _print_indented(console, f"{kind}: {', '.join(names) or 'no round yet'}")
        if s.nodes:
            from benchrun.runner.machine.nodes import node_differences, node_summary

            console.print("nodes:", markup=False, highlight=False)
            for name in sorted(s.nodes):
                _print_indented(console, node_summary(name, s.nodes[name]))
            for line in node_differences(s.nodes):
                _print_indented(console, line)
        if campaign.status == "interrupted":
            if s.latest:
                _tables().print_prose(console, f"resume with: {resume_command(db.parent)}")
            else:
                _tables().print_prose(
                    console,
                    "interrupted, and a newer campaign follows it in this store: only the "
                    "newest campaign can be resumed",
                )
        if args.failures:
            for fr in s.failed_rounds:
                console.rule(
                    f"{s.names[fr.workload_id]} round {fr.round_index}: {fr.status}: {fr.reason}"
                )
                console.print(f"argv: {fr.argv}", markup=False)
                console.print("stdout (tail):\n" + (fr.stdout_tail or ""), markup=False)
                console.print("stderr (tail):\n" + (fr.stderr_tail or ""), markup=False)
    if args.json:
        print(json.dumps(docs if len(docs) > 1 else docs[0], indent=2))
    return 0
