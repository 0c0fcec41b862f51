"""The durable store: one SQLite file per campaign directory (docs/design.md "The store").

WAL journal, ``synchronous=NORMAL``, one transaction per round or per *group* of rounds
(:meth:`Store.add_round` with ``group=True``, committed by :meth:`Store.commit_group`): a
crash of the process (SIGKILL, an exception, OOM) loses at most the rounds not committed
yet (the open group and the round in flight), because a transaction's WAL frames are in
the operating system's cache when COMMIT returns; the WAL is also flushed to the disk
(fsync) at most :data:`SYNC_EVERY_S` after a commit, so a power loss or kernel crash loses
at most the rounds of that last second and never damages the file (docs/loop.md
"Durability"). And ``UNIQUE(workload_id, round_index)`` makes a duplicate round
impossible. Raw data is never rewritten by analysis; flags decide what is used.

Several campaigns may live in one file (each ``benchrun run`` without ``--resume`` starts a
new one, so nothing is ever overwritten); commands default to the newest.

Units: times in the ``round`` table are Unix seconds (``started_at``), nanoseconds
(``wall_ns``) and CPU seconds (``user_s``, ``sys_s``); ``max_rss_kib`` is KiB. Readings are
in the workload's unit.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from benchrun.runner.errors import UserError
from benchrun.runner.safefs import cannot, check_entry, create_file, open_dir
from benchrun.runner.store.access import check_companions, is_place_error, unreadable_store

SCHEMA_VERSION = 5
#: the WAL is flushed to the disk (fsync) by the first commit this many seconds after the
#: last flush (synchronous=NORMAL flushes it only at checkpoints)
SYNC_EVERY_S = 1.0
APPLICATION_ID = 0x62656E63  # "benc": marks the file as a benchrun store

_SCHEMA_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE campaign (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('running', 'interrupted', 'done', 'failed')),
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    config_path TEXT,
    config_text TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    settings_json TEXT NOT NULL,
    metadata_json TEXT,
    benchrun_version TEXT NOT NULL,
    command_line TEXT,
    stop_reason TEXT
);
CREATE TABLE workload (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaign(id),
    name TEXT NOT NULL,
    position INTEGER NOT NULL,
    metric TEXT NOT NULL,
    unit TEXT NOT NULL,
    direction TEXT NOT NULL,
    spec_json TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active',
    status_reason TEXT,
    UNIQUE (campaign_id, name)
);
CREATE TABLE round (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaign(id),
    workload_id INTEGER NOT NULL REFERENCES workload(id),
    seq INTEGER NOT NULL,
    pass INTEGER NOT NULL,
    round_index INTEGER NOT NULL,
    status TEXT NOT NULL,
    reason TEXT,
    exit_code INTEGER,
    started_at REAL NOT NULL,
    wall_ns INTEGER NOT NULL,
    user_s REAL NOT NULL,
    sys_s REAL NOT NULL,
    max_rss_kib INTEGER NOT NULL,
    cpus TEXT,
    argv_json TEXT NOT NULL,
    work INTEGER,
    warmup INTEGER NOT NULL DEFAULT 0,
    flags TEXT NOT NULL DEFAULT '',
    stdout_tail TEXT,
    stderr_tail TEXT,
    facts_json TEXT,
    UNIQUE (workload_id, round_index),
    UNIQUE (campaign_id, seq)
);
CREATE TABLE reading (
    round_id INTEGER NOT NULL REFERENCES round(id),
    idx INTEGER NOT NULL,
    value REAL NOT NULL,
    flags TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (round_id, idx)
);
CREATE TABLE event (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaign(id),
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    message TEXT NOT NULL,
    data_json TEXT
);
CREATE INDEX round_by_workload ON round (workload_id, round_index);
CREATE INDEX event_by_campaign ON event (campaign_id, at);
"""

#: schema 2: what the setup/prepare/cleanup hooks of a workload did (never timed, never
#: readings); ``round_index`` is the round a prepare ran before (NULL for setup/cleanup)
_HOOK_TABLE = """
CREATE TABLE hook (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaign(id),
    workload_id INTEGER NOT NULL REFERENCES workload(id),
    kind TEXT NOT NULL CHECK (kind IN ('setup', 'prepare', 'cleanup')),
    round_index INTEGER,
    status TEXT NOT NULL,
    reason TEXT,
    exit_code INTEGER,
    started_at REAL NOT NULL,
    wall_ns INTEGER NOT NULL,
    argv_json TEXT NOT NULL,
    stdout_tail TEXT,
    stderr_tail TEXT
);
CREATE INDEX hook_by_campaign ON hook (campaign_id, id);
"""

#: schema 3: each round's CPU wait (ns its processes were runnable but not running) and the
#: signal it was read from (docs/contention.md); NULL in rounds stored before
_WAIT_COLUMNS = """
ALTER TABLE round ADD COLUMN wait_ns INTEGER;
ALTER TABLE round ADD COLUMN wait_source TEXT;
"""

#: schema 4: the spans of wall-clock time each run (``benchrun run``, a resume) of a campaign
#: was active, so that ``max_time`` counts a campaign's time across resumes, hooks and
#: warm-up included (issue 29; runner/campaign/budget.py). ``seconds`` grows while the run
#: goes on (a killed run keeps what it last wrote); ``started_at`` is Unix seconds
_SPAN_TABLE = """
CREATE TABLE run_span (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaign(id),
    pid INTEGER NOT NULL,
    started_at REAL NOT NULL,
    seconds REAL NOT NULL DEFAULT 0
);
CREATE INDEX run_span_by_campaign ON run_span (campaign_id, id);
"""

