"""``executor:`` in the experiment file (issue 19): the forms it takes, what each becomes,
and one ``FILE:LINE: key: message`` per problem from the loader and from ``benchrun
validate``. None of this needs Slurm: commands are not checked (``check_commands=False``)
except where sbatch's absence is the point.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from benchrun.runner.config.durations import parse_job_time
from benchrun.runner.config.experiment import SlurmSpec
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.config.oneline import OneLine, oneline_experiment
from benchrun.runner.config.schema import json_schema
from benchrun.runner.config.yamlsource import ConfigErrors, SourceError
from benchrun.runner.errors import UserError

WORKLOADS = 'workloads:\n  - name: a\n    command: "true"\n'


def load(executor_yaml: str, check: bool = False):  # type: ignore[no-untyped-def]
    text = f"name: x\n{executor_yaml}{WORKLOADS}"
    return parse_experiment(text, display="exp.yaml", check_commands=check)


def error_of(executor_yaml: str) -> str:
    with pytest.raises(SourceError) as info:
        load(executor_yaml)
    return str(info.value)


def test_local_is_the_default_and_can_be_written() -> None:
    assert load("").executor is None
    assert load("executor: local\n").executor is None
    assert load("executor:\n  kind: local\n").executor is None


def test_the_word_slurm_gives_every_default() -> None:
    assert load("executor: slurm\n").executor == SlurmSpec()
    assert SlurmSpec().nodes == 1 and SlurmSpec().exclusive is True


def test_a_full_mapping() -> None:
    spec = load(
        "executor:\n"
        "  kind: slurm\n"
        "  partition: alpha\n"
        "  constraint: 'skylake&ib'\n"
        "  nodes: 2\n"
        "  account: proj1\n"
        "  time: 1:30:00\n"
        "  sbatch_args: [--qos=short, --mem=8G]\n"
        "  exclusive: false\n"
        "  listen: 10.0.0.5:7700\n"
        "  python: /opt/bench/bin/python\n"
        "  pending_limit: 2m\n"
        "  max_resubmits: 0\n"
    ).executor
    assert spec == SlurmSpec(
        partition="alpha",
        constraint="skylake&ib",
        nodes=2,
        account="proj1",
        time=5400.0,
        sbatch_args=("--qos=short", "--mem=8G"),
        exclusive=False,
        listen="10.0.0.5:7700",
        python="/opt/bench/bin/python",
        pending_limit=120.0,
        max_resubmits=0,
    )
    assert spec.time_text() == "0-01:30:00"
    assert spec.node_count == 2


def test_nodes_as_names() -> None:
    spec = load("executor:\n  kind: slurm\n  nodes: [n01, 'n[02-04]']\n").executor
    assert spec is not None and spec.nodes == ("n01", "n[02-04]") and spec.node_count is None
    one = load("executor:\n  kind: slurm\n  nodes: n07\n").executor
    assert one is not None and one.nodes == ("n07",)


@pytest.mark.parametrize(
    ("written", "seconds"),
    [
        ("1:00:00", 3600.0),  # YAML 1.1 reads this as the integer 3600; Slurm's H:M:S
        ("30:00", 1800.0),  # M:S
        ("'0:01:00'", 60.0),
        ("2-00:00:00", 172800.0),  # D-H:M:S
        ("1-12", 129600.0),  # D-H
        ("1-0:30", 88200.0),  # D-H:M
        ("90m", 5400.0),  # a benchrun duration
        ("2h", 7200.0),
    ],
)
def test_time_limits(written: str, seconds: float) -> None:
    spec = load(f"executor:\n  kind: slurm\n  time: {written}\n").executor
    assert spec is not None and spec.time == seconds


def test_time_text_rounds_up_to_whole_minutes() -> None:
    assert SlurmSpec(time=61.0).time_text() == "0-00:02:00"
    assert SlurmSpec(time=86400.0 + 60).time_text() == "1-00:01:00"
    assert SlurmSpec().time_text() is None


def test_parse_job_time_refuses_bare_numbers() -> None:
    for value in (30, 30.0, "30"):
        with pytest.raises(ValueError, match="ambiguous"):
            parse_job_time(value)
    assert parse_job_time(3600, "1:00:00") == 3600.0


#: (executor YAML, line of the error, key, fragment of the message)
BAD = [
    ("executor: cluster\n", 2, "executor", "valid: local | slurm"),
    ("executor: [slurm]\n", 2, "executor", "valid: local | slurm"),
    ("executor:\n  partition: alpha\n", 2, "executor", "missing required key 'kind'"),
    ("executor:\n  kind: pbs\n", 3, "executor.kind", "valid: local | slurm"),
    ("executor:\n  kind: local\n  partition: a\n", 4, "executor.partition", "kind: slurm"),
    ("executor:\n  kind: slurm\n  partiton: a\n", 4, "executor.partiton", "did you mean"),
    ("executor:\n  kind: slurm\n  partition: 'a b'\n", 4, "executor.partition", "spaces"),
    ("executor:\n  kind: slurm\n  partition: 3\n", 4, "executor.partition", "expected a string"),
    ("executor:\n  kind: slurm\n  nodes: 0\n", 4, "executor.nodes", "1 to"),
    ("executor:\n  kind: slurm\n  nodes: true\n", 4, "executor.nodes", "node count"),
    ("executor:\n  kind: slurm\n  nodes: []\n", 4, "executor.nodes", "node count"),
    ("executor:\n  kind: slurm\n  nodes: [a, a]\n", 4, "executor.nodes[1]", "twice"),
    ("executor:\n  kind: slurm\n  nodes: ['a,b']\n", 4, "executor.nodes[0]", "node name"),
    ("executor:\n  kind: slurm\n  time: 90\n", 4, "executor.time", "ambiguous"),
    ("executor:\n  kind: slurm\n  time: 30s\n", 4, "executor.time", "whole minutes"),
    ("executor:\n  kind: slurm\n  time: soon\n", 4, "executor.time", "bad time limit"),
    ("executor:\n  kind: slurm\n  time: 999-00:00:00\n", 4, "executor.time", "days"),
    ("executor:\n  kind: slurm\n  sbatch_args: -p alpha\n", 4, "executor.sbatch_args[0]", "-p"),
    (
        "executor:\n  kind: slurm\n  sbatch_args: [--time=5]\n",
        4,
        "executor.sbatch_args[0]",
        "executor key time:",
    ),
    (
        "executor:\n  kind: slurm\n  sbatch_args: [--output=x.log]\n",
        4,
        "executor.sbatch_args[0]",
        "benchrun sets --output itself",
    ),
    ("executor:\n  kind: slurm\n  sbatch_args: [qos]\n", 4, "executor.sbatch_args[0]", "not an"),
    ("executor:\n  kind: slurm\n  sbatch_args: [1]\n", 4, "executor.sbatch_args", "strings"),
    ("executor:\n  kind: slurm\n  exclusive: yes please\n", 4, "executor.exclusive", "true"),
    ("executor:\n  kind: slurm\n  listen: 'h:99999'\n", 4, "executor.listen", "HOST:PORT"),
    ("executor:\n  kind: slurm\n  pending_limit: 0\n", 4, "executor.pending_limit", "> 0"),
    ("executor:\n  kind: slurm\n  max_resubmits: -1\n", 4, "executor.max_resubmits", ">= 0"),
]


@pytest.mark.parametrize(("yaml_text", "line", "key", "fragment"), BAD)
def test_bad_executors_name_file_line_and_key(
    yaml_text: str, line: int, key: str, fragment: str
) -> None:
    message = error_of(yaml_text)
    assert message.startswith(f"exp.yaml:{line}: {key}: "), message
    assert fragment in message
    assert "\n" not in message


def test_every_problem_of_the_executor_is_collected() -> None:
    text = (
        "name: x\n"
        "executor:\n"
        "  kind: slurm\n"
        "  partition: 'a b'\n"  # 4
        "  time: 45\n"  # 5
        "  max_resubmits: many\n"  # 6
        "  colour: red\n" + WORKLOADS  # 7
    )
    with pytest.raises(ConfigErrors) as info:
        parse_experiment(text, display="exp.yaml", check_commands=False, collect=True)
    found = [(e.line, e.key) for e in info.value.errors]
    assert found == [
        (4, "executor.partition"),
        (5, "executor.time"),
        (6, "executor.max_resubmits"),
        (7, "executor.colour"),
    ]


def test_slurm_needs_sbatch_when_commands_are_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing here: no sbatch
    with pytest.raises(SourceError, match=r"exp.yaml:2: executor: .*sbatch is not on PATH"):
        parse_experiment(
            "name: x\nexecutor: slurm\nworkloads:\n  - {name: a, command: [/bin/true]}\n",
            display="exp.yaml",
            check_commands=True,
        )


def test_where_rounds_run_is_part_of_the_fingerprint() -> None:
    local = load("")
    alpha = load("executor: {kind: slurm, partition: alpha}\n")
    beta = load("executor: {kind: slurm, partition: beta}\n")
    longer = load("executor: {kind: slurm, partition: alpha, time: '2:00:00'}\n")
    prints = {e.measurement_fingerprint() for e in (local, alpha, beta)}
    assert len(prints) == 3
    # limits do not change what is measured: a resume may raise them
    assert longer.measurement_fingerprint() == alpha.measurement_fingerprint()


def test_schema_describes_the_executor() -> None:
    schema = json_schema()["properties"]["executor"]
    word, mapping = schema["anyOf"]
    assert word == {"enum": ["local", "slurm"]}
    assert set(mapping["properties"]) == {"kind"} | {f for f in SlurmSpec.__dataclass_fields__}
    assert mapping["required"] == ["kind"]
    assert mapping["properties"]["pending_limit"]["default"] == SlurmSpec().pending_limit


def test_the_one_line_form_takes_an_executor(tmp_path: Path) -> None:
    spec = OneLine(commands=("true",), executor={"kind": "slurm", "partition": "beta"})
    exp = oneline_experiment(spec, tmp_path, check_commands=False)
    assert exp.executor == SlurmSpec(partition="beta")
    with pytest.raises(UserError, match=r"^--executor: bad partition"):
        oneline_experiment(
            OneLine(commands=("true",), executor={"kind": "slurm", "partition": "b c"}),
            tmp_path,
            check_commands=False,
        )


def test_benchrun_validate_reports_executor_problems(tmp_path: Path) -> None:
    exe = shutil.which("benchrun")
    assert exe is not None, "the benchrun console script is not installed (pip install -e .)"
    (tmp_path / "exp.yaml").write_text(
        "name: x\n"
        "executor:\n"
        "  kind: slurm\n"
        "  nodes: 0\n"  # 4
        "  time: 45\n"  # 5
        "workloads:\n"
        "  - name: a\n"
        "    command: [/bin/true]\n"
    )
    done = subprocess.run(
        [exe, "validate", "--json", "exp.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    errors = json.loads(done.stdout)["errors"]
    keyed = {(e["line"], e["key"]) for e in errors}
    assert {(4, "executor.nodes"), (5, "executor.time")} <= keyed
