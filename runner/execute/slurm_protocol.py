"""The submit host's side of the agent protocol: what it reads from and writes to the agents.

The agents (:mod:`runner.execute.agent`, one per node of a job) connect to a
:class:`Listener` and say ``hello`` with the job's token, their node, benchrun version
and protocol; the submit host answers ``setup`` (the experiment's ``pin`` and what the
workloads need on the node) and reads ``ready`` (the problems found); then it sends each
``round`` (the :class:`RoundSpec`, with only the experiment's variables when the node's
environment is the base), ``interrupt`` on Ctrl-C and ``bye`` at the end, and reads
``outcome``, ``refused`` or ``terminated``. :class:`Job` and :class:`Agent` are what the
executor knows of one job and its agents; :class:`Wake` ends a wait on them from a
signal handler. docs/slurm.md, "The messages".
"""

from __future__ import annotations

import dataclasses
import hmac
import os
import select
import socket
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from benchrun.runner import __version__
from benchrun.runner.config.experiment import PinSpec
from benchrun.runner.errors import UserError
from benchrun.runner.execute.agent import MAX_LINE, UNAUTHENTICATED_LINE, Channel, ChannelClosed
from benchrun.runner.execute.agent_messages import (
    PROTOCOL,
    BadPayload,
    Bye,
    Hello,
    ProtocolError,
    Ready,
    RoundRequest,
    Setup,
    SharedCheck,
    Terminated,
)
from benchrun.runner.execute.executor import RoundSpec
from benchrun.runner.execute.slurm_commands import JobState

#: seconds an agent has to answer ``setup`` with ``ready``
SETUP_TIMEOUT = 60.0
#: seconds a new connection has to say ``hello``
HELLO_TIMEOUT = 10.0
#: seconds an agent has to close its connection after ``bye``
BYE_TIMEOUT = 3.0


@dataclass
class Agent:
    """One node's agent of a job: its connection (None once closed) and node name."""

    node: str
    channel: Channel | None
    connected: float  # monotonic s


@dataclass
class Job:
    """One submitted job and its agents (one per node; :attr:`agents` in routing order
    once all have connected)."""

    job_id: str
    token: str
    submitted: float  # monotonic s
    expected: int = 1  # agents the job starts
    agents: list[Agent] = field(default_factory=list)
    ended: JobState | None = None

    @property
    def channel(self) -> Channel | None:
        """The first agent's connection (None before it connected or once it closed)."""
        return self.agents[0].channel if self.agents else None

    @property
    def node(self) -> str | None:
        """The node names of the agents connected so far (``n1,n2``), None before any."""
        return ",".join(a.node for a in self.agents) if self.agents else None

    @property
    def connected(self) -> float | None:
        """When the last of its agents connected (monotonic s), None before all did."""
        if len(self.agents) < self.expected:
            return None
        return max(a.connected for a in self.agents)

    def close(self) -> None:
        """Close every agent's connection."""
        for agent in self.agents:
            if agent.channel is not None:
                agent.channel.close()
                agent.channel = None


class Listener:
    """The TCP socket the agents connect to: ``listen`` is the executor's ``listen:``
    (``HOST`` or ``HOST:PORT``; None: every address, any free port). :attr:`address`
    is what the agents are told: the host given, else this host's name, and the port."""

    def __init__(self, listen: str | None) -> None:
        host, port = None, 0
        if listen:
            text = listen
            if text.count(":") == 1:
                text, _, port_text = text.rpartition(":")
                port = int(port_text)
            host = text.strip("[]")
        bind_host = host if host is not None else ""
        family = socket.AF_INET6 if host is not None and ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((bind_host, port))
        except OSError as exc:
            sock.close()
            raise UserError(
                f"slurm: cannot listen on {bind_host or '*'}:{port} for the agents: "
                f"{exc.strerror or exc} (executor listen:)"
            ) from None
        sock.listen(8)
        sock.set_inheritable(False)
        self.sock = sock
        self.address: tuple[str, int] = (
            host if host is not None else socket.gethostname(),
            sock.getsockname()[1],
        )

    def fileno(self) -> int:
        return self.sock.fileno()

    def close(self) -> None:
        self.sock.close()

    def accept(self, token: str, on_message: Callable[[str], None]) -> tuple[Agent, Hello] | None:
        """Take one connection: the agent and its hello when it says ``hello`` with
        ``token``; None for a stranger or a stale agent (dropped; one whose hello is
        not valid protocol is told to ``on_message``)."""
        try:
            sock, _ = self.sock.accept()
        except OSError:
            return None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        channel = Channel(sock, max_line=UNAUTHENTICATED_LINE)
        try:
            hello = channel.receive(HELLO_TIMEOUT)
        except ProtocolError as exc:
            channel.close()
            on_message(f"slurm: dropped a connection whose hello was not valid: {exc}")
            return None
        except (ChannelClosed, OSError):
            channel.close()
            return None
        if (
            not isinstance(hello, Hello)
            or hello.token is None
            or not hmac.compare_digest(hello.token, token)
        ):
            channel.close()
            return None
        channel.max_line = MAX_LINE  # it proved who it is
        return Agent(hello.node or "?", channel, time.monotonic()), hello