#: schema 5: every metric of a round whose workload names a ``metric:`` list or a counter
#: metric (issue 33; docs/metrics.md): the first (deciding) one, whose value is also the
#: round's reading, and the others, each with the source that measured it (``clock``,
#: ``wait4``, ``perf_event``, ``cachegrind``) and its scope (``process tree``, ...); rounds
#: of other workloads, and rounds stored before, have none
_METRIC_TABLE = """
CREATE TABLE round_metric (
    round_id INTEGER NOT NULL REFERENCES round(id),
    name TEXT NOT NULL,
    value REAL NOT NULL,
    source TEXT NOT NULL,
    scope TEXT NOT NULL,
    PRIMARY KEY (round_id, name)
);
"""

#: migrations[v] upgrades a store at version v to v + 1
_MIGRATIONS: dict[int, str] = {
    1: _HOOK_TABLE,
    2: _WAIT_COLUMNS,
    3: _SPAN_TABLE,
    4: _METRIC_TABLE,
}


@dataclass(frozen=True)
class CampaignRow:
    """One campaign as stored."""

    id: int
    name: str
    status: str
    created_at: float
    updated_at: float
    config_path: str | None
    config_text: str
    fingerprint: str
    settings: dict[str, Any]
    metadata: dict[str, Any] | None
    benchrun_version: str
    command_line: str | None
    stop_reason: str | None


@dataclass(frozen=True)
class WorkloadRow:
    """One workload of a campaign as stored."""

    id: int
    name: str
    position: int
    metric: str
    unit: str
    direction: str
    spec: dict[str, Any]
    status: str
    status_reason: str | None


@dataclass(frozen=True)
class RoundRow:
    """One stored round, with its readings (in the workload's unit)."""

    id: int
    workload_id: int
    seq: int
    pass_: int
    round_index: int
    status: str
    reason: str | None
    exit_code: int | None
    started_at: float
    wall_ns: int
    user_s: float
    sys_s: float
    max_rss_kib: int
    cpus: str | None
    argv: list[str]
    work: int | None
    warmup: bool
    flags: str
    stdout_tail: str | None
    stderr_tail: str | None
    facts: dict[str, Any] | None
    readings: tuple[float, ...]
    #: ns the round waited for a CPU and the signal (schema 3; None before, or unmeasured)
    wait_ns: int | None = None
    wait_source: str | None = None


@dataclass(frozen=True)
class RoundMetric:
    """One metric of a stored round (schema 5): ``value`` in the metric's unit (seconds,
    KiB, a count), the ``source`` that measured it and its ``scope``."""

    name: str
    value: float
    source: str
    scope: str


@dataclass(frozen=True)
class NewRound:
    """A round to store (:meth:`Store.add_round`): what the launcher knows after it ran.

    Units: ``started_at`` Unix seconds, ``wall_ns`` nanoseconds, ``user_s``/``sys_s`` CPU
    seconds, ``max_rss_kib`` KiB, ``readings`` in the workload's unit. ``cpus`` is the
    CPU list the child was pinned to ("0,1"), ``pass_`` the pass index.
    """

    campaign_id: int
    workload_id: int
    seq: int
    pass_: int
    round_index: int
    status: str
    reason: str | None
    exit_code: int | None
    started_at: float
    wall_ns: int
    user_s: float
    sys_s: float
    max_rss_kib: int
    cpus: str | None
    argv: Sequence[str]
    work: int | None
    warmup: bool
    readings: Sequence[float]
    stdout_tail: str | None = None
    stderr_tail: str | None = None
    facts: Mapping[str, Any] | None = None
    flags: str = ""
    #: the hooks stored in the round's transaction (its prepare)
    hooks: Sequence[NewHook] = ()
    #: ns the round's processes were runnable but not running, and the signal it was read
    #: from (:class:`runner.execute.executor.RoundOutcome`); None: not measured
    wait_ns: int | None = None
    wait_source: str | None = None
    #: every metric of the round's workload (table ``round_metric``, schema 5)
    metrics: Sequence[RoundMetric] = ()

    def columns(self) -> dict[str, Any]:
        """Column -> value of the ``round`` table row (readings go to ``reading``, hooks
        to ``hook``)."""
        out: dict[str, Any] = {}
        for name in _ROUND_FIELDS:
            value = getattr(self, name)
            if name == "argv":
                value = _argv_json(tuple(value))
            elif name == "facts":
                value = _dumps(value) if value is not None else None
            elif name == "warmup":
                value = int(value)
            out[_COLUMN.get(name, name)] = value
        return out


@functools.lru_cache(maxsize=256)
def _argv_json(argv: tuple[str, ...]) -> str:
    """``argv`` as stored (a JSON list); the same argv recurs in every round of a workload."""
    return json.dumps(list(argv))


