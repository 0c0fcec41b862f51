"""The daemon's wire format and its client side.

One request per connection: the client sends one JSON object on one line
(``{"v": 1, "op": "...", ...}\\n``), the daemon answers one JSON object on one line
(``{"v": 1, "ok": true, ...}`` or ``{"v": 1, "ok": false, "error": "..."}``) and closes.
Messages are capped at :data:`MAX_MESSAGE` bytes; anything that is not a JSON object with
the right version and a known ``op`` gets an error reply, never a crash.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import time
from collections.abc import Callable, Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from benchrun.runner.daemon.paths import DaemonPaths, owner_text
from benchrun.runner.daemon.queue import Entry
from benchrun.runner.errors import UserError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

#: protocol version carried in every message
VERSION = 1
#: largest request or reply in bytes (the newline included)
MAX_MESSAGE = 64 * 1024
#: largest reply the client accepts (queue listings can be longer than requests)
MAX_REPLY = 16 * 1024 * 1024


class ProtocolError(ValueError):
    """A request the daemon cannot act on; the message goes back in the error reply."""


def encode(message: Mapping[str, object]) -> bytes:
    """One message as a line of UTF-8 JSON.

    Parameters
    ----------
    message : Mapping
        The fields; ``v`` (the protocol version) is added first.

    Returns
    -------
    bytes
        Compact JSON ending in a newline.
    """
    return json.dumps({"v": VERSION, **message}, separators=(",", ":")).encode() + b"\n"


@dataclass(frozen=True)
class Request:
    """One decoded request: its ``op`` and its other fields as the client sent them.

    The fields are another user's input: each op's handler reads the ones it takes
    through one parser (:func:`entry_id`, :meth:`SubmitRequest.from_request`), which
    raises :class:`ProtocolError` (or :class:`UserError`) for a bad one.
    """

    op: str
    fields: Mapping[str, object] = field(default_factory=dict)


def decode_request(raw: bytes) -> Request:
    """Parse one request line.

    Parameters
    ----------
    raw : bytes
        The request without its newline.

    Returns
    -------
    Request
        The request's op and other fields (``v`` was :data:`VERSION`).

    Raises
    ------
    ProtocolError
        Too large, not UTF-8, not a JSON object, another version, or no ``op``.
    """
    if len(raw) > MAX_MESSAGE:
        raise ProtocolError(f"request too large ({len(raw)} bytes; at most {MAX_MESSAGE})")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError("malformed request: not UTF-8") from None
    try:
        message = json.loads(text)
    except ValueError:
        raise ProtocolError("malformed request: not JSON") from None
    if not isinstance(message, dict):
        raise ProtocolError("malformed request: expected a JSON object")
    version = message.pop("v", None)
    if version != VERSION:
        raise ProtocolError(
            f"unsupported protocol version {version!r}; this daemon speaks {VERSION}"
        )
    op = message.pop("op", None)
    if not isinstance(op, str):
        raise ProtocolError("malformed request: no op")
    return Request(op, message)


def entry_id(req: Request) -> int:
    """The queue id a request names (its ``id`` field).

    Raises
    ------
    UserError
        Not a positive 64-bit integer (a bool is not one); the message shows a huge
        number as "(too large)".
    """
    raw = req.fields.get("id")
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 < raw < 2**63:
        shown = raw if not isinstance(raw, int) or raw.bit_length() < 70 else "(too large)"
        raise UserError(f"bad campaign id {shown!r}; expected a number from `benchrun queue`")
    return raw


#: largest priority accepted (the queue stores it as a 64-bit integer)
MAX_PRIORITY = 10**9
#: the last second of the year 9999 (what datetime can show), Unix time
MAX_TIMESTAMP = 253402300799
#: the string fields of ``submit``, and those of them that are absolute paths
SUBMIT_TEXTS = ("experiment", "name", "output", "db_path", "cwd", "config_text")
SUBMIT_PATHS = ("experiment", "output", "db_path", "cwd")


@dataclass(frozen=True)
class SubmitRequest:
    """A ``submit`` request, checked: the experiment file, the campaign's name, its output
    directory, results DB and working directory (absolute paths), the experiment's text,
    its priority (higher first), the Unix time before which it does not start (None: at
    once) and its ``--set KEY=VALUE`` items."""

    experiment: str
    name: str
    output: str
    db_path: str
    cwd: str
    config_text: str
    priority: int = 0
    not_before: float | None = None
    overrides: tuple[str, ...] = ()

    @classmethod
    def from_request(cls, req: Request) -> SubmitRequest:
        """Check the fields of a ``submit`` request.

        Raises
        ------
        ProtocolError
            A text field missing, empty or with a NUL; a path that is not absolute; a
            priority that is no integer within :data:`MAX_PRIORITY`; a ``not_before``
            that is no Unix time before the year 10000 (NaN and infinities refused); an
            override that is not a ``KEY=VALUE`` string.
        """
        # every field as sent, or its default here when it was not (MISSING: required)
        sent = {f.name: req.fields.get(f.name, f.default) for f in fields(cls)}
        texts: dict[str, str] = {}
        for key in SUBMIT_TEXTS:
            value = sent[key]
            if not isinstance(value, str) or not value or "\0" in value:
                raise ProtocolError(f"submit: {key} must be a non-empty string")
            texts[key] = value
        for key in SUBMIT_PATHS:
            if not os.path.isabs(texts[key]):
                raise ProtocolError(f"submit: {key} must be an absolute path")
        priority = sent["priority"]
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise ProtocolError("submit: priority must be an integer")
        if abs(priority) > MAX_PRIORITY:
            raise ProtocolError(
                f"submit: priority must be between -{MAX_PRIORITY} and {MAX_PRIORITY}"
            )
        not_before = sent["not_before"]
        if not_before is not None and (
            isinstance(not_before, bool)
            or not isinstance(not_before, int | float)
            or not 0 <= not_before <= MAX_TIMESTAMP  # refuses NaN and infinities too
        ):
            raise ProtocolError(
                "submit: not_before must be a Unix time in seconds before the year 10000, or null"
            )
        overrides = sent["overrides"]
        if not isinstance(overrides, list | tuple) or not all(
            isinstance(o, str) and "=" in o and "\0" not in o for o in overrides
        ):
            raise ProtocolError("submit: overrides must be a list of KEY=VALUE strings")
        return cls(**texts, priority=priority, not_before=not_before, overrides=tuple(overrides))


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


#: the client's check of a reply's scalar field, by its declared type
_SCALARS: dict[str, Callable[[object], bool]] = {
    "int": _is_int,
    "float": _is_number,
    "str": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
}
#: the value on the client of a field the daemon leaves out of its replies
_LEFT_OUT: dict[str, object] = {"config_text": ""}

_R = TypeVar("_R", bound="Reply")
_D = TypeVar("_D", bound="DataclassInstance")


def _unreadable(name: str, value: object) -> UserError:
    return UserError(
        f"the benchrun daemon sent an unreadable reply ({name}: {value!r:.40})", exit_code=1
    )


def _read(kind: str, value: object, name: str) -> object:
    """``value`` as the reply field ``name`` of declared type ``kind``: a scalar of
    :data:`_SCALARS`, ``X | None``, ``tuple[X, ...]`` (a JSON list), or a queue record
    (:class:`Entry`, :class:`QueueEvent`: a JSON object). :class:`UserError` otherwise."""
    if kind.endswith(" | None"):
        return None if value is None else _read(kind.removesuffix(" | None"), value, name)
    if kind.startswith("tuple[") and kind.endswith(", ...]"):
        if isinstance(value, list):
            return tuple(_read(kind[len("tuple[") : -len(", ...]")], v, name) for v in value)
    elif kind in _SCALARS:
        if _SCALARS[kind](value):
            return value
    elif kind in _RECORDS and isinstance(value, dict):
        return _record(_RECORDS[kind], value)
    raise _unreadable(name, value)


def _record(cls: type[_D], data: Mapping[str, object]) -> _D:
    """A record of ``cls`` from a reply's JSON object, each field read by :func:`_read`; a
    field not sent takes its default (or its :data:`_LEFT_OUT` value)."""
    values = {}
    for f in fields(cls):
        absent = f.default if f.default is not MISSING else _LEFT_OUT.get(f.name, MISSING)
        value = data.get(f.name, absent)
        if value is MISSING:
            raise _unreadable(f.name, None)
        values[f.name] = value if value is absent else _read(str(f.type), value, f.name)
    return cls(**values)


@dataclass(frozen=True)
class Reply:
    """A successful reply: the fields of each subclass are the reply's, in order (``ok``
    is added by :meth:`to_json`, ``v`` by :func:`encode`)."""

    def to_json(self) -> dict[str, object]:
        """The reply's JSON object: ``ok`` true, then the fields in declaration order."""
        out: dict[str, object] = {"ok": True}
        for f in fields(self):
            out[f.name] = _wire(getattr(self, f.name))
        return out

    @classmethod
    def from_json(cls: type[_R], reply: Mapping[str, object]) -> _R:
        """The client's side of :meth:`to_json`: the record of a reply's JSON object (queue
        entries read back as :class:`Entry`, their ``config_text`` empty: replies leave it
        out).

        Raises
        ------
        UserError
            A field missing or not of its declared type (exit code 1).
        """
        return _record(cls, reply)


