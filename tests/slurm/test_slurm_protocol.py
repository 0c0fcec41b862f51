"""The Slurm executor without Slurm (issue 19): the messages, the agent as a real process
on this machine, and :class:`SlurmExecutor` driving it through a stand-in for the Slurm
commands (``LocalSlurm`` runs the batch script with ``sh``), so every path of the
protocol and of the faults is covered where no cluster is at hand.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from benchrun.runner import __version__
from benchrun.runner.config.experiment import ReadingsSpec, SlurmSpec
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.errors import UserError
from benchrun.runner.execute import agent as agent_module
from benchrun.runner.execute.agent import Channel, ChannelClosed, check_shared
from benchrun.runner.execute.agent_messages import (
    Bye,
    Interrupt,
    OutcomeReport,
    ProtocolError,
    Ready,
    Refused,
    RoundRequest,
    Setup,
    decode,
    encode,
    outcome_from_json,
    outcome_to_json,
    spec_from_json,
    spec_to_json,
)
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec
from benchrun.runner.execute.factory import make_executor, shared_checks
from benchrun.runner.execute.local import LocalExecutor
from benchrun.runner.execute.slurm import JobState, SharedCheck, SlurmCommands, SlurmExecutor

NODE = "fake-node"

# ------------------------------------------------------------------------- messages


def test_messages_are_json_lines() -> None:
    line = encode({"type": "x", "values": (1.5, math.inf), "m": {"a": 1}})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    message = decode(line[:-1])
    assert message["values"] == [1.5, math.inf] and message["m"] == {"a": 1}
    for bad in (b"[1]", b"{}", b'{"type": 3}', b"not json", b"\xff"):
        with pytest.raises(ProtocolError):
            decode(bad)


def test_round_spec_round_trip() -> None:
    spec = RoundSpec(
        workload="w",
        argv=("python3", "-c", "print('x=1')"),
        env={"A": "1", "PATH": "/bin"},
        timeout=2.5,
        shell=False,
        cwd="/tmp",
        cpus=(1,),
        readings=ReadingsSpec(pattern=r"x=(\d+)", unit="ms"),
        output_limit=100,
        memory_limit=1 << 30,
        hook="prepare",
    )
    assert spec_from_json(json.loads(encode(spec_to_json(spec)))) == spec
    with pytest.raises(ProtocolError, match="bad round spec"):
        spec_from_json({"workload": "w"})


def test_round_outcome_round_trip() -> None:
    outcome = RoundOutcome(
        status="failed",
        wall_ns=123,
        user_s=0.5,
        sys_s=0.25,
        max_rss_kib=2048,
        exit_code=-9,
        started_at=1.7e9,
        cpus=(0, 1),
        readings=(1.0, 2.5),
        reason="killed by signal SIGKILL",
        stdout_tail="out",
        stderr_tail="err\u00e9",
        extra={"stdout_bytes": 3},
        node="n1",
    )
    assert outcome_from_json(json.loads(encode(outcome_to_json(outcome)))) == outcome
    with pytest.raises(ProtocolError, match="bad round outcome"):
        outcome_from_json({**outcome_to_json(outcome), "status": "great"})


def test_a_round_outcome_carries_its_cpu_wait_from_the_node() -> None:
    """The agent sends the round's wait (docs/contention.md) with the outcome; an agent of
    an older benchrun sends none, read as not measured."""
    outcome = RoundOutcome(
        "ok", 10**8, 0.05, 0.0, 1, 0, 1.7e9, wait_ns=51_000_000, wait_source="cgroup cpu.pressure"
    )
    back = outcome_from_json(json.loads(encode(outcome_to_json(outcome))))
    assert (back.wait_ns, back.wait_source) == (51_000_000, "cgroup cpu.pressure")
    old = {k: v for k, v in outcome_to_json(outcome).items() if not k.startswith("wait_")}
    assert (outcome_from_json(old).wait_ns, outcome_from_json(old).wait_source) == (None, None)
    with pytest.raises(ProtocolError, match="bad round outcome"):
        outcome_from_json({**outcome_to_json(outcome), "wait_ns": "lots"})


@pytest.fixture
def pair() -> Iterator[tuple[Channel, Channel]]:
    a, b = socket.socketpair()
    left, right = Channel(a), Channel(b, max_line=64)
    yield left, right
    left.close()
    right.close()


def test_channel_frames_split_and_joined_lines(pair: tuple[Channel, Channel]) -> None:
    left, right = pair
    data = encode({"type": "interrupt", "id": 4}) + encode({"type": "bye"})
    left.sock.sendall(data[:5])
    assert right.receive(0.05) is None
    left.sock.sendall(data[5:])
    assert right.receive(1.0) == Interrupt(4)
    assert right.receive(1.0) == Bye()


def test_channel_refuses_long_lines_and_reports_the_end(pair: tuple[Channel, Channel]) -> None:
    left, right = pair
    left.sock.sendall(b"x" * 100)
    with pytest.raises(ProtocolError, match="longer than 64"):
        right.receive(1.0)
    left.close()
    with pytest.raises(ChannelClosed):
        while True:
            right.feed()


def test_check_shared_names_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "prog").write_text("#!/bin/sh\n")
    (tmp_path / "run").write_text("#!/bin/sh\n")
    (tmp_path / "run").chmod(0o755)
    problems = check_shared(
        [
            SharedCheck("a", str(tmp_path / "gone"), "x"),
            SharedCheck("b", str(tmp_path), "./prog"),
            SharedCheck("c", str(tmp_path), "no-such-prog-xyz"),
            SharedCheck("d", str(tmp_path), "./run"),
            SharedCheck("e", str(tmp_path), "sh"),
            SharedCheck("f", None, None),
        ]
    )
    assert len(problems) == 3
    assert problems[0].startswith("a: directory") and "does not exist on node" in problems[0]
    assert problems[1].startswith("b: ") and "not an executable file" in problems[1]
    assert problems[2].startswith("c: 'no-such-prog-xyz' is not on PATH")


# -------------------------------------------------------------- a Slurm stand-in


class LocalSlurm(SlurmCommands):
    """Slurm's commands played on this machine: ``submit`` runs the batch script with
    ``sh`` (as node ``fake-node``), ``state`` reads the process, ``cancel`` sends SIGTERM
    to its process group as scancel does. ``hold`` keeps submitted jobs PENDING;
    ``partitions_known`` are the partitions that exist."""

    def __init__(self, hold: bool = False, env: dict[str, str] | None = None) -> None:
        super().__init__()
        self.hold = hold
        self.env = env or {}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.cancelled: set[str] = set()
        self.submitted: list[tuple[str, list[str]]] = []
        self.partitions_known = ["alpha", "beta"]

    def partitions(self) -> list[str]:
        return list(self.partitions_known)

    def check_partition(self, name: str) -> None:
        if name not in self.partitions_known:
            raise UserError(f"slurm: partition {name!r} does not exist; nothing was submitted")

    def submit(self, script: str, options: Sequence[str]) -> str:
        job_id = str(len(self.submitted) + 1)
        self.submitted.append((script, list(options)))
        if not self.hold:
            self.procs[job_id] = subprocess.Popen(
                ["sh", "-c", script],
                env={**os.environ, "SLURMD_NODENAME": NODE, "SLURM_JOB_ID": job_id, **self.env},
                start_new_session=True,
            )
        return job_id

    def cancel(self, job_id: str) -> None:
        self.cancelled.add(job_id)
        proc = self.procs.get(job_id)
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)

    def state(self, job_id: str) -> JobState | None:
        proc = self.procs.get(job_id)
        if proc is None:
            if job_id in self.cancelled:
                return JobState(job_id, "CANCELLED", exit_code="0:0")
            return JobState(job_id, "PENDING", reason="Resources")
        code = proc.poll()
        if code is None:
            return JobState(job_id, "RUNNING", node=NODE)
        if job_id in self.cancelled:
            return JobState(job_id, "CANCELLED", exit_code="0:15", node=NODE)
        if code == 0:
            return JobState(job_id, "COMPLETED", exit_code="0:0", node=NODE)
        return JobState(job_id, "FAILED", exit_code=f"{code % 256}:0", node=NODE)

    def kill_from_outside(self, job_id: str) -> None:
        """As ``scancel`` typed by someone else: the job ends CANCELLED."""
        self.cancel(job_id)

    def stop_all(self) -> None:
        for job_id in list(self.procs):
            self.cancel(job_id)


def make(commands: LocalSlurm, **kw: Any) -> SlurmExecutor:
    spec_kw = {k: kw.pop(k) for k in list(kw) if k in SlurmSpec.__dataclass_fields__}
    spec = SlurmSpec(**{"listen": "127.0.0.1", "partition": "alpha", **spec_kw})
    messages: list[str] = []
    executor = SlurmExecutor(spec, commands=commands, on_message=messages.append, **kw)
    executor.messages = messages  # type: ignore[attr-defined]
    return executor


@pytest.fixture
def slurm() -> Iterator[LocalSlurm]:
    commands = LocalSlurm()
    yield commands
    commands.stop_all()


def round_of(argv: Sequence[str], timeout: float = 30.0, **kw: Any) -> RoundSpec:
    kw.setdefault("env", dict(os.environ))
    return RoundSpec(workload="w", argv=tuple(argv), timeout=timeout, **kw)


def test_rounds_run_through_the_agent_and_carry_the_node(slurm: LocalSlurm) -> None:
    executor = make(slurm)
    try:
        ok = executor.launch(round_of(["true"]))
        assert ok.status == "ok" and ok.exit_code == 0 and ok.node == NODE
        assert ok.extra["slurm_job"] == "1"
        readings = executor.launch(
            round_of(
                [sys.executable, "-c", "print('t=3'); print('t=4')"],
                readings=ReadingsSpec(pattern=r"t=(\d+)"),
            )
        )
        assert readings.status == "ok" and readings.readings == (3.0, 4.0)
        failed = executor.launch(round_of(["sh", "-c", "echo boom >&2; exit 3"]))
        assert (failed.status, failed.exit_code, failed.reason) == ("failed", 3, "exit code 3")
        assert "boom" in failed.stderr_tail
        slow = executor.launch(round_of(["sleep", "5"], timeout=0.3))
        assert slow.status == "timeout"
        assert len(slurm.submitted) == 1  # one job served every round
        assert executor.timings.to_first_round is not None
    finally:
        executor.close()
    assert slurm.state("1") is not None and slurm.state("1").state == "COMPLETED"  # type: ignore[union-attr]


def test_the_job_gets_the_executor_keys_as_sbatch_options(slurm: LocalSlurm) -> None:
    executor = make(
        slurm, time=5400.0, constraint="fast", account="p1", sbatch_args=("--qos=short",)
    )
    try:
        executor.launch(round_of(["true"]))
    finally:
        executor.close()
    script, options = slurm.submitted[0]
    assert options[-1] == "--qos=short"
    for expected in (
        "--partition=alpha",
        "--constraint=fast",
        "--account=p1",
        "--time=0-01:30:00",
        "--nodes=1",
        "--exclusive",
    ):
        assert expected in options
    assert "BENCHRUN_AGENT_TOKEN=" in script
    assert "--connect 127.0.0.1:" in script
    token = script.split("BENCHRUN_AGENT_TOKEN=")[1].split()[0]
    assert token not in script.split("exec", 1)[1]  # not on the agent's command line


def test_only_the_experiments_variables_travel(slurm: LocalSlurm) -> None:
    slurm.env = {"FROM_THE_JOB": "job"}
    executor = make(slurm, env_keys=frozenset({"MINE"}))
    try:
        out = executor.launch(
            round_of(
                [
                    "sh",
                    "-c",
                    'echo "$MINE/$FROM_THE_JOB/${SECRET:-none}/${BENCHRUN_AGENT_TOKEN:-none}" >&2; exit 1',
                ],
                env={"MINE": "mine", "SECRET": "submit-host-only"},
            )
        )
    finally:
        executor.close()
    assert out.stderr_tail.strip() == "mine/job/none/none"


def test_interrupt_kills_the_round_on_the_node_and_keeps_the_job(slurm: LocalSlurm) -> None:
    executor = make(slurm)
    try:
        executor.launch(round_of(["true"]))
        threading.Timer(0.5, executor.interrupt).start()
        t0 = time.monotonic()
        out = executor.launch(round_of(["sleep", "30"]))
        assert out.status == "interrupted" and time.monotonic() - t0 < 10
        assert executor.launch(round_of(["true"])).status == "ok"
        assert len(slurm.submitted) == 1
        executor.interrupt()  # between rounds: the next launch is interrupted at once
        assert executor.launch(round_of(["true"])).status == "interrupted"
    finally:
        executor.close()


def test_a_job_killed_under_a_round_fails_it_with_slurms_reason_then_resubmits(
    slurm: LocalSlurm,
) -> None:
    executor = make(slurm, max_resubmits=1)
    try:
        assert executor.launch(round_of(["true"])).status == "ok"
        threading.Timer(0.5, slurm.kill_from_outside, args=("1",)).start()
        lost = executor.launch(round_of(["sleep", "30"]))
        assert lost.status == "failed"
        assert lost.reason == "slurm job 1 CANCELLED (exit 0:15)"
        assert lost.node == NODE and lost.extra["slurm_state"] == "CANCELLED"
        again = executor.launch(round_of(["true"]))
        assert again.status == "ok" and again.extra["slurm_job"] == "2"
        slurm.kill_from_outside("2")
        time.sleep(0.3)
        with pytest.raises(UserError, match=r"max_resubmits: 1.*--resume"):
            executor.launch(round_of(["true"]))
    finally:
        executor.close()


def test_a_job_that_ended_between_rounds_is_replaced_without_a_failed_round(
    slurm: LocalSlurm,
) -> None:
    executor = make(slurm)
    try:
        executor.launch(round_of(["true"]))
        slurm.kill_from_outside("1")
        time.sleep(0.3)
        assert executor.launch(round_of(["true"])).status == "ok"
        assert len(slurm.submitted) == 2
        assert any("between rounds" in m for m in executor.messages)  # type: ignore[attr-defined]
    finally:
        executor.close()


def test_a_bad_partition_is_refused_before_anything_is_queued(slurm: LocalSlurm) -> None:
    executor = make(slurm, partition="gamma")
    try:
        with pytest.raises(UserError, match="partition 'gamma' does not exist"):
            executor.launch(round_of(["true"]))
    finally:
        executor.close()
    assert slurm.submitted == []


def test_a_job_pending_too_long_is_cancelled_with_its_reason() -> None:
    slurm = LocalSlurm(hold=True)
    executor = make(slurm, pending_limit=1.5)
    try:
        with pytest.raises(UserError, match=r"job 1 is still PENDING \(Resources\) after 1.5 s"):
            executor.launch(round_of(["true"]))
    finally:
        executor.close()
    assert slurm.cancelled == {"1"}


def test_ctrl_c_while_pending_interrupts_the_wait() -> None:
    slurm = LocalSlurm(hold=True)
    executor = make(slurm)
    threading.Timer(0.3, executor.interrupt).start()
    try:
        out = executor.launch(round_of(["true"]))
        assert out.status == "interrupted" and "waiting for slurm job 1" in (out.reason or "")
    finally:
        executor.close()
    assert "1" in slurm.cancelled  # close cancels the campaign's job


def test_a_job_that_fails_before_its_agent_connects(slurm: LocalSlurm) -> None:
    executor = make(slurm, python="/no/such/python")
    try:
        with pytest.raises(UserError, match=r"slurm job 1 FAILED \(exit 127:0\) before"):
            executor.launch(round_of(["true"]))
    finally:
        executor.close()


def test_missing_shared_files_stop_before_the_first_round(
    slurm: LocalSlurm, tmp_path: Path
) -> None:
    executor = make(slurm, checks=[SharedCheck("w", str(tmp_path / "gone"), "true")])
    try:
        with pytest.raises(UserError, match=r"node fake-node lacks .*w: directory .*gone"):
            executor.launch(round_of(["true"]))
    finally:
        executor.close()
    assert "1" in slurm.cancelled


def _fake_agent(address: tuple[str, int], hello: dict[str, object]) -> None:
    sock = socket.create_connection(address)
    channel = Channel(sock)
    sock.sendall(encode(hello))
    try:
        while channel.receive(10.0) is not None:
            pass
    except ChannelClosed:
        pass
    channel.close()


class FakeAgentSlurm(LocalSlurm):
    """Submits nothing: a thread connects with ``hello`` (a stranger, then the real
    token with ``version``) to test what the executor accepts."""

    def __init__(self, executor_ref: list[SlurmExecutor], version: str) -> None:
        super().__init__()
        self.ref = executor_ref
        self.version = version

    def submit(self, script: str, options: Sequence[str]) -> str:
        self.submitted.append((script, list(options)))
        token = script.split("BENCHRUN_AGENT_TOKEN=")[1].split()[0].strip("'")
        address = self.ref[0]._address
        assert address is not None
        base = {"type": "hello", "protocol": 1, "node": "n9", "python": "/py"}
        for hello in (
            {**base, "token": "wrong", "version": __version__},
            {**base, "token": token, "version": self.version},
        ):
            threading.Thread(target=_fake_agent, args=(("127.0.0.1", address[1]), hello)).start()
            time.sleep(0.2)
        return "1"

    def state(self, job_id: str) -> JobState | None:
        return JobState(job_id, "RUNNING", node="n9")


def test_another_benchrun_version_on_the_node_is_one_clear_error() -> None:
    ref: list[SlurmExecutor] = []
    slurm = FakeAgentSlurm(ref, version="0.0.1")
    executor = make(slurm)
    ref.append(executor)
    try:
        with pytest.raises(UserError, match=r"node n9 runs benchrun 0.0.1 .* this host benchrun"):
            executor.launch(round_of(["true"]))
    finally:
        executor.close()
    assert slurm.cancelled == {"1"}


def test_the_agent_ends_its_round_when_the_submit_host_goes_away(slurm: LocalSlurm) -> None:
    executor = make(slurm)
    executor.launch(round_of(["true"]))
    job = executor._job
    assert job is not None and job.channel is not None
    job.channel.send(RoundRequest(99, round_of(["sleep", "30"])))
    time.sleep(0.5)
    job.channel.close()  # as if benchrun were killed: the agent sees the end
    proc = slurm.procs["1"]
    assert proc.wait(10) == 0
    executor._job = None
    executor.close()


def test_the_factory_builds_what_the_experiment_says(tmp_path: Path) -> None:
    local = parse_experiment(
        'name: x\nworkloads:\n  - {name: a, command: "true"}\n',
        base_dir=tmp_path,
        check_commands=False,
    )
    executor = make_executor(local)
    assert isinstance(executor, LocalExecutor)
    executor.close()
    remote = parse_experiment(
        "name: x\nexecutor: {kind: slurm, partition: beta}\nsettings: {env: {A: '1'}}\n"
        "workloads:\n  - {name: a, command: [./prog, '{work}'], work: 3, env: {B: '2'}}\n"
        "  - {name: b, command: 'echo hi', shell: true}\n"
        "  - {name: c, command: ['{work}'], work: 1}\n",
        base_dir=tmp_path,
        source_path=tmp_path / "x.yaml",
        check_commands=False,
    )
    slurm_executor = make_executor(remote)
    assert isinstance(slurm_executor, SlurmExecutor)
    assert slurm_executor.spec.partition == "beta"
    assert slurm_executor.env_keys == frozenset({"A", "B"})
    assert slurm_executor.job_name == "benchrun-x"
    slurm_executor.close()
    checks = shared_checks(remote)
    assert checks[0] == SharedCheck("a", str(tmp_path), "./prog", None)
    assert checks[1].program is None and checks[2].program is None


def test_the_agent_module_runs_as_a_program() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchrun.runner.execute.agent", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "--connect" in done.stdout
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nobody listens there: the agent says so and exits 2
    done = subprocess.run(
        [sys.executable, "-m", "benchrun.runner.execute.agent", "--connect",
         f"127.0.0.1:{port}", "--connect-timeout", "0.5"],
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "cannot reach" in done.stderr


def test_agent_serves_in_process_over_a_socket_pair() -> None:
    """The agent's loop without a process: rounds, a refused spec, bye."""
    a, b = socket.socketpair()
    ours, theirs = Channel(a), Channel(b)
    agent = agent_module.Agent(theirs, LocalExecutor())
    assert agent.setup(Setup("none")) == []
    assert ours.receive(5.0) == Ready((), agent.plan.to_dict())
    ours.send(RoundRequest(1, round_of(["true"])))
    ours.sock.sendall(encode({"type": "round", "id": 2, "spec": {"workload": "w"}}))
    ours.send(RoundRequest(3, round_of([""])))
    # a malformed outcome sent to the agent is no round: dropped, not refused
    ours.sock.sendall(encode({"type": "outcome", "id": 4, "outcome": {}}))
    ours.send(Bye())
    assert agent.serve() == 0
    first, second, third = (ours.receive(5.0) for _ in range(3))
    assert isinstance(first, OutcomeReport) and first.id == 1 and first.outcome.status == "ok"
    assert second == Refused(2, "bad round spec: spec: field 'argv' is missing")
    assert isinstance(third, Refused) and third.id == 3 and "empty" in third.message
    assert ours.receive(0.2) is None
    ours.close()
    theirs.close()


def test_job_state_words() -> None:
    assert (
        JobState("3", "TIMEOUT", exit_code="0:15").describe() == "slurm job 3 TIMEOUT (exit 0:15)"
    )
    assert JobState("3", "TIMEOUT").finished and not JobState("3", "COMPLETING").finished
    assert dataclasses.replace(JobState("3", "PENDING"), state="NODE_FAIL").finished