@dataclass(frozen=True)
class NewHook:
    """What one run of a workload's ``setup``, ``prepare`` or ``cleanup`` did.

    Units as in :class:`NewRound`: ``started_at`` Unix seconds, ``wall_ns`` nanoseconds
    (how long the hook took; never part of a measurement). ``round_index``: the round a
    prepare ran before (None for setup and cleanup). ``status``: ok, failed, timeout or
    interrupted, ``reason`` one line for the others.
    """

    campaign_id: int
    workload_id: int
    kind: str
    round_index: int | None
    status: str
    reason: str | None
    exit_code: int | None
    started_at: float
    wall_ns: int
    argv: Sequence[str]
    stdout_tail: str | None = None
    stderr_tail: str | None = None

    def row(self) -> tuple[Any, ...]:
        """The values of :data:`HOOK_COLUMNS`, in order."""
        return (
            self.campaign_id,
            self.workload_id,
            self.kind,
            self.round_index,
            self.status,
            self.reason,
            self.exit_code,
            self.started_at,
            self.wall_ns,
            json.dumps(list(self.argv)),
            self.stdout_tail,
            self.stderr_tail,
        )


#: the ``hook`` table's columns that :class:`NewHook` fills, in :meth:`NewHook.row` order
HOOK_COLUMNS = (
    "campaign_id",
    "workload_id",
    "kind",
    "round_index",
    "status",
    "reason",
    "exit_code",
    "started_at",
    "wall_ns",
    "argv_json",
    "stdout_tail",
    "stderr_tail",
)


@dataclass(frozen=True)
class HookRow:
    """One stored hook run (:class:`NewHook`) with its id."""

    id: int
    campaign_id: int
    workload_id: int
    kind: str
    round_index: int | None
    status: str
    reason: str | None
    exit_code: int | None
    started_at: float
    wall_ns: int
    argv: list[str]
    stdout_tail: str | None
    stderr_tail: str | None


#: NewRound/RoundRow field -> round table column, where the names differ
_COLUMN = {"pass_": "pass", "argv": "argv_json", "facts": "facts_json"}
#: the fields of NewRound that are columns of ``round``, in order
_ROUND_FIELDS = tuple(
    f.name for f in fields(NewRound) if f.name not in ("readings", "hooks", "metrics")
)
#: INSERT statements of ``round``, by column names (add_round)
_INSERT_ROUND: dict[tuple[str, ...], str] = {}
_INSERT_READING = "INSERT INTO reading (round_id, idx, value) VALUES (?, ?, ?)"
_INSERT_METRIC = (
    "INSERT INTO round_metric (round_id, name, value, source, scope) VALUES (?, ?, ?, ?, ?)"
)
#: the round table's columns that RoundRow reads, derived from the record
ROUND_COLUMNS = tuple(_COLUMN.get(f.name, f.name) for f in fields(RoundRow) if f.name != "readings")


