"""Failure paths of report, compare and export: one clear line, non-zero exit, no traceback.

These call :func:`runner.cli.main` in-process (the same code the console script runs) to
keep the suite fast; the end-to-end tests cover the console script itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrun.runner import __version__
from benchrun.runner.cli import main
from benchrun.runner.store.database import Store


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


def test_failed_and_rate_workloads_are_reported_not_dropped(tmp_path: Path, capsys) -> None:
    db = tmp_path / "f" / "benchrun.db"
    with Store.create_or_open(db) as st:
        cid = st.create_campaign(
            name="f", config_path=None, config_text="name: f\n", fingerprint="x", settings={},
            benchrun_version=__version__, command_line=None,
            workloads=[{"name": "bad", "metric": "wall_time", "unit": "s",
                        "direction": "lower_is_better", "spec": {}},
                       {"name": "rate", "metric": "readings", "unit": "ops/s",
                        "direction": "higher_is_better", "spec": {}}],
        )  # fmt: skip
        ids = {w.name: w.id for w in st.workloads(cid)}
        for i in range(6):
            common = dict(campaign_id=cid, pass_=i, round_index=i, started_at=0.0, wall_ns=1,
                          user_s=0, sys_s=0, max_rss_kib=0, cpus=None, argv=["x"], work=None,
                          warmup=i == 0)  # fmt: skip
            st.add_round(workload_id=ids["bad"], seq=2 * i, status="failed", reason="exit 1",
                         exit_code=1, readings=[], **common)  # fmt: skip
            st.add_round(workload_id=ids["rate"], seq=2 * i + 1, status="ok", reason=None,
                         exit_code=0, readings=[100.0 + i, 50.0], **common)  # fmt: skip
    out = tmp_path / "r.html"
    assert main(["report", str(db), "--out", str(out)]) == 0
    assert "no readings (every round failed)" not in capsys.readouterr().err
    assert main(["report", str(db), "--format", "json"]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    rules = {r["rule"]: r for r in doc["rules"]}
    assert "bad: round 5: failed: exit 1" in rules[2]["detail"]
    assert rules[3]["status"] == "missing" and "rate" in rules[3]["detail"]
    rate = next(w for w in doc["workloads"] if w["name"] == "rate")
    steady = [100.0 + i for i in range(1, 6)] + [50.0] * 5  # harmonic mean, by hand
    harmonic = len(steady) / sum(1 / v for v in steady)
    assert f"harmonic mean (rate)</td><td>{harmonic:.4g} ops/s" in out.read_text()
    assert rate["estimate"]["n"] == len(steady)


def test_compare_names_a_workload_without_data_on_one_side(tmp_path: Path, capsys) -> None:
    def campaign(name: str, fails: bool) -> Path:
        db = tmp_path / name / "benchrun.db"
        with Store.create_or_open(db) as st:
            cid = st.create_campaign(
                name=name, config_path=None, config_text="x\n", fingerprint="x", settings={},
                benchrun_version=__version__, command_line=None,
                workloads=[{"name": "w", "metric": "readings", "unit": "ms",
                            "direction": "lower_is_better", "spec": {}}],
            )  # fmt: skip
            wid = st.workloads(cid)[0].id
            for i in range(4):
                st.add_round(campaign_id=cid, workload_id=wid, seq=i, pass_=i, round_index=i,
                             status="failed" if fails else "ok", reason=None, exit_code=0,
                             started_at=0.0, wall_ns=1, user_s=0, sys_s=0, max_rss_kib=0,
                             cpus=None, argv=["x"], work=None, warmup=False,
                             readings=[] if fails else [1.0, 2.0])  # fmt: skip
        return db

    import json

    assert main(["compare", str(campaign("new", False)), str(campaign("old", True)), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert not doc["only_in_old"] and not doc["only_in_new"]
    (row,) = doc["workloads"]
    assert row["verdict"] == "not comparable" and "new side" in row["note"]
