"""Failure paths of report, compare and export: one clear line, non-zero exit, no traceback.

These call :func:`runner.cli.main` in-process (the same code the console script runs) to
keep the suite fast; the end-to-end tests cover the console script itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runner import __version__
from runner.cli import main
from runner.store import Store


def _error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    out = capsys.readouterr()
    assert code != 0
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("benchrun: error: "), out.err
    assert "Traceback" not in out.err
    return lines[0]


@pytest.fixture
def empty_campaign(tmp_path: Path) -> Path:
    db = tmp_path / "empty" / "benchrun.db"
    with Store.create_or_open(db) as store:
        store.create_campaign(
            name="empty", config_path=None, config_text="name: empty\n", fingerprint="x",
            settings={}, benchrun_version=__version__, command_line=None,
            workloads=[{"name": "w", "metric": "wall_time", "unit": "s",
                        "direction": "lower_is_better", "spec": {}}],
        )  # fmt: skip
    return db.parent


def test_missing_campaign(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _error(capsys, "report", str(tmp_path / "nope"))
    assert "no such campaign" in line
    assert "no such" in _error(capsys, "export", str(tmp_path / "nope"))
    assert "no such" in _error(capsys, "compare", str(tmp_path / "nope"), str(tmp_path))


def test_not_a_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "x.db"
    bad.write_text("hello")
    assert "not a benchrun database" in _error(capsys, "report", str(bad))


def test_empty_campaign(empty_campaign: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "is empty" in _error(capsys, "report", str(empty_campaign))
    assert "is empty" in _error(capsys, "export", str(empty_campaign))


def test_unknown_formats(empty_campaign: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _error(capsys, "report", str(empty_campaign), "--format", "pdf")
    assert "unknown report format 'pdf'" in line and "html" in line
    assert "unknown export format" in _error(capsys, "export", "--format", "xml")
    assert "unknown --what" in _error(capsys, "export", "--what", "everything")


def test_export_of_another_version_is_refused(tmp_path: Path, capsys) -> None:
    doc = tmp_path / "future.json"
    doc.write_text('{"format": "benchrun-export", "version": 99, "workloads": []}')
    line = _error(capsys, "analyze", "summary", str(doc))
    assert "version 99" in line and "upgrade" in line
    assert "version 99" in _error(capsys, "compare", str(doc), str(doc))