def _round_row(r: sqlite3.Row, readings: Sequence[float]) -> RoundRow:
    """A RoundRow from a ``round`` row read with :data:`ROUND_COLUMNS` (by column name)."""
    values: dict[str, Any] = {}
    for f in fields(RoundRow):
        if f.name == "readings":
            continue
        v = r[_COLUMN.get(f.name, f.name)]
        if f.name == "argv":
            v = json.loads(v)
        elif f.name == "facts":
            v = json.loads(v) if v else None
        elif f.name == "warmup":
            v = bool(v)
        values[f.name] = v
    return RoundRow(**values, readings=tuple(readings))


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _guarded(method: Callable[Concatenate[Store, _P], _R]) -> Callable[Concatenate[Store, _P], _R]:
    """``method`` run inside :meth:`Store.reading`: a corrupt page becomes StoreDamaged."""

    @functools.wraps(method)
    def guarded(self: Store, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self.reading():
            return method(self, *args, **kwargs)

    return guarded


@dataclass(frozen=True)
class EventRow:
    id: int
    at: float
    kind: str
    message: str
    data: dict[str, Any] | None


#: the files SQLite opens by name beside a database (rollback journal, WAL, shared memory)
SQLITE_SIDE_FILES = ("-journal", "-wal", "-shm")


def _claim(path: Path) -> None:
    """Make sure the store ``path`` about to be written is ours, before SQLite opens it by
    name (following symlinks): its directory is reached and checked as runner/safefs.py
    :func:`~benchrun.runner.safefs.open_dir` does (made 0700 when missing); the database
    and its side files, where present, must be regular files of ours with one link that
    nobody else may write (a symlink, dangling or not, or another user's database is
    refused with one line); a missing database is created 0600 with ``O_EXCL`` (SQLite
    gives its side files the database's mode)."""
    try:
        dir_fd = open_dir(path.parent, create=True)
    except FileNotFoundError as exc:  # pragma: no cover - create=True makes what is missing
        raise cannot(path.parent, exc) from None
    try:
        for side in SQLITE_SIDE_FILES:
            check_entry(dir_fd, path.name + side, f"{path}{side}")
        if not check_entry(dir_fd, path.name, path):
            try:
                os.close(create_file(dir_fd, path.name, path))
            except FileExistsError:  # made meanwhile: check what is there
                check_entry(dir_fd, path.name, path)
            except OSError as exc:
                raise cannot(path, exc) from None
    finally:
        os.close(dir_fd)


class Store:
    """A benchrun SQLite store. Use :meth:`open` (existing) or :meth:`create_or_open`."""

    def __init__(self, conn: sqlite3.Connection, path: Path, writable: bool = True) -> None:
        self.conn = conn
        self.path = path
        #: opened to write (:meth:`create_or_open`) rather than to read (:meth:`open`)
        self.writable = writable
        #: monotonic time of the last fsync of the WAL (see :meth:`sync`)
        self._synced_at = time.monotonic()
        self._unsynced = False
        #: when add_round last set each campaign's updated_at (Unix s)
        self._updated_at: dict[int, float] = {}
        #: rounds in the open group transaction (add_round(group=True)), and the monotonic
        #: time its first round was added
        self._group_rounds = 0
        self._group_since = 0.0
        #: nesting depth of :meth:`snapshot` (0: no read transaction of ours is open)
        self._snapshot_depth = 0

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def create_or_open(cls, path: str | Path) -> Store:
        """Open ``path``, creating the file, its directory and the schema if needed.

        The file must be one no other user could have planted or changed (:func:`_claim`),
        so a run as root never writes through a symlink or into another user's file."""
        path = Path(path)
        _claim(path)
        return cls._connect(path, create=True)

    @classmethod
    def open(cls, path: str | Path) -> Store:
        """Open an existing store; a missing, corrupt or foreign file is a UserError."""
        path = Path(path)
        if not path.is_file():
            raise UserError(f"{path}: no benchrun database here")
        return cls._connect(path, create=False)

    @classmethod
    def _connect(cls, path: Path, create: bool) -> Store:
        check_companions(path)  # a -wal another user planted would be replayed into it
        try:
            conn = sqlite3.connect(path, timeout=30.0, isolation_level=None)
        except sqlite3.DatabaseError as exc:
            raise UserError(f"{path}: cannot open ({exc})") from exc
        try:
            conn.execute("PRAGMA busy_timeout = 30000")
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            conn.close()
            if _is_corrupt(exc) and _has_sqlite_header(path):
                raise StoreDamaged(path, str(exc), writing=create) from exc
            if is_place_error(exc):  # a full disk, a read-only directory: not the file
                raise unreadable_store(path, exc) from exc
            raise UserError(
                f"{path}: not a usable SQLite database ({exc}); move it away or choose "
                "another output directory"
            ) from exc
        if tables and app_id != APPLICATION_ID:
            conn.close()
            raise UserError(
                f"{path}: this SQLite file was not written by benchrun; refusing to touch it"
            )
        if not tables and not create:
            conn.close()
            raise UserError(f"{path}: empty database, no campaign in it")
        if tables:
            try:
                problem = quick_check(conn)
            except sqlite3.DatabaseError as exc:
                conn.close()
                raise unreadable_store(path, exc) from exc
            if problem is not None:
                conn.close()
                raise StoreDamaged(path, problem, writing=create)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            # NORMAL: a commit is in the OS cache when COMMIT returns (a process crash loses
            # nothing committed); the WAL reaches the disk at checkpoints and in sync()
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as exc:
            conn.close()
            if is_place_error(exc):
                raise unreadable_store(path, exc) from exc
            raise UserError(f"{path}: cannot use the database ({exc})") from exc
        store = cls(conn, path, writable=create)
        with store.reading():
            if not tables:
                store._create_schema()
            else:
                store._migrate()
        return store

    def _create_schema(self) -> None:
        with self.transaction():
            schema = _SCHEMA_V1 + _HOOK_TABLE + _WAIT_COLUMNS + _SPAN_TABLE + _METRIC_TABLE
            for statement in schema.split(";"):
                if statement.strip():
                    self.conn.execute(statement)
            self.conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            self.conn.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )

    @_guarded
    def schema_version(self) -> int:
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        version = self.schema_version()
        if version > SCHEMA_VERSION:
            raise UserError(
                f"{self.path}: written by a newer benchrun (schema {version}, this one reads "
                f"up to {SCHEMA_VERSION}); upgrade benchrun"
            )
        while version < SCHEMA_VERSION:
            with self.transaction():
                for statement in _MIGRATIONS[version].split(";"):
                    if statement.strip():
                        self.conn.execute(statement)
                version += 1
                self.conn.execute(
                    "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),)
                )

    def close(self) -> None:
        """Commit the open group of rounds (if any), flush the WAL, close the connection."""
        if self._group_rounds:
            try:
                self.commit_group()
            except sqlite3.Error:
                pass  # e.g. a full disk: the rounds committed before stay intact
        if self._unsynced:
            self.sync()
        self.conn.close()

    @property
    def group_rounds(self) -> int:
        """How many rounds the open group holds (0: no group is open)."""
        return self._group_rounds

    def group_age(self) -> float:
        """Seconds since the first round of the open group was added (0.0 without one)."""
        return time.monotonic() - self._group_since if self._group_rounds else 0.0

    def commit_group(self) -> int:
        """Commit the open group of rounds (:meth:`add_round` with ``group=True``); returns
        how many rounds it held (0 when none was open: nothing is done).

        A full disk rolls the group back and raises :class:`StoreFull`: the rounds of that
        group are lost, every round committed before stays intact."""
        n = self._group_rounds
        if not n:
            return 0
        self._group_rounds = 0
        self._commit_now()
        return n

    def sync(self) -> None:
        """Flush the WAL (every commit so far) to the disk: fsync of ``<db>-wal``.

        Called after a commit once :data:`SYNC_EVERY_S` passed since the last flush, and on
        :meth:`close`; a process crash loses nothing committed without it, a power loss at
        most what was committed since the last flush. Never raises (a failed flush leaves
        the commits where SQLite put them)."""
        self._synced_at = time.monotonic()
        self._unsynced = False
        try:
            fd = os.open(f"{self.path}-wal", os.O_RDONLY)
        except OSError:
            return  # no WAL: everything is in the database file, synced by its checkpoint
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Turn SQLite's "corrupt" errors inside the block into :class:`StoreDamaged`.

        Damage that :func:`quick_check` did not see when the file was opened (or that
        appeared later) then reaches the user as the same one-line refusal, naming the file.
        """
        try:
            yield
        except sqlite3.DatabaseError as exc:
            if _is_corrupt(exc):
                raise StoreDamaged(self.path, str(exc), writing=self.writable) from exc
            raise

    @contextmanager
    def snapshot(self) -> Iterator[Store]:
        """Every read inside the block sees one state of the store: one read transaction.

        Each statement of a connection in autocommit mode sees the store as it is when the
        statement starts, so a reader that runs several SELECTs (campaign, rounds,
        readings, reading flags, hooks, events) while ``benchrun run`` commits rounds mixes
        two states of the campaign: an export then held rounds whose readings had no
        flags, the CSV writer failed on the length mismatch (issue 29). ``BEGIN`` and a
        first read pin the snapshot: in WAL mode the reader sees the WAL up to its end at
        that moment, and later commits only after the block; the writer is never blocked
        (a reader holds no lock a writer waits for; the WAL is checkpointed past this
        reader's mark only after the block ends).

        Nested blocks share the outer snapshot; inside an open group of rounds (a
        writer's own transaction) the block reads that transaction's state. Writes are not
        allowed inside (:meth:`transaction` raises RuntimeError).
        """
        if self._snapshot_depth or self.conn.in_transaction:
            self._snapshot_depth += 1
            try:
                yield self
            finally:
                self._snapshot_depth -= 1
            return
        with self.reading():
            try:
                self.conn.execute("BEGIN")
                # a deferred transaction starts reading at its first SELECT: do it now
                self.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except sqlite3.OperationalError as exc:
                self._rollback_quietly()
                raise unreadable_store(self.path, exc) from exc
        self._snapshot_depth = 1
        try:
            yield self
        finally:
            self._snapshot_depth = 0
            self._rollback_quietly()  # nothing was written: ending the read is all it does

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT`` (rolled back on any exception).

        An open group of rounds is committed first (:meth:`commit_group`), so a write of
        its own never rolls back rounds, and never waits behind them. A full disk
        (SQLITE_FULL, ENOSPC) rolls the transaction back and raises :class:`StoreFull`:
        every round committed before stays intact.
        """
        if self._snapshot_depth:
            raise RuntimeError("a write inside Store.snapshot(): read transactions only")
        if self._group_rounds:
            self.commit_group()
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise self._full_or(exc) from exc
        try:
            yield self.conn
        except BaseException as exc:
            self._rollback_quietly()
            if isinstance(exc, sqlite3.OperationalError) and _is_disk_full(exc):
                raise StoreFull(self.path, exc) from exc
            raise
        self._commit_now()

    def _commit_now(self) -> None:
        """COMMIT the open transaction (a failed COMMIT is rolled back and raised as
        :class:`StoreFull` when the disk is full), then :meth:`_committed`."""
        try:
            self.conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            self._rollback_quietly()
            raise self._full_or(exc) from exc
        self._committed()

    def _committed(self) -> None:
        """After a COMMIT: flush the WAL when the last flush is SYNC_EVERY_S old."""
        self._unsynced = True
        if time.monotonic() - self._synced_at >= SYNC_EVERY_S:
            self.sync()

    def _rollback_quietly(self) -> None:
        if self.conn.in_transaction:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # SQLite already rolled back (e.g. after SQLITE_FULL)

    def _full_or(self, exc: sqlite3.OperationalError) -> Exception:
        return StoreFull(self.path, exc) if _is_disk_full(exc) else exc

    # -- campaigns -------------------------------------------------------------------------

    @_guarded
    def create_campaign(
        self,
        *,
        name: str,
        config_path: str | None,
        config_text: str,
        fingerprint: str,
        settings: Mapping[str, Any],
        workloads: Sequence[Mapping[str, Any]],
        benchrun_version: str,
        command_line: str | None,
    ) -> int:
        """Insert a campaign (status ``running``) with its workloads; returns its id.

        Each workload mapping has ``name, metric, unit, direction, spec``.
        """
        now = time.time()
        with self.transaction() as c:
            cur = c.execute(
                "INSERT INTO campaign (name, status, created_at, updated_at, config_path,"
                " config_text, fingerprint, settings_json, benchrun_version, command_line)"
                " VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    name,
                    now,
                    now,
                    config_path,
                    config_text,
                    fingerprint,
                    _dumps(settings),
                    benchrun_version,
                    command_line,
                ),
            )
            campaign_id = int(cur.lastrowid or 0)
            for position, w in enumerate(workloads):
                c.execute(
                    "INSERT INTO workload (campaign_id, name, position, metric, unit, direction,"
                    " spec_json) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        campaign_id,
                        w["name"],
                        position,
                        w["metric"],
                        w["unit"],
                        w["direction"],
                        _dumps(w["spec"]),
                    ),
                )
            self._event(c, campaign_id, "start", f"campaign {name} started", None, now)
        return campaign_id

    @_guarded
    def set_metadata(self, campaign_id: int, metadata: Mapping[str, Any]) -> None:
        with self.transaction() as c:
            c.execute(
                "UPDATE campaign SET metadata_json = ?, updated_at = ? WHERE id = ?",
                (_dumps(metadata), time.time(), campaign_id),
            )

    @_guarded
    def set_status(self, campaign_id: int, status: str, reason: str | None = None) -> None:
        """Set the campaign status (running/interrupted/done/failed) and record an event."""
        now = time.time()
        with self.transaction() as c:
            c.execute(
                "UPDATE campaign SET status = ?, stop_reason = ?, updated_at = ? WHERE id = ?",
                (status, reason, now, campaign_id),
            )
            self._event(
                c, campaign_id, "status", f"{status}: {reason or ''}".rstrip(": "), None, now
            )

    @_guarded
    def campaigns(self) -> list[CampaignRow]:
        rows = self.conn.execute("SELECT * FROM campaign ORDER BY id").fetchall()
        return [self._campaign(r) for r in rows]

    @_guarded
    def campaign(self, campaign_id: int | None = None) -> CampaignRow:
        """The campaign with ``campaign_id``, or the newest one."""
        if campaign_id is None:
            row = self.conn.execute("SELECT * FROM campaign ORDER BY id DESC LIMIT 1").fetchone()
            if row is None:
                raise UserError(f"{self.path}: no campaign in this database")
        else:
            row = self.conn.execute(
                "SELECT * FROM campaign WHERE id = ?", (campaign_id,)
            ).fetchone()
            if row is None:
                ids = ", ".join(str(c.id) for c in self.campaigns()) or "none"
                raise UserError(f"{self.path}: no campaign {campaign_id} (campaigns: {ids})")
        return self._campaign(row)

    @staticmethod
    def _campaign(r: tuple[Any, ...]) -> CampaignRow:
        return CampaignRow(
            id=r[0],
            name=r[1],
            status=r[2],
            created_at=r[3],
            updated_at=r[4],
            config_path=r[5],
            config_text=r[6],
            fingerprint=r[7],
            settings=json.loads(r[8]),
            metadata=json.loads(r[9]) if r[9] else None,
            benchrun_version=r[10],
            command_line=r[11],
            stop_reason=r[12],
        )

    # -- workloads -------------------------------------------------------------------------

    @_guarded
    def workloads(self, campaign_id: int) -> list[WorkloadRow]:
        rows = self.conn.execute(
            "SELECT id, name, position, metric, unit, direction, spec_json, status, status_reason"
            " FROM workload WHERE campaign_id = ? ORDER BY position",
            (campaign_id,),
        ).fetchall()
        return [
            WorkloadRow(
                id=r[0],
                name=r[1],
                position=r[2],
                metric=r[3],
                unit=r[4],
                direction=r[5],
                spec=json.loads(r[6]),
                status=r[7],
                status_reason=r[8],
            )
            for r in rows
        ]

    @_guarded
    def set_workload_status(self, workload_id: int, status: str, reason: str | None) -> None:
        with self.transaction() as c:
            c.execute(
                "UPDATE workload SET status = ?, status_reason = ? WHERE id = ?",
                (status, reason, workload_id),
            )

    # -- rounds ----------------------------------------------------------------------------

    @_guarded
    def add_round(
        self, new: NewRound | None = None, /, *, group: bool = False, **fields: Any
    ) -> int:
        """Append one round and its readings in ONE transaction; returns the round id.

        ``new`` is the round; keyword arguments (the fields of :class:`NewRound`) build one
        instead. A second insert of the same (workload, round_index) raises
        ``sqlite3.IntegrityError``: rounds are never duplicated.

        ``group=True``: the round joins the open *group* transaction (opened by the first
        such round) and is committed with it by :meth:`commit_group`, by the next write of
        its own (:meth:`transaction`) or by :meth:`close`; until then other connections do
        not see it and a crash of the process loses it (docs/loop.md "Durability"). A
        round that fails to insert is undone alone (a savepoint); the group stays open.
        """
        rec = new if new is not None else NewRound(**fields)
        if group:
            return self._add_grouped(rec)
        with self.transaction() as c:
            return self._insert_round(c, rec)

    def _add_grouped(self, rec: NewRound) -> int:
        c = self.conn
        if not self._group_rounds:
            try:
                c.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise self._full_or(exc) from exc
            self._group_since = time.monotonic()
        c.execute("SAVEPOINT grouped_round")
        try:
            round_id = self._insert_round(c, rec)
        except BaseException as exc:
            try:
                c.execute("ROLLBACK TO grouped_round")
                c.execute("RELEASE grouped_round")
            except sqlite3.Error:
                pass
            if not self._group_rounds:  # the group held nothing: end its transaction
                self._rollback_quietly()
            if isinstance(exc, sqlite3.OperationalError) and _is_disk_full(exc):
                raise StoreFull(self.path, exc) from exc
            raise
        c.execute("RELEASE grouped_round")
        self._group_rounds += 1
        return round_id

    def _insert_round(self, c: sqlite3.Connection, rec: NewRound) -> int:
        """INSERT the round, its readings and hooks inside the caller's transaction."""
        row = rec.columns()
        sql = _INSERT_ROUND.get(tuple(row))
        if sql is None:
            names = ", ".join(row)
            marks = ", ".join("?" * len(row))
            sql = _INSERT_ROUND[tuple(row)] = f"INSERT INTO round ({names}) VALUES ({marks})"
        now = time.time()
        cur = c.execute(sql, tuple(row.values()))
        round_id = int(cur.lastrowid or 0)
        if len(rec.readings) == 1:
            c.execute(_INSERT_READING, (round_id, 0, float(rec.readings[0])))
        elif rec.readings:
            c.executemany(
                _INSERT_READING, [(round_id, i, float(v)) for i, v in enumerate(rec.readings)]
            )
        if rec.hooks:
            c.executemany(_INSERT_HOOK, [h.row() for h in rec.hooks])
        if rec.metrics:
            c.executemany(
                _INSERT_METRIC,
                [(round_id, m.name, float(m.value), m.source, m.scope) for m in rec.metrics],
            )
        # the campaign's updated_at: to the second (a row write fewer in most rounds)
        if now - self._updated_at.get(rec.campaign_id, 0.0) >= 1.0:
            self._updated_at[rec.campaign_id] = now
            c.execute("UPDATE campaign SET updated_at = ? WHERE id = ?", (now, rec.campaign_id))
        return round_id

    @_guarded
    def rounds(self, campaign_id: int, workload_id: int | None = None) -> list[RoundRow]:
        """Rounds in launch order (``seq``), each with its readings."""
        sql = f"SELECT {', '.join(ROUND_COLUMNS)} FROM round WHERE campaign_id = ?"
        params: list[Any] = [campaign_id]
        if workload_id is not None:
            sql += " AND workload_id = ?"
            params.append(workload_id)
        cur = self.conn.execute(sql + " ORDER BY seq", params)
        cur.row_factory = sqlite3.Row
        rows = cur.fetchall()
        readings: dict[int, list[float]] = {}
        rsql = (
            "SELECT reading.round_id, reading.value FROM reading JOIN round"
            " ON round.id = reading.round_id WHERE round.campaign_id = ?"
        )
        rparams: list[Any] = [campaign_id]
        if workload_id is not None:
            rsql += " AND round.workload_id = ?"
            rparams.append(workload_id)
        for round_id, value in self.conn.execute(
            rsql + " ORDER BY reading.round_id, reading.idx", rparams
        ):
            readings.setdefault(round_id, []).append(value)
        return [_round_row(r, readings.get(r["id"], ())) for r in rows]

    @_guarded
    def round_metrics(self, campaign_id: int) -> dict[int, tuple[RoundMetric, ...]]:
        """Every stored metric of the campaign's rounds (schema 5), by round id, in the
        order of the workload's ``metric:`` list; rounds without any are left out."""
        out: dict[int, list[RoundMetric]] = {}
        rows = self.conn.execute(
            "SELECT m.round_id, m.name, m.value, m.source, m.scope FROM round_metric m"
            " JOIN round ON round.id = m.round_id WHERE round.campaign_id = ?"
            " ORDER BY m.round_id, m.rowid",
            (campaign_id,),
        )
        for round_id, name, value, source, scope in rows:
            out.setdefault(round_id, []).append(RoundMetric(name, value, source, scope))
        return {k: tuple(v) for k, v in out.items()}

    @_guarded
    def reading_flags(self, campaign_id: int) -> dict[tuple[int, int], str]:
        """Flags stored on individual readings, by (round id, reading index); readings
        without one are left out (:class:`RoundRow` holds the values only)."""
        rows = self.conn.execute(
            "SELECT reading.round_id, reading.idx, reading.flags FROM reading JOIN round ON "
            "round.id = reading.round_id WHERE round.campaign_id = ? AND reading.flags != ''",
            (campaign_id,),
        ).fetchall()
        return {(r[0], r[1]): r[2] for r in rows}

    # -- hooks -----------------------------------------------------------------------------

    @_guarded
    def add_hook(self, hook: NewHook) -> int:
        """Store one run of a setup/prepare/cleanup hook (its own transaction); its id."""
        with self.transaction() as c:
            cur = c.execute(_INSERT_HOOK, hook.row())
            return int(cur.lastrowid or 0)

    @_guarded
    def hooks(self, campaign_id: int, workload_id: int | None = None) -> list[HookRow]:
        """The stored hook runs of a campaign (of one workload), in the order they ran."""
        sql = f"SELECT id, {', '.join(HOOK_COLUMNS)} FROM hook WHERE campaign_id = ?"
        params: list[Any] = [campaign_id]
        if workload_id is not None:
            sql += " AND workload_id = ?"
            params.append(workload_id)
        rows = self.conn.execute(sql + " ORDER BY id", params).fetchall()
        out = []
        for r in rows:
            values = dict(zip(("id", *HOOK_COLUMNS), r, strict=True))
            values["argv"] = json.loads(values.pop("argv_json"))
            out.append(HookRow(**values))
        return out

    @_guarded
    def next_seq(self, campaign_id: int) -> int:
        row = self.conn.execute(
            "SELECT coalesce(max(seq), -1) + 1 FROM round WHERE campaign_id = ?", (campaign_id,)
        ).fetchone()
        return int(row[0])

    # -- events ----------------------------------------------------------------------------

    @_guarded
    def add_event(
        self,
        campaign_id: int,
        kind: str,
        message: str,
        data: Mapping[str, Any] | None = None,
    ) -> None:
        """Record what was decided and why (controller decisions, interruptions, resumes)."""
        with self.transaction() as c:
            self._event(c, campaign_id, kind, message, data, time.time())

    @staticmethod
    def _event(
        c: sqlite3.Connection,
        campaign_id: int,
        kind: str,
        message: str,
        data: Mapping[str, Any] | None,
        at: float,
    ) -> None:
        c.execute(
            "INSERT INTO event (campaign_id, at, kind, message, data_json) VALUES (?, ?, ?, ?, ?)",
            (campaign_id, at, kind, message, _dumps(data) if data is not None else None),
        )

    @_guarded
    def events(self, campaign_id: int) -> list[EventRow]:
        rows = self.conn.execute(
            "SELECT id, at, kind, message, data_json FROM event WHERE campaign_id = ? ORDER BY id",
            (campaign_id,),
        ).fetchall()
        return [EventRow(r[0], r[1], r[2], r[3], json.loads(r[4]) if r[4] else None) for r in rows]

    # -- run spans (schema 4) ---------------------------------------------------------------

    @_guarded
    def start_span(self, campaign_id: int, pid: int, started_at: float) -> int:
        """Record that a run (process ``pid``) of the campaign began at ``started_at`` (Unix
        s); returns the span's id (runner/store/spans.py keeps its seconds current)."""
        with self.transaction() as c:
            cur = c.execute(
                "INSERT INTO run_span (campaign_id, pid, started_at, seconds) VALUES (?, ?, ?, 0)",
                (campaign_id, pid, started_at),
            )
            return int(cur.lastrowid or 0)

    @_guarded
    def spans(self, campaign_id: int) -> list[tuple[int, float, float]]:
        """``(pid, started_at, seconds)`` of every stored run of the campaign, oldest first
        (rows whose values are not numbers, which benchrun never writes, are left out)."""
        rows = self.conn.execute(
            "SELECT pid, started_at, seconds FROM run_span WHERE campaign_id = ? AND "
            "typeof(pid) = 'integer' AND typeof(started_at) IN ('real', 'integer') AND "
            "typeof(seconds) IN ('real', 'integer') ORDER BY id",
            (campaign_id,),
        ).fetchall()
        return [(int(r[0]), float(r[1]), float(r[2])) for r in rows]

    def integrity_ok(self) -> bool:
        """``PRAGMA integrity_check`` says ``ok``."""
        return self.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


