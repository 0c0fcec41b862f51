"""The renderer table covers every documented format, and only those."""

from __future__ import annotations

from pathlib import Path

from benchrun.runner.report import FORMATS
from benchrun.runner.report.render import RENDERERS, default_out


def test_every_format_has_a_renderer_in_order() -> None:
    assert tuple(RENDERERS) == FORMATS


def test_html_and_markdown_go_to_a_file_json_and_csv_to_stdout(tmp_path: Path) -> None:
    db = tmp_path / "benchrun.db"
    assert default_out(db, "html") == tmp_path / "report.html"
    assert default_out(db, "md") == tmp_path / "report.md"
    assert default_out(db, "json") is None and default_out(db, "csv") is None
