"""Multi-node Slurm jobs (issue 19): one job of N nodes, one agent per node, every round of
pass p on node p mod N.

The first part drives :class:`SlurmExecutor` through a stand-in for the Slurm commands
(``NodesSlurm``: the batch script runs with ``sh`` on this machine and a stand-in ``srun``
starts one real agent process per node name, each with its own ``$SLURMD_NODENAME``), so
the routing, the hooks and the faults are checked without a cluster; where a round ran is
what the agent process on that "node" reports. The last part runs campaigns on the real
two-node partition ``pair`` of tests/slurm/cluster.sh (nodes n1 and n2).
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.config.experiment import SlurmSpec
from benchrun.runner.config.loader import load_experiment
from benchrun.runner.errors import UserError
from benchrun.runner.execute import slurm as slurm_module
from benchrun.runner.execute.agent_messages import encode, spec_from_json, spec_to_json
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec
from benchrun.runner.execute.factory import make_executor
from benchrun.runner.execute.fake import FakeExecutor, constant
from benchrun.runner.execute.slurm import JobState, SlurmCommands, SlurmExecutor
from benchrun.runner.store.database import Store

#: srun played on this machine: one task per name in $FAKE_NODES, each with its node
#: name; options are skipped. Tasks whose name is in $FAKE_DEAD do not start.
FAKE_SRUN = """#!/bin/sh
while [ $# -gt 0 ]; do case "$1" in --*) shift ;; *) break ;; esac; done
for n in $FAKE_NODES; do
    case " $FAKE_DEAD " in *" $n "*) continue ;; esac
    SLURMD_NODENAME=$n "$@" &
done
wait
"""


class NodesSlurm(SlurmCommands):
    """Slurm's commands for a job of ``nodes`` on this machine: ``submit`` runs the batch
    script with ``sh`` in its own process group, with the stand-in ``srun`` first on
    ``PATH``; ``cancel`` sends SIGTERM to the group as scancel does; ``state`` reads the
    process. ``dead`` nodes never start their agent."""

    def __init__(self, bin_dir: Path, nodes: Sequence[str], dead: Sequence[str] = ()) -> None:
        super().__init__()
        srun = bin_dir / "srun"
        srun.write_text(FAKE_SRUN)
        srun.chmod(0o755)
        self.bin_dir = bin_dir
        self.nodes = list(nodes)
        self.dead = list(dead)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.cancelled: set[str] = set()
        self.submitted: list[tuple[str, list[str]]] = []

    def check_partition(self, name: str) -> None:
        pass

    def submit(self, script: str, options: Sequence[str]) -> str:
        job_id = str(len(self.submitted) + 1)
        self.submitted.append((script, list(options)))
        env = {
            **os.environ,
            "PATH": f"{self.bin_dir}:{os.environ['PATH']}",
            "SLURMD_NODENAME": self.nodes[0],
            "SLURM_JOB_ID": job_id,
            "FAKE_NODES": " ".join(self.nodes),
            "FAKE_DEAD": " ".join(self.dead),
        }
        self.procs[job_id] = subprocess.Popen(["sh", "-c", script], env=env, start_new_session=True)
        return job_id

    def cancel(self, job_id: str) -> None:
        self.cancelled.add(job_id)
        proc = self.procs.get(job_id)
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)

    def state(self, job_id: str) -> JobState | None:
        proc = self.procs[job_id]
        code = proc.poll()
        listed = ",".join(self.nodes)
        if code is None:
            return JobState(job_id, "RUNNING", node=self.nodes[0], node_list=listed)
        if job_id in self.cancelled:
            return JobState(job_id, "CANCELLED", exit_code="0:15", node=self.nodes[0])
        return JobState(job_id, "COMPLETED", exit_code="0:0", node=self.nodes[0])

    def hostnames(self, node_list: str) -> list[str]:
        """Slurm's expansion, for the forms used here: ``a,b`` and ``p[1-3]``."""
        out: list[str] = []
        for part in node_list.split(","):
            ranged = re.fullmatch(r"(\w+)\[(\d+)-(\d+)\]", part)
            if ranged is None:
                out.append(part)
            else:
                low, high = int(ranged[2]), int(ranged[3])
                out += [f"{ranged[1]}{i}" for i in range(low, high + 1)]
        return out

    def agent_pids(self, job_id: str) -> dict[str, int]:
        """The agent process of each node of the job (by its ``$SLURMD_NODENAME``)."""
        out: dict[str, int] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if os.getpgid(int(entry.name)) != self.procs[job_id].pid:
                    continue
                environ = (entry / "environ").read_bytes().split(b"\0")
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if slurm_module.AGENT_MODULE.encode() not in cmdline:
                continue
            for item in environ:
                if item.startswith(b"SLURMD_NODENAME="):
                    out[item.split(b"=", 1)[1].decode()] = int(entry.name)
        return out

    def stop_all(self) -> None:
        for job_id in list(self.procs):
            self.cancel(job_id)


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    path = tmp_path / "bin"
    path.mkdir()
    return path


