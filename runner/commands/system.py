"""``benchrun system``: this machine, and the settings that add noise to measurements.

Prints the reproducibility record (docs/methods.md §11) in sections (Hardware, Software, Timer,
Environment), then each noise warning with the command that changes the setting, then the
settings that could not be checked, then what benchrun keeps tuned (the journal).
``--json`` prints the record itself.

``benchrun system tune [--cpus LIST] [--aslr]`` quiets what this machine has and allows
(governor, turbo, perf sampling rate, SMT siblings, IRQ affinity; ASLR on request), each
previous value journalled first; ``benchrun system reset`` restores exactly those values
(docs/tuning.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchrun.runner.config.cpulist import format_cpu_list, parse_kernel_cpu_list
from benchrun.runner.errors import UserError
from benchrun.runner.execute.containment import containment_record, probe_containment
from benchrun.runner.machine.metadata import (
    collect_metadata,
    describe_machine,
    noise_warnings,
    unknown_noise_settings,
)

if TYPE_CHECKING:
    from benchrun.runner.execute.duet import DuetPlan
    from benchrun.runner.execute.reservation import Holder
    from benchrun.runner.machine.tuning_journal import Journal


def register(subparsers: Any) -> None:
    """Add the ``system`` sub-command."""
    parser = subparsers.add_parser(
        "system",
        help="this machine, and the settings that add noise",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "action",
        nargs="?",
        choices=("tune", "reset"),
        help="tune: quiet this machine for benchmarks (root), journalling each previous "
        "value; reset: restore the journalled values (docs/tuning.md)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the record as JSON instead of tables"
    )
    parser.add_argument(
        "--cpus",
        metavar="LIST",
        help="workload CPUs to check, or with tune the benchmark CPUs (kernel list syntax, "
        "e.g. 1 or 2-3,6); default: all to check, pin: auto's to tune",
    )
    parser.add_argument(
        "--aslr",
        action="store_true",
        help="tune: also turn address-space layout randomisation off (machine-wide)",
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


@dataclass(frozen=True)
class DuetCapability:
    """Whether this machine can run duets (docs/duet.md): the usable CPUs and, when it can,
    the plan of ``pin: auto`` (the two CPUs, their SMT siblings, where the runner stays);
    when it cannot, the reason."""

    usable_cpus: int
    plan: DuetPlan | None
    reason: str | None = None

    @property
    def sides_share_a_core(self) -> bool:
        """The two sides' CPUs are SMT siblings of one core."""
        p = self.plan
        return p is not None and p.cpus[1] in p.smt.get(p.cpus[0], ())

    def to_json(self) -> dict[str, object]:
        """The ``duet`` entry of ``system --json``: ``usable_cpus``, ``possible``, then
        the plan (``cpus``, ``runner_cpus``, ``runner_shares_cpu``, ``smt_siblings``,
        ``reason``) and ``sides_share_a_core``, or the ``reason`` it is not possible."""
        if self.plan is None:
            return {"usable_cpus": self.usable_cpus, "possible": False, "reason": self.reason}
        return {
            "usable_cpus": self.usable_cpus,
            "possible": True,
            **self.plan.to_dict(),
            "sides_share_a_core": self.sides_share_a_core,
        }

    def lines(self) -> list[str]:
        """The lines of ``benchrun system``'s Duets section."""
        p = self.plan
        if p is None:
            return [f"no: {self.reason or 'fewer than two CPUs'}"]
        a, b = p.cpus
        lines = [
            f"yes: {self.usable_cpus} usable CPUs; a duet runs on CPUs {a} and {b} (pin: auto)",
            f"SMT siblings: CPU {a}: {list(p.smt[a])}, CPU {b}: {list(p.smt[b])}"
            + (" (one core: the sides share it)" if self.sides_share_a_core else ""),
        ]
        if p.shares:
            lines.append(
                "the runner shares a CPU with a side (no third CPU); duet may cost what it "
                "gains (docs/duet.md)"
            )
        else:
            runner = None if p.runner_cpus is None else list(p.runner_cpus)
            lines.append(f"the runner stays on CPUs {runner}, off both sides")
        return lines


def duet_capability() -> DuetCapability:
    """Whether this machine can run duets (:class:`DuetCapability`)."""
    from benchrun.runner.execute.duet import plan_duet
    from benchrun.runner.execute.pinning import allowed_cpus

    usable = allowed_cpus()
    try:
        plan = plan_duet("auto", allowed=usable)
    except UserError as exc:
        return DuetCapability(len(usable), None, str(exc))
    return DuetCapability(len(usable), plan)


