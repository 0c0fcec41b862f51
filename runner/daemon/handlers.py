"""Request handlers: one function per ``op`` of the socket protocol, in :data:`HANDLERS`.

:func:`dispatch` turns one request line into one reply line and never raises: a bad
request, a refused one (:class:`UserError`) or a bug in a handler each become an error
reply. The ops and their fields are listed in docs/daemon.md.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psutil

from benchrun.runner import __version__
from benchrun.runner.daemon.log import log
from benchrun.runner.daemon.paths import DaemonPaths
from benchrun.runner.daemon.protocol import ProtocolError, decode_request, encode, error_reply
from benchrun.runner.daemon.queue import FINAL_STATES, Entry, QueueDB, queue_error
from benchrun.runner.daemon.supervisor import Supervisor, unfinished
from benchrun.runner.errors import UserError


@dataclass
class DaemonState:
    """What the handlers read and change: the daemon's files, queue and supervisor, when
    it started (Unix seconds), its RSS then (KiB), and whether a stop was asked for."""

    paths: DaemonPaths
    queue: QueueDB
    supervisor: Supervisor
    started_at: float
    rss_at_start_kib: int = 0
    stop_requested: bool = False


Request = dict[str, Any]
#: a handler: (daemon, request) -> the reply's fields (``ok`` is added by :func:`dispatch`)
Handler = Callable[[DaemonState, Request], dict[str, Any]]


def rss_kib() -> int:
    """This process's resident set size in KiB."""
    return int(psutil.Process().memory_info().rss // 1024)


#: largest priority accepted (the queue stores it as a 64-bit integer)
MAX_PRIORITY = 10**9
#: the last second of the year 9999 (what datetime can show), Unix time
MAX_TIMESTAMP = 253402300799


def _entry(daemon: DaemonState, req: Request) -> Entry:
    raw = req.get("id")
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 < raw < 2**63:
        shown = raw if not isinstance(raw, int) or raw.bit_length() < 70 else "(too large)"
        raise UserError(f"bad campaign id {shown!r}; expected a number from `benchrun queue`")
    entry = daemon.queue.get(raw)
    if entry is None:
        raise UserError(f"no campaign {raw} in the queue; `benchrun queue` lists them")
    return entry


def ping(daemon: DaemonState, req: Request) -> dict[str, Any]:
    """``ping``: the daemon's pid and benchrun version."""
    return {"pid": os.getpid(), "version": __version__}


def daemon_status(daemon: DaemonState, req: Request) -> dict[str, Any]:
    """``daemon-status``: pid, version, memory, files, running and queued campaigns."""
    sup = daemon.supervisor
    return {
        "pid": os.getpid(),
        "version": __version__,
        "started_at": daemon.started_at,
        "rss_kib": rss_kib(),
        "rss_at_start_kib": daemon.rss_at_start_kib,
        "socket": str(daemon.paths.socket),
        "queue_db": str(daemon.paths.queue_db),
        "running": sup.running,
        "queued": len(daemon.queue.entries(("queued",))),
        "quiet_load": sup.quiet_load,
        "quiet_max_wait": sup.quiet_max_wait,
        "stopping": sup.stopping,
    }


def submit(daemon: DaemonState, req: Request) -> dict[str, Any]:
    """``submit``: queue a campaign (absolute paths, checked by ``benchrun submit``)."""
    if daemon.stop_requested:
        raise UserError("the daemon is stopping; submit again after it restarts", 1)
    fields: dict[str, Any] = {}
    for key in ("experiment", "name", "output", "db_path", "cwd", "config_text"):
        value = req.get(key)
        if not isinstance(value, str) or not value or "\0" in value:
            raise ProtocolError(f"submit: {key} must be a non-empty string")
        fields[key] = value
    for key in ("experiment", "output", "db_path", "cwd"):
        if not os.path.isabs(fields[key]):
            raise ProtocolError(f"submit: {key} must be an absolute path")
    priority = req.get("priority", 0)
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise ProtocolError("submit: priority must be an integer")
    if abs(priority) > MAX_PRIORITY:
        raise ProtocolError(f"submit: priority must be between -{MAX_PRIORITY} and {MAX_PRIORITY}")
    not_before = req.get("not_before")
    if not_before is not None and (
        isinstance(not_before, bool)
        or not isinstance(not_before, (int, float))
        or not 0 <= not_before <= MAX_TIMESTAMP  # refuses NaN and infinities too
    ):
        raise ProtocolError(
            "submit: not_before must be a Unix time in seconds before the year 10000, or null"
        )
    overrides = req.get("overrides", [])
    if not isinstance(overrides, list) or not all(
        isinstance(o, str) and "=" in o and "\0" not in o for o in overrides
    ):
        raise ProtocolError("submit: overrides must be a list of KEY=VALUE strings")
    entry_id = daemon.queue.add(
        **fields,
        priority=priority,
        not_before=not_before,
        log_dir=daemon.paths.logs_dir,
        overrides=overrides,
    )
    log(f"campaign {entry_id}: queued {fields['experiment']}")
    return {"id": entry_id, "log_path": str(daemon.paths.campaign_log(entry_id))}


def queue(daemon: DaemonState, req: Request) -> dict[str, Any]:
    """``queue``: every entry, and which one runs."""
    entries = [e.to_json() for e in daemon.queue.entries()]
    return {"entries": entries, "running": daemon.supervisor.running}


def get(daemon: DaemonState, req: Request) -> dict[str, Any]:
    """``get``: one entry and its queue log."""
    entry = _entry(daemon, req)
    events = [{"at": at, "kind": k, "message": m} for at, k, m in daemon.queue.events(entry.id)]
    return {"entry": entry.to_json(), "events": events}


def current(daemon: DaemonState, req: Request) -> dict[str, Any]:
    """``current``: the running entry, or null."""
    running = daemon.supervisor.running
    if running is None:
        return {"entry": None}
    entry = daemon.queue.get(running)
    return {"entry": entry.to_json() if entry else None}


def cancel(daemon: DaemonState, req: Request) -> dict[str, Any]:
    """``cancel``: drop a waiting entry, or stop the running one (it commits)."""
    entry = _entry(daemon, req)
    if entry.state in FINAL_STATES:
        raise UserError(f"campaign {entry.id} is already {entry.state}; nothing to cancel")
    return {"state": daemon.supervisor.cancel(entry)}


def resume(daemon: DaemonState, req: Request) -> dict[str, Any]:
    """``resume``: queue a paused or interrupted entry again, or a failed one whose
    campaign did not end (e.g. a Slurm campaign stopped by the cluster's faults)."""
    entry = _entry(daemon, req)
    if entry.state not in ("paused", "interrupted") and not (
        entry.state == "failed" and unfinished(entry)
    ):
        raise UserError(
            f"campaign {entry.id} is {entry.state}; only paused or interrupted campaigns, "
            "and failed ones whose campaign did not end, can be resumed"
        )
    why = f"resumed by `benchrun resume` after it was {entry.state}"
    with daemon.queue.transaction():
        daemon.queue.update(entry.id, state="queued", resume=True, message=why)
        daemon.queue.log(entry.id, "requeued", why)
    return {"state": "queued"}


def stop(daemon: DaemonState, req: Request) -> dict[str, Any]:
    """``stop``: ask the daemon to stop (the event loop does it)."""
    daemon.stop_requested = True
    return {"pid": os.getpid(), "running": daemon.supervisor.running}


#: op -> handler
HANDLERS: dict[str, Handler] = {
    "cancel": cancel,
    "current": current,
    "daemon-status": daemon_status,
    "get": get,
    "ping": ping,
    "queue": queue,
    "resume": resume,
    "stop": stop,
    "submit": submit,
}
#: the ops, in the order error messages list them
OPS = tuple(sorted(HANDLERS))


def handle(daemon: DaemonState, req: Request) -> bytes:
    """The reply to one decoded request.

    Raises
    ------
    ProtocolError
        Unknown op, or a malformed field.
    UserError
        A request the daemon refuses (unknown id, a campaign in the wrong state, ...).
    """
    op = req["op"]
    # "_" has always been accepted for "-" (op names were method names)
    handler = HANDLERS.get(op.replace("_", "-"))
    if handler is None:
        raise ProtocolError(f"unknown op {op!r}; valid: {', '.join(OPS)}")
    return encode({"ok": True, **handler(daemon, req)})


def dispatch(daemon: DaemonState, raw: bytes) -> bytes:
    """The reply line to one request line; never raises.

    Parameters
    ----------
    daemon : DaemonState
        The daemon the request is about.
    raw : bytes
        The request without its newline.

    Returns
    -------
    bytes
        One reply line: ``ok`` true with the handler's fields, or ``ok`` false with the
        error and the exit code the client should use (2 for a bad request; 75 when the
        queue's disk is full: :class:`runner.daemon.queue.QueueFull`).
    """
    try:
        return handle(daemon, decode_request(raw))
    except ProtocolError as exc:
        return error_reply(str(exc), 2)
    except UserError as exc:
        return error_reply(exc.message, exc.exit_code)
    except sqlite3.Error as exc:  # the queue file failed: e.g. its disk is full
        log(f"queue {daemon.queue.path}: {exc} (a request failed; the daemon carries on)")
        refused = queue_error(daemon.queue.path, exc)
        return error_reply(refused.message, refused.exit_code)
    except Exception as exc:  # noqa: BLE001 - a request must never kill the daemon
        log(f"internal error handling a request: {exc!r}")
        return error_reply(f"internal error in the daemon: {exc}")
