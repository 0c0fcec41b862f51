"""One entry point for every format: :func:`write_report` (used by ``benchrun report``)."""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

from benchrun.runner.errors import UserError
from benchrun.runner.files import atomic_write_text
from benchrun.runner.report import FORMATS

matplotlib.use("Agg")


def _write(path: Path, text: str) -> int:
    """Write atomically (temporary file + rename); returns the size in bytes."""
    try:
        return atomic_write_text(path, text)
    except OSError as exc:
        raise UserError(f"{path}: cannot write the report ({exc.strerror or exc})") from None


def default_out(db: Path, fmt: str) -> Path | None:
    """``report.html``/``report.md`` in the campaign directory; None (stdout) otherwise."""
    if fmt in ("html", "md"):
        return db.parent / f"report.{fmt}"
    return None


def write_report(
    campaign: str | Path,
    fmt: str,
    *,
    out: str | Path | None = None,
    campaign_id: int | None = None,
    system_factor: str | None = None,
    with_plots: bool = True,
    raw: bool = False,
) -> tuple[Path | None, int]:
    """Build the report of ``campaign`` and write it as ``fmt``; returns (path, bytes).

    ``out`` None: HTML/Markdown go to ``report.<fmt>`` in the campaign directory, JSON/CSV
    to stdout (path None); ``"-"`` is stdout for any format (Markdown then without figures).
    """
    from benchrun.runner.report.document import build_report
    from benchrun.runner.report.model import load_campaign

    if fmt not in FORMATS:
        raise UserError(f"unknown report format {fmt!r}; choose from {', '.join(FORMATS)}")
    model = load_campaign(campaign, campaign_id)
    target: Path | None
    if out is None:
        target = default_out(model.database, fmt)
    else:
        target = None if str(out) == "-" else Path(out)
    plots = with_plots and fmt in ("html", "md") and not (fmt == "md" and target is None)
    report = build_report(model, with_plots=plots, system_factor=system_factor)
    if fmt == "html":
        from benchrun.runner.report.html import render_html

        text = render_html(report)
    elif fmt == "md":
        from benchrun.runner.report.markdown import render_markdown

        figures = None if target is None else target.with_name(target.stem + "_files")
        text = render_markdown(report, figures)
    elif fmt == "json":
        from benchrun.runner.report.tabular import render_json

        text = render_json(report, raw=raw)
    else:
        from benchrun.runner.report.tabular import render_csv

        text = render_csv(report)
    if target is None:
        sys.stdout.write(text)
        return None, len(text.encode())
    return target, _write(target, text)
