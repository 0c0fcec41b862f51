"""``benchrun show [DIR]``: what a campaign holds (status, rounds per workload, failures).

After the per-workload counts and results: the drift line of every workload whose steady
rounds drifted (worded as ``benchrun run`` prints it), the comparisons of an adaptive
campaign as the stopping controller stored them (:func:`runner.ui.display.verdicts_table`:
the ratio headline first, the verdict, the test that decided, p-values), and a plain
sentence when the campaign ended on a budget with a condition unmet.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from benchrun.runner.errors import UserError
from benchrun.runner.store.database import Store
from benchrun.runner.ui.display import results_table, stdout_console, verdicts_table


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "show",
        help="show what a stored campaign holds",
        description="Show a campaign: its status, rounds per workload, failures and results. "
        "DIR is a campaign directory (<output>/<name>), its benchrun.db, or a folder of "
        "campaigns (default: results), in which case each one is listed.",
    )
    p.add_argument("dir", nargs="?", default="results", help="campaign directory or database")
    p.add_argument("--campaign", type=int, help="campaign id inside the database (default: newest)")
    p.add_argument(
        "--failures", action="store_true", help="print the output tail of every failed round"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=main)


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


def main(args: argparse.Namespace) -> int:
    # heavy imports (scipy via the statistics) only when the command runs, so that
    # `benchrun --help` and the other commands start fast
    from benchrun.runner.report.model import check_magnitudes
    from benchrun.runner.report.verdicts import (
        drift_line,
        experiment_of,
        is_paired,
        verdicts_from_dict,
    )
    from benchrun.runner.results.comparisons import campaign_verdicts
    from benchrun.runner.results.workloads import workload_results, workload_states

    dbs = find_databases(Path(args.dir))
    console = stdout_console()
    docs = []
    for db in dbs:
        with Store.open(db) as store:
            campaign = store.campaign(args.campaign)
            confidence = float(campaign.settings.get("confidence", 0.95))
            rounds = store.rounds(campaign.id)
            check_magnitudes(db, store.workloads(campaign.id), rounds)
            results = workload_results(store, campaign, confidence)
            failed_rounds = [r for r in rounds if r.status != "ok"]
            names = {w.id: w.name for w in store.workloads(campaign.id)}
            n_campaigns = len(store.campaigns())
            events = store.events(campaign.id)
            # the comparisons every output prints (a fixed campaign's computed when read)
            verdicts = campaign_verdicts(store, campaign, events)
            states = workload_states(results, campaign, events)
            workload_names = [w.name for w in store.workloads(campaign.id)]
        stored = verdicts_from_dict(verdicts) if verdicts else None
        experiment = experiment_of(campaign.config_text, workload_names)
        drift = {
            r.name: drift_line(
                r.name, r.drift, is_paired(r.name, stored, experiment, campaign.settings)
            )
            for r in results
        }
        if args.json:
            docs.append(
                {
                    "database": str(db),
                    "campaign": campaign.id,
                    "name": campaign.name,
                    "status": campaign.status,
                    "stop_reason": campaign.stop_reason,
                    "verdicts": verdicts,
                    "comparisons": None if stored is None else stored.to_dict(),
                    "created_at": campaign.created_at,
                    "updated_at": campaign.updated_at,
                    "workloads": [
                        {
                            "name": r.name,
                            "unit": r.unit,
                            "rounds": r.rounds,
                            "steady": r.steady,
                            "warmup": r.warmup,
                            "failed": r.failed,
                            "status": states[r.name],
                            "status_reason": r.status_reason,
                            "summary": r.summary,
                            "collected": r.collected,
                            "drift": r.drift,
                            "drift_line": drift[r.name],
                        }
                        for r in results
                    ],
                }
            )
            continue
        console.print(
            f"[bold]{campaign.name}[/] campaign {campaign.id} of {n_campaigns} in {db}\n"
            f"status: [bold]{campaign.status}[/]"
            + (f" ({campaign.stop_reason})" if campaign.stop_reason else "")
            + f"\nstarted {_when(campaign.created_at)}, last write {_when(campaign.updated_at)}, "
            f"benchrun {campaign.benchrun_version}"
        )
        counts = Table(header_style="bold")
        for col in ("workload", "rounds", "warm-up", "steady", "failed", "status", "last failure"):
            counts.add_column(col)
        for r in results:
            counts.add_row(
                escape(r.name),
                str(r.rounds),
                str(r.warmup),
                str(r.steady),
                str(r.failed),
                states[r.name] + (f": {r.status_reason}" if r.status_reason else ""),
                r.last_failure or "",
            )
        console.print(counts)
        console.print(results_table(results, confidence))
        for line in drift.values():
            if line is not None:
                console.print(line, markup=False, highlight=False, soft_wrap=True)
        table = verdicts_table(verdicts) if verdicts else None
        if table is not None:
            console.print(table)
        elif stored is not None:
            console.print(
                "comparisons: none (no two workloads are compared in this experiment, and "
                "there is no baseline)"
            )
        if stored is not None and stored.budget_stop:
            console.print(stored.stop_sentence(), markup=False, highlight=False, soft_wrap=True)
        if campaign.status == "interrupted" and campaign.config_path:
            console.print(f"resume with: benchrun run {campaign.config_path} --resume")
        if args.failures:
            for fr in failed_rounds:
                console.rule(
                    f"{names[fr.workload_id]} round {fr.round_index}: {fr.status}: {fr.reason}"
                )
                console.print(f"argv: {fr.argv}", markup=False)
                console.print("stdout (tail):\n" + (fr.stdout_tail or ""), markup=False)
                console.print("stderr (tail):\n" + (fr.stderr_tail or ""), markup=False)
    if args.json:
        print(json.dumps(docs if len(docs) > 1 else docs[0], indent=2))
    return 0
