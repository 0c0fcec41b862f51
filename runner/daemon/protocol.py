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
from pathlib import Path
from typing import Any

from benchrun.runner.daemon.paths import DaemonPaths, owner_text
from benchrun.runner.errors import UserError

#: protocol version carried in every message
VERSION = 1
#: largest request or reply in bytes (the newline included)
MAX_MESSAGE = 64 * 1024
#: largest reply the client accepts (queue listings can be longer than requests)
MAX_REPLY = 16 * 1024 * 1024


class ProtocolError(ValueError):
    """A request the daemon cannot act on; the message goes back in the error reply."""


def encode(message: dict[str, Any]) -> bytes:
    """One message as a line of UTF-8 JSON.

    Parameters
    ----------
    message : dict
        The fields; ``v`` (the protocol version) is added first.

    Returns
    -------
    bytes
        Compact JSON ending in a newline.
    """
    return json.dumps({"v": VERSION, **message}, separators=(",", ":")).encode() + b"\n"


def decode_request(raw: bytes) -> dict[str, Any]:
    """Parse one request line.

    Parameters
    ----------
    raw : bytes
        The request without its newline.

    Returns
    -------
    dict
        The request, with ``v`` equal to :data:`VERSION` and a string ``op``.

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
    if message.get("v") != VERSION:
        raise ProtocolError(
            f"unsupported protocol version {message.get('v')!r}; this daemon speaks {VERSION}"
        )
    if not isinstance(message.get("op"), str):
        raise ProtocolError("malformed request: no op")
    return message


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
            sock.connect(str(paths.socket))
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
