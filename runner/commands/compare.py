"""``benchrun compare OLD NEW``: per workload faster, slower, equivalent or undecided.

OLD and NEW are campaign directories or databases, benchrun exports, or hyperfine / pyperf
/ Google Benchmark / CSV files (runner/report/compare.py has the statistics). The headline
of each workload is the ratio new/old with its CI, read like hyperfine: ``1.062x [1.041,
1.083] slower (Welch, 10 vs 10 processes)``.

Exit codes with ``--fail-on-regression 5%`` (for CI pipelines):

- 0: no regression and every compared workload decided (faster, slower within 5 %, or
  equivalent); with ``--allow-undecided`` also when some are undecided;
- 1 (:data:`EXIT_REGRESSION`): a workload got significantly slower by more than 5 %;
- 2: bad input (a usage error or a file benchrun cannot read), one line on stderr;
- 3 (:data:`EXIT_UNDECIDED`): no regression, but a workload is undecided (or not
  comparable: no data or another unit on one side, or the two sides' conditions differ
  materially, docs/conditions.md); one line on stderr names each with its reason (too few
  processes, how many per side would decide, or the differences).

Both sides' conditions (machine fingerprint, load, contended rounds, level shifts, drift;
runner/results/conditions.py) are printed with every comparison; a material difference
makes the workloads it concerns "not comparable: <reasons>" unless
``--allow-different-conditions``.

Without ``--fail-on-regression`` the exit code is 0 (2 on bad input, including two sides
with no workload in common). Workloads on one side only are listed, never dropped
silently, and do not change the exit code.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from benchrun.runner.errors import UserError
from benchrun.runner.ui.display import stdout_console

if TYPE_CHECKING:
    from rich.console import Console

    from benchrun.runner.report.compare import Comparison, Row

#: exit code when --fail-on-regression found a regression
EXIT_REGRESSION = 1
#: exit code when --fail-on-regression found no regression but an undecided workload
#: (2 is taken: bad input, runner/errors.py)
EXIT_UNDECIDED = 3


def fraction(text: str) -> float:
    """``5%``, ``5 %`` or ``0.05`` -> 0.05 (argparse type)."""
    t = str(text).strip()
    try:
        value = float(t[:-1].strip()) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a percentage (5%) or fraction (0.05)"
        ) from None
    if not 0 <= value < 10:
        raise argparse.ArgumentTypeError(f"{text!r} is out of range")
    return value


def level(text: str) -> float:
    value = fraction(text)
    if not 0 < value < 0.5:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 0.5")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="compare two campaigns or exports: faster, slower or equivalent per workload",
        description="Compare OLD and NEW (campaign directories or benchrun.db files, benchrun "
        "exports, or hyperfine / pyperf / Google Benchmark / CSV files) workload by workload: "
        "old and new estimate, ratio new/old with its CI, and a verdict (Welch with Holm's "
        "correction, TOST for equivalence). pyperf, hyperfine and Google Benchmark files are "
        "compared over their processes (runs, repetitions): each process mean is one "
        "observation (docs/imported-data.md).",
    )
    p.add_argument("old", help="the reference (before)")
    p.add_argument("new", help="the candidate (after)")
    p.add_argument(
        "--fail-on-regression",
        type=fraction,
        metavar="PCT",
        help="CI gate: exit 1 when a workload is significantly slower by more than PCT "
        "(e.g. 5%%); exit 3 when none is, but a workload is undecided (too few processes, "
        "or neither different nor equivalent) or not comparable (the two sides' conditions "
        "differ materially: docs/conditions.md); 2 means bad input",
    )
    p.add_argument(
        "--allow-undecided",
        action="store_true",
        help="with --fail-on-regression: exit 0 instead of 3 when workloads are undecided",
    )
    p.add_argument("--alpha", type=level, default=0.01, help="test level (default 0.01)")
    p.add_argument(
        "--margin",
        type=fraction,
        default=0.01,
        help="equivalence margin, relative to the old mean (default 1%%)",
    )
    p.add_argument("--confidence", type=level_conf, default=0.95, help="CI level (default 0.95)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--allow-different-conditions",
        action="store_true",
        help="keep the verdicts when the two sides' conditions differ materially (another "
        "CPU, microcode, kernel, governor, SMT, benchrun or Python version, contended "
        "rounds, a level shift or a large drift); the differences are still printed. "
        "Without it such workloads are 'not comparable' (exit 3 with "
        "--fail-on-regression; docs/conditions.md)",
    )
    p.add_argument(
        "--normalise-by-control",
        action="store_true",
        help="decide on each workload's ratio divided by the ratio of the control workload "
        "(settings.control: a workload that does not change between campaigns), which "
        "cancels a speed change of the whole machine between the campaigns; without it "
        "the divided ratio is printed beside the verdict",
    )
    p.add_argument(
        "--campaign-level",
        action="store_true",
        help="decide on one mean per campaign: every finished campaign of the same "
        "experiment in each side's store, Welch on their log means (n - 1 degrees of "
        "freedom per side); needs at least 2 campaigns per side",
    )
    p.set_defaults(func=main)


def level_conf(text: str) -> float:
    value = fraction(text)
    if not 0.5 <= value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0.5 and 1")
    return value


def _est(r: Row, side: str) -> str:
    """One side's estimate in the workload's display unit: "37.59 ms ± 1.991 ms" (both
    sides of a workload share the unit, chosen from the old mean); an interval whose
    independence is not certified (docs/methods.md §4.1) ends in "(uncertified)" and its
    note is printed under the table (:func:`_interval_notes`)."""
    return str(r.estimate_text(side, mark="uncertified"))


def _interval_notes(rows: list[Row]) -> list[str]:
    """One line per uncertified interval in the table: workload, side and what it assumes."""
    return [
        f"{r.name} ({side}): {note}"
        for r in rows
        for side, note in (("old", r.old_interval_note), ("new", r.new_interval_note))
        if note
    ]


STYLE = {"faster": "green", "slower": "red", "equivalent": "cyan"}


def undecided_line(rows: list[Row]) -> str:
    """One line for stderr: each undecided workload and why (``Row.reason``)."""
    return "undecided: " + "; ".join(f"{r.name}: {r.reason or r.verdict}" for r in rows)


def main(args: argparse.Namespace) -> int:
    """Compare OLD and NEW, print the table (or JSON) and return the exit code."""
    from benchrun.runner.report.compare import compare_sides, load_side

    old, new = load_side(args.old), load_side(args.new)
    for side, path in ((old, args.old), (new, args.new)):
        if not side.entries and not side.empty:
            raise UserError(f"{path}: no workload to compare")
    names_old, names_new = set(old.entries) | set(old.empty), set(new.entries) | set(new.empty)
    if not names_old & names_new:
        raise UserError(
            f"no workload in common: {args.old} has {_names(names_old)}, {args.new} has "
            f"{_names(names_new)}; compare matches workloads by name"
        )
    cmp = compare_sides(
        old,
        new,
        alpha=args.alpha,
        margin=args.margin,
        confidence=args.confidence,
        threshold=args.fail_on_regression,
        allow_different_conditions=args.allow_different_conditions,
        normalise_by_control=args.normalise_by_control,
        campaign_level=args.campaign_level,
    )
    if args.normalise_by_control and not cmp.normalise_by_control:
        raise UserError(f"--normalise-by-control: {cmp.control_note}")
    if args.json:
        print(json.dumps(cmp.to_dict(), indent=2, allow_nan=False))
    else:
        _print(cmp, args)
    if args.fail_on_regression is None:
        return 0
    if cmp.undecided:
        tail = (
            "" if args.allow_undecided else f" (exit {EXIT_UNDECIDED}; --allow-undecided accepts)"
        )
        print(f"benchrun: {undecided_line(cmp.undecided)}{tail}", file=sys.stderr)
    if cmp.regressions:
        return EXIT_REGRESSION
    if cmp.undecided and not args.allow_undecided:
        return EXIT_UNDECIDED
    return 0


def _names(names: set[str], shown: int = 5) -> str:
    """``a, b, c`` (sorted), ``... and N more`` past ``shown`` names."""
    out = sorted(names)
    more = f" and {len(out) - shown} more" if len(out) > shown else ""
    return ", ".join(out[:shown]) + more


def _note(r: Row) -> str:
    """The note column: the reason of an undecided row (unless its headline has it already,
    when there is no ratio) and the tests' notes."""
    parts = [r.reason] if r.reason and r.ratio is not None else []
    if r.note and r.note != r.reason:
        parts.append(r.note)
    return "; ".join(parts)


