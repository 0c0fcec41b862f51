"""Hostile input to the real ``benchrun`` CLI ends with one clear line, never a traceback
(issue 16): impossible output directories, contradicting options, damaged or malicious
export and hyperfine files, and campaigns whose readings are too large for the statistics.

Each case runs the console script in a subprocess and checks the exit code, that stderr
is exactly one line naming the problem, and that nothing was written where it should not.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from e2e_util import cli, query, write_experiment

from benchrun.runner.importers.dataset import MAX_MAGNITUDE

DATA = Path(__file__).resolve().parents[1] / "data"


def _one_line(stderr: str, *words: str) -> str:
    """The single ``benchrun: error:`` line of ``stderr``, which holds every word."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    (line,) = lines
    assert line.startswith("benchrun: error: "), line
    for word in words:
        assert word in line, line
    return line


def _tiny(directory: Path, output: Path | str, name: str = "tiny") -> Path:
    return write_experiment(
        directory,
        f"""
        name: {name}
        output: {output}
        settings: {{adaptive: false, rounds: 2, warmup_rounds: 0, pin: none}}
        workloads:
          - name: a
            command: ["true"]
        """,
        name=f"{name}.yaml",
    )


# -- benchrun run: where the results go, and options that contradict -----------------------


@pytest.mark.parametrize(
    ("output", "words"),
    [
        ("/proc/nonexist", ("-o /proc/nonexist", "cannot create /proc/nonexist/tiny")),
        ("{tmp}/afile", ("afile is a file, not a directory",)),
        ("{tmp}/afile/sub", ("afile is a file, not a directory",)),
    ],
    ids=["proc", "file", "below-a-file"],
)
def test_run_refuses_an_output_it_cannot_create(
    tmp_path: Path, output: str, words: tuple[str, ...]
) -> None:
    (tmp_path / "afile").write_text("not a directory\n")
    exp = _tiny(tmp_path, tmp_path / "results")
    proc = cli("run", str(exp), "-q", "-o", output.format(tmp=tmp_path))
    assert proc.returncode == 2
    _one_line(proc.stderr, *words)
    assert (tmp_path / "afile").read_text() == "not a directory\n"
    assert not (tmp_path / "results").exists()


