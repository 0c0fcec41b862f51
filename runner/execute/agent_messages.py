"""The messages of the agent protocol, as typed records parsed and written in one place.

The submit host (:mod:`runner.execute.slurm_protocol`) and benchrun's agent on a compute
node (:mod:`runner.execute.agent`) exchange one JSON object per line (UTF-8,
``\\n``-terminated) over one TCP connection, each with a ``"type"``:

===========  ==========  ===========================================================
type         direction   fields (record)
===========  ==========  ===========================================================
hello        agent ->    protocol, token, version, node, job_id, pid, cpus, python,
                         metadata (the node's record, or null) (:class:`Hello`)
setup        -> agent    pin ("auto", "none" or CPU list), checks (list of
                         {workload, cwd, program, path}) (:class:`Setup`)
ready        agent ->    problems (list of str), pin (the plan on the node)
                         (:class:`Ready`)
round        -> agent    id, spec (a RoundSpec), env_base ("node", or absent: the spec's
                         env is the whole environment) (:class:`RoundRequest`)
outcome      agent ->    id, outcome (a RoundOutcome) (:class:`OutcomeReport`)
interrupt    -> agent    id: kill that round's process group if it is in flight
                         (:class:`Interrupt`)
refused      agent ->    id, message: the spec could not be launched (:class:`Refused`)
terminated   agent ->    signal, id (the round it killed, or null): Slurm signalled
                         the job (scancel, time limit); the agent exits after this
                         (:class:`Terminated`)
bye          -> agent    the campaign is done with this job: the agent exits (:class:`Bye`)
===========  ==========  ===========================================================

A line is read by :func:`decode` (a JSON object with a string ``type``, else
:class:`ProtocolError`) and :func:`parse_message` (the record of its type, None for an
unknown type, which both sides ignore); a record is written by its ``to_json`` and
:func:`encode`. A peer that has not yet proven who it is may send anything: a
:class:`Hello`'s fields are read leniently (the token decides). A ``round`` or
``outcome`` whose spec or outcome is malformed raises :class:`BadPayload`, which names
the round, so that the agent refuses that round and the submit host tells it apart from a
stale message.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from benchrun.runner import __version__
from benchrun.runner.config.experiment import Direction, PinSpec, ReadingsSpec
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec, RoundStatus
from benchrun.runner.jsonread import FieldError, JsonFields

#: version of the message protocol; the submit host refuses an agent speaking another
PROTOCOL = 1

_STATUSES: dict[str, RoundStatus] = {
    "ok": "ok",
    "failed": "failed",
    "timeout": "timeout",
    "interrupted": "interrupted",
}
_FORMATS: dict[str, Literal["regex", "jsonl"]] = {"regex": "regex", "jsonl": "jsonl"}
_DIRECTIONS: dict[str, Direction] = {
    "lower_is_better": "lower_is_better",
    "higher_is_better": "higher_is_better",
}


#: ``on_node(node, record)``: told a node's metadata record (a :class:`Hello`'s
#: ``metadata``, JSON passed on unread), once per node
NodeCallback = Callable[[str, dict[str, object]], None]


class ProtocolError(Exception):
    """A line that is not a JSON object with a ``type``, a message of a known type with
    a malformed field, or a line too long."""


class BadPayload(ProtocolError):
    """A ``round`` or ``outcome`` message (:attr:`kind`) whose spec or outcome is
    malformed; its :attr:`round_id` is the message's ``id`` (None when that is no
    integer)."""

    def __init__(self, message: str, kind: str, round_id: int | None) -> None:
        super().__init__(message)
        self.kind = kind
        self.round_id = round_id


# ----------------------------------------------------------------------------- lines


def encode(message: Mapping[str, object]) -> bytes:
    """One message's JSON object as its line: compact JSON (``Infinity``/``NaN``
    allowed, as Python's json reads them back) and ``\\n``."""
    return json.dumps(message, separators=(",", ":"), default=_jsonable).encode() + b"\n"


def decode(line: bytes) -> dict[str, object]:
    """The JSON object of one line (without its ``\\n``); :class:`ProtocolError` if it is
    not a JSON object with a string ``type``."""
    try:
        message = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    match message:
        case {"type": str()}:
            return message
    raise ProtocolError("not a message (a JSON object with a string 'type')")


def _jsonable(value: object) -> object:
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