def _wire(value: object) -> object:
    """A reply field as JSON: a queue entry by :meth:`Entry.to_json` (without its
    experiment's text), other records field by field, tuples as lists."""
    if isinstance(value, Entry):
        return value.to_json()
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, tuple | list):
        return [_wire(v) for v in value]
    return value


@dataclass(frozen=True)
class PingReply(Reply):
    """``ping``: the daemon's pid and benchrun version."""

    pid: int
    version: str


@dataclass(frozen=True)
class StatusReply(Reply):
    """``daemon-status``: the daemon's pid and version, when it started (Unix seconds), its
    memory now and then (KiB), its socket and queue file, the running entry, how many
    wait, its quiet-machine settings and whether it is stopping."""

    pid: int
    version: str
    started_at: float
    rss_kib: int
    rss_at_start_kib: int
    socket: str
    queue_db: str
    running: int | None
    queued: int
    quiet_load: float | None
    quiet_max_wait: float
    stopping: bool


@dataclass(frozen=True)
class SubmitReply(Reply):
    """``submit``: the new entry's id and the file its campaign logs to."""

    id: int
    log_path: str


@dataclass(frozen=True)
class QueueReply(Reply):
    """``queue``: every entry, and the id of the one that runs."""

    entries: tuple[Entry, ...]
    running: int | None