def test_run_refuses_an_output_key_naming_a_file(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    exp = _tiny(tmp_path, tmp_path / "afile")
    proc = cli("run", str(exp), "-q")
    assert proc.returncode == 2
    _one_line(proc.stderr, "output: ", "afile is a file")


def test_resume_and_new_together_are_refused(tmp_path: Path) -> None:
    exp = _tiny(tmp_path, tmp_path / "results")
    proc = cli("run", str(exp), "-q", "--resume", "--new")
    assert proc.returncode == 2
    _one_line(proc.stderr, "--resume and --new contradict")
    assert not (tmp_path / "results").exists()  # refused before anything is created


# -- files read back by analyze and compare ------------------------------------------------


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real benchrun export (JSON) of a real small campaign."""
    root = tmp_path_factory.mktemp("export")
    exp = write_experiment(
        root,
        f"""
        name: src
        output: {root}
        settings: {{adaptive: false, rounds: 12, warmup_rounds: 0, pin: none}}
        workloads:
          - name: a
            command: ["true"]
          - name: b
            command: ["true"]
        """,
    )
    proc = cli("run", str(exp), "-q")
    assert proc.returncode == 0, proc.stderr
    out = root / "src.json"
    proc = cli("export", str(root / "src"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def _last_round(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["workloads"][0]["rounds"][-1]


EXPORT_DAMAGE: dict[str, tuple[Callable[[dict[str, Any]], None], tuple[str, ...]]] = {
    "rounds-bad": (
        lambda d: d["workloads"][0].__setitem__("rounds", "bad"),
        ("workloads[0].rounds: expected an array of rounds, got 'bad'",),
    ),
    "readings-null": (
        lambda d: _last_round(d).__setitem__("readings", [None]),
        ("workloads[0].rounds[11].readings[0]: expected a number, got null",),
    ),
    "readings-abc": (
        lambda d: _last_round(d).__setitem__("readings", ["abc"]),
        ("workloads[0].rounds[11].readings[0]: value 'abc' is not a number",),
    ),
    "name-null": (
        lambda d: d["workloads"][0].__setitem__("name", None),
        ("workloads[0].name: expected the workload's name (text), got null",),
    ),
    "reading-too-large": (
        lambda d: _last_round(d).__setitem__("readings", [10**400]),
        ("workloads[0].rounds[11].readings[0]: value is out of range",),
    ),
    "flags-misaligned": (
        lambda d: _last_round(d).__setitem__("reading_flags", ["", ""]),
        ("workloads[0].rounds[11].reading_flags: 2 flags for 1 readings",),
    ),
}


@pytest.mark.parametrize(
    ("case", "command"),
    [(case, "analyze") for case in EXPORT_DAMAGE]
    + [(case, "compare") for case in ("rounds-bad", "readings-null", "readings-abc", "name-null")],
)
def test_a_damaged_export_is_refused_naming_file_and_field(
    export: Path, tmp_path: Path, case: str, command: str
) -> None:
    doc = json.loads(export.read_text())
    damage, words = EXPORT_DAMAGE[case]
    damage(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    argv = (
        ("analyze", "summary", str(bad))
        if command == "analyze"
        else ("compare", str(export), str(bad))
    )
    proc = cli(*argv)
    assert proc.returncode == 2
    _one_line(proc.stderr, str(bad), *words)
    assert proc.stdout == ""


def test_the_undamaged_export_is_read(export: Path) -> None:
    """The control of the cases above: the same file, untouched, is analysed and compared."""
    assert cli("analyze", "summary", str(export)).returncode == 0
    proc = cli("compare", str(export), str(export))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", ["analyze", "compare"])
def test_json_nested_100000_deep_is_refused(tmp_path: Path, export: Path, command: str) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(
        '{"results": [{"command": "x", "times": ' + "[" * 100_000 + "]" * 100_000 + "}]}"
    )
    argv = (
        ("analyze", "summary", str(deep))
        if command == "analyze"
        else ("compare", str(deep), str(export))
    )
    proc = cli(*argv)
    assert proc.returncode == 2
    _one_line(proc.stderr, str(deep), "nested too deeply")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            "workload,value\na,1\nb," + "9" * 200_000 + "\n",
            ("line 3", "not readable as CSV", "field limit"),
        ),
        ("workload,value\na,1\nb,1e400\n", ("row 3", "not finite")),
        ("workload,value\na,1\nb,1e200\n", ("row 3", "out of range")),
    ],
    ids=["huge-field", "overflow", "too-large"],
)
def test_hostile_csv_is_refused(tmp_path: Path, text: str, words: tuple[str, ...]) -> None:
    data = tmp_path / "data.csv"
    data.write_text(text)
    proc = cli("analyze", "summary", str(data))
    assert proc.returncode == 2
    _one_line(proc.stderr, str(data), *words)


@pytest.mark.parametrize("command", ["analyze", "compare"])
def test_hyperfine_times_too_large_for_welch_are_refused(tmp_path: Path, command: str) -> None:
    """1e80 s: Welch's degrees of freedom square a variance of 1e160 (an OverflowError
    traceback before the range check)."""
    doc = json.loads((DATA / "hyperfine_two.json").read_text())
    doc["results"][0]["times"][0] = 1e80
    data = tmp_path / "hf.json"
    data.write_text(json.dumps(doc))
    argv = (
        ("analyze", "compare", str(data))
        if command == "analyze"
        else ("compare", str(data), str(DATA / "hyperfine_two.json"))
    )
    proc = cli(*argv)
    assert proc.returncode == 2
    _one_line(proc.stderr, str(data), "results[0] (true) times[0]: value 1e+80 is out of range")


def test_an_error_quoting_a_name_with_line_breaks_stays_one_line(tmp_path: Path) -> None:
    data = tmp_path / "hf.json"
    data.write_text(json.dumps({"results": [{"command": "a\nb\x1b[31m", "times": None}]}))
    proc = cli("analyze", "summary", str(data))
    assert proc.returncode == 2
    _one_line(proc.stderr, "(a\\nb\\x1b[31m): no 'times' array")


def test_hyperfine_with_a_non_text_command_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "hf.json"
    data.write_text(json.dumps({"results": [{"command": ["x"] * 3, "times": [1.0, 2.0]}]}))
    proc = cli("analyze", "summary", str(data))
    assert proc.returncode == 2
    _one_line(proc.stderr, str(data), "results[0].command: expected the command (text)")


# -- campaigns whose readings are too large for the statistics ----------------------------


@pytest.fixture(scope="module")
def huge(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Any]]:
    """Fixed-mode campaigns whose workload prints readings of 1e45 (within the range),
    1e200 and 1e308 ms."""
    root = tmp_path_factory.mktemp("huge")
    out: dict[str, tuple[Path, Any]] = {}
    for magnitude in ("1e45", "1e200", "1e308"):
        name = f"huge{magnitude}"
        code = f"import random; print('t=%r' % ({magnitude} * (1 + random.random() / 10)))"
        exp = write_experiment(
            root,
            f"""
            name: {name}
            output: {root}
            settings: {{adaptive: false, rounds: 8, warmup_rounds: 0, pin: none}}
            workloads:
              - name: a
                command: ["{sys.executable}", "-c", "{code}"]
                readings: {{pattern: 't=([0-9.e+]+)', unit: ms}}
            """,
            name=f"{name}.yaml",
        )
        out[magnitude] = (root / name, cli("run", str(exp), "-q"))
    return out


@pytest.mark.parametrize("magnitude", ["1e200", "1e308"])
def test_run_stores_huge_readings_then_says_they_are_out_of_range(
    huge: dict[str, tuple[Path, Any]], magnitude: str
) -> None:
    campaign, proc = huge[magnitude]
    assert proc.returncode == 2
    _one_line(proc.stderr, "workload 'a' has a reading of", f"beyond ±{MAX_MAGNITUDE:g}")
    rows = query(campaign / "benchrun.db", "SELECT count(*) FROM round WHERE status = 'ok'")
    assert rows == [(8,)]  # every round was kept


@pytest.mark.parametrize(
    ("magnitude", "argv"),
    [
        ("1e200", ("report", "{dir}", "-o", "{tmp}/r.html")),
        ("1e200", ("report", "{dir}", "--format", "json", "-o", "{tmp}/r.json")),
        ("1e200", ("show", "{dir}")),
        ("1e200", ("export", "{dir}", "-o", "{tmp}/e.json")),
        ("1e200", ("compare", "{dir}", "{dir}")),
        ("1e308", ("report", "{dir}", "-o", "{tmp}/r.html")),
        ("1e308", ("report", "{dir}", "--format", "md", "-o", "{tmp}/r.md")),
    ],
    ids=lambda v: v if isinstance(v, str) else "-".join(a for a in v if "{" not in a),
)
def test_read_commands_say_huge_readings_are_out_of_range(
    huge: dict[str, tuple[Path, Any]], tmp_path: Path, magnitude: str, argv: tuple[str, ...]
) -> None:
    campaign, _ = huge[magnitude]
    proc = cli(*(a.format(dir=campaign, tmp=tmp_path) for a in argv))
    assert proc.returncode == 2
    line = _one_line(
        proc.stderr, str(campaign / "benchrun.db"), "workload 'a'", f"beyond ±{MAX_MAGNITUDE:g}"
    )
    assert f"e+{magnitude[2:]} ms" in line
    assert not list(tmp_path.iterdir())  # no half-written report or export


def test_large_readings_within_the_range_are_reported(
    huge: dict[str, tuple[Path, Any]], tmp_path: Path
) -> None:
    """The control of the refusals above: readings of 1e45 ms run, report and compare
    without a warning."""
    campaign, proc = huge["1e45"]
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    for argv in (
        ("report", str(campaign), "-o", str(tmp_path / "r.html")),
        ("compare", str(campaign), str(campaign)),
    ):
        proc = cli(*argv)
        assert proc.returncode == 0, proc.stderr
        assert all(line.startswith("benchrun: wrote") for line in proc.stderr.splitlines())
    assert (tmp_path / "r.html").stat().st_size > 10_000
