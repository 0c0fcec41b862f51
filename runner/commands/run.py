"""``benchrun run EXPERIMENT``: measure, store every round, print the results table."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
from pathlib import Path

from rich.console import Console

from benchrun.runner.commands import add_set_option
from benchrun.runner.config.loader import load_experiment
from benchrun.runner.errors import UserError
from benchrun.runner.execute.containment import containment_record
from benchrun.runner.execute.local import LocalExecutor
from benchrun.runner.execute.pinning import pinned_runner, plan_pinning
from benchrun.runner.store.database import Store
from benchrun.runner.ui.display import RichDisplay, results_table, stdout_console, verdicts_table

#: exit status of `benchrun run --fail-on-unmet` when a condition is unmet at the end
EXIT_UNMET = 3

HELP = """\
Run an experiment: every workload in rounds (interleaved in a seeded random order by
default), pinned away from the runner's CPU, each round committed to
<output>/<name>/benchrun.db before the next starts. Ctrl-C stops cleanly (the round in
flight is killed and redone on --resume).

Adaptive mode (the default) runs until every workload's CI is within ci_rel_width of its
mean and every pair of neighbouring results is separated (Welch, Holm, alpha) or
equivalent within margin (TOST), with alpha spent over a geometric schedule of looks so
that stopping early does not inflate the error rate (docs/methods.md section 10); or until
max_rounds/max_time, and then it says which condition was not met (exit status 3 with
--fail-on-unmet). Pairs of workloads that ran in the same passes are compared on the
per-pass ratio of their rounds (settings.comparison: paired, the default), which cancels
the machine's drift; the ratio and its CI head the comparisons table. A file with
`rounds: N` (and no `adaptive:`) runs exactly N rounds of every workload instead."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run an experiment and store every reading",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("experiment", help="experiment file (YAML); `benchrun init` writes an example")
    # the daemon: the experiment's text as submitted (the file may have changed since)
    p.add_argument("--config-text", metavar="FILE", help=argparse.SUPPRESS)
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the interrupted campaign of this experiment instead of starting anew",
    )
    p.add_argument(
        "--new",
        action="store_true",
        help="start a new campaign even though the last one was interrupted (it stays stored)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="put the campaign in DIR/<name> instead of the file's `output:`",
    )
    p.add_argument(
        "--baseline",
        metavar="PATH",
        help="compare every workload with earlier results of the same name: a campaign "
        "directory, its benchrun.db, or a JSON summary (overrides settings.baseline)",
    )
    p.add_argument(
        "--fail-on-unmet",
        action="store_true",
        help="exit with status 3 when the campaign ends on a budget (max_time, max_rounds) "
        "with a condition of the stopping rule unmet, e.g. an undecided pair (for CI)",
    )
    add_set_option(p, "stored with the campaign")
    p.add_argument(
        "-q", "--quiet", action="store_true", help="no progress display, only the results"
    )
    p.set_defaults(func=main)


def make_campaign_dir(campaign_dir: Path, given: str) -> None:
    """Create ``campaign_dir`` (and its parents) or raise a UserError saying why not.

    ``given`` names where the location came from (``-o DIR`` or the file's ``output:``),
    so that the one-line error points at what to change.
    """
    blocker = next(
        (p for p in (campaign_dir, *campaign_dir.parents) if p.exists() and not p.is_dir()),
        None,
    )
    if blocker is not None:
        raise UserError(
            f"{given}: {blocker} is a file, not a directory; choose a directory for the results"
        )
    try:
        campaign_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(
            f"{given}: cannot create {campaign_dir}: {exc.strerror or exc}; choose a "
            "writable directory"
        ) from None
    if not os.access(campaign_dir, os.W_OK | os.X_OK):
        raise UserError(f"{given}: cannot write into {campaign_dir}; choose a writable directory")