def _print(cmp: Comparison, args: argparse.Namespace) -> None:
    """The terminal view: the headline ratio per workload first, then the details."""
    old, new = cmp.old, cmp.new
    console = stdout_console()
    console.print(f"old: [bold]{escape(old.label)}[/]   new: [bold]{escape(new.label)}[/]")
    pc = f"{100 * args.confidence:g} %"
    table = Table(header_style="bold")
    for col in (
        "workload",
        f"new vs old [{pc} CI]",
        "old",
        "new",
        "change",
        "Holm p",
        "TOST p",
        "note",
    ):
        table.add_column(col)
    for r in cmp.rows:
        v = r.headline + (" [bold](regression)[/]" if r.regression else "")
        table.add_row(
            escape(r.name),
            f"[{STYLE.get(r.verdict, 'yellow')}]{v}[/]",
            _est(r, "old"),
            _est(r, "new"),
            "-" if r.change is None else f"{100 * r.change:+.3g} %",
            "-" if r.welch_p_holm is None else f"{r.welch_p_holm:.3g}",
            "-" if r.tost_p is None else f"{r.tost_p:.3g}",
            escape(_note(r)),
        )
    console.print(table)
    for line in _interval_notes(cmp.rows):
        console.print(escape(line), soft_wrap=True)
    console.print(
        "new vs old: how many times slower or faster new is than old, with its CI (the "
        "ratio of the means new/old, turned around when new is the smaller, as `run` states "
        "it; delta method on the log scale; --json has new/old as is); change: "
        "relative change of the mean in the worse direction (+ = worse). Welch on the "
        f"independent units (processes, repetitions or subsession means), Holm over "
        f"{sum(r.welch_p is not None for r in cmp.rows)} workloads, alpha {args.alpha:g}; "
        f"equivalent = TOST within ±{100 * args.margin:g} %."
    )
    g = cmp.geomean
    if g is not None:
        o = g.interval
        console.print(
            f"overall: ratio of geometric means new/old over {len(g.workloads)} workloads "
            f"{o.estimate:.4g} [{pc} CI {o.low:.4g}, {o.high:.4g}] (bootstrap of "
            "the independent units within each workload)"
        )
    for label, names in (("only in old", cmp.only_old), ("only in new", cmp.only_new)):
        if names:
            console.print(f"[yellow]{label}:[/] {escape(', '.join(names))}")
    for note in old.notes + new.notes:
        console.print(f"note: {escape(note)}")
    _print_control(console, cmp, pc)
    _print_conditions(console, cmp)
    if args.fail_on_regression is not None:
        pct = f"{100 * args.fail_on_regression:g} %"
        if cmp.regressions:
            console.print(
                f"[red]regression[/]: {escape(', '.join(r.name for r in cmp.regressions))} "
                f"significantly slower by more than {pct}"
            )
        else:
            console.print(f"no workload significantly slower by more than {pct}")