def executor_for(commands: NodesSlurm, nodes: int | tuple[str, ...], **kw: Any) -> SlurmExecutor:
    spec_kw = {k: kw.pop(k) for k in list(kw) if k in SlurmSpec.__dataclass_fields__}
    spec = SlurmSpec(**{"listen": "127.0.0.1", "nodes": nodes, **spec_kw})
    messages: list[str] = []
    kw.setdefault("env_keys", frozenset())  # the round's environment: the job's (the node's)
    executor = SlurmExecutor(spec, commands=commands, on_message=messages.append, **kw)
    executor.messages = messages  # type: ignore[attr-defined]
    return executor


def spec_of(argv: Sequence[str], pass_index: int | None, **kw: Any) -> RoundSpec:
    kw.setdefault("workload", "w")
    kw.setdefault("timeout", 30.0)
    return RoundSpec(argv=tuple(argv), env=dict(os.environ), pass_index=pass_index, **kw)


def where(outcome: RoundOutcome) -> str | None:
    """The node the round ran on, as the round itself printed it (``$SLURMD_NODENAME``
    of the agent that ran it: the stand-in srun set it, not the executor)."""
    return outcome.stderr_tail.strip() or None


#: a round that reports its node on stderr and fails so that the tail is kept
SAY_NODE = ["sh", "-c", 'echo "$SLURMD_NODENAME" >&2; exit 1']


def test_pass_p_runs_on_node_p_mod_n_in_one_job(bin_dir: Path) -> None:
    slurm = NodesSlurm(bin_dir, ["c", "a", "b"])  # srun starts them in this order
    seen: list[str] = []
    executor = executor_for(slurm, 3, on_node=lambda node, record: seen.append(node))
    try:
        outcomes = [executor.launch(spec_of(SAY_NODE, p)) for p in (0, 1, 2, 3, 4, 5, 4)]
        first = executor.launch(spec_of(SAY_NODE, None))
    finally:
        executor.close()
    # the agents are ordered by node name: pass p -> sorted(nodes)[p % 3]
    assert [where(o) for o in outcomes] == ["a", "b", "c", "a", "b", "c", "b"]
    assert [o.node for o in outcomes] == [where(o) for o in outcomes]
    assert where(first) == "a"  # not part of a pass: the first node
    assert len(slurm.submitted) == 1
    script, options = slurm.submitted[0]
    assert "exec srun --nodes=3 --ntasks=3 --ntasks-per-node=1 " in script
    assert "--nodes=3" in options and "--exclusive" in options
    # each node's metadata once, collected by the agent on that node
    assert sorted(seen) == ["a", "b", "c"] and sorted(executor.node_metadata) == ["a", "b", "c"]
    assert any("runs on nodes a, b, c" in m for m in executor.messages)  # type: ignore[attr-defined]
    assert slurm.state("1") == JobState("1", "COMPLETED", exit_code="0:0", node="c")