@dataclass(frozen=True)
class QueueEvent:
    """One line of an entry's queue log: when (Unix seconds), its kind and message."""

    at: float
    kind: str
    message: str


#: the records a reply holds, by the name their fields are declared with
_RECORDS: dict[str, type[DataclassInstance]] = {"Entry": Entry, "QueueEvent": QueueEvent}


@dataclass(frozen=True)
class EntryReply(Reply):
    """``current``: the running entry, or None."""

    entry: Entry | None


@dataclass(frozen=True)
class EntryEventsReply(Reply):
    """``get``: one entry and its queue log, oldest first."""

    entry: Entry
    events: tuple[QueueEvent, ...]


@dataclass(frozen=True)
class StateReply(Reply):
    """``cancel``, ``resume``: the entry's state now."""

    state: str


@dataclass(frozen=True)
class StopReply(Reply):
    """``stop``: the daemon's pid and the entry still running, if any."""

    pid: int
    running: int | None


def error_reply(text: str, code: int = 1) -> bytes:
    """An error reply line.

    Parameters
    ----------
    text : str
        The one-line error the client prints.
    code : int
        The exit code the client should use (2: bad input).
    """
    return encode({"ok": False, "error": text, "code": code})


class DaemonNotRunning(UserError):
    """Nothing answers on the daemon's socket (no daemon, or a stale socket file)."""


def not_running_error(paths: DaemonPaths) -> UserError:
    """The one-line error for a daemon that does not answer on ``paths.socket``."""
    return DaemonNotRunning(
        f"the benchrun daemon is not running (no answer on {paths.socket}); "
        "start it with `benchrun daemon start`",
        exit_code=1,
    )


