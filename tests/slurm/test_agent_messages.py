"""The agent protocol's records (runner/execute/agent_messages.py): the lines on the wire
are the ones benchrun wrote before the records (written out here by hand), and a
malformed field of a message from a peer is one ProtocolError naming it."""

from __future__ import annotations

import dataclasses
import socket

import pytest

from benchrun.runner import __version__
from benchrun.runner.config.experiment import ReadingsSpec, SlurmSpec
from benchrun.runner.errors import UserError
from benchrun.runner.execute.agent import Channel
from benchrun.runner.execute.agent_messages import (
    BadPayload,
    Bye,
    Hello,
    OutcomeReport,
    ProtocolError,
    Ready,
    Refused,
    RoundRequest,
    Setup,
    SharedCheck,
    Terminated,
    decode,
    encode,
    parse_message,
    spec_from_json,
)
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec
from benchrun.runner.execute.slurm_commands import JobState, SlurmCommands
from benchrun.runner.execute.slurm_protocol import Agent, Job, Wake, hung_up, round_message
from benchrun.runner.execute.slurm_round import RoundExchange
from benchrun.runner.execute.slurm_start import JobStarter, SlurmOptions
from benchrun.runner.execute.slurm_watch import JobWatcher


def parse(line: bytes) -> object:
    return parse_message(decode(line))


# ------------------------------------------------------------------ the lines


def test_a_round_is_the_line_it_always_was() -> None:
    spec = RoundSpec("w", ("true",), {"A": "1", "B": "2"}, 2)
    line = encode(round_message(7, spec, {"A"}).to_json())
    assert line == (
        b'{"type":"round","id":7,"spec":{"workload":"w","argv":["true"],"env":{"A":"1"},'
        b'"timeout":2.0,"shell":false,"cwd":null,"cpus":null,"readings":null,'
        b'"output_limit":65536,"memory_limit":null,"hook":null,"pass_index":null,'
        b'"counters":[]},"env_base":"node"}\n'
    )
    back = parse(line[:-1])
    assert back == RoundRequest(7, RoundSpec("w", ("true",), {"A": "1"}, 2.0), True)


def test_setup_ready_and_the_short_messages_are_the_lines_they_were() -> None:
    setup = Setup((0, 1), (SharedCheck("a", "/x", "./p"),))
    assert encode(setup.to_json()) == (
        b'{"type":"setup","pin":[0,1],"checks":[{"workload":"a","cwd":"/x",'
        b'"program":"./p","path":null}]}\n'
    )
    assert encode(Setup("auto").to_json()) == b'{"type":"setup","pin":"auto","checks":[]}\n'
    ready = Ready(("x missing",), {"reason": "r"})
    assert (
        encode(ready.to_json())
        == b'{"type":"ready","problems":["x missing"],"pin":{"reason":"r"}}\n'
    )
    assert (
        encode(Terminated(15, None).to_json()) == b'{"type":"terminated","signal":15,"id":null}\n'
    )
    assert encode(Refused(3, "no").to_json()) == b'{"type":"refused","id":3,"message":"no"}\n'
    assert encode(Bye().to_json()) == b'{"type":"bye"}\n'
    for message in (setup, Setup("none"), ready, Terminated(15, 4), Refused(3, "no"), Bye()):
        assert parse(encode(message.to_json())[:-1]) == message


def test_a_hello_of_the_old_writer_reads_and_is_written_alike() -> None:
    line = (
        b'{"type":"hello","protocol":1,"token":"t","version":"9.9","node":"n1",'
        b'"job_id":"42","pid":77,"cpus":[2,3],"python":"/py","metadata":{"a":1}}'
    )
    hello = parse(line)
    assert hello == Hello("t", "n1", 1, "9.9", "42", 77, (2, 3), "/py", {"a": 1})
    assert isinstance(hello, Hello) and encode(hello.to_json()) == line + b"\n"


def test_a_strangers_hello_is_read_without_error() -> None:
    # what a peer that has not proven who it is sends is never trusted, never fatal
    hello = parse(
        b'{"type":"hello","protocol":"1","token":5,"version":[],"node":{"a":1},'
        b'"pid":true,"cpus":"0-3","metadata":[1]}'
    )
    assert hello == Hello(None, None, None, None, None, None, (), None, None)
    assert parse(b'{"type":"hello"}') == Hello(None, None, None, None)
    assert Hello("t", "n").version == __version__


# -------------------------------------------------------- malformed messages


def test_unknown_types_are_skipped() -> None:
    assert parse(b'{"type":"gossip","id":1}') is None
    a, b = socket.socketpair()
    left, right = Channel(a), Channel(b)
    a.sendall(encode({"type": "gossip"}) + encode({"type": "bye"}))
    assert right.receive(1.0) == Bye()
    left.close()
    right.close()


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (b'{"type":"setup","pin":"auto","checks":{"a":1}}', "field 'checks' is not a list"),
        (b'{"type":"setup","checks":[{"workload":"a","cwd":5}]}', "field 'cwd' is 5"),
        (b'{"type":"setup","pin":3}', "field 'pin' is 3, not a string"),
        (b'{"type":"ready","problems":"none"}', "field 'problems' is not a list"),
        (b'{"type":"refused","id":1,"message":[1]}', "field 'message' is [1]"),
    ],
)
def test_a_malformed_field_is_one_protocol_error(line: bytes, error: str) -> None:
    with pytest.raises(ProtocolError, match=error.replace("[", r"\[").replace("]", r"\]")):
        parse(line)


