"""Each node's metadata, collected once on the node and compared between nodes (issue 19):
:func:`runner.machine.nodes.node_differences` on hand-made records, the agent's hello
carrying the node's record (in process, no Slurm), and one campaign on the real cluster
storing one ``node-metadata`` event (that test alone needs the ``slurm_cluster`` fixture).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.config.loader import load_experiment
from benchrun.runner.execute import agent as agent_module
from benchrun.runner.execute.agent import UNAUTHENTICATED_LINE, Channel, hello_message
from benchrun.runner.execute.agent_messages import Hello, encode
from benchrun.runner.execute.factory import make_executor
from benchrun.runner.execute.local import LocalExecutor
from benchrun.runner.execute.slurm import AGENT_MODULE, SlurmExecutor
from benchrun.runner.machine.nodes import microcode, node_differences, node_metadata, node_summary
from benchrun.runner.store.database import Store


def record(
    model: str = "Xeon 8480",
    micro: str | None = "0x2b000590",
    kernel: str = "6.1.0",
    governor: str | None = "performance",
    smt: bool | None = True,
    cpus: int | None = 112,
) -> dict[str, Any]:
    return {
        "hardware": {
            "cpu_model": model,
            "microcode": micro,
            "governor": governor,
            "smt_active": smt,
            "cores_logical": cpus,
        },
        "software": {"kernel_release": kernel},
    }


# ------------------------------------------------------------------- node_differences


def test_identical_nodes_and_a_single_node_differ_in_nothing() -> None:
    assert node_differences({"vm1": record(), "vm2": record()}) == []
    assert node_differences({"vm1": record(model="A")}) == []
    assert node_differences({}) == []


def test_each_differing_fact_is_one_line_naming_every_node() -> None:
    lines = node_differences(
        {
            "vm2": record(model="EPYC 9654", kernel="6.5.0", smt=False),
            "vm1": record(),
            "vm3": record(),
        }
    )
    assert lines == [
        "cpu model differs: vm1 Xeon 8480, vm2 EPYC 9654, vm3 Xeon 8480",
        "kernel differs: vm1 6.1.0, vm2 6.5.0, vm3 6.1.0",
        "smt differs: vm1 on, vm2 off, vm3 on",
    ]


def test_microcode_governor_and_cpu_count() -> None:
    lines = node_differences(
        {
            "a": record(micro="0x1", governor="powersave", cpus=8),
            "b": record(micro="0x2", governor="performance", cpus=16),
        }
    )
    assert lines == [
        "microcode differs: a 0x1, b 0x2",
        "governor differs: a powersave, b performance",
        "cpu count differs: a 8, b 16",
    ]


def test_unknown_facts() -> None:
    # no node says: no difference; some say, some not: a difference shown as unknown
    both_unknown = node_differences({"a": record(governor=None), "b": record(governor=None)})
    assert both_unknown == []
    assert node_differences({"a": record(micro=None), "b": record()}) == [
        "microcode differs: a unknown, b 0x2b000590"
    ]
    # a record without its sections (a node whose collection failed) is all unknown
    lines = node_differences({"a": {}, "b": record()})
    assert lines[0] == "cpu model differs: a unknown, b Xeon 8480"
    assert len(lines) == 6


def test_node_summary_line() -> None:
    assert node_summary("vm", record()) == "vm: Xeon 8480, kernel 6.1.0"
    assert node_summary("vm", {}) == "vm: unknown, kernel unknown"


def test_microcode_is_read_from_cpuinfo(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: X\nmicrocode\t: 0x1000065\n\nprocessor\t: 1\n")
    assert microcode(info) == "0x1000065"
    info.write_text("processor\t: 0\n")
    assert microcode(info) is None
    assert microcode(tmp_path / "missing") is None


def test_node_metadata_is_collect_metadata_with_microcode() -> None:
    meta = node_metadata([0])
    assert meta["software"]["kernel_release"] == os.uname().release
    assert "microcode" in meta["hardware"]
    assert meta["environment"]["workload_cpus"] == [0]
    assert meta["environment"]["variables"] == {}  # no environment variables recorded
    assert len(encode(meta)) < 64 * 1024  # a few KB


# ----------------------------------------------------------------------------- hello


def test_the_agents_hello_carries_the_nodes_metadata() -> None:
    a, b = socket.socketpair()
    ours, theirs = Channel(a), Channel(b)
    agent = agent_module.Agent(theirs, LocalExecutor(), metadata_fn=node_metadata)
    agent.hello("secret")
    hello = ours.receive(10.0)
    assert isinstance(hello, Hello) and hello.token == "secret"
    meta: Any = hello.metadata
    assert meta["software"]["kernel_release"] == os.uname().release
    assert meta["environment"]["workload_cpus"] == sorted(os.sched_getaffinity(0))
    assert meta["hardware"]["cpu_model"] == node_metadata()["hardware"]["cpu_model"]
    # an agent started without a collector says so with null
    agent_module.Agent(theirs, LocalExecutor()).hello("secret")
    bare = ours.receive(10.0)
    assert isinstance(bare, Hello) and bare.metadata is None
    ours.close()
    theirs.close()


def test_a_record_too_big_for_the_hello_is_replaced_by_the_reason(
    capsys: pytest.CaptureFixture[str],
) -> None:
    huge = {"hardware": {"cpu_model": "x" * (UNAUTHENTICATED_LINE + 10)}}
    message = hello_message("t", [0], huge)
    assert len(encode(message.to_json())) <= UNAUTHENTICATED_LINE
    unavailable: Any = message.metadata
    reason = unavailable["_unavailable"]["*"]
    assert "more than the 1048576 bytes" in reason
    assert reason in capsys.readouterr().err
    small = hello_message("t", [0], {"a": 1})
    assert small.metadata == {"a": 1}


def test_the_jobs_run_the_agent_with_the_metadata_collector() -> None:
    assert AGENT_MODULE == "benchrun.runner.campaign.node_agent"
    import benchrun.runner.campaign.node_agent as node_agent

    assert callable(node_agent.main)


# ---------------------------------------------------------------------- real cluster


class Recorder:
    """A display that keeps every round's outcome."""

    def __init__(self) -> None:
        self.outcomes: list[tuple[str, Any]] = []

    def round_done(self, workload: str, outcome: Any, value: Any, warmup: bool) -> None:
        self.outcomes.append((workload, outcome))

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kw: None  # start, message, show_decision, stop