#: exit code of ``benchrun`` when the store's disk is full (EX_TEMPFAIL: try again later)
EXIT_STORE_FULL = 75


class StoreFull(UserError):
    """The store's file system is full: the transaction was rolled back, nothing committed
    before it is lost. Exit code :data:`EXIT_STORE_FULL`; the daemon pauses the campaign."""

    def __init__(self, path: Path, cause: BaseException | None = None) -> None:
        detail = f" ({cause})" if cause is not None else ""
        super().__init__(
            f"{path}: the disk is full{detail}; every round committed so far is intact; "
            f"free space on the file system of {path.parent} and continue with --resume",
            exit_code=EXIT_STORE_FULL,
        )
        self.path = path


#: the most problems :func:`quick_check` asks SQLite for (the message shows the first)
QUICK_CHECK_LIMIT = 5


def quick_check(conn: sqlite3.Connection) -> str | None:
    """Run ``PRAGMA quick_check`` on ``conn``; None when SQLite says ``ok``, else its first
    problem as one line (what a damaged page, index or free list looks like to SQLite).

    quick_check reads every page of the file once, O(size): 10-15 ms for a store of 10 000
    rounds of one reading (2.7 MiB), 35 ms with 30 readings a round (13 MiB); it skips the
    index-content cross-check of ``integrity_check``.
    """
    try:
        rows = conn.execute(f"PRAGMA quick_check({QUICK_CHECK_LIMIT})").fetchall()
    except sqlite3.DatabaseError as exc:
        if is_place_error(exc) and not _is_corrupt(exc):
            raise  # the file system, not the file: the caller says which (store/access.py)
        return str(exc)
    lines = [
        line.strip()
        for r in rows
        if r and r[0] != "ok"
        for line in str(r[0]).splitlines()
        if line.strip() and not line.startswith("***")  # "*** in database main ***"
    ]
    if not any(r and r[0] != "ok" for r in rows):
        return None
    if not lines:
        return "damaged"
    first = lines[0] if len(lines[0]) <= 200 else lines[0][:200] + "..."
    return first + (f" and {len(lines) - 1} more problem(s)" if len(lines) > 1 else "")