def test_a_bad_spec_or_outcome_names_its_round() -> None:
    with pytest.raises(
        BadPayload, match="bad round spec: spec: field 'timeout' is missing"
    ) as spec:
        parse(b'{"type":"round","id":2,"spec":{"workload":"w","argv":[],"env":{}}}')
    assert spec.value.round_id == 2
    with pytest.raises(BadPayload, match="bad round outcome") as outcome:
        parse(b'{"type":"outcome","id":5,"outcome":{"status":"ok"}}')
    assert outcome.value.round_id == 5
    with pytest.raises(BadPayload, match="field 'spec' is not a JSON object") as odd:
        parse(b'{"type":"round","id":"x","spec":[1]}')
    assert odd.value.round_id is None


def test_a_spec_with_bad_readings_or_env_is_refused() -> None:
    base = {"workload": "w", "argv": ["true"], "env": {}, "timeout": 1}
    for readings, error in (
        ({"format": "xml"}, "format or direction"),
        ({"pattern": 3}, "field 'pattern' is 3"),
        ({"unit": "ms", "evil": 1}, "unknown field 'evil'"),
    ):
        with pytest.raises(ProtocolError, match=error):
            spec_from_json({**base, "readings": readings})
    with pytest.raises(ProtocolError, match=r"field \"env\['A'\]\" is 1"):
        spec_from_json({**base, "env": {"A": 1}})
    assert spec_from_json({**base, "readings": {"unit": "ms"}}).readings == ReadingsSpec(unit="ms")


def test_an_idle_agent_drops_a_stale_malformed_outcome_but_not_its_end() -> None:
    a, b = socket.socketpair()
    ours, theirs = Channel(a), Channel(b)
    agent = Agent("n1", ours, 0.0)
    theirs.sock.sendall(encode({"type": "outcome", "id": 1, "outcome": {"status": "?"}}))
    theirs.send(OutcomeReport(2, RoundOutcome("ok", 1, 0.0, 0.0, 1, 0, 1.0)))
    assert not hung_up(agent)
    theirs.send(Terminated(15))
    assert hung_up(agent)
    ours.close()
    theirs.close()


# ------------------------------------------------ the submit host's round exchange


class _Cancels(SlurmCommands):
    """Slurm's commands with a job that runs until it is cancelled (recorded)."""

    def __init__(self) -> None:
        super().__init__()
        self.cancels: list[str] = []

    def cancel(self, job_id: str) -> None:
        self.cancels.append(job_id)

    def state(self, job_id: str) -> JobState | None:
        return JobState(job_id, "CANCELLED" if self.cancels else "RUNNING", node="n1")


def _exchange(commands: _Cancels) -> tuple[RoundExchange, Job, Agent, Channel]:
    a, b = socket.socketpair()
    ours, theirs = Channel(a), Channel(b)
    watcher = JobWatcher(commands, lambda _: None, settle_time=0.0)
    options = SlurmOptions()
    wake = Wake()
    starter = JobStarter(SlurmSpec(), options, watcher, wake, lambda _: None, None, set())
    job = Job("5", "token", 0.0)
    agent = Agent("n1", ours, 0.0)
    job.agents.append(agent)
    starter.jobs.append(job)
    return RoundExchange(options, starter, watcher, wake, lambda _: None), job, agent, theirs


def test_the_outcome_of_another_round_is_dropped_even_malformed() -> None:
    commands = _Cancels()
    exchange, job, agent, theirs = _exchange(commands)
    done = RoundOutcome("ok", 1, 0.0, 0.0, 1, 0, 1.0)
    theirs.sock.sendall(
        encode({"type": "outcome", "id": 9, "outcome": {"status": "?"}})
        + encode({"type": "refused", "id": 9, "message": "not this one"})
        + encode({"type": "outcome", "id": 1, "outcome": {"status": "ok", "wall_ns": 1,
                  "user_s": 0, "sys_s": 0, "max_rss_kib": 1, "started_at": 1}})
    )  # fmt: skip
    outcome = exchange.run_on(job, agent, RoundSpec("w", ("true",), {}, 5.0), 1.0)
    assert outcome == dataclasses.replace(done, exit_code=None, node="n1", extra={"slurm_job": "5"})
    assert commands.cancels == []
    sent = theirs.receive(1.0)
    assert isinstance(sent, RoundRequest) and sent.id == 1


def test_a_malformed_outcome_of_the_round_cancels_the_job() -> None:
    commands = _Cancels()
    exchange, job, agent, theirs = _exchange(commands)
    theirs.sock.sendall(encode({"type": "outcome", "id": 1, "outcome": {"status": "ok"}}))
    with pytest.raises(
        UserError, match="slurm: job 5: bad round outcome: outcome: field 'wall_ns' is missing"
    ):
        exchange.run_on(job, agent, RoundSpec("w", ("true",), {}, 5.0), 1.0)
    assert commands.cancels == ["5"]
