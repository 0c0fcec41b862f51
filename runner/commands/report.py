"""``benchrun report [DIR]``: a document to publish (HTML, Markdown, JSON, CSV).

HTML (default) is one self-contained file with the figures embedded; Markdown writes its
figures into ``<stem>_files/`` beside it. Both default to ``report.html``/``report.md``
in the campaign directory; JSON and CSV go to stdout unless ``--out`` is given.
Contents and methods: docs/report.md; statistics: docs/methods.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from benchrun.runner.commands.export import add_campaign_option
from benchrun.runner.commands.show import add_secrets_option
from benchrun.runner.errors import UserError
from benchrun.runner.report import FORMATS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="write a report to publish: HTML (default), Markdown, JSON or CSV",
        description="Write the report of a stored campaign: the comparisons (every "
        "comparison with a baseline and every compared pair, with its ratio and CI, first), "
        "the headline ranking with CIs and verdicts, per-workload plots, the machine, a "
        "methods paragraph and Hoefler & Belli's twelve rules (and a History section when the "
        "store's campaigns measured several revisions). Every workload's values are "
        "shown in one unit chosen from its mean; JSON and CSV keep the base unit (unit) "
        "and name the shown one (display_unit). DIR is a campaign directory or its "
        "benchrun.db (default: the only campaign under results/).",
    )
    p.add_argument(
        "campaign",
        nargs="?",
        default="results",
        metavar="DIR",
        help="campaign directory or database (default: results)",
    )
    add_campaign_option(p)
    p.add_argument("--format", default="html", help=f"one of {', '.join(FORMATS)} (default html)")
    p.add_argument("--out", "-o", help="output file ('-' for stdout)")
    p.add_argument(
        "--systems",
        metavar="FACTOR",
        help="matrix factor naming the systems of a suite (default: system, machine, version...)",
    )
    p.add_argument("--no-plots", action="store_true", help="skip the figures (faster)")
    p.add_argument("--raw", action="store_true", help="JSON: include every steady reading")
    add_secrets_option(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    fmt = str(args.format).lower()
    if fmt == "markdown":
        fmt = "md"
    if fmt not in FORMATS:
        raise UserError(f"unknown report format {args.format!r}; choose from {', '.join(FORMATS)}")
    from benchrun.runner.report.render import write_report

    targets = [args.campaign]
    where = Path(args.campaign).expanduser()
    if where.is_dir() and not (where / "benchrun.db").is_file():
        found = sorted(where.glob("*/benchrun.db"))
        # a directory of several campaigns, as `show` lists them: a report each, beside it
        if len(found) > 1 and args.out is None and fmt in ("html", "md"):
            targets = [str(f.parent) for f in found]
    for target in targets:
        t0 = time.perf_counter()
        path, size = write_report(
            target,
            fmt,
            out=args.out,
            campaign_id=args.campaign_id,
            system_factor=args.systems,
            with_plots=not args.no_plots,
            raw=args.raw,
            include_secrets=args.include_secrets,
        )
        if path is not None:
            print(
                f"benchrun: wrote {path} ({size / 1024:.0f} KiB) in "
                f"{time.perf_counter() - t0:.1f} s",
                file=sys.stderr,
            )
    return 0