def test_named_nodes_route_in_the_order_given(bin_dir: Path) -> None:
    slurm = NodesSlurm(bin_dir, ["n1", "n2"])
    executor = executor_for(slurm, ("n2", "n1"))
    try:
        outcomes = [executor.launch(spec_of(SAY_NODE, p)) for p in range(4)]
    finally:
        executor.close()
    assert [where(o) for o in outcomes] == ["n2", "n1", "n2", "n1"]
    _, options = slurm.submitted[0]
    assert "--nodelist=n2,n1" in options and "--nodes=2" in options


def test_a_host_list_expression_counts_its_nodes(bin_dir: Path) -> None:
    slurm = NodesSlurm(bin_dir, ["b2", "b1", "b3"])
    executor = executor_for(slurm, ("b[1-3]",))
    try:
        outcomes = [executor.launch(spec_of(SAY_NODE, p)) for p in range(3)]
    finally:
        executor.close()
    assert [where(o) for o in outcomes] == ["b1", "b2", "b3"]
    _, options = slurm.submitted[0]
    assert "--nodelist=b[1-3]" in options and "--nodes=3" in options


def test_one_node_keeps_the_plain_agent_launch(bin_dir: Path) -> None:
    slurm = NodesSlurm(bin_dir, ["solo"])
    executor = executor_for(slurm, 1)
    try:
        assert where(executor.launch(spec_of(SAY_NODE, 7))) == "solo"
    finally:
        executor.close()
    script, _ = slurm.submitted[0]
    assert "srun" not in script