def main(args: argparse.Namespace) -> int:
    # heavy imports (scipy via the statistics) only when the command runs, so that
    # `benchrun --help` and the other commands start fast
    from benchrun.runner.campaign.run import run_campaign
    from benchrun.runner.machine.metadata import collect_metadata, round_facts
    from benchrun.runner.report.model import check_magnitudes
    from benchrun.runner.results.workloads import drift_line, final_verdicts, workload_results

    if args.resume and args.new:
        raise UserError(
            "--resume and --new contradict each other: --resume continues the interrupted "
            "campaign, --new starts another beside it; give one of them"
        )
    text = None
    if args.config_text:  # the daemon: run the text submitted, not the file as it is now
        try:
            text = Path(args.config_text).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"{args.config_text}: cannot read the submitted text: {exc}") from None
    experiment = load_experiment(args.experiment, overrides=args.overrides, text=text)
    if args.output:
        experiment = dataclasses.replace(experiment, output=Path(args.output))
    if args.baseline:
        if not Path(args.baseline).exists():
            raise UserError(
                f"--baseline {args.baseline}: not found; give a campaign directory, its "
                "benchrun.db, or a JSON summary"
            )
        if not experiment.settings.adaptive:
            raise UserError(
                "--baseline needs adaptive mode; remove rounds: (or set adaptive: true)"
            )
        settings = dataclasses.replace(
            experiment.settings, baseline=str(Path(args.baseline).resolve())
        )
        experiment = dataclasses.replace(experiment, settings=settings)
    if args.fail_on_unmet and not experiment.settings.adaptive:
        raise UserError("--fail-on-unmet needs adaptive mode (fixed mode has no conditions)")
    make_campaign_dir(
        experiment.campaign_dir,
        f"-o {args.output}" if args.output else f"output: {experiment.output}",
    )
    env_names = sorted(
        set(experiment.settings.env)
        | set(experiment.settings.record_env)
        | {k for w in experiment.workloads for k in w.env}
    )
    plan = plan_pinning(experiment.settings.pin)
    display = RichDisplay({w.name: w.unit for w in experiment.workloads}, quiet=args.quiet)
    err = Console(stderr=True)
    if not args.quiet and plan.reason:
        err.print(f"pinning: {plan.reason}")
    executor = LocalExecutor()
    with pinned_runner(plan), contextlib.closing(executor):
        outcome = run_campaign(
            experiment,
            executor,
            display,
            resume=args.resume,
            new=args.new,
            metadata_fn=lambda: {
                **collect_metadata(
                    env_names=env_names,
                    experiment_path=experiment.source_path,
                    workload_cpus=plan.workload_cpus,
                ),
                "containment": containment_record(executor.containment),
            },
            round_facts_fn=round_facts,
            workload_cpus=plan.workload_cpus,
        )
    with Store.open(outcome.db_path) as store:
        campaign = store.campaign(outcome.campaign_id)
        check_magnitudes(outcome.db_path, store.workloads(campaign.id), store.rounds(campaign.id))
        results = workload_results(store, campaign, experiment.settings.confidence)
        verdicts = final_verdicts(store.events(campaign.id))
    out = stdout_console()
    out.print(results_table(results, experiment.settings.confidence))
    for r in results:
        paired = (
            experiment.settings.comparison == "paired"
            and experiment.comparison_group(r.name) is not None
        )
        line = drift_line(r.name, r.drift, paired)
        if line is not None:
            out.print(line, markup=False, highlight=False)
    drifted = [r.name for r in results if r.drift and r.drift.get("drifted")]
    if (
        experiment.settings.adaptive
        and experiment.settings.comparison == "independent"
        and any(experiment.comparison_group(n) is not None for n in drifted)
    ):
        out.print(
            "note: comparisons were independent (Welch on each workload's own series) and "
            "a compared workload drifted; drift can make Welch wrong (docs/controller.md: "
            "11 % false separations under a random walk); --set comparison=paired decides "
            "on per-pass ratios, which cancel it",
            markup=False,
            highlight=False,
        )
    table = verdicts_table(verdicts) if verdicts else None
    if table is not None:
        out.print(table)
    if experiment.settings.adaptive and campaign.stop_reason and outcome.status == "done":
        out.print(f"stopped: {campaign.stop_reason}", markup=False, highlight=False)
    if outcome.exit_code:
        print(f"benchrun: {outcome.message}", file=sys.stderr)
        return outcome.exit_code
    if not args.quiet:
        err.print(f"stored in {outcome.db_path}")
    if args.fail_on_unmet and not (verdicts or {}).get("conditions_met"):
        print(
            f"benchrun: unmet at the end (--fail-on-unmet): {campaign.stop_reason}",
            file=sys.stderr,
        )
        return EXIT_UNMET
    return 0
