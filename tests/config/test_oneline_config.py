"""The one-line form's experiment (runner/config/oneline.py) and the experiment rebuilt
from a stored campaign (runner/config/stored.py), without processes."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import yaml

from benchrun.runner.config.experiment import Settings
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.config.oneline import (
    OneLine,
    default_names,
    derived_name,
    escape_braces,
    oneline_experiment,
    oneline_text,
)
from benchrun.runner.config.stored import stored_experiment_text
from benchrun.runner.errors import UserError


def test_names_follow_n_then_the_commands_themselves() -> None:
    long = "python3 -c 'import json; print(json.dumps(list(range(100))))'"
    assert default_names(["sleep 1", "  sleep\t 2 ", long, "sleep 1"], ["first"]) == [
        "first",
        "sleep 2",
        "python3 -c 'import json; print(json.dumps(lis...",  # 45 characters and ...
        "sleep 1",  # the command's own text: "first" named the other sleep 1
    ]
    assert default_names(["sleep 1", "sleep 1"], []) == ["sleep 1", "sleep 1 (2)"]


def test_only_parameters_and_round_are_placeholders() -> None:
    assert escape_braces("awk '{print $1}' ${HOME} {n} {round} {m}", ["n"]) == (
        "awk '{{print $1}}' ${{HOME}} {n} {round} {{m}}"
    )


def test_the_experiment_of_the_options(tmp_path: Path) -> None:
    spec = OneLine(
        commands=("sort -n {size}.txt", "sort -g {size}.txt | head -1"),
        names=("n",),
        params=(("size", "10,1.10"),),
        prepare=("cat {size}.txt >/dev/null",),
        cleanup=("rm -f a", "rm -f b"),
        overrides=("max_time=2m",),
        output="out",
    )
    exp = oneline_experiment(spec, tmp_path)
    assert exp.names == (
        "n[size=10]",
        "n[size=1.10]",  # values stay as typed: 1.10 is not 1.1
        "sort -g {size}.txt | head -1[size=10]",
        "sort -g {size}.txt | head -1[size=1.10]",
    )
    w = exp.workloads[1]
    assert (w.command, w.shell, w.cwd) == (("sort -n 1.10.txt",), True, str(tmp_path))
    assert w.prepare is not None and w.prepare.command == ("cat 1.10.txt >/dev/null",)
    assert [x.cleanup.command for x in exp.workloads if x.cleanup] == [("rm -f a",)] * 2 + [
        ("rm -f b",)
    ] * 2
    assert exp.settings.max_time == 120.0
    assert exp.output == Path.cwd() / "out"
    assert exp.matrix == {"size": ("10", "1.10")}
    # the stored text is an experiment file of its own
    again = parse_experiment(exp.source_text, base_dir=Path("/"))
    assert again.measurement_fingerprint() == exp.measurement_fingerprint()


def test_no_shell_splits_the_command(tmp_path: Path) -> None:
    exp = oneline_experiment(OneLine(commands=("python3 -c 'pass'",), shell=False), tmp_path)
    assert (exp.workloads[0].command, exp.workloads[0].shell) == (("python3", "-c", "pass"), False)


def test_the_derived_name_depends_on_what_is_measured_only(tmp_path: Path) -> None:
    base = OneLine(commands=("sleep 0.1", "sleep 0.2"))
    name = derived_name(base)
    assert re.fullmatch(r"sleep-0\.1-vs-sleep-0\.2-[0-9a-f]{8}", name)
    same = dataclasses.replace(base, overrides=("max_time=1h",), output="elsewhere")
    assert derived_name(same) == name
    for other in (
        dataclasses.replace(base, commands=("sleep 0.1", "sleep 0.3")),
        dataclasses.replace(base, names=("a",)),
        dataclasses.replace(base, prepare=("sync",)),
        dataclasses.replace(base, shell=False),
    ):
        assert derived_name(other) != name
    named = dataclasses.replace(base, experiment_name="mine")
    assert oneline_experiment(named, tmp_path).name == "mine"


def test_the_text_is_yaml_with_the_settings_and_baseline(tmp_path: Path) -> None:
    (tmp_path / "old").mkdir()
    spec = OneLine(
        commands=("true",), overrides=("rounds=4", "seed=9"), baseline=str(tmp_path / "old")
    )
    doc = yaml.safe_load(oneline_text(spec, tmp_path))
    assert doc["settings"] == {"rounds": 4, "seed": 9, "baseline": str(tmp_path / "old")}
    assert doc["workloads"] == [
        {"name": "true", "command": "true", "shell": True, "cwd": str(tmp_path)}
    ]
    with pytest.raises(UserError, match="--baseline nowhere: not found"):
        oneline_text(dataclasses.replace(spec, baseline="nowhere"), tmp_path)


def test_stored_settings_replace_the_file_s(tmp_path: Path) -> None:
    text = (
        "name: x\nsettings:\n  rounds: 5\n  seed: 2\nworkloads:\n  - {name: a, command: [work]}\n"
    )
    # what the campaign ran with: --set adaptive=true --set max_time=90s --set pin=none
    ran = dataclasses.asdict(Settings(adaptive=True, max_time=90.0, seed=2, pin="none"))
    ran["rounds"] = 20
    ran["from_a_newer_benchrun"] = 1
    exp = parse_experiment(
        stored_experiment_text(text, ran), base_dir=tmp_path, check_commands=False
    )
    # the stored settings hold max_rounds, so an extend_rounds stored unresolved (a campaign
    # from before the setting) resolves to off: the budget it ran with, a cap
    assert exp.settings == Settings(
        adaptive=True, max_time=90.0, seed=2, pin="none", extend_rounds=False
    )
    fixed = dataclasses.asdict(Settings(adaptive=False, rounds=5, seed=2, pin="none"))
    exp = parse_experiment(
        stored_experiment_text(text, fixed), base_dir=tmp_path, check_commands=False
    )
    assert (exp.settings.adaptive, exp.settings.rounds) == (False, 5)
