"""``executor: {node_types: ...}`` (issue 19, the fleet): what a fleet file becomes, and
one ``FILE:LINE: key: message`` per problem. No Slurm needed (commands not checked)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from benchrun.runner.config.experiment import SlurmSpec
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.config.oneline import OneLine, oneline_experiment
from benchrun.runner.config.schema import json_schema
from benchrun.runner.config.yamlsource import SourceError
from benchrun.runner.errors import UserError

REPO = Path(__file__).resolve().parents[2]

FLEET = (
    "executor:\n"
    "  kind: slurm\n"
    "  time: 10m\n"
    "  exclusive: false\n"
    "  partition: alpha\n"
    "  node_types:\n"
    "    alpha: {partition: alpha}\n"
    "    beta: {partition: beta, exclusive: true, sbatch_args: [--qos=short]}\n"
)
WORKLOADS = 'workloads:\n  - name: a\n    command: "true"\n  - name: b\n    command: "false"\n'


def load(text: str):  # type: ignore[no-untyped-def]
    return parse_experiment(f"name: x\n{text}", display="exp.yaml", check_commands=False)


def error_of(text: str) -> str:
    with pytest.raises(SourceError) as info:
        load(text)
    return str(info.value)


def test_each_workload_runs_once_per_node_type_and_is_compared_across_them() -> None:
    exp = load(FLEET + WORKLOADS)
    assert exp.names == (
        "a[node_type=alpha]",
        "a[node_type=beta]",
        "b[node_type=alpha]",
        "b[node_type=beta]",
    )
    assert exp.compare == (
        ("a[node_type=alpha]", "a[node_type=beta]"),
        ("b[node_type=alpha]", "b[node_type=beta]"),
    )
    # each benchmark is its own comparison group: one verdict per benchmark
    groups = {exp.comparison_group(n) for n in exp.names}
    assert groups == {"wall_time:s#1", "wall_time:s#2"}
    w = exp.workloads[1]
    assert w.params == {"node_type": "beta"} and w.base_name == "a"
    assert exp.node_type_of("b[node_type=alpha]") == "alpha"


def test_a_node_type_is_the_shared_keys_with_its_own_on_top() -> None:
    spec = load(FLEET + WORKLOADS).executor
    assert spec is not None and spec.node_type_names == ("alpha", "beta")
    shared = dict(time=600.0, exclusive=False, partition="alpha")
    assert spec.node_type("alpha") == SlurmSpec(**shared)  # type: ignore[arg-type]
    assert spec.node_type("beta") == SlurmSpec(
        time=600.0, partition="beta", exclusive=True, sbatch_args=("--qos=short",)
    )
    with pytest.raises(KeyError):
        spec.node_type("gamma")


def test_matrix_names_gain_the_node_type() -> None:
    exp = load(FLEET + "matrix:\n  n: [1, 2]\nworkloads:\n  - name: loop\n    command: echo {n}\n")
    assert exp.names == (
        "loop[n=1,node_type=alpha]",
        "loop[n=1,node_type=beta]",
        "loop[n=2,node_type=alpha]",
        "loop[n=2,node_type=beta]",
    )
    assert exp.workloads[3].params == {"n": 2, "node_type": "beta"}
    assert exp.workloads[3].base_name == "loop"
    assert exp.compare is not None and len(exp.compare) == 2


def test_node_types_are_part_of_the_fingerprint() -> None:
    base = load(FLEET + WORKLOADS).measurement_fingerprint()
    moved = load(FLEET.replace("beta: {partition: beta", "beta: {partition: gamma") + WORKLOADS)
    assert moved.measurement_fingerprint() != base
    constrained = load(
        FLEET.replace("alpha: {partition: alpha}", "alpha: {partition: alpha, constraint: avx}")
        + WORKLOADS
    )
    assert constrained.measurement_fingerprint() != base
    longer = load(FLEET.replace("time: 10m", "time: 20m") + WORKLOADS)
    assert longer.measurement_fingerprint() == base  # a limit, not where rounds run


@pytest.mark.parametrize(
    ("node_types", "line", "fragment"),
    [
        ("  node_types:\n    alpha: {partition: alpha}\n", 6, "at least 2 node types"),
        ("  node_types: [alpha, beta]\n", 6, "expected a mapping of node type name"),
        (
            "  node_types:\n    'a b': {partition: alpha}\n    beta: {partition: beta}\n",
            7,
            "bad node type name",
        ),
        (
            "  node_types:\n    'x[1]': {partition: alpha}\n    beta: {partition: beta}\n",
            7,
            "part of workload names",
        ),
        (
            "  node_types:\n    alpha: {partition: alpha, time: 5m}\n    beta: {partition: beta}\n",
            7,
            "shared by every node type",
        ),
        (
            "  node_types:\n    alpha: {partiton: alpha}\n    beta: {partition: beta}\n",
            7,
            "did you mean 'partition'",
        ),
        (
            "  node_types:\n    alpha: {partition: 'a b'}\n    beta: {partition: beta}\n",
            7,
            "bad partition",
        ),
        (
            "  node_types:\n    alpha: {sbatch_args: [--partition=x]}\n    beta: {partition: b}\n",
            7,
            "set by executor key partition",
        ),
        (
            "  node_types:\n    alpha: {partition: alpha}\n    beta: {partition: alpha}\n",
            8,
            "compared with itself",
        ),
        ("  node_types:\n    alpha: 3\n    beta: {partition: beta}\n", 7, "expected a mapping"),
    ],
)
def test_bad_node_types(node_types: str, line: int, fragment: str) -> None:
    text = "executor:\n  kind: slurm\n  time: 10m\n  exclusive: false\n" + node_types + WORKLOADS
    message = error_of(text)
    assert f"exp.yaml:{line}:" in message, message
    assert fragment in message, message


def test_node_type_is_reserved_as_a_factor_and_a_param() -> None:
    message = error_of(
        FLEET + "matrix:\n  node_type: [x, y]\n"
        "workloads:\n  - name: a\n    command: echo {node_type}\n"
    )
    assert "exp.yaml:11: matrix.node_type:" in message and "fleet's own factor" in message
    message = error_of(
        FLEET + "workloads:\n  - name: a\n    command: 'true'\n    params: {node_type: x}\n"
    )
    assert "exp.yaml:13: workloads[0].params.node_type:" in message, message
    # without node types it is an ordinary factor
    exp = load(
        "matrix:\n  node_type: [x, y]\nworkloads:\n  - name: a\n    command: echo {node_type}\n"
    )
    assert exp.names == ("a[node_type=x]", "a[node_type=y]")


def test_compare_is_refused_in_a_fleet_with_the_reason() -> None:
    message = error_of(FLEET + WORKLOADS + "compare: [[a, b]]\n")
    assert "exp.yaml:15: compare: not with executor node_types" in message, message
    assert "the comparison is across node types" in message


def test_too_many_workloads_after_the_node_types() -> None:
    message = error_of("settings:\n  max_workloads: 3\n" + FLEET + WORKLOADS)
    assert "4 workloads" in message and "max_workloads" in message


def test_the_schema_describes_node_types() -> None:
    props = json_schema()["properties"]["executor"]["anyOf"][1]["properties"]
    frag = props["node_types"]
    assert frag["minProperties"] == 2
    assert set(frag["additionalProperties"]["properties"]) == {
        "partition",
        "constraint",
        "nodes",
        "account",
        "sbatch_args",
        "exclusive",
    }
    assert "default" not in frag


def test_the_one_line_form_takes_node_types(tmp_path: Path) -> None:
    types = {"alpha": {"partition": "alpha"}, "beta": {"partition": "beta"}}
    spec = OneLine(commands=("true", "false"), executor={"kind": "slurm", "node_types": types})
    exp = oneline_experiment(spec, tmp_path, check_commands=False)
    assert exp.executor is not None and exp.executor.node_type_names == ("alpha", "beta")
    assert len(exp.names) == 4 and all("node_type=" in n for n in exp.names)
    bad = OneLine(commands=("true",), executor={"kind": "slurm", "node_types": {"a": {}}})
    with pytest.raises(UserError, match=r"^--executor: .*at least 2 node types"):
        oneline_experiment(bad, tmp_path, check_commands=False)


def test_benchrun_validate_takes_the_example_fleet() -> None:
    exe = shutil.which("benchrun")
    assert exe is not None, "the benchrun console script is not installed (pip install -e .)"
    done = subprocess.run(
        [exe, "validate", "--json", "configs/fleet.yaml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin:" + str(Path(exe).parent)},
    )
    doc = json.loads(done.stdout)
    # sbatch may be missing where this runs: that is the only error allowed
    others = [e for e in doc.get("errors", []) if "sbatch is not on PATH" not in e["message"]]
    assert others == [], doc


def test_benchrun_validate_says_it_is_a_fleet() -> None:
    exe = shutil.which("benchrun")
    assert exe is not None
    done = subprocess.run(
        [exe, "validate", "configs/fleet.yaml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    if shutil.which("sbatch") is None:
        pytest.skip("sbatch is not on PATH: validate refuses executor slurm here")
    assert done.returncode == 0, done.stderr
    assert "fleet:    2 node types: alpha (partition alpha), beta (partition beta)" in done.stdout
    assert "sum[n=20000,node_type=alpha] ~ sum[n=20000,node_type=beta]" in done.stdout