def test_setup_runs_on_each_node_before_its_first_round_and_cleanup_on_every_node(
    bin_dir: Path, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    slurm = NodesSlurm(bin_dir, ["a", "b"])
    executor = executor_for(slurm, 2)

    def hook(kind: str, pass_index: int | None) -> RoundSpec:
        script = f'echo x >> "{marks}/{kind}-$SLURMD_NODENAME"'
        return spec_of([script], pass_index, shell=True, hook=kind)

    try:
        assert executor.launch(hook("setup", 0)).status == "ok"  # as the campaign sends it
        for p in range(4):
            assert executor.launch(spec_of(["true"], p)).status == "ok"
        cleanup = executor.launch(hook("cleanup", None))
    finally:
        executor.close()
    assert cleanup.status == "ok"
    counts = {f.name: len(f.read_text().split()) for f in marks.iterdir()}
    assert counts == {"setup-a": 1, "setup-b": 1, "cleanup-a": 1, "cleanup-b": 1}


def test_a_setup_that_fails_on_another_node_fails_the_round_there(
    bin_dir: Path, tmp_path: Path
) -> None:
    slurm = NodesSlurm(bin_dir, ["a", "b"])
    executor = executor_for(slurm, 2)
    setup = spec_of(
        ['[ "$SLURMD_NODENAME" = a ] || { echo no disk >&2; exit 4; }'],
        0,
        shell=True,
        hook="setup",
    )
    try:
        assert executor.launch(setup).status == "ok"
        on_a = executor.launch(spec_of(["true"], 0))
        on_b = executor.launch(spec_of(["true"], 1))
    finally:
        executor.close()
    assert on_a.status == "ok"
    assert on_b.status == "failed" and on_b.node == "b"
    assert on_b.reason == "setup failed on node b: exit code 4; the round did not run"
    assert "no disk" in on_b.stderr_tail


def test_a_job_cancelled_under_a_round_on_one_node_fails_it_and_resubmits(
    bin_dir: Path,
) -> None:
    slurm = NodesSlurm(bin_dir, ["a", "b"])
    executor = executor_for(slurm, 2)
    try:
        assert executor.launch(spec_of(["true"], 0)).status == "ok"
        threading.Timer(0.5, slurm.cancel, args=("1",)).start()
        lost = executor.launch(spec_of(["sleep", "30"], 1))
        again = [executor.launch(spec_of(SAY_NODE, p)) for p in (2, 3)]
    finally:
        executor.close()
        slurm.stop_all()
    assert (lost.status, lost.node) == ("failed", "b")
    assert lost.reason == "slurm job 1 CANCELLED (exit 0:15)"
    assert [where(o) for o in again] == ["a", "b"]
    assert {o.extra["slurm_job"] for o in again} == {"2"}
    assert len(slurm.submitted) == 2


def test_an_agent_that_dies_under_a_round_fails_it_and_ends_the_job(
    bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(slurm_module, "SETTLE_TIME", 1.0)
    slurm = NodesSlurm(bin_dir, ["a", "b"])
    executor = executor_for(slurm, 2)
    try:
        assert executor.launch(spec_of(["true"], 1)).status == "ok"
        pid_b = slurm.agent_pids("1")["b"]
        threading.Timer(0.5, os.kill, args=(pid_b, signal.SIGKILL)).start()
        t0 = time.monotonic()
        lost = executor.launch(spec_of(["sleep", "30"], 1))
        took = time.monotonic() - t0
        after = executor.launch(spec_of(SAY_NODE, 1))
    finally:
        executor.close()
        slurm.stop_all()
    assert (lost.status, lost.node) == ("failed", "b")
    assert lost.reason == (
        "the agent of slurm job 1 on node b stopped answering (job RUNNING); the job was cancelled"
    )
    assert took < 10
    assert "1" in slurm.cancelled  # node a's agent does not keep the job
    assert where(after) == "b" and after.extra["slurm_job"] == "2"


def test_an_agent_that_never_connects_is_named(bin_dir: Path) -> None:
    slurm = NodesSlurm(bin_dir, ["a", "b"], dead=["b"])
    executor = executor_for(slurm, 2, pending_limit=3.0)
    try:
        with pytest.raises(UserError) as info:
            executor.launch(spec_of(["true"], 0))
    finally:
        executor.close()
    message = str(info.value)
    assert message.startswith(
        "slurm: job 1 is RUNNING on nodes a, b but the agent on node b did not connect to "
        "127.0.0.1:"
    )
    assert "(connected: a;" in message and "after 3 s (executor pending_limit)" in message
    assert slurm.cancelled == {"1"}


def test_the_campaign_tells_each_launch_its_pass(tmp_path: Path) -> None:
    """RoundSpec.pass_index as the session sets it (the fake executor keeps every spec):
    each round's is the pass it is stored with, a prepare's that of its round, the
    setup's that of the workload's first round, the cleanup's None."""
    path = tmp_path / "exp.yaml"
    path.write_text(
        f"name: passes\noutput: {tmp_path / 'results'}\n"
        "settings: {rounds: 3, warmup_rounds: 1, order: interleaved}\n"
        "workloads:\n"
        '  - {name: a, command: [work, a], setup: "make", prepare: [reset], cleanup: "rm"}\n'
        "  - {name: b, command: [work, b]}\n"
    )
    experiment = load_experiment(path, check_commands=False)
    fake = FakeExecutor({"a": constant(0.01), "b": constant(0.02)})
    outcome = run_campaign(experiment, fake, Recorder())
    assert outcome.status == "done", outcome.message
    with Store.open(outcome.db_path) as store:
        stored = [r.pass_ for r in store.rounds(outcome.campaign_id)]
    launched = fake.launched
    rounds = [s.pass_index for s in launched if s.hook is None]
    assert rounds == stored and sorted(set(stored)) == [0, 1, 2, 3]
    for i, spec in enumerate(launched):
        if spec.hook == "prepare":  # the round it prepares comes next
            assert launched[i + 1].hook is None and spec.pass_index == launched[i + 1].pass_index
    hooks = {s.hook: s.pass_index for s in launched if s.hook in ("setup", "cleanup")}
    assert hooks == {"setup": 0, "cleanup": None}


def test_the_pass_travels_to_the_node() -> None:
    spec = spec_of(["true"], 5, hook="prepare")
    assert spec_from_json(json.loads(encode(spec_to_json(spec)))) == spec
    assert spec_from_json(spec_to_json(spec_of(["true"], None))).pass_index is None


# ----------------------------------------------------------------- the real cluster


def _partitions() -> set[str]:
    done = subprocess.run(["sinfo", "-h", "-o", "%R"], capture_output=True, text=True, timeout=30)
    return set(done.stdout.split())


@pytest.fixture
def pair_cluster(slurm_cluster: Path) -> Path:
    """The test cluster, which must have the two-node partition ``pair``."""
    if "pair" not in _partitions():
        pytest.skip(
            f"the running test cluster ({slurm_cluster}) has no partition pair: it was "
            "started by an older tests/slurm/cluster.sh; run tests/slurm/cluster.sh start"
        )
    return slurm_cluster


class Recorder:
    """A display that keeps every message and calls ``on_round(count)`` after each round."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.rounds = 0
        self.on_round: Any = None
        self.executor: SlurmExecutor | None = None  # the campaign's (set by _campaign)

    def start(self, *args: Any) -> None:
        pass

    def round_done(self, *args: Any) -> None:
        self.rounds += 1
        if self.on_round is not None:
            self.on_round(self.rounds)

    def message(self, text: str) -> None:
        self.messages.append(text)

    def show_decision(self, *args: Any) -> None:
        pass

    def stop(self) -> None:
        pass


TWO_WORKLOADS = (
    '  - {name: t, command: "true", setup: "true", cleanup: "true"}\n'
    '  - {name: s, command: [sleep, "0.01"]}\n'
)


def _campaign(
    tmp_path: Path,
    nodes: str,
    rounds: int,
    name: str,
    workloads: str = TWO_WORKLOADS,
    display: Recorder | None = None,
    more: str = "",
) -> tuple[Any, SlurmExecutor]:
    path = tmp_path / "exp.yaml"
    path.write_text(
        f"name: {name}\noutput: {tmp_path / 'results'}\n"
        f"executor: {{kind: slurm, partition: pair, nodes: {nodes}, time: '10:00'{more}}}\n"
        f"settings: {{rounds: {rounds}, warmup_rounds: 0}}\n"
        f"workloads:\n{workloads}"
    )
    experiment = load_experiment(path)
    display = display if display is not None else Recorder()
    executor = make_executor(experiment, on_message=display.message)
    assert isinstance(executor, SlurmExecutor)
    display.executor = executor
    with contextlib.closing(executor):
        return run_campaign(experiment, executor, display), executor


def _job_state(job_id: str) -> str:
    state = SlurmCommands().state(job_id)
    assert state is not None
    return state.state


def test_a_two_node_campaign_on_the_real_cluster(pair_cluster: Path, tmp_path: Path) -> None:
    outcome, executor = _campaign(tmp_path, "2", 6, "slurm-pair")
    assert (outcome.status, outcome.exit_code) == ("done", 0), outcome.message
    with Store.open(outcome.db_path) as store:
        rounds = list(store.rounds(outcome.campaign_id))
        events = [e for e in store.events(outcome.campaign_id) if e.kind == "node-metadata"]
        hooks = list(store.hooks(outcome.campaign_id))
    assert len(rounds) == 12 and all(r.status == "ok" for r in rounds)
    by_pass: dict[int, set[str]] = {}
    for r in rounds:
        by_pass.setdefault(r.pass_, set()).add(r.facts["node"])
    # each pass on one node, pass p on the p mod 2-th of n1, n2; one job for all
    assert by_pass == {p: {("n1", "n2")[p % 2]} for p in range(6)}
    assert len({r.facts["slurm_job"] for r in rounds}) == 1 and len(executor.jobs) == 1
    # each node's metadata stored once, as collected on that node
    assert sorted(e.data["node"] for e in events if e.data) == ["n1", "n2"]
    assert all(
        e.data and e.data["record"] == executor.node_metadata[e.data["node"]] for e in events
    )
    assert {h.kind for h in hooks} == {"setup", "cleanup"}
    assert _job_state(executor.jobs[0].job_id) == "COMPLETED"
    # the CSV export's node column (the console script, a real process)
    csv_path = tmp_path / "rounds.csv"
    exported = subprocess.run(
        ["benchrun", "export", str(outcome.db_path.parent), "--format", "csv", "-o",
         str(csv_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    with csv_path.open() as f:
        assert {row["node"] for row in csv.DictReader(f)} == {"n1", "n2"}


def test_named_nodes_on_the_real_cluster(pair_cluster: Path, tmp_path: Path) -> None:
    outcome, executor = _campaign(tmp_path, "[n2, n1]", 2, "slurm-named")
    assert (outcome.status, outcome.exit_code) == ("done", 0), outcome.message
    with Store.open(outcome.db_path) as store:
        rounds = list(store.rounds(outcome.campaign_id))
    assert {(r.pass_, r.facts["node"]) for r in rounds} == {(0, "n2"), (1, "n1")}
    assert _job_state(executor.jobs[0].job_id) == "COMPLETED"


def test_a_two_node_job_cancelled_under_a_round_on_the_real_cluster(
    pair_cluster: Path, tmp_path: Path
) -> None:
    """scancel while pass 1 runs on n2: that round fails with Slurm's reason and the
    campaign goes on in a new two-node job, passes still alternating n1, n2."""
    display = Recorder()

    def cancel_after_first(count: int) -> None:
        if count == 1 and display.executor is not None:  # pass 1 has just been sent to n2
            job = display.executor.jobs[0].job_id
            threading.Timer(0.5, subprocess.run, args=(["scancel", job],)).start()

    display.on_round = cancel_after_first
    outcome, executor = _campaign(
        tmp_path,
        "2",
        3,
        "slurm-pair-scancel",
        "  - {name: s, command: [sleep, '1']}\n",
        display,
        ", max_resubmits: 1",
    )
    assert (outcome.status, outcome.exit_code) == ("done", 0), outcome.message
    with Store.open(outcome.db_path) as store:
        rounds = list(store.rounds(outcome.campaign_id))
    first, second = (job.job_id for job in executor.jobs)
    assert [(r.status, r.facts["node"], r.facts["slurm_job"]) for r in rounds] == [
        ("ok", "n1", first),
        ("failed", "n2", first),
        ("ok", "n1", second),
        ("ok", "n2", second),
    ]
    assert re.fullmatch(rf"slurm job {first} CANCELLED \(exit \d+:\d+\)", rounds[1].reason or "")
    assert [r.facts["node"] for r in rounds] == [("n1", "n2")[r.pass_ % 2] for r in rounds]
    assert (_job_state(first), _job_state(second)) == ("CANCELLED", "COMPLETED")


def test_a_node_whose_agent_never_connects_is_named_on_the_real_cluster(
    pair_cluster: Path, tmp_path: Path
) -> None:
    """The agent on n2 never starts (its python: is a wrapper that sleeps there): after
    pending_limit the job is cancelled and the error names n2 (Slurm's NodeList
    expanded by scontrol show hostnames)."""
    wrapper = tmp_path / "python"
    wrapper.write_text(
        f'#!/bin/sh\n[ "$SLURMD_NODENAME" = n2 ] && exec sleep 600\nexec {sys.executable} "$@"\n'
    )
    wrapper.chmod(0o755)
    with pytest.raises(UserError) as info:
        _campaign(
            tmp_path, "2", 1, "slurm-pair-silent", more=f", python: {wrapper}, pending_limit: 8s"
        )
    message = str(info.value)
    job = re.match(
        r"slurm: job (\d+) is RUNNING on nodes n1, n2 but the agent on node n2 ", message
    )
    assert job is not None, message
    assert "(connected: n1;" in message and "after 8 s (executor pending_limit)" in message
    deadline = time.monotonic() + 30
    while (
        _job_state(job.group(1)) not in ("CANCELLED", "COMPLETED") and time.monotonic() < deadline
    ):
        time.sleep(0.5)
    assert _job_state(job.group(1)) == "CANCELLED"