def node_name() -> str:
    """This node's name as Slurm knows it (``$SLURMD_NODENAME``), else the host name."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


# ------------------------------------------------------------------ spec and outcome


def spec_to_json(spec: RoundSpec) -> dict[str, object]:
    """A :class:`RoundSpec` as JSON-ready data (its readings spec as an object)."""
    out = dataclasses.asdict(spec)
    out["argv"] = list(spec.argv)
    out["env"] = dict(spec.env)
    out["cpus"] = None if spec.cpus is None else list(spec.cpus)
    out["timeout"] = float(spec.timeout)
    return out


def _readings_from_json(data: object) -> ReadingsSpec:
    """The :class:`ReadingsSpec` of a spec's ``readings`` object (missing fields take
    their defaults); :class:`FieldError` for a malformed one."""
    fields = JsonFields(data, "readings")
    unknown = sorted(str(k) for k in fields.data if k not in _READINGS_FIELDS)
    if unknown:
        raise FieldError(f"readings: unknown field {unknown[0]!r}")
    default = ReadingsSpec()
    form = _FORMATS.get(fields.optional("format", str, default.format))
    direction = _DIRECTIONS.get(fields.optional("direction", str, default.direction))
    if form is None or direction is None:
        raise FieldError("readings: format or direction is none of benchrun's")
    return ReadingsSpec(
        format=form,
        pattern=fields.optional("pattern", str),
        field=fields.optional("field", str),
        unit=fields.optional("unit", str, default.unit),
        direction=direction,
        max_readings=fields.optional("max_readings", int, default.max_readings),
        match_timeout=fields.optional("match_timeout", float, default.match_timeout),
    )


_READINGS_FIELDS = frozenset(f.name for f in dataclasses.fields(ReadingsSpec))


def spec_from_json(data: object) -> RoundSpec:
    """The :class:`RoundSpec` of :func:`spec_to_json`'s data (``counters`` is not read:
    a node counts none); :class:`ProtocolError` if a field is missing or has the wrong
    type."""
    try:
        fields = JsonFields(data, "spec")
        default = RoundSpec("", (), {}, 0.0)
        argv = fields.items("argv", str)
        env = fields.strings("env")
        readings = fields.object("readings")
        if argv is None or env is None:
            raise FieldError(f"spec: field {'argv' if argv is None else 'env'!r} is missing")
        return RoundSpec(
            workload=fields.required("workload", str),
            argv=argv,
            env=env,
            timeout=fields.required("timeout", float),
            shell=fields.optional("shell", bool, default.shell),
            cwd=fields.optional("cwd", str),
            cpus=fields.items("cpus", int),
            readings=None if readings is None else _readings_from_json(readings),
            output_limit=fields.optional("output_limit", int, default.output_limit),
            memory_limit=fields.optional("memory_limit", int),
            hook=fields.optional("hook", str),
            pass_index=fields.optional("pass_index", int),
        )
    except FieldError as exc:
        raise ProtocolError(f"bad round spec: {exc}") from None


def outcome_to_json(outcome: RoundOutcome) -> dict[str, object]:
    """A :class:`RoundOutcome` as JSON-ready data."""
    out = dataclasses.asdict(outcome)
    out["cpus"] = None if outcome.cpus is None else list(outcome.cpus)
    out["readings"] = list(outcome.readings)
    out["extra"] = dict(outcome.extra)
    return out


def outcome_from_json(data: object) -> RoundOutcome:
    """The :class:`RoundOutcome` of :func:`outcome_to_json`'s data (``counters`` is not
    read; ``wait_ns``/``wait_source`` may be missing); :class:`ProtocolError` if a field
    is missing or has the wrong type."""
    try:
        fields = JsonFields(data, "outcome")
        name = fields.required("status", str)
        status = _STATUSES.get(name)
        if status is None:
            raise FieldError(f"outcome: status {name!r}")
        return RoundOutcome(
            status=status,
            wall_ns=fields.required("wall_ns", int),
            user_s=fields.required("user_s", float),
            sys_s=fields.required("sys_s", float),
            max_rss_kib=fields.required("max_rss_kib", int),
            exit_code=fields.optional("exit_code", int),
            started_at=fields.required("started_at", float),
            cpus=fields.items("cpus", int),
            readings=fields.items("readings", float) or (),
            reason=fields.optional("reason", str),
            stdout_tail=fields.optional("stdout_tail", str, ""),
            stderr_tail=fields.optional("stderr_tail", str, ""),
            extra=fields.object("extra") or {},
            node=fields.optional("node", str),
            wait_ns=fields.optional("wait_ns", int),
            wait_source=fields.optional("wait_source", str),
        )
    except FieldError as exc:
        raise ProtocolError(f"bad round outcome: {exc}") from None


# -------------------------------------------------------------------------- messages


@dataclass(frozen=True)
class SharedCheck:
    """What one workload needs on the node: its directory ``cwd`` and its ``program``
    (a path relative to ``cwd`` when it holds ``/``, else a name on ``path``, default
    the agent's ``$PATH``); None where nothing is checked (a shell command)."""

    workload: str
    cwd: str | None
    program: str | None = None
    path: str | None = None

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: object) -> SharedCheck:
        """The check of one ``setup`` entry; :class:`FieldError` for a malformed one."""
        fields = JsonFields(data, "check")
        return cls(
            workload=fields.optional("workload", str, "?"),
            cwd=fields.optional("cwd", str),
            program=fields.optional("program", str),
            path=fields.optional("path", str),
        )