def run(args: argparse.Namespace) -> int:
    """Collect the record and print it, or tune, or reset; returns the exit code."""
    cpus = _parse_cpus(getattr(args, "cpus", None))
    action = getattr(args, "action", None)
    if action == "tune":
        return _tune(cpus, bool(getattr(args, "aslr", False)), args.json)
    if action == "reset":
        return _reset(args.json)
    if getattr(args, "aslr", False):
        raise UserError("--aslr goes with `benchrun system tune`")
    record = SystemRecord(
        collect_metadata(workload_cpus=cpus),
        containment_record(probe_containment()),
        duet_capability(),
        cpu_reservations(),
        tuning_state(),
    )
    if args.json:
        print(json.dumps(record.to_json(), indent=2, allow_nan=False))
        return 0
    _print_human(record, cpus)
    return 0


def _say(line: str) -> None:
    from benchrun.runner.format import printable

    print(f"benchrun: {printable(line)}", file=sys.stderr)


def _tune(cpus: list[int] | None, aslr: bool, as_json: bool) -> int:
    """``system tune``: the changes and what was left on stdout; exit 1 when nothing was
    changed and something needs root, or every write was refused and nothing was tuned
    already."""
    from benchrun.runner.execute.pinning import plan_pinning
    from benchrun.runner.machine.tuning import change_lines, system_tune

    if cpus is None:
        cpus = list(plan_pinning("auto").workload_cpus or ())
        if not cpus:
            raise UserError(
                "pin: auto pins nothing on this machine (one core); give the benchmark CPUs "
                "with --cpus"
            )
    recovered, report = system_tune(cpus, aslr=aslr)
    if as_json:
        doc = {**report.to_dict(), "recovered": recovered.to_dict() if recovered else None}
        print(json.dumps(doc, indent=2))
    if recovered is not None:
        for line in recovered.lines():
            _say(f"a campaign that died had left the machine tuned: {line}")
    if not as_json:
        if report.changes:
            print(f"tuned for CPU {format_cpu_list(cpus)} (`benchrun system reset` restores):")
            for line in change_lines(report.changes):
                print(f"  {line}")
        else:
            print("nothing changed")
        for skip in report.skipped:
            print(f"  left: {skip.setting}: {skip.reason}")
        if report.changes:
            print(f"previous values in {report.journal}")
    blocked = [s for s in report.skipped if s.kind in ("root", "refused")]
    already = any(s.kind == "done" for s in report.skipped)
    if not report.changes and (report.needs_root or (blocked and not already)):
        _say(
            "nothing could be tuned: "
            + "; ".join(f"{s.setting}: {s.reason}" for s in blocked)
            + (" (run it as root)" if report.needs_root else "")
        )
        return 1
    return 0


def _reset(as_json: bool) -> int:
    """``system reset``: exit 1 when the kernel refused a value (kept in the journal)."""
    from benchrun.runner.machine.tuning import system_reset

    report = system_reset()
    if as_json:
        print(json.dumps(report.to_dict() if report else None, indent=2))
    if report is None:
        if not as_json:
            print("nothing to reset: benchrun has not tuned this machine")
        return 0
    for entry, why in report.refused:  # one line each, on stderr; kept in the journal
        _say(
            f"{entry.setting}: the kernel refused {entry.before!r} ({why}); kept in {report.journal}"
        )
    if not as_json:
        for line in report.lines():
            if line.startswith("restored") or " no longer exist" in line:
                print(line)
        if report.removed:
            print(f"removed {report.journal}")
    return 1 if report.refused else 0


