"""Unit tests of experiment files: runner.config.experiment (load_experiment), its helpers
(durations, cpulist, placeholders, yamlsource) and the JSON Schema.

Expected values are closed forms (1h30m = 5400 s, 64 KiB = 65536 B, a matrix of sizes
a and b gives a*b workloads), line numbers counted in the test's own YAML text, or
CPU sets written out by hand.
"""

from __future__ import annotations

import dataclasses
import os
import re
import stat
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from benchrun.runner.commands.validate import template_text
from benchrun.runner.config.cpulist import CPU_LIST_PATTERN, format_cpu_list, parse_cpu_list
from benchrun.runner.config.durations import (
    DURATION_PATTERN,
    SIZE_PATTERN,
    parse_duration,
    parse_size,
)
from benchrun.runner.config.experiment import Experiment, ReadingsSpec, Settings, Workload
from benchrun.runner.config.loader import load_experiment
from benchrun.runner.config.placeholders import substitute
from benchrun.runner.config.schema import json_schema
from benchrun.runner.errors import UserError

MINIMAL_WORKLOADS = """\
workloads:
  - name: a
    command: [python3, -c, "pass"]
"""


def write(tmp_path: Path, text: str, name: str = "exp.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load(tmp_path: Path, text: str) -> Experiment:
    return load_experiment(write(tmp_path, text))


def line_of(text: str, marker: str) -> int:
    """1-based line of the first line of ``text`` containing ``marker`` (counted here,
    independently of the loader)."""
    if not text:
        return 1
    for number, line in enumerate(textwrap.dedent(text).splitlines(), start=1):
        if marker in line:
            return number
    raise AssertionError(f"{marker!r} not in text")


def error(tmp_path: Path, text: str) -> str:
    path = write(tmp_path, text)
    with pytest.raises(UserError) as info:
        load_experiment(path)
    message = info.value.message
    assert info.value.exit_code == 2
    assert "\n" not in message
    assert message.startswith(f"{path}:")
    return message


def expect(tmp_path: Path, text: str, marker: str, key: str, *fragments: str) -> str:
    """Assert the error is ``FILE:LINE: key: ...`` with LINE the line holding ``marker``."""
    message = error(tmp_path, text)
    path = tmp_path / "exp.yaml"
    prefix = f"{path}:{line_of(text, marker)}: {key}: "
    assert message.startswith(prefix), (message, prefix)
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    return message


# ----------------------------------------------------------------------------- durations


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("500ms", 0.5),
        ("90s", 90.0),
        ("30m", 1800.0),
        ("2h", 7200.0),
        ("1h30m", 5400.0),
        ("1.5 min", 90.0),
        ("250us", 250e-6),
        ("2d", 172800.0),
        ("15", 15.0),
        (42, 42.0),
        (0.25, 0.25),
    ],
)
def test_parse_duration(text: object, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds, rel=1e-12)


@pytest.mark.parametrize(
    "bad", ["5 parsecs", "5 seconds", "ms", "", "1h30", "-5s", True, None, [1]]
)
def test_parse_duration_rejects(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(bad)


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("64KiB", 65536),
        ("1MB", 1_000_000),
        ("2 MiB", 2 * 1024**2),
        ("512", 512),
        (4096, 4096),
        ("1kb", 1000),
    ],
)
def test_parse_size(text: object, size: int) -> None:
    assert parse_size(text) == size


@given(
    h=st.integers(0, 99),
    m=st.integers(0, 59),
    s=st.integers(0, 59),
    ms=st.integers(0, 999),
)
def test_duration_parts_sum(h: int, m: int, s: int, ms: int) -> None:
    text = f"{h}h{m}m{s}s{ms}ms"
    expected = h * 3600 + m * 60 + s + ms / 1000
    assert parse_duration(text) == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert re.fullmatch(DURATION_PATTERN, text)