@pytest.mark.usefixtures("slurm_cluster")
def test_a_campaign_stores_each_nodes_metadata_once(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text(
        f"name: slurm-nodes\noutput: {tmp_path / 'results'}\n"
        "executor: {kind: slurm, partition: alpha, time: '10:00'}\n"
        "settings: {rounds: 3, warmup_rounds: 0}\n"
        'workloads:\n  - {name: t, command: "true"}\n'
    )
    experiment = load_experiment(path)
    executor = make_executor(experiment, on_message=lambda text: None)
    assert isinstance(executor, SlurmExecutor)
    display = Recorder()
    with contextlib.closing(executor):
        outcome = run_campaign(experiment, executor, display)
    assert outcome.exit_code == 0, outcome.message
    node = display.outcomes[0][1].node
    assert node is not None
    assert list(executor.node_metadata) == [node]
    with Store.open(outcome.db_path) as store:
        events = [e for e in store.events(outcome.campaign_id) if e.kind == "node-metadata"]
    assert len(events) == 1
    data = events[0].data
    assert data is not None and data["node"] == node
    assert data["record"]["software"]["kernel_release"] == os.uname().release
    assert data["record"] == executor.node_metadata[node]
    # show prints the node and says nothing differs (one node); --json carries the record
    shown = subprocess.run(
        ["benchrun", "show", str(outcome.db_path.parent)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    at = lines.index("nodes:")
    assert lines[at + 1].strip().startswith(f"{node}: ")
    assert os.uname().release in lines[at + 1] and "differs" not in shown.stdout
    doc = json.loads(
        subprocess.run(
            ["benchrun", "show", str(outcome.db_path.parent), "--json"],
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
    )
    assert doc["nodes"] == {node: data["record"]} and doc["node_differences"] == []
