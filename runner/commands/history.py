"""``benchrun history DIR...``: each workload over the revisions its campaigns measured, and
where it changed (docs/history.md).

Per series (one workload of one experiment on one machine: runner/results/history.py), the
estimate and CI of each finished campaign in revision order, then the change points
(stats/changepoint.py: the first revision of each new level, the step as a ratio with its
CI, its p-value). ``--json`` prints the same as one document (a ``changes`` list per series
whose entries carry ``revision`` and the ratio).

Exit codes with ``--fail-on-change PCT`` (for CI): 1 when the latest revision of a series is
significantly worse than the level of the revisions before it by more than PCT; 3 when that
cannot be told (too few revisions, no CI, or a change that may exceed PCT without being
significant); else 0. 2: bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from benchrun.runner.commands.compare import EXIT_REGRESSION, EXIT_UNDECIDED, fraction
from benchrun.runner.ui.display import stdout_console

if TYPE_CHECKING:
    from benchrun.runner.results.history import HistorySeries, LatestCheck
    from benchrun.stats.changepoint import ChangePoints


class Analysed(NamedTuple):
    """One series of the history, its change points (None: too few campaigns with a CI)
    and, with ``--fail-on-change``, the latest revision's check (None without)."""

    series: HistorySeries
    result: ChangePoints | None
    gate: LatestCheck | None


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "history",
        help="each workload over the revisions its campaigns measured; where it changed",
        description=__doc__.split("\n\n")[0] + " Campaigns are tagged with `benchrun run "
        "--revision REV` or git's describe of settings.repository (docs/history.md). "
        "--html FILE also writes the history page: a figure per series over the revisions "
        "(CIs, change points with their ratio, outlying campaigns) and its numbers.",
    )
    p.add_argument("dirs", nargs="+", metavar="DIR", type=Path,
                   help="campaign directories, their benchrun.db, or benchrun JSON exports "
                   "(benchrun export)")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument(
        "--fail-on-change",
        type=fraction,
        metavar="PCT",
        help="CI gate: exit 1 when the latest revision is significantly worse than the level "
        "before it by more than PCT (e.g. 5%%), 3 when that cannot be told",
    )
    p.add_argument("--alpha", type=float, default=0.01,
                   help="family error rate of each history's change points, and the gate's "
                   "level (default 0.01)")  # fmt: skip
    p.add_argument(
        "--tau",
        type=fraction,
        metavar="PCT",
        help="campaign-to-campaign sd on this machine (e.g. 0.5%%); default: estimated "
        "from each history (said in the output)",
    )
    p.add_argument(
        "--html",
        metavar="FILE",
        type=Path,
        help="also write the history page to FILE: one self-contained HTML file (offline, "
        "figures embedded) with each series' estimates over the revisions, their CIs, the "
        "change points and outlying campaigns marked, and the numbers in tables",
    )
    p.add_argument("--min-change", type=fraction, default=0.0, metavar="PCT",
                   help="smallest change reported (default 0: every significant one)")  # fmt: skip
    p.set_defaults(func=main)


def _sources(paths: list[Path]) -> tuple[list[Path], list[tuple[str, object]]]:
    """The stores (campaign directories, ``benchrun.db`` files) and the benchrun JSON
    exports (read within the import size cap, docs/limits.md) among ``paths``."""
    from benchrun.runner.errors import UserError
    from benchrun.runner.importers.readfile import read_import_text

    stores: list[Path] = []
    exports: list[tuple[str, object]] = []
    for path in paths:
        if path.is_file():
            with path.open("rb") as f:
                head = f.read(16)
            if not head.startswith(b"SQLite format 3"):
                text = read_import_text(path, "a benchrun export")
                try:
                    exports.append((str(path), json.loads(text)))
                except json.JSONDecodeError as exc:
                    raise UserError(
                        f"{path}: not a benchrun store or JSON export ({exc})"
                    ) from None
                continue
        stores.append(path)
    return stores, exports