def _print_control(console: Console, cmp: Comparison, pc: str) -> None:
    """One line per workload divided by the control's ratio (unless the verdicts use it)."""
    if cmp.control is None:
        return
    if cmp.control_note:
        console.print(escape(cmp.control_note))
        return
    normalised = [(r, c.test) for r in cmp.rows if (c := r.control_ratio) is not None]
    if cmp.normalise_by_control:
        console.print(
            f"verdicts on each ratio divided by control {escape(cmp.control)}'s ratio "
            "(--normalise-by-control)"
        )
        return
    for r, n in normalised:
        console.print(
            f"divided by control {escape(cmp.control)}: {escape(r.name)} "
            f"{n.ratio:.3f}x [{pc} CI {n.low:.3f}, {n.high:.3f}]",
            soft_wrap=True,
        )


def _print_conditions(console: Console, cmp: Comparison) -> None:
    """Both sides' conditions, one line each, their differences, and the assumption
    about campaign-to-campaign variation."""
    cc = cmp.conditions
    if cc is not None:
        for line in cc.lines():
            console.print(f"conditions {escape(line)}", soft_wrap=True)
        if cc.material:
            tail = (
                "verdicts kept (--allow-different-conditions)"
                if cmp.allow_different_conditions
                else "the workloads they concern are not comparable "
                "(--allow-different-conditions keeps the verdicts; docs/conditions.md)"
            )
            console.print(f"[yellow]conditions differ materially[/]: {tail}")
    console.print(escape(cmp.assumption()), soft_wrap=True)