@dataclass(frozen=True)
class Hello:
    """The agent's first line: who and where it is. ``token`` is None when the peer sent
    none as a string (a stranger); the other fields are as sent where of their type, else
    None (they are shown, never trusted). ``metadata``: the node's record, passed on as
    JSON (None: not sent, or not an object)."""

    TYPE: ClassVar[str] = "hello"

    token: str | None
    node: str | None
    protocol: int | None = PROTOCOL
    version: str | None = __version__
    job_id: str | None = None
    pid: int | None = None
    cpus: tuple[int, ...] = ()
    python: str | None = None
    metadata: dict[str, object] | None = None

    @classmethod
    def here(cls, token: str, cpus: Sequence[int], metadata: Mapping[str, object] | None) -> Hello:
        """The hello of this process (an agent): its node, job, pid and interpreter."""
        return cls(
            token=token,
            node=node_name(),
            job_id=os.environ.get("SLURM_JOB_ID"),
            pid=os.getpid(),
            cpus=tuple(cpus),
            python=sys.executable,
            metadata=None if metadata is None else dict(metadata),
        )

    def to_json(self) -> dict[str, object]:
        return {
            "type": self.TYPE,
            "protocol": self.protocol,
            "token": self.token,
            "version": self.version,
            "node": self.node,
            "job_id": self.job_id,
            "pid": self.pid,
            "cpus": list(self.cpus),
            "python": self.python,
            "metadata": self.metadata,
        }

    @classmethod
    def from_json(cls, fields: JsonFields) -> Hello:
        """Never raises: a field of another type is read as None."""
        try:
            cpus = fields.items("cpus", int) or ()
        except FieldError:
            cpus = ()
        try:
            metadata = fields.object("metadata")
        except FieldError:
            metadata = None
        return cls(
            token=fields.loose("token", str),
            node=fields.loose("node", str),
            protocol=fields.loose("protocol", int),
            version=fields.loose("version", str),
            job_id=fields.loose("job_id", str),
            pid=fields.loose("pid", int),
            cpus=cpus,
            python=fields.loose("python", str),
            metadata=metadata,
        )


@dataclass(frozen=True)
class Setup:
    """The submit host's answer to a hello: the experiment's ``pin`` (planned by the
    agent inside its job's CPUs) and what the workloads need on the node."""

    TYPE: ClassVar[str] = "setup"

    pin: PinSpec
    checks: tuple[SharedCheck, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "type": self.TYPE,
            "pin": list(self.pin) if isinstance(self.pin, tuple) else self.pin,
            "checks": [c.to_json() for c in self.checks],
        }

    @classmethod
    def from_json(cls, fields: JsonFields) -> Setup:
        try:
            cpus = fields.items("pin", int)
        except FieldError:  # not a CPU list: a word
            cpus = None
        pin: PinSpec = cpus if cpus is not None else fields.optional("pin", str, "auto")
        checks = tuple(SharedCheck.from_json(c) for c in fields.raw_list("checks") or ())
        return cls(pin, checks)


@dataclass(frozen=True)
class Ready:
    """The agent's answer to ``setup``: the problems found (none: rounds may come) and
    its pinning plan (:meth:`runner.execute.pinning.PinPlan.to_dict`, shown only)."""

    TYPE: ClassVar[str] = "ready"

    problems: tuple[str, ...]
    pin: dict[str, object] | None = None

    def to_json(self) -> dict[str, object]:
        return {"type": self.TYPE, "problems": list(self.problems), "pin": self.pin}

    @classmethod
    def from_json(cls, fields: JsonFields) -> Ready:
        problems = fields.raw_list("problems") or ()
        return cls(tuple(str(p) for p in problems), fields.object("pin"))


