"""``benchrun system``: this machine, and the settings that add noise to measurements.

Prints the reproducibility record (docs/methods.md §11) in sections (Hardware, Software, Timer,
Environment), then each noise warning with the command that changes the setting, then the
settings that could not be checked. ``--json`` prints the record itself.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from benchrun.runner.config.cpulist import format_cpu_list, parse_kernel_cpu_list
from benchrun.runner.errors import UserError
from benchrun.runner.execute.containment import containment_record, probe_containment
from benchrun.runner.machine.metadata import (
    collect_metadata,
    describe_machine,
    noise_warnings,
    unknown_noise_settings,
)


def register(subparsers: Any) -> None:
    """Add the ``system`` sub-command."""
    parser = subparsers.add_parser(
        "system",
        help="this machine, and the settings that add noise",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--json", action="store_true", help="print the record as JSON instead of tables"
    )
    parser.add_argument(
        "--cpus",
        metavar="LIST",
        help="workload CPUs to check (kernel list syntax, e.g. 1 or 2-3,6); default: all",
    )
    parser.set_defaults(func=run)


def _parse_cpus(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        cpus = list(parse_kernel_cpu_list(text))
    except ValueError:
        cpus = []
    if not cpus or min(cpus) < 0:
        raise UserError(f"--cpus {text!r}: expected a CPU list such as 1 or 0-3,6")
    return cpus


def duet_capability() -> dict[str, Any]:
    """Whether this machine can run duets (docs/duet.md): the usable CPUs, the two a duet
    would use with ``pin: auto`` and their SMT siblings, whether the runner must share a
    CPU with a side, and the reason when it cannot."""
    from benchrun.runner.execute.duet import plan_duet
    from benchrun.runner.execute.pinning import allowed_cpus

    usable = allowed_cpus()
    doc: dict[str, Any] = {"usable_cpus": len(usable), "possible": False}
    try:
        plan = plan_duet("auto", allowed=usable)
    except UserError as exc:
        doc["reason"] = str(exc)
        return doc
    doc.update(plan.to_dict())
    doc["possible"] = True
    doc["sides_share_a_core"] = plan.cpus[1] in plan.smt.get(plan.cpus[0], ())
    return doc


def _duet_lines(duet: dict[str, Any]) -> list[str]:
    if not duet.get("possible"):
        return [f"no: {duet.get('reason', 'fewer than two CPUs')}"]
    a, b = duet["cpus"]
    smt = duet["smt_siblings"]
    lines = [
        f"yes: {duet['usable_cpus']} usable CPUs; a duet runs on CPUs {a} and {b} (pin: auto)",
        f"SMT siblings: CPU {a}: {smt[str(a)]}, CPU {b}: {smt[str(b)]}"
        + (" (one core: the sides share it)" if duet["sides_share_a_core"] else ""),
    ]
    if duet["runner_shares_cpu"]:
        lines.append(
            "the runner shares a CPU with a side (no third CPU); duet may cost what it gains "
            "(docs/duet.md)"
        )
    else:
        lines.append(f"the runner stays on CPUs {duet['runner_cpus']}, off both sides")
    return lines


def run(args: argparse.Namespace) -> int:
    """Collect the record and print it; returns 0."""
    cpus = _parse_cpus(getattr(args, "cpus", None))
    meta = collect_metadata(workload_cpus=cpus)
    meta["containment"] = containment_record(probe_containment())
    meta["duet"] = duet_capability()
    meta["cpu_reservations"] = cpu_reservations()
    if args.json:
        print(json.dumps(meta, indent=2, allow_nan=False))
        return 0
    _print_human(meta, cpus)
    return 0


def cpu_reservations() -> dict[str, Any]:
    """The CPU reservations of benchrun runs on this machine (docs/reservation.md): the
    lock directory and each live run's record (pid, user, campaign, CPUs, start time)."""
    from benchrun.runner.execute.reservation import active_runs, lock_directory

    directory = lock_directory()
    return {
        "directory": str(directory),
        "runs": [
            {
                "pid": h.pid,
                "user": h.user,
                "campaign": h.campaign,
                "cpus": list(h.cpus),
                "started": h.started,
            }
            for h in active_runs(directory)
        ],
    }


def _print_human(meta: dict[str, Any], cpus: list[int] | None) -> None:
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    from benchrun.runner.ui.terminal import SafeConsole

    console = SafeConsole()
    current: Table | None = None
    for section, label, text in describe_machine(meta):
        if current is None or current.title != section:
            if current is not None:
                console.print(current)
                console.print()
            current = Table(
                title=section, title_justify="left", show_header=False, box=None, pad_edge=False
            )
            current.add_column(style="bold", no_wrap=True)
            current.add_column(overflow="fold")
        current.add_row(label, Text(text))
    if current is not None:
        console.print(current)
    console.print()
    console.print(Text("Containment of rounds", style="bold"))
    console.print(f"  {meta['containment']['detail']}")
    source = meta["containment"].get("wait_source", "none")
    console.print(
        "  each round's CPU wait (contended rounds, docs/contention.md): "
        + (source if source != "none" else "not measured on this machine")
    )

    console.print()
    console.print(Text("Duets (docs/duet.md)", style="bold"))
    for line in _duet_lines(meta["duet"]):
        console.print(f"  {line}")

    console.print()
    reservations = meta["cpu_reservations"]
    console.print(Text("CPU reservations (docs/reservation.md)", style="bold"))
    console.print(f"  lock directory: {reservations['directory']}")
    if not reservations["runs"]:
        console.print("  none: no other benchrun run holds CPUs")
    for run in reservations["runs"]:
        cpus_text = format_cpu_list(run["cpus"]) if run["cpus"] else "none (pin: none)"
        console.print(
            Text(
                f"  pid {run['pid']} ({run['user']}): CPUs {cpus_text}, campaign {run['campaign']}"
            )
        )

    warnings = noise_warnings(meta, cpus)
    unknown = unknown_noise_settings(meta, cpus)
    console.print()
    console.print(Text("Noise warnings", style="bold"))
    if not warnings:
        console.print("  none: every setting that could be read is quiet")
    for warning in warnings:
        console.print(Text(f"  ! {warning.setting}: {warning.found}", style="yellow"))
        console.print(Padding(Text(f"why: {warning.why}"), (0, 0, 0, 4)))
        # soft_wrap keeps the command on one line so it can be copied as it is
        console.print(Text(f"    fix: {warning.fix_command}", style="cyan"), soft_wrap=True)
    if unknown:
        console.print()
        console.print(Text("Not checked (unknown)", style="bold"))
        for setting, reason in unknown:
            console.print(Padding(Text(f"? {setting}: {reason}"), (0, 0, 0, 2)))
