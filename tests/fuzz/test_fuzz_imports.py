"""Fuzzing the files ``benchrun analyze`` and ``benchrun compare`` read (hyperfine, pyperf,
Google Benchmark, CSV, benchrun exports): whatever the file, the command ends with exit
code 0 or one clear error line, never a traceback, a hang or unbounded memory (issue 16).

Each case starts from a real file in tests/data and replaces a few nodes of its JSON tree
(or cells of its CSV) with hostile values, then runs the CLI in process.
"""

from __future__ import annotations

import json
import resource
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchrun.runner.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
JSON_FILES = ["hyperfine_two.json", "hyperfine_params.json", "pyperf_6pct_old.json",
              "gbench_reps.json", "gbench_legacy.json"]  # fmt: skip
FUZZ = settings(
    max_examples=200,
    deadline=5000,  # ms: a hang fails here
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=True,
)

hostile = st.one_of(
    st.sampled_from(
        [None, True, 0, -1, 2**64, 10**400, 1e308, -1e308, 5e-324, 1e-320, "abc", "", "nan",
         "inf", [], {}, [None], ["abc"], [1e308, 1e308], [0, 0, 0], {"a": None}]
    ),
    st.floats(allow_nan=False),  # json.dumps writes nan/inf as NaN/Infinity: see below
    st.integers(),
    st.text(max_size=10),
)  # fmt: skip


def _nodes(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _nodes(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:20]):
            out += _nodes(v, path + (i,))
    return out


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return doc


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> None:
    code = main(list(argv))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if code != 0:
        lines = [line for line in err.splitlines() if line.strip()]
        assert lines and lines[-1].startswith("benchrun: error: "), err
        assert "internal error" not in err


@FUZZ
@given(st.sampled_from(JSON_FILES), st.data())
def test_mutated_json_imports_end_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, data: st.DataObject
) -> None:
    doc = json.loads((DATA / name).read_text())
    nodes = _nodes(doc)
    for _ in range(data.draw(st.integers(1, 3))):
        nodes = _nodes(doc)
        path = nodes[data.draw(st.integers(0, len(nodes) - 1))]
        doc = _replace(doc, path, data.draw(hostile))
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    _run(capsys, "analyze", "summary", str(path))
    _run(capsys, "analyze", "compare", str(path))


@FUZZ
@given(st.data())
def test_mutated_csv_imports_end_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: st.DataObject
) -> None:
    rows = [line.split(",") for line in (DATA / "long.csv").read_text().splitlines()[:60]]
    for _ in range(data.draw(st.integers(1, 4))):
        r = data.draw(st.integers(0, len(rows) - 1))
        c = data.draw(st.integers(0, len(rows[r]) - 1))
        rows[r][c] = str(data.draw(hostile)).replace(",", ";").replace("\n", " ")
    path = tmp_path / "long.csv"
    path.write_text("\n".join(",".join(row) for row in rows) + "\n")
    _run(capsys, "analyze", "summary", str(path))
    _run(capsys, "analyze", "compare", str(path))


def test_deeply_nested_json_is_refused_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"results": ' + "[" * 100_000 + "]" * 100_000 + "}")
    _run(capsys, "analyze", "summary", str(path))


def test_fuzzing_imports_kept_memory_bounded() -> None:
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 1 << 20  # KiB