@pytest.mark.parametrize("bad", ["64 parsecs", "-1", -1, 1.5, True, "KiB"])
def test_parse_size_rejects(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_size(bad)


@pytest.mark.parametrize(
    "sample",
    ["500ms", "90s", "1h30m", "1.5 min", "15", "5 parsecs", "1h30", "ms", "2 d", "3x", "1e3ms"],
)
def test_duration_schema_pattern_agrees_with_parser(sample: str) -> None:
    try:
        parse_duration(sample)
        accepted = True
    except ValueError:
        accepted = False
    assert (re.fullmatch(DURATION_PATTERN, sample) is not None) == accepted


@pytest.mark.parametrize("sample", ["64KiB", "1MB", "512", "2 gib", "64 parsecs", "KiB", "1.5kB"])
def test_size_schema_pattern_agrees_with_parser(sample: str) -> None:
    try:
        parse_size(sample)
        accepted = True
    except ValueError:
        accepted = False
    assert (re.fullmatch(SIZE_PATTERN, sample) is not None) == accepted


# ------------------------------------------------------------------------------ CPU lists


@pytest.mark.parametrize(
    ("value", "cpus"),
    [
        ("1", (1,)),
        ("2-3", (2, 3)),
        ("0,2-3", (0, 2, 3)),
        (" 4 - 6 , 1", (1, 4, 5, 6)),
        (1, (1,)),
        ([3, 1, 3], (1, 3)),
    ],
)
def test_parse_cpu_list(value: object, cpus: tuple[int, ...]) -> None:
    assert parse_cpu_list(value) == cpus
    if isinstance(value, str):
        assert re.fullmatch(CPU_LIST_PATTERN, value)


@pytest.mark.parametrize("bad", ["2-1", "x", "", "1,,2", "-1", [], [-1], [True], True, 1.5])
def test_parse_cpu_list_rejects(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_cpu_list(bad)


def test_cpu_list_checks_availability() -> None:
    with pytest.raises(ValueError, match="CPUs 5,7 not available on this machine; available: 0-1"):
        parse_cpu_list("0,5,7", available={0, 1})
    assert parse_cpu_list("1", available={0, 1}) == (1,)


@given(st.sets(st.integers(0, 300), min_size=1))
def test_cpu_list_round_trip(cpus: set[int]) -> None:
    text = format_cpu_list(cpus)
    assert re.fullmatch(CPU_LIST_PATTERN, text)
    assert parse_cpu_list(text) == tuple(sorted(cpus))


def test_format_cpu_list() -> None:
    assert format_cpu_list({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8"
    assert parse_cpu_list(format_cpu_list({0, 1, 2, 5, 7, 8})) == (0, 1, 2, 5, 7, 8)


# --------------------------------------------------------------------------- placeholders


def test_substitute_fills_params_and_keeps_launch_time() -> None:
    out = substitute("run {n} x{work} r{round} {{literal}}", {"n": 7})
    assert out == "run 7 x{work} r{round} {literal}"
    assert substitute("{n:08d}", {"n": 42}) == "00000042"


@pytest.mark.parametrize(
    ("template", "fragment"),
    [
        ("{x}", "unknown placeholder {x}; known: {n}, {work}, {round}"),
        ("{nn}", "unknown placeholder {nn}; did you mean {n}? known: {n}, {work}, {round}"),
        ("{wrok}", "unknown placeholder {wrok}; did you mean {work}?"),
        ("print({'a': 1})", "for a literal brace write {{ or }}"),
        ("{}", "unknown placeholder {}"),
        ("oops}", "bad placeholder syntax"),
        ("{work:3d}", "takes no format spec"),
        ("{{work}}", "literal {work}"),
        ("{n!r}", "conversions"),
    ],
)
def test_substitute_errors(template: str, fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        substitute(template, {"n": 1})
    assert fragment in str(info.value)


# --------------------------------------------------------------------------- happy path

ISSUE_EXAMPLE = """\
name: demo
description: why this experiment exists
output: out
settings:
  rounds: 20
  warmup_rounds: 1
  order: interleaved
  pin: auto
  timeout: 60s
  confidence: 0.95
  seed: 1
  env: {OMP_NUM_THREADS: "1"}
workloads:
  - name: loop
    command: ["python3", "-c", "sum(range({n}))"]
    metric: wall_time
  - name: own-readings
    command: ["python3", "bench.py", "--iterations", "{work}"]
    work: 100
    readings: {pattern: 'time=([0-9.]+) ms', unit: ms, direction: lower_is_better}
matrix:
  n: [1000000, 2000000]
"""


def test_issue_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "", ISSUE_EXAMPLE)
    exp = load_experiment("exp.yaml")
    assert exp.name == "demo"
    assert exp.description == "why this experiment exists"
    assert exp.output == tmp_path / "out"  # relative to the current directory
    assert exp.db_path == tmp_path / "out" / "demo" / "benchrun.db"
    assert exp.source_text == path.read_text()
    assert exp.source_path == path.resolve()
    s = exp.settings
    assert (s.rounds, s.warmup_rounds, s.order, s.pin, s.timeout, s.confidence, s.seed) == (
        20,
        1,
        "interleaved",
        "auto",
        60.0,
        0.95,
        1,
    )
    assert dict(s.env) == {"OMP_NUM_THREADS": "1"}
    names = [w.name for w in exp.workloads]
    assert names == ["loop[n=1000000]", "loop[n=2000000]", "own-readings"]
    loop1, loop2, own = exp.workloads
    assert loop1.command == ("python3", "-c", "sum(range(1000000))")
    assert loop2.command == ("python3", "-c", "sum(range(2000000))")
    assert dict(loop2.params) == {"n": 2000000}
    assert loop1.base_name == "loop" and own.base_name is None
    assert own.metric == "readings"  # implied by readings:
    assert own.readings == ReadingsSpec("regex", "time=([0-9.]+) ms", None, "ms", "lower_is_better")
    assert own.unit == "ms"
    assert own.command == ("python3", "bench.py", "--iterations", "{work}")
    assert own.render(3) == ("python3", "bench.py", "--iterations", "100")
    assert own.cwd == str(tmp_path.resolve())  # default: the experiment file's directory
    assert dict(exp.matrix) == {"n": (1000000, 2000000)}


def test_defaults_match_dataclasses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCHRUN_CONTENDED", raising=False)  # the suite sets keep
    exp = load(tmp_path, "name: x\n" + MINIMAL_WORKLOADS)
    # extend_rounds is resolved at load (max_rounds left at its default: on)
    assert exp.settings == dataclasses.replace(Settings(), extend_rounds=True)
    (w,) = exp.workloads
    assert (w.metric, w.shell, w.work, w.timeout, w.per_work, w.readings) == (
        "wall_time",
        False,
        None,
        None,
        False,
        None,
    )
    assert exp.description == ""
    assert exp.output == Path.cwd() / "results"


def test_every_setting(tmp_path: Path) -> None:
    text = """\
    name: all
    settings:
      rounds: 7
      warmup_rounds: 0
      order: sequential
      pin: "1"
      timeout: 1m
      confidence: 0.99
      seed: 9
      env: {A: 1, B: two}
      record_env: [PATH, HOME]
      fail_fast: true
      max_consecutive_failures: 5
      on_interrupt: finish
      output_limit: 2KiB
      adaptive: false
      ci_rel_width: null
      alpha: 0.05
      margin: 0.02
      min_rounds: 10
      min_subsessions: 8
      max_rounds: 100
      max_time: 1h30m
      min_round_time: 250ms
      baseline: null
      reference: a
      warmup_readings: 3
      contended: fail
      contended_threshold: 0.4
      extend_rounds: true
    workloads:
      - name: a
        command: [python3, -c, "pass"]
    """
    s = load(tmp_path, text).settings
    expected = Settings(
        rounds=7,
        warmup_rounds=0,
        order="sequential",
        pin=(1,),
        timeout=60.0,
        confidence=0.99,
        seed=9,
        env={"A": "1", "B": "two"},
        record_env=("PATH", "HOME"),
        fail_fast=True,
        max_consecutive_failures=5,
        on_interrupt="finish",
        output_limit=2048,
        adaptive=False,
        ci_rel_width=None,
        alpha=0.05,
        margin=0.02,
        min_rounds=10,
        min_subsessions=8,
        max_rounds=100,
        max_time=5400.0,
        min_round_time=0.25,
        baseline=None,
        reference="a",
        warmup_readings=3,
        contended="fail",
        contended_threshold=0.4,
        extend_rounds=True,
    )
    assert s == expected


@pytest.mark.parametrize(
    ("pin", "expected"), [("none", "none"), ("[0, 1]", (0, 1)), ('"0-1"', (0, 1)), ("0", (0,))]
)
def test_pin_forms(tmp_path: Path, pin: str, expected: object) -> None:
    if isinstance(expected, tuple) and not set(expected) <= os.sched_getaffinity(0):
        pytest.skip("needs CPUs 0 and 1")  # pragma: no cover - the CI box has two
    exp = load(tmp_path, f"name: x\nsettings: {{pin: {pin}}}\n" + MINIMAL_WORKLOADS)
    assert exp.settings.pin == expected


# ----------------------------------------------------------------------------- workloads


def test_string_command_split_and_shell(tmp_path: Path) -> None:
    text = """\
    name: x
    workloads:
      - name: split
        command: python3 -c 'print("a b")'
      - name: sh
        command: echo hi | wc -c
        shell: true
      - name: numbers
        command: [sleep, 0.01]
    """
    split, sh, numbers = load(tmp_path, text).workloads
    assert split.command == ("python3", "-c", 'print("a b")')
    assert sh.command == ("echo hi | wc -c",) and sh.shell
    assert numbers.command == ("sleep", "0.01")


def test_matrix_product_and_unmultiplied_workload(tmp_path: Path) -> None:
    text = """\
    name: x
    workloads:
      - name: both
        command: [python3, -c, "pass", "{a}", "{b}"]
      - name: only-b
        command: [python3, -c, "pass"]
        env: {THREADS: "{b}"}
      - name: none
        command: [python3, -c, "pass"]
    matrix:
      a: [1, 2, 3]
      b: [x, y]
    """
    exp = load(tmp_path, text)
    names = [w.name for w in exp.workloads]
    assert len(names) == 3 * 2 + 2 + 1
    assert names[:6] == [f"both[a={a},b={b}]" for a in (1, 2, 3) for b in ("x", "y")]
    assert names[6:] == ["only-b[b=x]", "only-b[b=y]", "none"]
    assert exp.workloads[5].command[-2:] == ("3", "y")
    assert dict(exp.workloads[7].env) == {"THREADS": "y"}


def test_params_format_spec_and_escaped_braces(tmp_path: Path) -> None:
    text = """\
    name: x
    workloads:
      - name: a
        command: [python3, -c, "print({{'k': {n}}}) # {n:05d}"]
        params: {n: 42}
    """
    (w,) = load(tmp_path, text).workloads
    assert w.command[2] == "print({'k': 42}) # 00042"
    assert dict(w.params) == {"n": 42}


def test_jsonl_readings(tmp_path: Path) -> None:
    text = """\
    name: x
    workloads:
      - name: a
        command: [python3, -c, "pass"]
        readings: {format: jsonl, field: ops, unit: op/s, direction: higher_is_better}
      - name: b
        command: [python3, -c, "pass"]
        readings: {field: t}
    """
    a, b = load(tmp_path, text).workloads
    assert a.readings == ReadingsSpec("jsonl", None, "ops", "op/s", "higher_is_better")
    assert a.direction == "higher_is_better"
    assert b.readings is not None and b.readings.format == "jsonl"


def test_executable_paths(tmp_path: Path) -> None:
    sub = tmp_path / "bin"
    sub.mkdir()
    script = sub / "prog"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    text = """\
    name: x
    workloads:
      - name: rel
        command: [./bin/prog]
      - name: in-cwd
        command: [./prog]
        cwd: bin
      - name: via-env-path
        command: [prog]
        env: {PATH: BINDIR}
      - name: shell-skips-check
        command: no-such-program-xyz --flag
        shell: true
    """.replace("BINDIR", str(sub))
    exp = load(tmp_path, text)
    assert exp.workloads[1].cwd == str(sub.resolve())


def test_load_without_command_checks(tmp_path: Path) -> None:
    path = write(
        tmp_path, "name: x\nworkloads:\n  - {name: a, command: [no-such-prog-xyz], cwd: gone}\n"
    )
    exp = load_experiment(path, check_commands=False)
    assert exp.workloads[0].command == ("no-such-prog-xyz",)


# ------------------------------------------------------------------------- error reports


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"nope\.yaml: file not found"):
        load_experiment(tmp_path / "nope.yaml")
    with pytest.raises(UserError, match="is a directory"):
        load_experiment(tmp_path)
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(UserError, match="not UTF-8"):
        load_experiment(bad)


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    text = "name: x\nworkloads:\n  - name: a\n    command: [python3\n    metric: wall_time\n"
    message = error(tmp_path, text)
    # the parser notices at the 'metric:' line (5); the bracket opened on line 4
    assert re.match(rf"{re.escape(str(tmp_path / 'exp.yaml'))}:5: YAML syntax error: ", message)
    assert "started on line 4" in message


CASES: list[tuple[str, str, str, str, tuple[str, ...]]] = [
    # (id, yaml, marker for the expected line, key path, fragments)
    ("empty", "", "", "top level", ("empty",)),
    ("not-mapping", "- a\n- b\n", "- a", "top level", ("expected a mapping", "got a list")),
    (
        "missing-name",
        MINIMAL_WORKLOADS,
        "workloads:",
        "top level",
        ("missing required key 'name'",),
    ),
    (
        "missing-workloads",
        "name: x\n",
        "name: x",
        "top level",
        ("missing required key 'workloads'",),
    ),
    ("empty-workloads", "name: x\nworkloads: []\n", "workloads:", "workloads", ("empty",)),
    (
        "unknown-top",
        "name: x\nrounds: 3\n" + MINIMAL_WORKLOADS,
        "rounds",
        "rounds",
        ("put it under settings",),
    ),
    (
        "did-you-mean",
        "name: x\nsettings:\n  rouns: 3\n" + MINIMAL_WORKLOADS,
        "rouns",
        "settings.rouns",
        ("did you mean 'rounds'?",),
    ),
    (
        "duplicate-key",
        "name: x\nname: y\n" + MINIMAL_WORKLOADS,
        "name: y",
        "name",
        ("duplicate key", "line 1"),
    ),
    ("bad-name", "name: my exp\n" + MINIMAL_WORKLOADS, "name: my", "name", ("no spaces",)),
    (
        "rounds-type",
        "name: x\nsettings:\n  rounds: ten\n" + MINIMAL_WORKLOADS,
        "rounds:",
        "settings.rounds",
        ("expected an integer", "'ten'"),
    ),
    (
        "rounds-negative",
        "name: x\nsettings:\n  rounds: -3\n" + MINIMAL_WORKLOADS,
        "rounds:",
        "settings.rounds",
        (">= 1",),
    ),
    (
        "confidence",
        "name: x\nsettings:\n  confidence: 1.5\n" + MINIMAL_WORKLOADS,
        "confidence",
        "settings.confidence",
        ("> 0 and <= 0.999999",),
    ),
    (
        "confidence-zero",
        "name: x\nsettings:\n  confidence: 0\n" + MINIMAL_WORKLOADS,
        "confidence",
        "settings.confidence",
        ("> 0",),
    ),
    (
        "duration",
        "name: x\nsettings:\n  timeout: 5 parsecs\n" + MINIMAL_WORKLOADS,
        "timeout",
        "settings.timeout",
        ("bad duration '5 parsecs'", "500ms"),
    ),
    (
        "duration-zero",
        "name: x\nsettings:\n  timeout: 0s\n" + MINIMAL_WORKLOADS,
        "timeout",
        "settings.timeout",
        ("> 0",),
    ),
    (
        "size",
        "name: x\nsettings:\n  output_limit: 64 parsecs\n" + MINIMAL_WORKLOADS,
        "output_limit",
        "settings.output_limit",
        ("KiB",),
    ),
    (
        "enum",
        "name: x\nsettings:\n  order: random\n" + MINIMAL_WORKLOADS,
        "order",
        "settings.order",
        ("interleaved | sequential",),
    ),
    (
        "pin-reversed",
        "name: x\nsettings:\n  pin: '2-1'\n" + MINIMAL_WORKLOADS,
        "pin",
        "settings.pin",
        ("end is below the start",),
    ),
    (
        "pin-garbage",
        "name: x\nsettings:\n  pin: x\n" + MINIMAL_WORKLOADS,
        "pin",
        "settings.pin",
        ("auto | none",),
    ),
    (
        "pin-absent-cpu",
        "name: x\nsettings:\n  pin: [4096]\n" + MINIMAL_WORKLOADS,
        "pin",
        "settings.pin",
        ("CPU 4096 not available", "available:"),
    ),
    (
        "budget",
        "name: x\nsettings:\n  min_rounds: 50\n  max_rounds: 10\n" + MINIMAL_WORKLOADS,
        "max_rounds",
        "settings.max_rounds",
        ("below",),
    ),
    (
        "reference",
        "name: x\nsettings:\n  reference: zz\n" + MINIMAL_WORKLOADS,
        "reference",
        "settings.reference",
        ("no workload named 'zz'", "valid: a"),
    ),
    (
        "baseline-missing",
        "name: x\nsettings:\n  baseline: nowhere/old.db\n" + MINIMAL_WORKLOADS,
        "baseline",
        "settings.baseline",
        ("not found", "campaign directory"),
    ),
    (
        "rounds-in-adaptive",
        "name: x\nsettings:\n  adaptive: true\n  rounds: 5\n" + MINIMAL_WORKLOADS,
        "rounds",
        "settings.rounds",
        ("adaptive is true", "adaptive: false"),
    ),
    (
        "env-bool",
        "name: x\nsettings:\n  env: {A: yes}\n" + MINIMAL_WORKLOADS,
        "env",
        "settings.env",
        ("quote it",),
    ),
    (
        "workloads-mapping",
        "name: x\nworkloads:\n  a: 1\n",
        "workloads:",
        "workloads",
        ("expected a list",),
    ),
    (
        "workload-unknown",
        "name: x\nworkloads:\n  - name: a\n    comand: [ls]\n",
        "comand",
        "workloads[0].comand",
        ("did you mean 'command'?",),
    ),
    (
        "workload-no-command",
        "name: x\nworkloads:\n  - name: a\n",
        "- name: a",
        "workloads[0]",
        ("missing required key 'command'",),
    ),
    (
        "command-type",
        "name: x\nworkloads:\n  - name: a\n    command: {x: 1}\n",
        "command",
        "workloads[0].command",
        ("expected a list",),
    ),
    (
        "command-empty",
        "name: x\nworkloads:\n  - name: a\n    command: []\n",
        "command",
        "workloads[0].command",
        ("empty command",),
    ),
    (
        "command-quote",
        "name: x\nworkloads:\n  - name: a\n    command: 'echo \"x'\n",
        "command",
        "workloads[0].command",
        ("No closing quotation",),
    ),
    (
        "shell-list",
        "name: x\nworkloads:\n  - name: a\n    shell: true\n    command: [echo, hi]\n",
        "command",
        "workloads[0].command",
        ("one string",),
    ),
    (
        "not-on-path",
        "name: x\nworkloads:\n  - name: a\n    command: no-such-prog-xyz --go\n",
        "command",
        "workloads[0].command",
        ("'no-such-prog-xyz' not found on PATH",),
    ),
    (
        "missing-path",
        "name: x\nworkloads:\n  - name: a\n    command: [./missing.sh]\n",
        "command",
        "workloads[0].command",
        ("'./missing.sh' not found", "relative to the experiment file"),
    ),
    (
        "cwd-missing",
        "name: x\nworkloads:\n  - name: a\n    command: [python3]\n    cwd: nowhere\n",
        "cwd",
        "workloads[0].cwd",
        ("does not exist",),
    ),
    (
        "placeholder",
        "name: x\nworkloads:\n  - name: a\n    command: [python3, -c, 'print({x})']\n    params: {n: 1}\n",
        "command",
        "workloads[0].command[2]",
        ("unknown placeholder {x}", "known: {n}, {work}, {round}", "{{"),
    ),
    (
        "json-braces",
        "name: x\nworkloads:\n  - name: a\n    command: [python3, -c, 'print({\"a\": 1})']\n",
        "command",
        "workloads[0].command[2]",
        ("{{ or }}", "python3 -c"),
    ),
    (
        "work-missing",
        "name: x\nworkloads:\n  - name: a\n    command: [python3, -c, 'range({work})']\n",
        "command",
        "workloads[0].command",
        ("no work:",),
    ),
    (
        "work-in-env",
        "name: x\nworkloads:\n  - name: a\n    command: [python3]\n    work: 3\n    env: {W: '{work}'}\n",
        "env",
        "workloads[0].env.W",
        ("command only",),
    ),
    (
        "per-work",
        "name: x\nworkloads:\n  - name: a\n    command: [python3]\n    per_work: true\n",
        "per_work",
        "workloads[0].per_work",
        ("needs work",),
    ),
    (
        "work-zero",
        "name: x\nworkloads:\n  - name: a\n    command: [python3]\n    work: 0\n",
        "work: 0",
        "workloads[0].work",
        (">= 1",),
    ),
    (
        "metric",
        "name: x\nworkloads:\n  - name: a\n    command: [python3]\n    metric: speed\n",
        "metric",
        "workloads[0].metric",
        ("wall_time | cpu_time | max_rss | readings",),
    ),
    (
        "metric-vs-readings",
        "name: x\nworkloads:\n  - name: a\n    command: [python3]\n    metric: cpu_time\n    readings: {pattern: 't=(\\d+)'}\n",
        "metric",
        "workloads[0].metric",
        ("readings imply metric: readings",),
    ),
    (
        "readings-missing",
        "name: x\nworkloads:\n  - name: a\n    command: [python3]\n    metric: readings\n",
        "metric",
        "workloads[0].metric",
        ("needs readings:",),
    ),
    (
        "regex-invalid",
        "name: x\nworkloads:\n  - name: a\n    command: [python3]\n    readings: {pattern: '(a'}\n",
        "readings",
        "workloads[0].readings.pattern",
        ("invalid regular expression",),
    ),
    (
        "regex-groups",
        "name: x\nworkloads:\n  - name: a\n    command: [python3]\n    readings:\n      pattern: '(a)(b)'\n",
        "pattern",
        "workloads[0].readings.pattern",
        ("2 capture groups", "exactly one"),
    ),
    (
        "regex-no-group",
        "name: x\nworkloads:\n  - name: a\n    command: [python3]\n    readings:\n      pattern: 'a'\n",
        "pattern",
        "workloads[0].readings.pattern",
        ("0 capture groups",),
    ),
    (
        "jsonl-no-field",
        "name: x\nworkloads:\n  - name: a\n    command: [python3]\n    readings:\n      format: jsonl\n",
        "readings:",
        "workloads[0].readings",
        ("needs field:",),
    ),
    (
        "duplicate-names",
        "name: x\nworkloads:\n  - name: a\n    command: [python3]\n  - name: a  # second\n    command: [python3, -V]\n",
        "# second",
        "workloads[1].name",
        ("duplicate workload name 'a'",),
    ),
    (
        "duplicate-after-matrix",
        "name: x\nworkloads:\n  - name: a\n    command: [python3, '{n}']\n  - name: a[n=2]\n    command: [python3]\nmatrix: {n: [1, 2]}\n",
        "a[n=2]",
        "workloads[1].name",
        ("'a[n=2]'", "after matrix expansion"),
    ),
    (
        "params-and-matrix",
        "name: x\nworkloads:\n  - name: a\n    command: [python3, '{n}']\n    params: {n: 1}\nmatrix: {n: [1, 2]}\n",
        "params",
        "workloads[0].params.n",
        ("not both",),
    ),
    (
        "matrix-unused",
        "name: x\nworkloads:\n  - name: a\n    command: [python3]\nmatrix:\n  n: [1, 2]\n",
        "n: [1",
        "matrix.n",
        ("no workload uses {n}",),
    ),
    (
        "matrix-empty",
        "name: x\nworkloads:\n  - name: a\n    command: [python3, '{n}']\nmatrix:\n  n: []\n",
        "n: []",
        "matrix.n",
        ("non-empty list",),
    ),
    (
        "matrix-reserved",
        "name: x\nworkloads:\n  - name: a\n    command: [python3]\nmatrix:\n  work: [1]\n",
        "work: [1]",
        "matrix.work",
        ("reserved",),
    ),
]


@pytest.mark.parametrize(
    ("case", "text", "marker", "key", "fragments"), CASES, ids=[c[0] for c in CASES]
)
def test_error_reports(
    tmp_path: Path, case: str, text: str, marker: str, key: str, fragments: tuple[str, ...]
) -> None:
    expect(tmp_path, text, marker, key, *fragments)


def test_not_executable(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text("print(1)\n")
    text = "name: x\nworkloads:\n  - name: a\n    command: [./script.py]\n"
    expect(tmp_path, text, "command", "workloads[0].command", "not an executable file", "chmod +x")


def test_error_for_matrix_value_reports_workload_line(tmp_path: Path) -> None:
    # the executable is only known after substitution; the error points at the command
    text = "name: x\nworkloads:\n  - name: a\n    command: ['{prog}']\nmatrix:\n  prog: [python3, no-such-prog-xyz]\n"
    expect(
        tmp_path, text, "command", "workloads[0].command", "'no-such-prog-xyz' not found on PATH"
    )


# ------------------------------------------------------------------------------- schema

SIMPLE_TYPES = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "object": dict,
    "array": list,
    "null": type(None),
}


def schema_errors(value: Any, schema: dict[str, Any], where: str = "$") -> list[str]:
    """A tiny checker for the JSON-Schema keywords benchrun's schema uses (type, enum,
    properties, required, additionalProperties, items, minItems, minLength, minimum,
    maximum, exclusiveMinimum/Maximum, pattern, anyOf), written from the 2020-12 spec."""
    errors: list[str] = []
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]

        def is_type(t: str) -> bool:
            if t in ("integer", "number") and isinstance(value, bool):
                return False
            if t == "integer" and isinstance(value, float):
                return value.is_integer()
            return isinstance(value, SIMPLE_TYPES[t])

        if not any(is_type(t) for t in types):
            return [f"{where}: {value!r} is not {types}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} not in {schema['enum']}")
    if "anyOf" in schema and all(schema_errors(value, s, where) for s in schema["anyOf"]):
        errors.append(f"{where}: matches no alternative")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{where}: missing {key}")
        for key, item in value.items():
            if key in props:
                errors += schema_errors(item, props[key], f"{where}.{key}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{where}: unexpected {key}")
            elif isinstance(schema.get("additionalProperties"), dict):
                errors += schema_errors(item, schema["additionalProperties"], f"{where}.{key}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{where}: too few items")
        if "items" in schema:
            for i, item in enumerate(value):
                errors += schema_errors(item, schema["items"], f"{where}[{i}]")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{where}: too short")
        if "pattern" in schema and re.search(schema["pattern"], value) is None:
            errors.append(f"{where}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{where}: below minimum")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            errors.append(f"{where}: not above exclusiveMinimum")
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            errors.append(f"{where}: not below exclusiveMaximum")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{where}: above maximum")
    return errors


def test_schema_keys_match_dataclasses() -> None:
    schema = json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    props = schema["properties"]
    experiment_keys = {f.name for f in dataclasses.fields(Experiment)} - {
        "source_path",
        "source_text",
    }
    assert set(props) == experiment_keys
    assert set(props["settings"]["properties"]) == {f.name for f in dataclasses.fields(Settings)}
    workload = props["workloads"]["items"]
    assert set(workload["properties"]) == {f.name for f in dataclasses.fields(Workload)} - {
        "base_name",
        "extra_metrics",  # the rest of a metric: list
    }
    assert set(workload["properties"]["readings"]["properties"]) == {
        f.name for f in dataclasses.fields(ReadingsSpec)
    }
    assert set(schema["required"]) == {"name", "workloads"}
    assert set(workload["required"]) == {"name", "command"}
    assert props["settings"]["properties"]["rounds"]["default"] == Settings().rounds


def test_init_template_and_test_configs_satisfy_schema(tmp_path: Path) -> None:
    schema = json_schema()
    for text in (template_text(), ISSUE_EXAMPLE, "name: x\n" + MINIMAL_WORKLOADS):
        assert schema_errors(yaml.safe_load(text), schema) == []


@pytest.mark.parametrize(
    "text",
    [
        "name: x\nsettings: {rouns: 3}\n" + MINIMAL_WORKLOADS,
        "name: x\nsettings: {confidence: 1.5}\n" + MINIMAL_WORKLOADS,
        "name: x\nsettings: {timeout: 5 parsecs}\n" + MINIMAL_WORKLOADS,
        "name: x\nsettings: {pin: x}\n" + MINIMAL_WORKLOADS,
        "name: x\nworkloads: []\n",
        MINIMAL_WORKLOADS,
        "name: x\nworkloads:\n  - {name: a}\n",
        "name: x\nworkloads:\n  - {name: a, command: ls, readings: {unit: ms}}\n",
        "name: x\nworkloads:\n  - {name: a, command: ls, metric: speed}\n",
    ],
)
def test_schema_rejects_what_the_validator_rejects(tmp_path: Path, text: str) -> None:
    assert schema_errors(yaml.safe_load(text), json_schema()) != []
    with pytest.raises(UserError):
        load(tmp_path, text)


def test_schema_is_valid_2020_12() -> None:
    jsonschema = pytest.importorskip("jsonschema")  # optional extra check, not a dependency
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(yaml.safe_load(template_text()), schema)


def test_init_template_loads_and_documents_every_key(tmp_path: Path) -> None:
    path = write(tmp_path, template_text())
    exp = load_experiment(path)
    assert exp.settings.pin == "auto"
    assert all(w.command[0] == "python3" for w in exp.workloads)
    text = template_text()
    for f in dataclasses.fields(Settings):
        # a key may be documented commented out (`# rounds: 10`: fixed mode only)
        assert re.search(rf"^\s*(# )?{f.name}:", text, re.M), f"settings.{f.name} not in init.yaml"


def test_adaptive_is_the_default_and_rounds_alone_means_fixed(tmp_path: Path) -> None:
    assert load(tmp_path, "name: x\n" + MINIMAL_WORKLOADS).settings.adaptive is True
    fixed = load(tmp_path, "name: x\nsettings: {rounds: 4}\n" + MINIMAL_WORKLOADS).settings
    assert fixed.adaptive is False and fixed.rounds == 4
    explicit = "name: x\nsettings: {adaptive: false, rounds: 4}\n" + MINIMAL_WORKLOADS
    assert load(tmp_path, explicit).settings.adaptive is False


def test_baseline_path_is_resolved_against_the_experiment_file(tmp_path: Path) -> None:
    (tmp_path / "old").mkdir()
    s = load(tmp_path, "name: x\nsettings: {baseline: old}\n" + MINIMAL_WORKLOADS).settings
    assert s.baseline == str((tmp_path / "old").resolve())


# ------------------------------------------------------------- --set KEY=VALUE overrides


def load_set(tmp_path: Path, text: str, *overrides: str) -> Settings:
    return load_experiment(write(tmp_path, text), overrides=overrides).settings


def test_set_replaces_settings_of_the_file(tmp_path: Path) -> None:
    text = "name: x\nsettings: {max_time: 50s, ci_rel_width: 0.05, seed: 1}\n" + MINIMAL_WORKLOADS
    s = load_set(tmp_path, text, "max_time=2m", "ci_rel_width=null", "alpha=0.05")
    # 2 min = 120 s; null switches the width condition off; untouched keys keep the file's
    assert (s.max_time, s.ci_rel_width, s.alpha, s.seed) == (120.0, None, 0.05, 1)
    # later items win
    assert load_set(tmp_path, text, "seed=3", "seed=7").seed == 7


def test_set_rounds_asks_for_fixed_mode_and_adaptive_true_drops_the_files_rounds(
    tmp_path: Path,
) -> None:
    adaptive_file = "name: x\nsettings: {adaptive: true}\n" + MINIMAL_WORKLOADS
    s = load_set(tmp_path, adaptive_file, "rounds=3")
    assert (s.adaptive, s.rounds) == (False, 3)
    fixed_file = "name: x\nsettings: {rounds: 4}\n" + MINIMAL_WORKLOADS
    assert load_set(tmp_path, fixed_file, "adaptive=true").adaptive is True


def test_max_rounds_left_at_its_default_lets_time_be_the_budget(tmp_path: Path) -> None:
    """extend_rounds resolves at load: on when neither the file nor --set gives max_rounds,
    off when either does (a cap), as given when set; stored resolved, so a resume keeps it."""
    plain = "name: x\n" + MINIMAL_WORKLOADS
    capped = "name: x\nsettings: {max_rounds: 40}\n" + MINIMAL_WORKLOADS
    assert load_set(tmp_path, plain).extend_rounds is True
    assert load_set(tmp_path, capped).extend_rounds is False
    assert load_set(tmp_path, plain, "max_rounds=40").extend_rounds is False
    assert load_set(tmp_path, capped, "extend_rounds=true").extend_rounds is True
    assert load_set(tmp_path, plain, "extend_rounds=false").extend_rounds is False
    assert load_set(tmp_path, capped, "extend_rounds=null").extend_rounds is False


@pytest.mark.parametrize(
    ("item", "fragment"),
    [
        ("max_tim=3", "--set max_tim: unknown key 'max_tim'; did you mean 'max_time'?"),
        ("max_time", "--set max_time: expected KEY=VALUE"),
        ("=3", "expected KEY=VALUE"),
        ("max_time=abc", "--set max_time: bad duration 'abc'"),
        ("alpha=[1", "--set alpha: value '[1' is not valid YAML"),
        ("min_rounds=-1", "--set min_rounds:"),
        ("order=backwards", "--set order:"),
    ],
)
def test_set_errors_name_the_option_not_a_file_line(
    tmp_path: Path, item: str, fragment: str
) -> None:
    with pytest.raises(UserError) as err:
        load_set(tmp_path, "name: x\n" + MINIMAL_WORKLOADS, item)
    assert fragment in str(err.value)
    assert "exp.yaml" not in str(err.value)


def test_set_conflicting_with_the_file_names_both(tmp_path: Path) -> None:
    text = "name: x\nsettings: {max_rounds: 300}\n" + MINIMAL_WORKLOADS
    with pytest.raises(UserError) as err:
        load_set(tmp_path, text, "min_rounds=400")
    msg = str(err.value)
    assert "max_rounds (300) is below min_rounds (400)" in msg and "--set min_rounds=400" in msg
