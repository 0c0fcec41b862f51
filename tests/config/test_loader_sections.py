"""The loader's parse boundary (runner/config/loader.py ``_Document``, ``_WorkloadItem``):
the top-level sections and a workload's ``params:``/``cwd:`` read once out of the YAML
mapping, an absent key null, and the same file:line errors as when each was read where
it was used (issue 30)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrun.runner.config.experiment import Experiment
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.config.yamlsource import ConfigErrors, SourceError
from benchrun.runner.errors import UserError


def parse(
    text: str, tmp_path: Path, collect: bool = False, overrides: tuple[str, ...] = ()
) -> Experiment:
    """The experiment of ``text`` in ``tmp_path`` (its commands not looked for)."""
    return parse_experiment(
        text, base_dir=tmp_path, check_commands=False, collect=collect, overrides=overrides
    )


def problems(text: str, tmp_path: Path) -> list[tuple[int | None, str | None, str]]:
    """(line, key, message) of every problem of ``text``, found in one pass."""
    with pytest.raises(ConfigErrors) as info:
        parse(text, tmp_path, collect=True)
    return [(e.line, e.key, e.message) for e in info.value.errors]


def test_absent_params_and_cwd_are_none_and_the_files_directory(tmp_path: Path) -> None:
    exp = parse("name: x\nworkloads:\n  - {name: a, command: ['true']}\n", tmp_path)
    (w,) = exp.workloads
    assert dict(w.params) == {}
    assert w.cwd == str(tmp_path)


def test_null_params_and_cwd_are_the_same_as_absent(tmp_path: Path) -> None:
    exp = parse(
        "name: x\nworkloads:\n  - {name: a, command: ['true'], params: null, cwd: null}\n",
        tmp_path,
    )
    (w,) = exp.workloads
    assert dict(w.params) == {}
    assert w.cwd == str(tmp_path)


def test_given_params_and_cwd_are_read(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    text = "name: x\nworkloads:\n  - name: a\n    command: [echo, '{n}']\n    params: {n: 3}\n    cwd: sub\n"
    (w,) = parse(text, tmp_path).workloads
    assert w.command == ("echo", "3")
    assert dict(w.params) == {"n": 3}
    assert w.cwd == str(tmp_path / "sub")


def test_bad_sections_are_reported_at_their_lines(tmp_path: Path) -> None:
    text = (
        "name: null\n"  # line 1
        "matrix: [1, 2]\n"  # line 2
        "compare: {by: n}\n"  # line 3
        "workloads:\n"
        "  - name: a\n"
        "    command: ['true']\n"
        "    params: [n]\n"  # line 7
        "    cwd: 3\n"  # line 8
    )
    assert problems(text, tmp_path) == [
        (
            1,
            "name",
            "bad experiment name null; it names a directory: at most 200 characters, no "
            "spaces, slashes or control characters, not starting with '.'",
        ),
        (2, "matrix", "expected a mapping of name: [values], got a list"),
        (3, "compare", "expected a list of groups, got a mapping"),
        (7, "workloads[0].params", "expected a mapping of name: value, got a list"),
        (8, "workloads[0].cwd", "expected a directory path, got number 3"),
    ]


def test_a_missing_name_is_reported_and_the_rest_still_read(tmp_path: Path) -> None:
    text = "workloads:\n  - {name: a, command: ['true'], params: 5}\n"
    assert problems(text, tmp_path) == [
        (1, "top level", "missing required key 'name' in the experiment"),
        (2, "workloads[0].params", "expected a mapping of name: value, got number 5"),
    ]


def test_rounds_with_a_bad_adaptive_is_still_refused_in_adaptive_mode(tmp_path: Path) -> None:
    # a bad adaptive: keeps its default (true), under which rounds: is the wrong key
    text = "name: x\nsettings:\n  adaptive: 'yes'\n  rounds: 5\nworkloads:\n  - {name: a, command: ['true']}\n"
    found = problems(text, tmp_path)
    assert [(line, key) for line, key, _ in found] == [
        (3, "settings.adaptive"),
        (4, "settings.rounds"),
    ]
    assert found[1][2].startswith("rounds is the count of fixed mode, but adaptive is true")


@pytest.mark.parametrize(
    ("settings", "overrides", "adaptive", "extend"),
    [
        ("rounds: 5", (), False, True),
        ("{max_rounds: 50}", (), True, False),
        ("{max_rounds: 50, extend_rounds: true}", (), True, True),
        ("rounds: 5", ("adaptive=true",), True, True),
        ("{adaptive: true}", ("rounds=4",), False, True),
    ],
)
def test_settings_resolved_after_they_are_read(
    tmp_path: Path, settings: str, overrides: tuple[str, ...], adaptive: bool, extend: bool
) -> None:
    text = f"name: x\nsettings: {settings}\nworkloads:\n  - {{name: a, command: ['true']}}\n"
    if settings.startswith("rounds"):
        text = f"name: x\nsettings:\n  {settings}\nworkloads:\n  - {{name: a, command: ['true']}}\n"
    got = parse(text, tmp_path, overrides=overrides).settings
    assert (got.adaptive, got.extend_rounds) == (adaptive, extend)


def test_a_set_adaptive_that_is_no_boolean_is_refused_as_the_option(tmp_path: Path) -> None:
    text = "name: x\nsettings:\n  rounds: 5\nworkloads:\n  - {name: a, command: ['true']}\n"
    with pytest.raises(UserError) as info:
        parse(text, tmp_path, overrides=("adaptive=1",))
    assert not isinstance(info.value, SourceError)
    assert str(info.value) == "--set adaptive: expected true or false, got number 1"


def test_fleet_names_read_from_the_sections(tmp_path: Path) -> None:
    text = (
        "name: x\n"
        "executor: {kind: slurm, node_types: {a: {}, b: {partition: p}}}\n"
        "compare: [[a, b]]\n"  # line 3
        "workloads:\n"
        "  - {name: a, command: ['true'], params: {node_type: 2}}\n"  # line 5
        "  - {name: b, command: ['true'], params: null}\n"
    )
    assert [(line, key) for line, key, _ in problems(text, tmp_path)] == [
        (3, "compare"),
        (5, "workloads[0].params.node_type"),
    ]


def test_top_level_hooks_are_the_default_of_workloads_that_give_none(tmp_path: Path) -> None:
    text = (
        "name: x\n"
        "setup: 'echo up'\n"
        "cleanup: null\n"
        "workloads:\n"
        "  - {name: a, command: ['true'], setup: null}\n"
        "  - {name: b, command: ['true'], cleanup: 'echo down'}\n"
    )
    exp = parse(text, tmp_path)
    assert exp.setup is not None and exp.setup.command == ("echo up",)
    assert exp.prepare is None and exp.cleanup is None
    a, b = exp.workloads
    assert (a.setup, a.cleanup) == (None, None)
    assert b.setup is not None and b.setup.command == ("echo up",)
    assert b.cleanup is not None and b.cleanup.command == ("echo down",) and b.cleanup.shell