def check_server(sock: socket.socket, path: Path) -> None:
    """Refuse a daemon socket served by another user, before a byte is sent.

    The kernel reports the credentials of the process that made the listening socket
    (``SO_PEERCRED``, a ``struct ucred``: pid, uid, gid); they cannot be forged by the
    server. The server must be the client's own effective uid: a root client never talks
    to another user's daemon (which would receive its experiment, ``env:`` secrets
    included), and a user never to root's. Checking the socket file or its directory
    instead would leave a window between the check and ``connect``.

    Parameters
    ----------
    sock : socket.socket
        A connected Unix socket.
    path : Path
        The socket file (for the message).

    Raises
    ------
    UserError
        The server's uid is not ours, or the kernel does not report it (exit code 1).
    """
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", creds)
    except OSError as exc:
        raise UserError(
            f"cannot tell who serves the daemon socket {path} ({exc.strerror or exc}): "
            "refusing to send",
            exit_code=1,
        ) from None
    if uid != os.geteuid():
        raise UserError(
            f"the daemon socket {path} is served by {owner_text(uid)}, not you: refusing to "
            "send; someone else's process listens there (see docs/security.md)",
            exit_code=1,
        )


def _connect(sock: socket.socket, path: str, timeout: float) -> None:
    """``sock.connect(path)``, retried while the listener's backlog is full: a Unix socket
    with a timeout (non-blocking underneath) gets EAGAIN then, where a blocking one would
    wait (Linux ``unix(7)``). Raises ``TimeoutError`` once ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock.connect(path)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{path}: the listener's backlog stayed full") from None
            time.sleep(0.01)


def request(
    op: str, paths: DaemonPaths | None = None, *, timeout: float = 30.0, **fields: Any
) -> dict[str, Any]:
    """Send one request to the daemon and return its reply.

    Parameters
    ----------
    op : str
        The request kind (see :data:`runner.daemon.handlers.HANDLERS`).
    paths : DaemonPaths, optional
        Where the socket is; default from the environment.
    timeout : float
        Seconds for connecting, sending and receiving together.
    **fields
        The request's other fields.

    Returns
    -------
    dict
        The reply, ``ok`` true.

    Raises
    ------
    UserError
        No daemon answers (:class:`DaemonNotRunning`), another user serves the socket
        (:func:`check_server`; nothing is sent), it answers too late or not at all, or it
        sends an error reply (its text and exit code).
    """
    paths = paths or DaemonPaths.from_env()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            _connect(sock, str(paths.socket), timeout)
        except (FileNotFoundError, ConnectionRefusedError):
            raise not_running_error(paths) from None
        except PermissionError:
            raise UserError(
                f"{paths.socket}: permission denied; the daemon belongs to another user",
                exit_code=1,
            ) from None
        check_server(sock, paths.socket)
        try:
            sock.sendall(encode({"op": op, **fields}))
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused before reading (e.g. another uid): its reply may be waiting
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                data = sock.recv(65536)
            except ConnectionResetError:
                if chunks:
                    break  # the reply came before the reset; read it
                raise
            if not data:
                break
            chunks.append(data)
            size += len(data)
            if data.endswith(b"\n") or size > MAX_REPLY:
                break
    except TimeoutError:
        raise UserError(f"the benchrun daemon did not answer within {timeout:g} s", 1) from None
    except (ConnectionResetError, BrokenPipeError):
        raise UserError("the benchrun daemon closed the connection without answering", 1) from None
    finally:
        sock.close()
    raw = b"".join(chunks)
    try:
        reply = json.loads(raw.decode("utf-8"))
    except ValueError:
        raise UserError("the benchrun daemon sent an unreadable reply", exit_code=1) from None
    if not isinstance(reply, dict):
        raise UserError("the benchrun daemon sent an unreadable reply", exit_code=1)
    if not reply.get("ok"):
        code = reply.get("code")
        raise UserError(
            str(reply.get("error") or "the daemon refused the request"),
            code if isinstance(code, int) and code > 0 else 1,
        )
    return reply


def call(
    op: str,
    reply_type: type[_R],
    paths: DaemonPaths | None = None,
    *,
    timeout: float = 30.0,
    **fields: object,
) -> _R:
    """:func:`request`, its reply read into the op's record (e.g. ``call("daemon-status",
    StatusReply)``, ``call("get", EntryEventsReply, id=3)``; :meth:`Reply.from_json`).

    Raises
    ------
    UserError
        As :func:`request`, and for a reply without the record's fields.
    """
    return reply_type.from_json(request(op, paths, timeout=timeout, **fields))
