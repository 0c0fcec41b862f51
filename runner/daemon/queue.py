"""The daemon's queue: one SQLite file in the user's data directory (not a results DB).

Only the daemon process writes it (clients talk to the daemon), so there is one writer.
WAL, ``synchronous=FULL``: a submitted campaign survives a crash or a power loss.

Entry states: ``queued`` (waiting), ``running`` (a ``benchrun run`` child is measuring),
``done``, ``failed``, ``interrupted`` (stopped by a signal; ``auto_resume`` says whether
the next daemon start continues it), ``paused`` (the disk filled up; continues after
``benchrun resume ID``), ``cancelled``. Times are Unix seconds.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchrun.runner.errors import UserError

#: exit code of a client whose request failed because the queue's disk is full (EX_TEMPFAIL,
#: as for a campaign's store: try again once there is room)
EXIT_QUEUE_FULL = 75

QUEUE_APPLICATION_ID = 0x62717565  # "bque": marks the file as a benchrun queue
QUEUE_SCHEMA_VERSION = 2  # 2: entry.overrides (benchrun submit --set)

STATES = ("queued", "running", "done", "failed", "interrupted", "paused", "cancelled")
FINAL_STATES = ("done", "failed", "cancelled")

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE entry (
    id INTEGER PRIMARY KEY,
    state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed',
                                         'interrupted', 'paused', 'cancelled')),
    experiment TEXT NOT NULL,
    name TEXT NOT NULL,
    output TEXT NOT NULL,
    db_path TEXT NOT NULL,
    cwd TEXT NOT NULL,
    config_text TEXT NOT NULL,
    priority INTEGER NOT NULL DEFAULT 0,
    not_before REAL,
    submitted_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    updated_at REAL NOT NULL,
    pid INTEGER,
    daemon_pid INTEGER,
    exit_code INTEGER,
    message TEXT,
    base_campaign_id INTEGER,
    campaign_id INTEGER,
    resume INTEGER NOT NULL DEFAULT 0,
    auto_resume INTEGER NOT NULL DEFAULT 0,
    launches INTEGER NOT NULL DEFAULT 0,
    log_path TEXT NOT NULL,
    overrides TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE log (
    id INTEGER PRIMARY KEY,
    entry_id INTEGER,
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX entry_by_state ON entry (state, priority, id);
"""


def disk_full(exc: BaseException) -> bool:
    """SQLITE_FULL (``database or disk is full``) or an ENOSPC/EDQUOT error."""
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
        if code is not None and code & 0xFF == 13:  # SQLITE_FULL
            return True
        text = str(exc).lower()
        return "disk is full" in text or "no space left" in text
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


class QueueFull(UserError):
    """The queue's file system is full: the request's transaction was rolled back and
    nothing in the queue changed. Exit code :data:`EXIT_QUEUE_FULL`."""

    def __init__(self, path: Path, cause: BaseException) -> None:
        super().__init__(
            f"{path}: the daemon's queue cannot be written: the disk is full ({cause}); "
            f"nothing was changed; free space on the file system of {path.parent} and try "
            "again (the daemon keeps running)",
            exit_code=EXIT_QUEUE_FULL,
        )
        self.path = path


def _full_at_start(path: Path, exc: BaseException) -> UserError:
    return UserError(
        f"{path}: the daemon cannot open its queue: the disk is full ({exc}); free space on "
        f"the file system of {path.parent} and start the daemon again",
        exit_code=EXIT_QUEUE_FULL,
    )


def queue_error(path: Path, exc: sqlite3.Error) -> UserError:
    """The one line a client gets when the queue file fails under a request: a full disk
    (:class:`QueueFull`), or SQLite's own message with the file named."""
    if disk_full(exc):
        return QueueFull(path, exc)
    return UserError(
        f"{path}: the daemon's queue failed ({exc}); nothing was changed; see the "
        "daemon's log, and move the file away if it is damaged",
        exit_code=1,
    )


