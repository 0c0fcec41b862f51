"""The fleet's executor (runner/execute/fleet.py, issue 19): each round to its node type's
executor, interrupts to the round in flight, every member closed, node metadata merged.
Members are stand-ins with SlurmExecutor's public interface; no Slurm needed."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec
from benchrun.runner.execute.factory import make_executor
from benchrun.runner.execute.fleet import FleetExecutor
from benchrun.runner.execute.slurm import SlurmExecutor


class StandIn:
    """Records what it is asked; a round ``block`` waits until interrupted."""

    def __init__(self, node: str, record: dict[str, Any] | None = None) -> None:
        self.node = node
        self.record = record or {"hardware": {"cpu_model": f"cpu of {node}"}}
        self.node_metadata: dict[str, dict[str, Any]] = {}
        self.on_node: Any = None
        self.launched: list[str] = []
        self.interrupts = 0
        self.closed = 0
        self.pending = False
        self.fail_close = False
        self.in_flight = threading.Event()
        self.wake = threading.Event()

    def launch(self, spec: RoundSpec) -> RoundOutcome:
        if not self.node_metadata:  # the job's agent says hello: the node's record
            self.node_metadata[self.node] = self.record
            if self.on_node is not None:
                self.on_node(self.node, self.record)
        self.launched.append(spec.workload)
        if self.pending:
            self.pending = False
            return RoundOutcome("interrupted", 0, 0, 0, 0, None, time.time(), node=self.node)
        if spec.argv[0] == "block":
            self.in_flight.set()
            interrupted = self.wake.wait(10)
            status = "interrupted" if interrupted else "ok"
            return RoundOutcome(status, 5, 0, 0, 0, None, time.time(), node=self.node)
        return RoundOutcome("ok", 1000, 0, 0, 0, 0, time.time(), node=self.node)

    def interrupt(self) -> None:
        self.interrupts += 1
        if self.in_flight.is_set():
            self.wake.set()
        else:
            self.pending = True

    def clear_interrupt(self) -> None:
        self.pending = False

    def close(self) -> None:
        self.closed += 1
        if self.fail_close:
            raise RuntimeError(f"close of {self.node} failed")


def spec(workload: str, argv: tuple[str, ...] = ("true",)) -> RoundSpec:
    return RoundSpec(workload=workload, argv=argv, env={}, timeout=10.0)


ROUTES = {"a[node_type=alpha]": "alpha", "a[node_type=beta]": "beta", "b[node_type=alpha]": "alpha"}


def fleet() -> tuple[FleetExecutor, StandIn, StandIn]:
    alpha, beta = StandIn("n1"), StandIn("n2")
    return FleetExecutor({"alpha": alpha, "beta": beta}, ROUTES), alpha, beta


def test_each_round_goes_to_its_node_type() -> None:
    f, alpha, beta = fleet()
    outs = [
        f.launch(spec(w)) for w in ("a[node_type=alpha]", "a[node_type=beta]", "b[node_type=alpha]")
    ]
    assert alpha.launched == ["a[node_type=alpha]", "b[node_type=alpha]"]
    assert beta.launched == ["a[node_type=beta]"]
    assert [o.node for o in outs] == ["n1", "n2", "n1"]
    with pytest.raises(ValueError, match="no node type"):
        f.launch(spec("stranger"))


def test_a_type_starts_at_its_first_round_only() -> None:
    f, alpha, beta = fleet()
    f.launch(spec("a[node_type=alpha]"))
    assert alpha.launched and not beta.launched and beta.node_metadata == {}
    assert f.nodes_by_type() == {"alpha": ["n1"], "beta": []}


def test_routes_to_unknown_types_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown node types: gamma"):
        FleetExecutor({"alpha": StandIn("n1")}, {"x": "gamma"})


def test_node_metadata_is_merged_and_told_once_per_node() -> None:
    alpha = StandIn("vm", {"hardware": {"cpu_model": "first"}})
    beta = StandIn("vm", {"hardware": {"cpu_model": "second"}})  # the same node in both types
    other = StandIn("n3")
    f = FleetExecutor(
        {"alpha": alpha, "beta": beta, "gamma": other}, {"x": "alpha", "y": "beta", "z": "gamma"}
    )
    told: list[tuple[str, dict[str, Any]]] = []
    f.on_node = lambda node, record: told.append((node, record))
    for w in ("x", "y", "z"):
        f.launch(spec(w))
    assert [n for n, _ in told] == ["vm", "n3"]
    assert told[0][1]["hardware"]["cpu_model"] == "first"
    assert set(f.node_metadata) == {"vm", "n3"}
    assert f.node_metadata["vm"]["hardware"]["cpu_model"] == "first"
    assert f.nodes_by_type() == {"alpha": ["vm"], "beta": ["vm"], "gamma": ["n3"]}


def test_interrupt_reaches_the_round_in_flight_only() -> None:
    f, alpha, beta = fleet()
    out: list[RoundOutcome] = []
    t = threading.Thread(target=lambda: out.append(f.launch(spec("a[node_type=beta]", ("block",)))))
    t.start()
    assert beta.in_flight.wait(10)
    f.interrupt()
    t.join(10)
    assert out and out[0].status == "interrupted"
    assert beta.interrupts == 1 and alpha.interrupts == 0


def test_an_interrupt_between_rounds_stops_the_next_launch() -> None:
    f, alpha, beta = fleet()
    f.interrupt()
    assert alpha.interrupts == beta.interrupts == 0  # nothing in flight: remembered
    assert f.launch(spec("a[node_type=alpha]")).status == "interrupted"
    assert f.launch(spec("b[node_type=alpha]")).status == "ok"  # once only
    f.interrupt()
    f.clear_interrupt()
    assert f.launch(spec("a[node_type=beta]")).status == "ok"


def test_close_closes_every_member_even_when_one_fails() -> None:
    f, alpha, beta = fleet()
    alpha.fail_close = True
    with pytest.raises(RuntimeError, match="close of n1 failed"):
        f.close()
    assert alpha.closed == beta.closed == 1
    f.close()  # idempotent
    assert alpha.closed == beta.closed == 1


FILE = (
    "name: fl\n"
    "executor:\n"
    "  kind: slurm\n"
    "  time: 10m\n"
    "  listen: 'login1:7700'\n"
    "  node_types:\n"
    "    alpha: {partition: alpha, exclusive: false}\n"
    "    beta: {partition: beta}\n"
    "workloads:\n"
    "  - name: a\n    command: [python3, -c, pass]\n    env: {A: '1'}\n"
    "  - name: b\n    command: 'true'\n"
)


def test_the_factory_builds_one_slurm_executor_per_type(tmp_path: Path) -> None:
    exp = parse_experiment(FILE, display="f.yaml", check_commands=False)
    ex = make_executor(exp, on_message=lambda text: None)
    try:
        assert isinstance(ex, FleetExecutor)
        assert list(ex.members) == ["alpha", "beta"]
        alpha, beta = ex.members["alpha"], ex.members["beta"]
        assert isinstance(alpha, SlurmExecutor) and isinstance(beta, SlurmExecutor)
        assert alpha.spec.partition == "alpha" and alpha.spec.exclusive is False
        assert beta.spec.partition == "beta" and beta.spec.exclusive is True
        assert alpha.spec.time == beta.spec.time == 600.0
        # the two listen at once: each its own port
        assert (alpha.spec.listen, beta.spec.listen) == ("login1:7700", "login1:7701")
        assert alpha.job_name == "benchrun-fl-alpha" and beta.job_name == "benchrun-fl-beta"
        assert [c.workload for c in alpha.checks] == ["a[node_type=alpha]", "b[node_type=alpha]"]
        assert [c.workload for c in beta.checks] == ["a[node_type=beta]", "b[node_type=beta]"]
        assert ex.routes["a[node_type=beta]"] == "beta"
        assert "--partition=alpha" in alpha.sbatch_options()
        assert (
            "--exclusive" in beta.sbatch_options() and "--exclusive" not in alpha.sbatch_options()
        )
        assert alpha.env_keys == frozenset({"A"})
    finally:
        ex.close()


def test_a_member_messages_name_its_node_type() -> None:
    exp = parse_experiment(FILE, display="f.yaml", check_commands=False)
    said: list[str] = []
    ex = make_executor(exp, on_message=said.append)
    try:
        assert isinstance(ex, FleetExecutor)
        member = ex.members["beta"]
        assert isinstance(member, SlurmExecutor)
        member.on_message("slurm job 7 submitted")
        assert said == ["beta: slurm job 7 submitted"]
    finally:
        ex.close()
