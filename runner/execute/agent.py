"""benchrun's agent on a compute node, and the messages it exchanges with the submit host.

``python -m benchrun.runner.execute.agent --connect HOST:PORT`` is what a Slurm job of
:class:`runner.execute.slurm.SlurmExecutor` runs (docs/slurm.md). It connects back to the
submitting benchrun, proves who it is with the token in ``$BENCHRUN_AGENT_TOKEN``, reports
its node, benchrun version and CPUs, checks what the experiment needs on the node, and
then runs each round it is sent with the same :class:`runner.execute.local.LocalExecutor`
as a local campaign (pinning inside the job's allocation, ``wait4``, timeout, process
group), sending back what the round did. Nothing is stored on the node.

The protocol's messages are the records of :mod:`runner.execute.agent_messages` (one
JSON object per line over one TCP connection; docs/slurm.md, "The messages"); this module
carries them (:class:`Channel`) and serves them on the node (:class:`Agent`).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import queue
import select
import shutil
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import FrameType

from benchrun.runner.errors import UserError
from benchrun.runner.execute.agent_messages import (
    BadPayload,
    Bye,
    Hello,
    Interrupt,
    Message,
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
    node_name,
    parse_message,
)
from benchrun.runner.execute.local import LocalExecutor
from benchrun.runner.execute.pinning import PinPlan, pinned_runner, plan_pinning

#: environment variable holding the token the agent sends in its hello
TOKEN_ENV = "BENCHRUN_AGENT_TOKEN"
#: longest line accepted before the peer has proven who it is (bytes): the hello, with
#: the node's metadata record (a few KB); an agent whose record would make the hello
#: longer sends the record's size and this limit instead (:func:`hello_message`)
UNAUTHENTICATED_LINE = 1 << 20
#: longest line accepted from an authenticated peer (bytes): a round's output tails
#: (``output_limit``, at most 1 GiB each) escaped as JSON stay below this
MAX_LINE = 8 << 30
#: how long the agent tries to reach the submit host, seconds
CONNECT_TIMEOUT = 60.0
#: after a failed round, how long the agent waits to see whether Slurm's SIGTERM killed
#: it (the job is ending: the round is then reported as ``terminated``), seconds
TERM_SETTLE = 0.3


#: what collects the node's metadata record for the hello, given the job's CPUs
MetadataFn = Callable[[Sequence[int]], Mapping[str, object]]


class ChannelClosed(Exception):
    """The peer closed the connection (or it broke)."""


class Channel:
    """A connected socket carrying messages, one JSON line each.

    The socket stays blocking; :meth:`feed` is called when ``poll`` says it is readable
    (so one ``recv`` returns what is there), :meth:`next` takes the next complete
    message. ``max_line`` bytes at most per line (:class:`ProtocolError` beyond).
    """

    def __init__(self, sock: socket.socket, max_line: int = MAX_LINE) -> None:
        self.sock = sock
        self.max_line = max_line
        self._buffer = bytearray()
        self._send_lock = threading.Lock()

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, message: Message) -> None:
        """Send one message; :class:`ChannelClosed` if the connection is gone."""
        data = encode(message.to_json())
        try:
            with self._send_lock:
                self.sock.sendall(data)
        except OSError as exc:
            raise ChannelClosed(str(exc)) from None

    def feed(self) -> None:
        """Read what has arrived (one ``recv``); :class:`ChannelClosed` at the end."""
        try:
            data = self.sock.recv(1 << 20)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            raise ChannelClosed(str(exc)) from None
        if not data:
            raise ChannelClosed("connection closed by the peer")
        self._buffer += data

    def next(self) -> Message | None:
        """The next complete message, or None until more has arrived (a line of a type
        this side does not know is skipped); :class:`ProtocolError` for a line that is
        not a message or a malformed one (it is consumed: the next call reads on)."""
        while True:
            end = self._buffer.find(b"\n")
            if end < 0:
                if len(self._buffer) > self.max_line:
                    raise ProtocolError(f"a line longer than {self.max_line} bytes")
                return None
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            message = parse_message(decode(line))
            if message is not None:
                return message

    def receive(self, timeout: float | None) -> Message | None:
        """The next message, waiting at most ``timeout`` seconds (None: for ever); None
        when the time ran out."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            message = self.next()
            if message is not None:
                return message
            wait_ms = -1
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                wait_ms = math.ceil(left * 1000)
            poller = select.poll()
            poller.register(self.sock.fileno(), select.POLLIN)
            if poller.poll(wait_ms):
                self.feed()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


# ------------------------------------------------------------------------- node checks


