"""The JSON documents of ``benchrun analyze`` keep their form now that they are typed
(runner/analyze/documents.py, issue 30): the keys and their order, as the documents had
them before (what scripts reading ``--json`` see)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from benchrun.runner.cli import main

DATA = Path(__file__).resolve().parent.parent / "data"

HEADER = ["command", "source", "format", "unit", "direction", "confidence", "notes"]
KEY = ["name", "system", "benchmark", "workload", "readings"]


def _json(*args: str) -> dict[str, object]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["analyze", *args, "--json"]) == 0
    doc = json.loads(out.getvalue())
    assert isinstance(doc, dict)
    return doc


def _groups_csv(tmp_path: Path) -> Path:
    path = tmp_path / "groups.csv"
    lines = ["workload,value,unit"]
    for name, base in (("a", 1.0), ("b", 1.2)):
        lines += [f"{name},{base + 0.001 * (i % 7)},ms" for i in range(40)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_summary_of_values(tmp_path: Path) -> None:
    doc = _json("summary", str(_groups_csv(tmp_path)))
    assert list(doc) == [*HEADER, "warmup", "groups"]
    groups = doc["groups"]
    assert isinstance(groups, list) and len(groups) == 2
    assert list(groups[0]) == [*KEY, "summary", "error", "display_unit"]
    assert groups[0]["name"] == "a" and groups[0]["readings"] == 40
    assert groups[0]["display_unit"] == {"label": "ms", "factor": 1.0}
    assert groups[0]["error"] is None


def test_summary_of_processes() -> None:
    doc = _json("summary", str(DATA / "pyperf_suite.json"))
    row = doc["groups"][0]
    assert list(row) == [
        *KEY, "unit_of_observation", "processes", "summary", "error", "display_unit",
    ]  # fmt: skip
    assert row["unit_of_observation"] == "process"


def test_compare_document(tmp_path: Path) -> None:
    doc = _json("compare", str(_groups_csv(tmp_path)))
    assert list(doc) == [
        *HEADER, "warmup", "alpha", "margin", "groups", "excluded", "ranking", "omnibus",
    ]  # fmt: skip
    assert doc["ranking"]["names"] == ["a", "b"]
    assert list(doc["omnibus"]) == ["on", "anova", "kruskal_wallis"]
    assert doc["excluded"] == []
