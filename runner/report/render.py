"""One entry point for every format: :func:`write_report` (used by ``benchrun report``)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

from benchrun.runner.errors import UserError
from benchrun.runner.files import atomic_write_text
from benchrun.runner.report import FORMATS
from benchrun.runner.report.document import Report
from benchrun.runner.safefs import PUBLIC_FILE_MODE

if TYPE_CHECKING:
    from benchrun.runner.results.history import HistorySeries
    from benchrun.stats.changepoint import ChangePoints

matplotlib.use("Agg")


def _write(path: Path, text: str, what: str = "the report") -> int:
    """Write atomically (temporary file + rename); returns the size in bytes. A report is
    meant to be handed around: mode 0644 by choice (docs/security.md), whatever the umask."""
    try:
        return atomic_write_text(path, text, mode=PUBLIC_FILE_MODE)
    except OSError as exc:
        raise UserError(f"{path}: cannot write {what} ({exc.strerror or exc})") from None


@dataclass(frozen=True)
class Renderer:
    """How one format is written: ``render(report, target, raw)`` gives the text,
    ``to_file`` says whether it goes to ``report.<fmt>`` in the campaign directory by
    default (else stdout), ``plots`` whether it embeds figures."""

    render: Callable[[Report, Path | None, bool], str]
    to_file: bool
    plots: bool


def _html(report: Report, target: Path | None, raw: bool) -> str:
    from benchrun.runner.report.html import render_html

    return render_html(report)


def _markdown(report: Report, target: Path | None, raw: bool) -> str:
    from benchrun.runner.report.markdown import render_markdown

    return render_markdown(
        report, None if target is None else target.with_name(target.stem + "_files")
    )


def _json(report: Report, target: Path | None, raw: bool) -> str:
    from benchrun.runner.report.tabular import render_json

    return render_json(report, raw=raw)


def _csv(report: Report, target: Path | None, raw: bool) -> str:
    from benchrun.runner.report.tabular import render_csv

    return render_csv(report)


#: format -> renderer; the keys are :data:`runner.report.FORMATS`, in that order
RENDERERS: dict[str, Renderer] = {
    "html": Renderer(_html, to_file=True, plots=True),
    "md": Renderer(_markdown, to_file=True, plots=True),
    "json": Renderer(_json, to_file=False, plots=False),
    "csv": Renderer(_csv, to_file=False, plots=False),
}


def default_out(db: Path, fmt: str) -> Path | None:
    """``report.<fmt>`` in the campaign directory for formats written to a file (HTML,
    Markdown); None (stdout) for the others."""
    return db.parent / f"report.{fmt}" if RENDERERS[fmt].to_file else None


def write_report(
    campaign: str | Path,
    fmt: str,
    *,
    out: str | Path | None = None,
    campaign_id: int | None = None,
    system_factor: str | None = None,
    with_plots: bool = True,
    raw: bool = False,
    include_secrets: bool = False,
) -> tuple[Path | None, int]:
    """Build the report of ``campaign`` and write it as ``fmt``; returns (path, bytes).

    ``out`` None: HTML/Markdown go to ``report.<fmt>`` in the campaign directory, JSON/CSV
    to stdout (path None); ``"-"`` is stdout for any format (Markdown then without figures).
    Secret env values are shown as ``<secret>`` unless ``include_secrets``
    (runner/config/secrets.py).
    """
    from benchrun.runner.report.document import build_report
    from benchrun.runner.report.model import load_campaign

    renderer = RENDERERS.get(fmt)
    if renderer is None:
        raise UserError(f"unknown report format {fmt!r}; choose from {', '.join(FORMATS)}")
    model = load_campaign(campaign, campaign_id, include_secrets=include_secrets)
    target: Path | None
    if out is None:
        target = default_out(model.database, fmt)
    else:
        target = None if str(out) == "-" else Path(out)
    # Markdown on stdout has nowhere to put its figure files
    plots = with_plots and renderer.plots and not (fmt == "md" and target is None)
    report = build_report(model, with_plots=plots, system_factor=system_factor)
    text = renderer.render(report, target, raw)
    if target is None:
        sys.stdout.write(text)
        return None, len(text.encode())
    return target, _write(target, text)


def write_history_page(
    history: Sequence[tuple[HistorySeries, ChangePoints | None]],
    out: str | Path,
    *,
    with_plots: bool = True,
) -> int:
    """Write the history page of ``benchrun history DIR --html FILE`` to ``out``: per
    series (with the change points the command found in it) a figure and its tables
    (runner/report/history.py, html.py ``render_history``); returns the bytes written."""
    import datetime as dt

    from benchrun.runner.report.history import series_view
    from benchrun.runner.report.html import render_history

    views = [series_view(s, r, with_plot=with_plots) for s, r in history]
    names = sorted({s.experiment for s, _ in history})
    title = "benchrun history: " + ", ".join(names)
    generated = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return _write(Path(out), render_history(views, title, generated), "the history page")