def check_shared(checks: Sequence[SharedCheck]) -> list[str]:
    """What is missing on this node of what the workloads need: each check's ``cwd``
    (a directory) and ``program`` (a path relative to ``cwd`` when it holds a ``/``,
    else a name looked up on ``path``, default this process's ``$PATH``). One sentence
    per problem, naming the workload."""
    problems: list[str] = []
    node = node_name()
    for check in checks:
        name, cwd, program = check.workload, check.cwd, check.program
        if cwd is not None and not Path(cwd).is_dir():
            problems.append(f"{name}: directory {cwd} does not exist on node {node}")
            continue
        if not program:
            continue
        if "/" in program:
            where = Path(cwd or ".") / program
            if not where.is_file() or not os.access(where, os.X_OK):
                problems.append(f"{name}: {where} is not an executable file on node {node}")
        elif shutil.which(program, path=check.path or os.environ.get("PATH")) is None:
            problems.append(f"{name}: {program!r} is not on PATH on node {node}")
    return problems


# ------------------------------------------------------------------------------ agent


class Agent:
    """The agent's side of one connection: answer the setup, then run rounds until
    ``bye``, the end of the connection, or Slurm's SIGTERM.

    Rounds run in the main thread (the one that installed the signal handlers); a reader
    thread takes the messages, queues rounds and turns ``interrupt`` into SIGUSR1 for the
    main thread, whose handler interrupts the :class:`LocalExecutor` exactly as Ctrl-C
    does in a local campaign.
    """

    def __init__(
        self,
        channel: Channel,
        executor: LocalExecutor | None = None,
        metadata_fn: MetadataFn | None = None,
    ) -> None:
        self.channel = channel
        self.metadata_fn = metadata_fn
        self.executor = executor if executor is not None else LocalExecutor()
        self.plan = PinPlan(None, None, "pin: not planned yet")
        self.terminated: int | None = None
        self._term = threading.Event()
        self._queue: queue.Queue[RoundRequest | Refused | None] = queue.Queue()
        self._current: int | None = None
        self._term_sent = False
        self._main = threading.get_ident()

    # -- setup
    def hello(self, token: str) -> None:
        """Send the hello: who and where this agent is, with the node's metadata."""
        cpus = sorted(os.sched_getaffinity(0))
        metadata = self.metadata_fn(cpus) if self.metadata_fn is not None else None
        self.channel.send(hello_message(token, cpus, metadata))

    def setup(self, message: Setup) -> list[str]:
        """Plan the pinning inside this job's CPUs and check the shared files; send
        ``ready`` with the problems found (none: rounds may come)."""
        problems = check_shared(message.checks)
        try:
            self.plan = plan_pinning(message.pin)
        except UserError as exc:
            problems.append(f"on node {node_name()}: {exc}")
        self.channel.send(Ready(tuple(problems), self.plan.to_dict()))
        return problems

    # -- signals
    def _on_usr1(self, signum: int, frame: FrameType | None) -> None:
        self.executor.interrupt()

    def _on_term(self, signum: int, frame: FrameType | None) -> None:
        self.terminated = signum
        self._term.set()
        self.executor.interrupt()
        self._queue.put(None)

    # -- reading
    def _read(self) -> None:
        try:
            while True:
                try:
                    message = self.channel.receive(None)
                except BadPayload as exc:
                    if exc.kind == RoundRequest.TYPE:  # a round whose spec is malformed
                        self._queue.put(Refused(exc.round_id, str(exc)))
                    continue
                if isinstance(message, RoundRequest):
                    self._queue.put(message)
                elif isinstance(message, Interrupt):
                    if message.id == self._current and self._current is not None:
                        signal.pthread_kill(self._main, signal.SIGUSR1)
                elif isinstance(message, Bye):
                    break
        except (ChannelClosed, ProtocolError, OSError):
            # the submit host is gone: nothing may keep running for nobody
            if self._current is not None:
                signal.pthread_kill(self._main, signal.SIGUSR1)
        self._queue.put(None)

    # -- serving
    def serve(self) -> int:
        """Run rounds until the end; the process exit status (0: asked to end)."""
        old = {
            signal.SIGUSR1: signal.signal(signal.SIGUSR1, self._on_usr1),
            signal.SIGTERM: signal.signal(signal.SIGTERM, self._on_term),
            signal.SIGINT: signal.signal(signal.SIGINT, self._on_term),
        }
        reader = threading.Thread(target=self._read, name="benchrun-agent-reader", daemon=True)
        reader.start()
        try:
            with pinned_runner(self.plan):
                while self.terminated is None:
                    message = self._queue.get()
                    if message is None:
                        break
                    self._run(message)
            if self.terminated is not None:
                self._send_terminated(None)
                return 128 + self.terminated
            return 0
        finally:
            for signum, handler in old.items():
                signal.signal(signum, handler)
            self.executor.close()

    def _send_terminated(self, round_id: int | None) -> None:
        if self._term_sent:
            return
        self._term_sent = True
        try:
            self.channel.send(Terminated(self.terminated, round_id))
        except ChannelClosed:
            pass

    def _run(self, message: RoundRequest | Refused) -> None:
        if isinstance(message, Refused):
            self.channel.send(message)
            return
        round_id = message.id
        # the CPUs of this node's plan: the submit host's CPUs mean nothing here
        spec = dataclasses.replace(message.spec, cpus=self.plan.workload_cpus)
        if message.env_from_node:
            # only the experiment's own variables came: on top of the job's environment
            spec = dataclasses.replace(spec, env={**os.environ, **spec.env})
        self.executor.clear_interrupt()  # an interrupt meant for a round that had ended
        self._current = round_id
        try:
            outcome = self.executor.launch(spec)
        except UserError as exc:
            self.channel.send(Refused(round_id, str(exc)))
            return
        finally:
            self._current = None
        if outcome.status != "ok" and self.terminated is None:
            self._term.wait(TERM_SETTLE)  # was it Slurm ending the job?
        if self.terminated is not None:
            self._send_terminated(round_id)
            return
        outcome = dataclasses.replace(outcome, node=node_name())
        self.channel.send(OutcomeReport(round_id, outcome))


