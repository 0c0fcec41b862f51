"""``benchrun validate`` reports every problem of a file, each with file, line and key;
``--json`` gives the same as a list. The lines each error must name are found in the
test's own text (the line holding a marker), not taken from the loader.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchrun.runner.config.loader import load_experiment
from benchrun.runner.config.yamlsource import ConfigErrors, SourceError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from e2e_util import cli  # noqa: E402

BROKEN = """\
name: broken
settings:
  rouns: 3                          # M1
  seed: one                         # M2
workloads:
  - name: a
    command: [python3, -c, "print({m})"]   # M3
    metric: wall                    # M4
  - name: b
    command: no-such-prog-xyz -v    # M5
    setup: "echo {round}"           # M6
  - command: [python3]              # M7
matrix:
  n: [1, 2]
  k: 3                              # M8
"""

#: marker -> (key, fragment of the message)
EXPECTED = {
    "M1": ("settings.rouns", "did you mean 'rounds'?"),
    "M2": ("settings.seed", "expected an integer"),
    "M3": ("workloads[0].command[2]", "unknown placeholder {m}"),
    "M4": ("workloads[0].metric", "valid: wall_time | cpu_time | max_rss | readings"),
    "M5": ("workloads[1].command", "not found on PATH"),
    "M6": ("workloads[1].setup", "not in setup"),
    "M7": ("workloads[2]", "missing required key 'name'"),
    "M8": ("matrix.k", "expected a non-empty list"),
}


def line_of(text: str, marker: str) -> int:
    (line,) = [i for i, t in enumerate(text.splitlines(), 1) if f"# {marker}" in t]
    return line


def benchrun(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``benchrun ARGS`` in process (e2e_util.cli: the console script's function without
    its start-up); ``benchrun_script`` runs the installed script."""
    return cli(*args, cwd=cwd)


def benchrun_script(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("benchrun")
    assert exe is not None, "the benchrun console script is not installed (pip install -e .)"
    return subprocess.run(
        [exe, *args], cwd=cwd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )


def test_every_problem_is_collected_with_its_line_and_key(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(BROKEN)
    with pytest.raises(ConfigErrors) as info:
        load_experiment(path, collect=True)
    errors = info.value.errors
    got = [(e.line, e.key) for e in errors]
    want = sorted((line_of(BROKEN, m), key) for m, (key, _) in EXPECTED.items())
    assert got == want
    for e in errors:
        marker = next(m for m in EXPECTED if line_of(BROKEN, m) == e.line)
        assert EXPECTED[marker][1] in e.message, (marker, e.message)
        assert e.file == str(path)
    # matrix.n is used by no readable workload, but workloads[2] could not be read: that
    # check is skipped rather than reported falsely
    assert not any(e.key == "matrix.n" for e in errors)


def test_without_collecting_the_first_problem_ends_the_reading(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(BROKEN)
    with pytest.raises(SourceError) as info:
        load_experiment(path)  # what `benchrun run` does: one line, the first problem
    assert (info.value.error.line, info.value.error.key) == (
        line_of(BROKEN, "M1"),
        "settings.rouns",
    )


def test_an_error_repeated_by_the_matrix_is_reported_once(tmp_path: Path) -> None:
    text = "name: x\nworkloads:\n  - name: a\n    command: [no-such-prog-xyz, '{n}']  # M1\nmatrix:\n  n: [1, 2, 3]\n"
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(ConfigErrors) as info:
        load_experiment(path, collect=True)
    (error,) = info.value.errors  # once, not once per value of n
    assert (error.line, error.key) == (4, "workloads[0].command")
    assert "no-such-prog-xyz" in error.message


def test_every_duplicate_key_is_reported(tmp_path: Path) -> None:
    text = "name: x\nname: y\nworkloads:\n  - name: a\n    command: [python3]\n    command: [python3]\n"
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(ConfigErrors) as info:
        load_experiment(path, collect=True)
    assert [(e.line, e.key) for e in info.value.errors] == [
        (2, "name"),
        (6, "workloads[0].command"),
    ]


def test_validate_prints_one_line_per_problem_and_exits_2(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text(BROKEN)
    proc = benchrun_script("validate", "broken.yaml", cwd=tmp_path)  # the console script
    assert proc.returncode == 2
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == len(EXPECTED) + 1
    assert lines[-1] == f"benchrun: {len(EXPECTED)} problems in broken.yaml"
    for line, marker in zip(
        lines, sorted(EXPECTED, key=lambda m: line_of(BROKEN, m)), strict=False
    ):
        key, fragment = EXPECTED[marker]
        assert line.startswith(f"benchrun: error: broken.yaml:{line_of(BROKEN, marker)}: {key}: ")
        assert fragment in line


def test_validate_json_lists_the_problems(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text(BROKEN)
    proc = benchrun("validate", "--json", "broken.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr == ""
    doc = json.loads(proc.stdout)
    assert doc["valid"] is False and doc["file"] == "broken.yaml"
    assert [(e["file"], e["line"], e["key"]) for e in doc["errors"]] == [
        ("broken.yaml", line_of(BROKEN, m), EXPECTED[m][0])
        for m in sorted(EXPECTED, key=lambda m: line_of(BROKEN, m))
    ]
    assert all(set(e) == {"file", "line", "key", "message"} for e in doc["errors"])


def test_validate_json_of_a_valid_file(tmp_path: Path) -> None:
    (tmp_path / "ok.yaml").write_text(
        "name: ok\nsettings: {rounds: 3}\nworkloads:\n  - name: a\n    command: [python3, -c, 'pass {n}']\n"
        "matrix:\n  n: [1, 2]\n"
    )
    proc = benchrun("validate", "ok.yaml", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["valid"] is True and doc["errors"] == []
    assert doc["experiment"] == "ok" and doc["workloads"] == ["a[n=1]", "a[n=2]"]
    assert doc["mode"] == "fixed"
    assert doc["results"] == str(tmp_path / "results" / "ok" / "benchrun.db")


@pytest.mark.parametrize(
    ("name", "text", "line", "key", "fragment"),
    [
        ("syntax.yaml", "name: x\nworkloads:\n  - name: [a\n", 4, None, "YAML syntax error"),
        ("absent.yaml", None, None, None, "file not found"),
    ],
)
def test_validate_json_of_a_file_that_cannot_be_read(
    tmp_path: Path, name: str, text: str | None, line: int | None, key: str | None, fragment: str
) -> None:
    if text is not None:
        (tmp_path / name).write_text(text)
    proc = benchrun("validate", "--json", name, cwd=tmp_path)
    assert proc.returncode == 2
    (error,) = json.loads(proc.stdout)["errors"]
    assert (error["file"], error["line"], error["key"]) == (name, line, key)
    assert fragment in error["message"]


def test_validate_summary_counts_the_hooks(tmp_path: Path) -> None:
    (tmp_path / "h.yaml").write_text(
        "name: h\nprepare: 'true'\nworkloads:\n  - {name: a, command: [python3], setup: 'true'}\n"
        "  - {name: b, command: [python3]}\n"
    )
    proc = benchrun("validate", "h.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "  hooks:    setup (1 workload), prepare (2 workloads); untimed\n" in proc.stdout