@dataclass(frozen=True)
class RoundRequest:
    """One round for the agent: ``spec`` with, when ``env_from_node``, only the
    experiment's variables in its ``env`` (set on top of the job's environment on the
    node; on the wire ``env_base: node``)."""

    TYPE: ClassVar[str] = "round"

    id: int | None
    spec: RoundSpec
    env_from_node: bool = False

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"type": self.TYPE, "id": self.id, "spec": spec_to_json(self.spec)}
        if self.env_from_node:
            out["env_base"] = "node"
        return out

    @classmethod
    def from_json(cls, fields: JsonFields) -> RoundRequest:
        """:class:`BadPayload` (with the id) when the spec is malformed."""
        round_id = fields.loose("id", int)
        try:
            parsed = spec_from_json(fields.object("spec") or {})
        except FieldError as exc:
            raise BadPayload(f"bad round spec: {exc}", cls.TYPE, round_id) from None
        except ProtocolError as exc:
            raise BadPayload(str(exc), cls.TYPE, round_id) from None
        return cls(round_id, parsed, fields.loose("env_base", str) == "node")


@dataclass(frozen=True)
class OutcomeReport:
    """What round ``id`` did on the node."""

    TYPE: ClassVar[str] = "outcome"

    id: int | None
    outcome: RoundOutcome

    def to_json(self) -> dict[str, object]:
        return {"type": self.TYPE, "id": self.id, "outcome": outcome_to_json(self.outcome)}

    @classmethod
    def from_json(cls, fields: JsonFields) -> OutcomeReport:
        """:class:`BadPayload` (with the id) when the outcome is malformed."""
        round_id = fields.loose("id", int)
        try:
            parsed = outcome_from_json(fields.object("outcome") or {})
        except FieldError as exc:
            raise BadPayload(f"bad round outcome: {exc}", cls.TYPE, round_id) from None
        except ProtocolError as exc:
            raise BadPayload(str(exc), cls.TYPE, round_id) from None
        return cls(round_id, parsed)


@dataclass(frozen=True)
class Interrupt:
    """Kill round ``id``'s process group if it is in flight."""

    TYPE: ClassVar[str] = "interrupt"

    id: int | None

    def to_json(self) -> dict[str, object]:
        return {"type": self.TYPE, "id": self.id}

    @classmethod
    def from_json(cls, fields: JsonFields) -> Interrupt:
        return cls(fields.loose("id", int))


@dataclass(frozen=True)
class Refused:
    """Round ``id`` could not be launched: ``message`` says why (a UserError's text)."""

    TYPE: ClassVar[str] = "refused"

    id: int | None
    message: str

    def to_json(self) -> dict[str, object]:
        return {"type": self.TYPE, "id": self.id, "message": self.message}

    @classmethod
    def from_json(cls, fields: JsonFields) -> Refused:
        return cls(fields.loose("id", int), fields.optional("message", str, "(no reason given)"))


@dataclass(frozen=True)
class Terminated:
    """Slurm signalled the job (``signal``); ``id``: the round it killed, or None. The
    agent exits after this."""

    TYPE: ClassVar[str] = "terminated"

    signal: int | None
    id: int | None = None

    def to_json(self) -> dict[str, object]:
        return {"type": self.TYPE, "signal": self.signal, "id": self.id}

    @classmethod
    def from_json(cls, fields: JsonFields) -> Terminated:
        return cls(fields.loose("signal", int), fields.loose("id", int))


@dataclass(frozen=True)
class Bye:
    """The campaign is done with this job: the agent exits."""

    TYPE: ClassVar[str] = "bye"

    def to_json(self) -> dict[str, object]:
        return {"type": self.TYPE}

    @classmethod
    def from_json(cls, fields: JsonFields) -> Bye:
        return cls()


#: a message of the protocol
Message = (
    Hello | Setup | Ready | RoundRequest | OutcomeReport | Interrupt | Refused | Terminated | Bye
)

_KINDS: dict[str, type[Message]] = {
    kind.TYPE: kind
    for kind in (
        Hello,
        Setup,
        Ready,
        RoundRequest,
        OutcomeReport,
        Interrupt,
        Refused,
        Terminated,
        Bye,
    )
}


def parse_message(data: Mapping[str, object]) -> Message | None:
    """The record of a :func:`decode`-d object (None for a type this side does not know,
    which is ignored); :class:`ProtocolError` when a field is malformed
    (:class:`BadPayload` for a round's spec or outcome)."""
    kind = _KINDS.get(str(data["type"]))
    if kind is None:
        return None
    try:
        return kind.from_json(JsonFields(data, f"{kind.TYPE} message"))
    except FieldError as exc:
        raise ProtocolError(str(exc)) from None