def hello_message(
    token: str,
    cpus: Sequence[int],
    metadata: Mapping[str, object] | None,
    limit: int = UNAUTHENTICATED_LINE,
) -> Hello:
    """The hello: who and where this agent is, and ``metadata``, the node's record
    (collected with the job's ``cpus`` as the workload CPUs; None when this agent was
    started without a collector: ``python -m benchrun.runner.execute.agent``). A record
    that would make the line longer than ``limit`` bytes is replaced by one saying so in
    its ``_unavailable`` (the submit host reads no longer hello from a peer that has not
    proven who it is)."""
    message = Hello.here(token, cpus, metadata)
    size = len(encode(message.to_json()))
    if size > limit:
        reason = (
            f"the node's metadata record made the hello {size} bytes, more than the "
            f"{limit} bytes the submit host reads; it was not sent"
        )
        print(f"benchrun agent on {node_name()}: {reason}", file=sys.stderr)
        message = dataclasses.replace(message, metadata={"_unavailable": {"*": reason}})
    return message


def connect(address: str, timeout: float = CONNECT_TIMEOUT) -> socket.socket:
    """A TCP connection to ``HOST:PORT``, retried until ``timeout`` seconds have passed."""
    host, _, port = address.rpartition(":")
    deadline = time.monotonic() + timeout
    delay = 0.1
    while True:
        try:
            sock = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            return sock
        except OSError:
            if time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(2.0, delay * 2)


def main(argv: Sequence[str] | None = None, metadata_fn: MetadataFn | None = None) -> int:
    """The agent's entry point (see the module docstring); the exit status.
    ``metadata_fn(cpus)`` collects the node's record for the hello (the jobs run
    :mod:`runner.campaign.node_agent`, which passes it: this layer may not import
    ``machine``)."""
    parser = argparse.ArgumentParser(
        prog="python -m benchrun.runner.execute.agent",
        description="benchrun's agent on a compute node: runs the rounds a benchrun on the "
        "submit host sends it (docs/slurm.md). The token is read from $" + TOKEN_ENV + ".",
    )
    parser.add_argument("--connect", required=True, metavar="HOST:PORT")
    parser.add_argument("--connect-timeout", type=float, default=CONNECT_TIMEOUT)
    args = parser.parse_args(argv)
    token = os.environ.pop(TOKEN_ENV, "")  # the workloads do not inherit it
    try:
        sock = connect(args.connect, args.connect_timeout)
    except OSError as exc:
        print(
            f"benchrun agent on {node_name()}: cannot reach {args.connect}: {exc}", file=sys.stderr
        )
        return 2
    channel = Channel(sock)
    agent = Agent(channel, metadata_fn=metadata_fn)
    try:
        agent.hello(token)
        setup = channel.receive(CONNECT_TIMEOUT)
        if not isinstance(setup, Setup):
            return 2
        if agent.setup(setup):
            channel.receive(CONNECT_TIMEOUT)  # the submit host ends it; wait for its bye
            return 1
        return agent.serve()
    except (ChannelClosed, ProtocolError) as exc:
        print(f"benchrun agent on {node_name()}: {exc}", file=sys.stderr)
        return 2
    finally:
        channel.close()


if __name__ == "__main__":
    sys.exit(main())