@dataclass(frozen=True)
class Entry:
    """One queued campaign (see the module docstring for ``state``)."""

    id: int
    state: str
    experiment: str
    name: str
    output: str
    db_path: str
    cwd: str
    config_text: str
    priority: int
    not_before: float | None
    submitted_at: float
    started_at: float | None
    finished_at: float | None
    updated_at: float
    pid: int | None
    daemon_pid: int | None
    exit_code: int | None
    message: str | None
    base_campaign_id: int | None
    campaign_id: int | None
    resume: bool
    auto_resume: bool
    launches: int
    log_path: str
    overrides: tuple[str, ...] = ()  # `--set KEY=VALUE` items passed to `benchrun run`

    def to_json(self, with_config: bool = False) -> dict[str, Any]:
        """A JSON-able dict (the config text only when asked: it can be long)."""
        d = asdict(self)
        if not with_config:
            d.pop("config_text")
        return d


_COLUMNS = tuple(Entry.__dataclass_fields__)


class QueueDB:
    """The queue file. Open with :meth:`open` (creates it; refuses corrupt or foreign files)."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path

    @classmethod
    def open(cls, path: Path) -> QueueDB:
        """Open or create the queue (migrating an older schema).

        Parameters
        ----------
        path : Path
            The queue file.

        Returns
        -------
        QueueDB
            The open queue; close it with :meth:`close`.

        Raises
        ------
        UserError
            The file is corrupt, not SQLite, not a benchrun queue, or not a regular file
            of this user (a symbolic link is never followed), or its disk is full.
        """
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            pass
        else:
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                raise UserError(
                    f"{path}: the queue file is not a regular file of yours (owner uid "
                    f"{st.st_uid}, mode {st.st_mode:o}); refusing to open it: move it away and "
                    "start the daemon again",
                    exit_code=1,
                )
        try:
            conn = sqlite3.connect(path, timeout=10.0, isolation_level=None)
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            if disk_full(exc):
                raise _full_at_start(path, exc) from None
            raise UserError(
                f"{path}: the queue file is not a usable SQLite database ({exc}); move it "
                "away (the campaigns' results are not in it) and start the daemon again",
                exit_code=1,
            ) from None
        if tables and app_id != QUEUE_APPLICATION_ID:
            conn.close()
            raise UserError(
                f"{path}: this SQLite file is not a benchrun queue; refusing to touch it; "
                "move it away and start the daemon again",
                exit_code=1,
            )
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            if not tables:
                conn.execute("BEGIN IMMEDIATE")
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA application_id = {QUEUE_APPLICATION_ID}")
                conn.execute(
                    "INSERT INTO meta VALUES ('schema_version', ?)", (str(QUEUE_SCHEMA_VERSION),)
                )
                conn.execute("COMMIT")
            elif conn.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                raise sqlite3.DatabaseError("quick_check failed")
            else:
                _migrate(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            if disk_full(exc):
                raise _full_at_start(path, exc) from None
            raise UserError(
                f"{path}: the queue file is damaged ({exc}); move it away and start the "
                "daemon again",
                exit_code=1,
            ) from None
        return cls(conn, path)

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``), rolled back on any
        error. SQLite may already have rolled back by itself (it does on SQLITE_FULL):
        then there is nothing to roll back, and the original error is what is raised,
        not ``cannot rollback - no transaction is active``."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
            self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise

    # -- entries ---------------------------------------------------------------------------

    def add(
        self,
        *,
        experiment: str,
        name: str,
        output: str,
        db_path: str,
        cwd: str,
        config_text: str,
        priority: int,
        not_before: float | None,
        log_dir: Path,
        overrides: Sequence[str] = (),
    ) -> int:
        """Queue a campaign; returns its id (the id users pass to status, logs, cancel)."""
        now = time.time()
        with self.transaction():
            cur = self.conn.execute(
                "INSERT INTO entry (state, experiment, name, output, db_path, cwd, config_text,"
                " priority, not_before, submitted_at, updated_at, log_path, overrides)"
                " VALUES ('queued', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', ?)",
                (
                    experiment,
                    name,
                    output,
                    db_path,
                    cwd,
                    config_text,
                    priority,
                    not_before,
                    now,
                    now,
                    json.dumps(list(overrides)),
                ),
            )
            entry_id = int(cur.lastrowid or 0)
            self.conn.execute(
                "UPDATE entry SET log_path = ? WHERE id = ?",
                (str(log_dir / f"{entry_id}.log"), entry_id),
            )
            self._log(entry_id, "submit", f"queued {experiment} (priority {priority})", now)
        return entry_id

    def get(self, entry_id: int) -> Entry | None:
        """The entry with id ``entry_id``, or None."""
        row = self.conn.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM entry WHERE id = ?", (entry_id,)
        ).fetchone()
        return _entry(row) if row else None

    def entries(self, states: tuple[str, ...] = STATES) -> list[Entry]:
        """Entries in the given states, in id order."""
        marks = ", ".join("?" * len(states))
        rows = self.conn.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM entry WHERE state IN ({marks}) ORDER BY id",
            states,
        ).fetchall()
        return [_entry(r) for r in rows]

    def next_runnable(self, now: float) -> Entry | None:
        """The queued entry to run next.

        Parameters
        ----------
        now : float
            Unix seconds; an entry whose ``not_before`` is later waits.

        Returns
        -------
        Entry or None
            Highest priority first; among equals, entries already launched (being
            resumed), then submission order.
        """
        row = self.conn.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM entry WHERE state = 'queued'"
            " AND (not_before IS NULL OR not_before <= ?)"
            " ORDER BY priority DESC, launches = 0, id LIMIT 1",
            (now,),
        ).fetchone()
        return _entry(row) if row else None

    def next_wakeup(self) -> float | None:
        """The earliest ``not_before`` of a queued entry (Unix s), if any."""
        row = self.conn.execute(
            "SELECT min(not_before) FROM entry WHERE state = 'queued' AND not_before IS NOT NULL"
        ).fetchone()
        return row[0] if row and row[0] is not None else None

    def update(self, entry_id: int, **fields: Any) -> None:
        """Set columns of one entry (``updated_at`` too) in one transaction."""
        fields["updated_at"] = time.time()
        cols = ", ".join(f"{k} = ?" for k in fields)
        self.conn.execute(
            f"UPDATE entry SET {cols} WHERE id = ?", (*_sql_values(fields.values()), entry_id)
        )

    def log(self, entry_id: int | None, kind: str, message: str) -> None:
        """Append to the queue's own event log (what the daemon did and why)."""
        self._log(entry_id, kind, message, time.time())

    def _log(self, entry_id: int | None, kind: str, message: str, at: float) -> None:
        self.conn.execute(
            "INSERT INTO log (entry_id, at, kind, message) VALUES (?, ?, ?, ?)",
            (entry_id, at, kind, message),
        )

    def events(self, entry_id: int) -> list[tuple[float, str, str]]:
        """(time, kind, message) of one entry's queue events, oldest first."""
        return self.conn.execute(
            "SELECT at, kind, message FROM log WHERE entry_id = ? ORDER BY id", (entry_id,)
        ).fetchall()


def _sql_values(values: Any) -> list[Any]:
    return [int(v) if isinstance(v, bool) else v for v in values]


def _entry(row: tuple[Any, ...]) -> Entry:
    d = dict(zip(_COLUMNS, row, strict=True))
    d["resume"] = bool(d["resume"])
    d["auto_resume"] = bool(d["auto_resume"])
    d["overrides"] = tuple(json.loads(d["overrides"] or "[]"))
    return Entry(**d)


def _migrate(conn: sqlite3.Connection) -> None:
    """Bring a queue file of an older schema to :data:`QUEUE_SCHEMA_VERSION` (1 -> 2: the
    ``overrides`` column, empty for entries queued before it existed)."""
    columns = {r[1] for r in conn.execute("PRAGMA table_info(entry)")}
    if "overrides" in columns:
        return
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("ALTER TABLE entry ADD COLUMN overrides TEXT NOT NULL DEFAULT '[]'")
    conn.execute(
        "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(QUEUE_SCHEMA_VERSION),)
    )
    conn.execute("COMMIT")