@dataclass(frozen=True)
class TuningState:
    """What benchrun keeps tuned now (docs/tuning.md): the journal's path and, when there
    is one, the journal and whether a live process holds it; ``error`` when it cannot be
    read."""

    journal_path: str
    journal: Journal | None = None
    owner_running: bool = False
    error: str | None = None

    def to_json(self) -> dict[str, object]:
        """The ``tuning`` entry of ``system --json``: ``journal`` (the path), ``tuned``
        (the journal, null without one), then ``error``, or ``owner`` and
        ``owner_running``."""
        out: dict[str, object] = {"journal": self.journal_path, "tuned": None}
        if self.error is not None:
            out["error"] = self.error
        elif self.journal is not None:
            out["tuned"] = self.journal.to_dict()
            out["owner"] = self.journal.owner.describe()
            out["owner_running"] = self.owner_running
        return out

    def lines(self) -> list[str]:
        """The journal as lines: who tuned, each change (before -> after)."""
        from benchrun.runner.machine.tuning import change_lines

        if self.error is not None:
            return [f"unknown: {self.error}"]
        journal = self.journal
        if journal is None:
            return [f"nothing (no journal at {self.journal_path})"]
        if journal.owner.kind == "campaign" and not self.owner_running:
            how = (
                "that campaign ended without restoring: the next benchrun run, the daemon's "
                "start or `benchrun system reset` restores"
            )
        elif journal.owner.kind == "campaign":
            how = "restored when that campaign ends"
        else:
            how = "`benchrun system reset` restores"
        lines = [f"by {journal.owner.describe()}, journal {self.journal_path}; {how}"]
        lines += [f"{line}" for line in change_lines(list(journal.entries))]
        return lines


def tuning_state() -> TuningState:
    """What benchrun keeps tuned now (:class:`TuningState`)."""
    from benchrun.runner.machine.tuning import current_journal
    from benchrun.runner.machine.tuning_journal import journal_dir

    directory = journal_dir()
    path = str(directory / "tuning.json")
    try:
        journal, live = current_journal(directory)
    except UserError as exc:
        return TuningState(path, error=exc.message)
    return TuningState(path, journal, live)


@dataclass(frozen=True)
class CpuReservations:
    """The CPU reservations of benchrun runs on this machine (docs/reservation.md): the
    lock directory and each live run's record (pid, user, campaign, CPUs, start time)."""

    directory: str
    runs: tuple[Holder, ...]

    def to_json(self) -> dict[str, object]:
        """The ``cpu_reservations`` entry of ``system --json``."""
        return {
            "directory": self.directory,
            "runs": [
                {
                    "pid": h.pid,
                    "user": h.user,
                    "campaign": h.campaign,
                    "cpus": list(h.cpus),
                    "started": h.started,
                }
                for h in self.runs
            ],
        }


def cpu_reservations() -> CpuReservations:
    """The reservations of this machine's runs now (:class:`CpuReservations`)."""
    from benchrun.runner.execute.reservation import active_runs, lock_directory

    directory = lock_directory()
    return CpuReservations(str(directory), tuple(active_runs(directory)))


@dataclass(frozen=True)
class SystemRecord:
    """What ``benchrun system`` prints: the machine's record
    (runner/machine/metadata.py ``collect_metadata``, the campaigns' metadata) and this
    machine's containment of rounds (``kind``, ``detail``, ``wait_source``), duets, CPU
    reservations and tuning."""

    machine: Mapping[str, object]
    containment: Mapping[str, str]
    duet: DuetCapability
    reservations: CpuReservations
    tuning: TuningState

    def to_json(self) -> dict[str, object]:
        """``system --json``: the machine's record with ``containment``, ``duet``,
        ``cpu_reservations`` and ``tuning`` added."""
        return {
            **self.machine,
            "containment": dict(self.containment),
            "duet": self.duet.to_json(),
            "cpu_reservations": self.reservations.to_json(),
            "tuning": self.tuning.to_json(),
        }


def _print_human(record: SystemRecord, cpus: list[int] | None) -> None:
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    from benchrun.runner.ui.terminal import SafeConsole

    console = SafeConsole()
    current: Table | None = None
    meta = record.machine
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
    console.print(f"  {record.containment['detail']}")
    source = record.containment["wait_source"]
    console.print(
        "  each round's CPU wait (contended rounds, docs/contention.md): "
        + (source if source != "none" else "not measured on this machine")
    )

    console.print()
    console.print(Text("Duets (docs/duet.md)", style="bold"))
    for line in record.duet.lines():
        console.print(f"  {line}")

    console.print()
    reservations = record.reservations
    console.print(Text("CPU reservations (docs/reservation.md)", style="bold"))
    console.print(f"  lock directory: {reservations.directory}")
    if not reservations.runs:
        console.print("  none: no other benchrun run holds CPUs")
    for run in reservations.runs:
        cpus_text = format_cpu_list(list(run.cpus)) if run.cpus else "none (pin: none)"
        console.print(
            Text(f"  pid {run.pid} ({run.user}): CPUs {cpus_text}, campaign {run.campaign}")
        )

    console.print()
    console.print(Text("Tuned by benchrun (docs/tuning.md)", style="bold"))
    for line in record.tuning.lines():
        console.print(Text(f"  {line}"), soft_wrap=True)

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
