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

import psutil

from benchrun.runner import __version__
from benchrun.runner.daemon.log import log
from benchrun.runner.daemon.paths import DaemonPaths
from benchrun.runner.daemon.protocol import (
    EntryEventsReply,
    EntryReply,
    PingReply,
    ProtocolError,
    QueueEvent,
    QueueReply,
    Reply,
    Request,
    StateReply,
    StatusReply,
    StopReply,
    SubmitReply,
    SubmitRequest,
    decode_request,
    encode,
    entry_id,
    error_reply,
)
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


#: a handler: (daemon, request) -> its reply (``ok`` is added by :meth:`Reply.to_json`)
Handler = Callable[[DaemonState, Request], Reply]


def rss_kib() -> int:
    """This process's resident set size in KiB."""
    return int(psutil.Process().memory_info().rss // 1024)


def _entry(daemon: DaemonState, req: Request) -> Entry:
    """The queue entry a request names (:func:`entry_id`); :class:`UserError` if none."""
    entry_number = entry_id(req)
    entry = daemon.queue.get(entry_number)
    if entry is None:
        raise UserError(f"no campaign {entry_number} in the queue; `benchrun queue` lists them")
    return entry


def ping(daemon: DaemonState, req: Request) -> PingReply:
    """``ping``: the daemon's pid and benchrun version."""
    return PingReply(os.getpid(), __version__)


def daemon_status(daemon: DaemonState, req: Request) -> StatusReply:
    """``daemon-status``: pid, version, memory, files, running and queued campaigns."""
    sup = daemon.supervisor
    return StatusReply(
        pid=os.getpid(),
        version=__version__,
        started_at=daemon.started_at,
        rss_kib=rss_kib(),
        rss_at_start_kib=daemon.rss_at_start_kib,
        socket=str(daemon.paths.socket),
        queue_db=str(daemon.paths.queue_db),
        running=sup.running,
        queued=len(daemon.queue.entries(("queued",))),
        quiet_load=sup.quiet_load,
        quiet_max_wait=sup.quiet_max_wait,
        stopping=sup.stopping,
    )


def submit(daemon: DaemonState, req: Request) -> SubmitReply:
    """``submit``: queue a campaign (absolute paths, checked by ``benchrun submit``)."""
    if daemon.stop_requested:
        raise UserError("the daemon is stopping; submit again after it restarts", 1)
    sub = SubmitRequest.from_request(req)
    entry_number = daemon.queue.add(
        experiment=sub.experiment,
        name=sub.name,
        output=sub.output,
        db_path=sub.db_path,
        cwd=sub.cwd,
        config_text=sub.config_text,
        priority=sub.priority,
        not_before=sub.not_before,
        log_dir=daemon.paths.logs_dir,
        overrides=sub.overrides,
    )
    log(f"campaign {entry_number}: queued {sub.experiment}")
    return SubmitReply(entry_number, str(daemon.paths.campaign_log(entry_number)))


def queue(daemon: DaemonState, req: Request) -> QueueReply:
    """``queue``: every entry, and which one runs."""
    return QueueReply(tuple(daemon.queue.entries()), daemon.supervisor.running)


def get(daemon: DaemonState, req: Request) -> EntryEventsReply:
    """``get``: one entry and its queue log."""
    entry = _entry(daemon, req)
    events = tuple(QueueEvent(at, k, m) for at, k, m in daemon.queue.events(entry.id))
    return EntryEventsReply(entry, events)


def current(daemon: DaemonState, req: Request) -> EntryReply:
    """``current``: the running entry, or null."""
    running = daemon.supervisor.running
    return EntryReply(None if running is None else daemon.queue.get(running))


def cancel(daemon: DaemonState, req: Request) -> StateReply:
    """``cancel``: drop a waiting entry, or stop the running one (it commits)."""
    entry = _entry(daemon, req)
    if entry.state in FINAL_STATES:
        raise UserError(f"campaign {entry.id} is already {entry.state}; nothing to cancel")
    return StateReply(daemon.supervisor.cancel(entry))


def resume(daemon: DaemonState, req: Request) -> StateReply:
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
    return StateReply("queued")


def stop(daemon: DaemonState, req: Request) -> StopReply:
    """``stop``: ask the daemon to stop (the event loop does it)."""
    daemon.stop_requested = True
    return StopReply(os.getpid(), daemon.supervisor.running)


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
    # "_" has always been accepted for "-" (op names were method names)
    handler = HANDLERS.get(req.op.replace("_", "-"))
    if handler is None:
        raise ProtocolError(f"unknown op {req.op!r}; valid: {', '.join(OPS)}")
    return encode(handler(daemon, req).to_json())


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
