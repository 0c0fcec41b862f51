"""The daemon's replies as the CLI reads them, typed (issue 30).

``benchrun queue``, ``status`` and ``daemon`` ask the daemon over its socket
(runner/daemon/protocol.py ``request``) and get JSON objects back: queue entries
(runner/daemon/queue.py ``Entry.to_json``) and the ``daemon-status``, ``stop`` and ``ping``
replies (runner/daemon/handlers.py). Each is read here once, into a record, with the
defaults for a key a daemon of an older version did not send; ``--json`` prints the reply
as it came (``raw``), so its form is the daemon's.

Times are Unix seconds; memory KiB.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from benchrun.runner.errors import UserError


def _int(value: object, what: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise UserError(f"the daemon sent a bad {what}: {value!r} (expected an integer)", 1)


def _opt_int(value: object, what: str) -> int | None:
    return None if value is None else _int(value, what)


def _opt_float(value: object, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise UserError(f"the daemon sent a bad {what}: {value!r} (expected a number)", 1)


def _mapping(value: object, what: str) -> Mapping[str, object]:
    if isinstance(value, Mapping):
        return value
    raise UserError(f"the daemon sent a bad {what}: {value!r} (expected an object)", 1)


@dataclass(frozen=True)
class QueueItem:
    """One queue entry as the CLI shows it: its id, name, state, priority, files, times
    (``submitted_at``, ``not_before``, ``started_at``: Unix seconds or None), launches,
    message and the campaign ids in its store (``campaign_id`` None before the first
    launch; ``base_campaign_id`` the newest id before it, 0 for a new store).

    ``submitted_at`` and ``not_before`` stay as sent when they are not numbers (an entry
    stored before submissions were range-checked): ``benchrun queue`` prints them as bad
    times rather than refusing the whole queue."""

    id: int
    name: str
    state: str
    priority: int
    experiment: str
    db_path: str
    submitted_at: object
    not_before: object
    started_at: float | None
    launches: int
    message: str | None
    campaign_id: int | None
    base_campaign_id: int
    raw: Mapping[str, object]

    @classmethod
    def from_json(cls, data: object) -> QueueItem:
        """The entry of the daemon's JSON (``Entry.to_json``); a UserError naming the
        field when a field is missing or of the wrong type."""
        d = _mapping(data, "queue entry")
        try:
            message = d["message"]
            return cls(
                id=_int(d["id"], "entry id"),
                name=str(d["name"]),
                state=str(d["state"]),
                priority=_int(d["priority"], "priority"),
                experiment=str(d["experiment"]),
                db_path=str(d["db_path"]),
                submitted_at=d["submitted_at"],
                not_before=d["not_before"],
                started_at=_opt_float(d["started_at"], "start time"),
                launches=_int(d["launches"], "launch count"),
                message=None if message is None else str(message),
                campaign_id=_opt_int(d["campaign_id"], "campaign id"),
                base_campaign_id=_opt_int(d["base_campaign_id"], "campaign id") or 0,
                raw=d,
            )
        except KeyError as exc:
            raise UserError(f"the daemon sent a queue entry without {exc}", 1) from None

    @property
    def has_live(self) -> bool:
        """Whether the entry has (or had) a campaign to read the live state of."""
        return self.state != "queued" or bool(self.launches)


@dataclass(frozen=True)
class DaemonStatus:
    """The ``daemon-status`` reply: the daemon's pid, version, start time, memory (RSS
    now and at start, KiB), socket and queue files, the running campaign's id (None),
    how many are queued, the quiet-machine wait (``quiet_load``, None when not asked for;
    ``quiet_max_wait`` seconds) and whether it is stopping."""

    pid: int
    version: str
    started_at: float
    rss_kib: float
    rss_at_start_kib: float
    socket: str
    queue_db: str
    running: int | None
    queued: int
    quiet_load: float | None
    quiet_max_wait: float | None
    stopping: bool

    @classmethod
    def from_json(cls, data: object) -> DaemonStatus:
        """The reply's record; ``quiet_load``, ``quiet_max_wait`` and ``stopping``, which
        older daemons do not send, default to None, None and False."""
        d = _mapping(data, "daemon-status reply")
        try:
            return cls(
                pid=_int(d["pid"], "pid"),
                version=str(d["version"]),
                started_at=float(_opt_float(d["started_at"], "start time") or 0.0),
                rss_kib=float(_opt_float(d["rss_kib"], "RSS") or 0.0),
                rss_at_start_kib=float(_opt_float(d["rss_at_start_kib"], "RSS") or 0.0),
                socket=str(d["socket"]),
                queue_db=str(d["queue_db"]),
                running=_opt_int(d["running"], "campaign id"),
                queued=_int(d["queued"], "queue length"),
                quiet_load=_opt_float(d.get("quiet_load"), "quiet load"),
                quiet_max_wait=_opt_float(d.get("quiet_max_wait"), "quiet wait"),
                stopping=bool(d.get("stopping")),
            )
        except KeyError as exc:
            raise UserError(f"the daemon sent a status without {exc}", 1) from None