def set_up(
    job_id: str,
    agent: Agent,
    hello: Hello,
    pin: PinSpec,
    checks: Sequence[SharedCheck],
) -> None:
    """Check what ``agent`` shares with this host (protocol and benchrun version), send
    it ``setup`` and read its ``ready``; :class:`UserError` when it differs, does not
    answer, or lacks the workloads' files."""
    assert agent.channel is not None
    if hello.protocol != PROTOCOL or hello.version != __version__:
        raise UserError(
            f"slurm: node {agent.node} runs benchrun {hello.version} (protocol "
            f"{hello.protocol}) with {hello.python}, this host benchrun "
            f"{__version__} (protocol {PROTOCOL}); install the same benchrun where the "
            "nodes find it, or point executor python: at it"
        )
    agent.channel.send(Setup(pin, tuple(checks)))
    try:
        ready = agent.channel.receive(SETUP_TIMEOUT)
    except (ChannelClosed, ProtocolError) as exc:
        raise UserError(
            f"slurm: the agent of job {job_id} on node {agent.node} failed its setup: {exc}"
        ) from None
    if not isinstance(ready, Ready):
        raise UserError(
            f"slurm: the agent of job {job_id} on node {agent.node} did not answer its setup"
        )
    problems = ready.problems
    if problems:
        raise UserError(
            f"slurm: node {agent.node} lacks what the experiment needs: "
            + "; ".join(problems)
            + " (the workloads' files must be on every node, at the same paths: "
            "docs/slurm.md)"
        )


def round_message(round_id: int, spec: RoundSpec, env_keys: Collection[str] | None) -> RoundRequest:
    """The ``round`` message of ``spec``: with ``env_keys``, only those variables travel
    and the node's environment is the base (``env_base: node``); None sends the whole
    environment."""
    if env_keys is None:
        return RoundRequest(round_id, spec)
    env = {k: v for k, v in spec.env.items() if k in env_keys}
    return RoundRequest(round_id, dataclasses.replace(spec, env=env), env_from_node=True)


def hung_up(agent: Agent) -> bool:
    """True when an idle ``agent`` is gone: its connection closed, broke, or it said
    ``terminated`` (what else it sent between rounds is read and dropped)."""
    if agent.channel is None:
        return True
    try:
        while poll_fds([agent.channel.fileno()], 0.0):
            agent.channel.feed()
            _read_idle(agent.channel)
    except (ChannelClosed, ProtocolError, OSError):
        return True
    return False


def _read_idle(channel: Channel) -> None:
    """Read what an idle agent has sent and drop it (a stale round's outcome, even a
    malformed one); :class:`ChannelClosed` when it said ``terminated``."""
    while True:
        try:
            message = channel.next()
        except BadPayload:
            continue
        if message is None:
            return
        if isinstance(message, Terminated):
            raise ChannelClosed("terminated")


def say_bye(agents: Sequence[Agent]) -> None:
    """``bye`` to each agent still connected (one that is gone is no error)."""
    for agent in agents:
        if agent.channel is not None:
            try:
                agent.channel.send(Bye())
            except ChannelClosed:
                pass


def part(agents: Sequence[Agent]) -> None:
    """End the job's connections at the campaign's end: ``bye`` to each agent, wait up
    to :data:`BYE_TIMEOUT` s for it to close (the agent exits: the job completes), close."""
    channels = [a.channel for a in agents if a.channel is not None]
    for channel in channels:
        try:
            channel.send(Bye())
        except (ChannelClosed, OSError):
            pass
    for channel in channels:
        try:
            channel.receive(BYE_TIMEOUT)
        except (ChannelClosed, ProtocolError, OSError):
            pass
        channel.close()
    for agent in agents:
        agent.channel = None


class Wake:
    """A flag and a self-pipe: :meth:`interrupt` (safe from a signal handler) sets the
    flag and wakes a :func:`poll_fds` waiting on :attr:`fd`."""

    def __init__(self) -> None:
        self.pending = False
        self.fd, self._write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def interrupt(self) -> None:
        self.pending = True
        try:
            os.write(self._write_fd, b"!")
        except OSError:
            pass

    def drain(self) -> None:
        """Empty the pipe (the flag stays as it is)."""
        _drain(self.fd)

    def close(self) -> None:
        for name in ("fd", "_write_fd"):
            fd = getattr(self, name, -1)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)


def poll_fds(fds: Sequence[int], timeout: float) -> set[int]:
    """The descriptors of ``fds`` readable within ``timeout`` s (rounded up to ms)."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    try:
        events = poller.poll(max(0, int(timeout * 1000 + 0.999)))
    except InterruptedError:  # pragma: no cover - PEP 475 retries
        return set()
    return {fd for fd, _ in events}


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except (BlockingIOError, OSError):
        pass