class StoreDamaged(UserError):
    """The store file is damaged (SQLite's quick_check or a read found a corrupt page).

    benchrun neither writes into nor reports from such a file: the message says how to copy
    what is readable into a new file (``sqlite3 ... .recover``) or to start anew.
    """

    def __init__(self, path: Path, detail: str, writing: bool) -> None:
        what = "will not write into it" if writing else "will not read results from it"
        super().__init__(
            f"{path} is damaged (quick_check: {detail}); benchrun {what}: copy what is "
            f"readable with `sqlite3 {path} .recover | sqlite3 recovered.db` or start a "
            "new results directory",
            exit_code=EXIT_STORE_DAMAGED,
        )
        self.path = path


#: exit code of ``benchrun`` when the store file is damaged (EX_DATAERR)
EXIT_STORE_DAMAGED = 65


def _is_corrupt(exc: sqlite3.DatabaseError) -> bool:
    """SQLITE_CORRUPT or SQLITE_NOTADB: the file's pages are not what SQLite wrote."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


def _has_sqlite_header(path: Path) -> bool:
    """The file starts with SQLite's magic string (a damaged store, not a foreign file)."""
    try:
        with path.open("rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _is_disk_full(exc: BaseException) -> bool:
    """SQLITE_FULL ("database or disk is full") or an ENOSPC/EDQUOT error."""
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        if code is not None and code & 0xFF == 13:  # SQLITE_FULL
            return True
        text = str(exc).lower()
        return "disk is full" in text or "no space left" in text
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return False


_INSERT_HOOK = (
    f"INSERT INTO hook ({', '.join(HOOK_COLUMNS)}) VALUES ({', '.join('?' * len(HOOK_COLUMNS))})"
)


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, allow_nan=False)
