"""``benchrun compare OLD NEW``: per workload faster, slower, equivalent or undecided.

OLD and NEW are campaign directories or databases, benchrun exports, or hyperfine / pyperf
/ Google Benchmark / CSV files (runner/report/compare.py has the statistics).
``--fail-on-regression 5%`` exits 1 when a workload got significantly slower by more than
5 %, for CI pipelines; workloads on one side only are listed, never dropped silently.
"""

from __future__ import annotations

import argparse
import json

from rich.markup import escape
from rich.table import Table

from runner.display import format_value, stdout_console
from runner.errors import UserError

#: exit code when --fail-on-regression found a regression
EXIT_REGRESSION = 1


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
        "correction, TOST for equivalence).",
    )
    p.add_argument("old", help="the reference (before)")
    p.add_argument("new", help="the candidate (after)")
    p.add_argument(
        "--fail-on-regression",
        type=fraction,
        metavar="PCT",
        help="exit 1 when a workload is significantly slower by more than PCT (e.g. 5%%)",
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
    p.set_defaults(func=main)


def level_conf(text: str) -> float:
    value = fraction(text)
    if not 0.5 <= value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0.5 and 1")
    return value


def _ratio(r: float | None, lo: float | None, hi: float | None) -> str:
    if r is None:
        return "-"
    if lo is None or hi is None:
        return f"{r:.4g}"
    return f"{r:.4g} [{lo:.4g}, {hi:.4g}]"


def _est(mean: float, ci: tuple[float | None, float | None], unit: str) -> str:
    if mean != mean:  # NaN: no data on this side
        return "-"
    lo, hi = ci
    if lo is None or hi is None:
        return format_value(mean, unit)
    return f"{format_value(mean, unit)} ± {format_value((hi - lo) / 2, unit)}"


STYLE = {"faster": "green", "slower": "red", "equivalent": "cyan"}


def main(args: argparse.Namespace) -> int:
    from runner.report.compare import compare_sides, load_side

    old, new = load_side(args.old), load_side(args.new)
    for side, path in ((old, args.old), (new, args.new)):
        if not side.entries and not side.empty:
            raise UserError(f"{path}: no workload to compare")
    cmp = compare_sides(old, new, alpha=args.alpha, margin=args.margin,
                        confidence=args.confidence, threshold=args.fail_on_regression)  # fmt: skip
    if args.json:
        print(json.dumps(cmp.to_dict(), indent=2, allow_nan=False))
    else:
        console = stdout_console()
        console.print(f"old: [bold]{escape(old.label)}[/]   new: [bold]{escape(new.label)}[/]")
        pc = f"{100 * args.confidence:g} %"
        table = Table(header_style="bold")
        for col in ("workload", "old", "new", f"new/old [{pc} CI]", "change", "Holm p",
                    "TOST p", "verdict", "note"):  # fmt: skip
            table.add_column(col)
        for r in cmp.rows:
            v = r.verdict + (" [bold](regression)[/]" if r.regression else "")
            table.add_row(
                escape(r.name),
                _est(r.old_mean, r.old_ci, r.unit),
                _est(r.new_mean, r.new_ci, r.unit),
                _ratio(r.ratio, r.ratio_low, r.ratio_high),
                "-" if r.change is None else f"{100 * r.change:+.3g} %",
                "-" if r.welch_p_holm is None else f"{r.welch_p_holm:.3g}",
                "-" if r.tost_p is None else f"{r.tost_p:.3g}",
                f"[{STYLE.get(r.verdict, 'yellow')}]{v}[/]",
                escape(r.note),
            )
        console.print(table)
        console.print(
            "change: relative change of the mean in the worse direction (+ = worse). "
            f"Welch on subsession means, Holm over {sum(r.welch_p is not None for r in cmp.rows)} "
            f"workloads, alpha {args.alpha:g}; equivalent = TOST within ±{100 * args.margin:g} %."
        )
        o = cmp.overall
        if o is not None:
            console.print(
                f"overall: ratio of geometric means new/old over {len(o['workloads'])} workloads "
                f"{o['estimate']:.4g} [{pc} CI {o['low']:.4g}, {o['high']:.4g}] (bootstrap of "
                "subsession means within each workload)"
            )
        for label, names in (("only in old", cmp.only_old), ("only in new", cmp.only_new)):
            if names:
                console.print(f"[yellow]{label}:[/] {escape(', '.join(names))}")
        for note in old.notes + new.notes:
            console.print(f"note: {escape(note)}")
        if args.fail_on_regression is not None:
            pct = f"{100 * args.fail_on_regression:g} %"
            if cmp.regressions:
                console.print(
                    f"[red]regression[/]: {escape(', '.join(r.name for r in cmp.regressions))} "
                    f"significantly slower by more than {pct}"
                )
            else:
                console.print(f"no workload significantly slower by more than {pct}")
    if args.fail_on_regression is not None and cmp.regressions:
        return EXIT_REGRESSION
    return 0