def _analyse(args: argparse.Namespace) -> list[Analysed]:
    """Every series with its change points and, with ``--fail-on-change``, the gate."""
    from benchrun.runner.results.history import check_latest, find_series_changes, load_history

    if not 0 < args.alpha < 0.5:
        from benchrun.runner.errors import UserError

        raise UserError(f"--alpha {args.alpha}: must be in (0, 0.5)")
    out = []
    stores, exports = _sources(args.dirs)
    for s in load_history(stores, exports):
        result = find_series_changes(s, args.tau, args.alpha, args.min_change)
        gate = None
        if args.fail_on_change is not None:
            start = result.changes[-1].index if result and result.changes else 0
            tau = result.tau if result is not None else (args.tau or 0.0)
            gate = check_latest(s, start, tau, args.fail_on_change, args.alpha)
        out.append(Analysed(s, result, gate))
    return out


def _print(items: list[Analysed]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from benchrun.runner.results.history import change_word

    console = stdout_console()
    for item in items:
        s, r = item.series, item.result
        console.print(
            f"[bold]{escape(s.workload)}[/] of {escape(s.experiment)} on {escape(s.machine)}: "
            f"{len(s.points)} campaigns in {s.ordered_by}"
        )
        table = Table(header_style="bold")
        for col in ("revision", "date", f"estimate [{s.unit}]", "CI", "change"):
            table.add_column(col)
        starts = {c.index: c for c in r.changes} if r else {}
        outliers = set(r.outliers) if r else set()
        for i, p in enumerate(s.points):
            mark = ""
            if i in starts:
                c = starts[i]
                mark = f"new level: {c.ratio:.3f}x {change_word(c.ratio, s.direction)}"
            elif i in outliers:
                mark = "outlying campaign (not a level)"
            ci = (
                "-"
                if p.ci_low is None or p.ci_high is None
                else f"[{p.ci_low:.4g}, {p.ci_high:.4g}]"
            )
            table.add_row(escape(p.label), p.date, f"{p.mean:.4g}", ci, mark)
        console.print(table)
        if r is None:
            console.print("not analysed: change points need 3 or more campaigns, each with a CI")
        else:
            tau = f"tau {100 * r.tau:.2g} % ({'estimated' if r.tau_estimated else 'given'})"
            if not r.changes:
                console.print(f"no change found (alpha {r.alpha:g} over this history; {tau})")
            for c in r.changes:
                console.print(
                    f"change at {escape(s.points[c.index].label)}: {c.ratio:.4f}x "
                    f"[{c.ratio_low:.4f}, {c.ratio_high:.4f}] {change_word(c.ratio, s.direction)} "
                    f"(p {c.p_value:.2g}; {c.n_before} revisions before, {c.n_after} after; {tau})"
                )
        gate = item.gate
        if gate is not None:
            change = "-" if gate.change is None else f"{100 * gate.change:+.2f} %"
            console.print(
                f"latest {escape(gate.revision)}: {gate.verdict} ({change}; {gate.reason})"
            )
        console.print()


def _write_page(items: list[Analysed], out: Path) -> None:
    """The history page of the series and change points ``items`` (the ones the text and
    ``--json`` print), written to ``out``."""
    import time

    from benchrun.runner.report.render import write_history_page

    t0 = time.perf_counter()
    size = write_history_page([(i.series, i.result) for i in items], out)
    print(f"benchrun: wrote {out} ({size / 1024:.0f} KiB) in {time.perf_counter() - t0:.1f} s",
          file=sys.stderr)  # fmt: skip


def main(args: argparse.Namespace) -> int:
    items = _analyse(args)
    if args.html is not None:
        _write_page(items, args.html)
    if args.json:
        from benchrun.runner.report.history import series_doc

        docs = [series_doc(i.series, i.result, i.gate) for i in items]
        print(json.dumps({"series": docs}, indent=2, allow_nan=False, default=str))
    else:
        _print(items)
    if args.fail_on_change is None:
        return 0
    gates = [(i.series, i.gate) for i in items if i.gate is not None]
    verdicts = [g.verdict for _, g in gates]
    worst = [(s, g) for s, g in gates if g.verdict == "regression"]
    if worst:
        names = ", ".join(f"{s.workload} ({100 * (g.change or 0.0):+.1f} %)" for s, g in worst)
        print(
            f"benchrun: the latest revision is worse beyond the threshold: {names}", file=sys.stderr
        )
        return EXIT_REGRESSION
    if "cannot tell" in verdicts:
        print("benchrun: the latest revision cannot be told from the level before it for "
              "some workload (see 'latest')", file=sys.stderr)  # fmt: skip
        return EXIT_UNDECIDED
    return 0
