"""The one-line form's experiment file as a record (runner/config/oneline.py
``OneLineDocument``, ``WorkloadEntry``): what each option becomes, and the text written
from it in one place (issue 30)."""

from __future__ import annotations

from pathlib import Path

from benchrun.runner.config.oneline import (
    OneLine,
    OneLineDocument,
    WorkloadEntry,
    oneline_document,
    oneline_text,
)

CWD = Path("/srv/bench")


def test_the_options_become_the_record() -> None:
    spec = OneLine(
        commands=("sleep {t}", "awk '{print}'"),
        names=("nap",),
        params=(("t", "1,2"),),
        prepare=("sync",),
        experiment_name="exp",
        overrides=("seed=3",),
        metric=("cpu_time", "wall_time"),
    )
    assert oneline_document(spec, CWD) == OneLineDocument(
        name="exp",
        output="results",
        workloads=(
            WorkloadEntry(
                "nap",
                "sleep {t}",
                True,
                "/srv/bench",
                ("cpu_time", "wall_time"),
                (("prepare", "sync"),),
            ),
            WorkloadEntry(
                "awk '{print}'",
                "awk '{{print}}'",
                True,
                "/srv/bench",
                ("cpu_time", "wall_time"),
                (("prepare", "sync"),),
            ),
        ),
        settings={"seed": 3},
        matrix={"t": ["1", "2"]},
    )


def test_with_a_shell_the_commands_and_hooks_are_argvs() -> None:
    spec = OneLine(
        commands=("true",),
        shell=False,
        shell_words=("bash", "-e"),
        cleanup=("rm x",),
        experiment_name="e",
        executor="slurm",
    )
    (entry,) = oneline_document(spec, CWD).workloads
    assert entry == WorkloadEntry(
        "true",
        ("bash", "-e", "-c", "true"),
        False,
        "/srv/bench",
        None,
        (("cleanup", ("bash", "-e", "-c", "rm x")),),
    )
    assert entry.to_yaml() == {
        "name": "true",
        "command": ["bash", "-e", "-c", "true"],
        "cwd": "/srv/bench",
        "cleanup": ["bash", "-e", "-c", "rm x"],
    }


def test_the_text_written_from_the_record() -> None:
    spec = OneLine(
        commands=("a", "b"),
        experiment_name="two",
        metric=("cpu_time", "max_rss"),
        description="why",
    )
    body = oneline_text(spec, CWD).split("\n", 2)[2]  # the two comment lines aside
    # each workload's metric list is written out in full (no YAML anchor shared by both)
    assert body == (
        "name: two\n"
        "description: why\n"
        "output: results\n"
        "workloads:\n"
        "- name: a\n"
        "  command: a\n"
        "  shell: true\n"
        "  cwd: /srv/bench\n"
        "  metric:\n"
        "  - cpu_time\n"
        "  - max_rss\n"
        "- name: b\n"
        "  command: b\n"
        "  shell: true\n"
        "  cwd: /srv/bench\n"
        "  metric:\n"
        "  - cpu_time\n"
        "  - max_rss\n"
    )
