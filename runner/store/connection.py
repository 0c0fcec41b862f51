"""The store's connection: opening a file (checked, created, migrated), transactions,
group commit, read snapshots, and the WAL flush (docs/design.md "The store", docs/loop.md
"Durability").

WAL journal, ``synchronous=NORMAL``, one transaction per round or per *group* of rounds
(:meth:`runner.store.rounds.RoundTables.add_round` with ``group=True``, committed by
:meth:`StoreBase.commit_group`): a crash of the process (SIGKILL, an exception, OOM) loses
at most the rounds not committed yet (the open group and the round in flight), because a
transaction's WAL frames are in the operating system's cache when COMMIT returns; the WAL
is also flushed to the disk (fsync) at most :data:`SYNC_EVERY_S` after a commit, so a power
loss or kernel crash loses at most the rounds of that last second and never damages the
file. :class:`StoreBase` holds no table's statements: runner/store/campaigns.py,
rounds.py and events.py do, and runner/store/database.py composes them into ``Store``.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from benchrun.runner.errors import UserError
from benchrun.runner.safefs import cannot, check_entry, create_file, open_dir
from benchrun.runner.store import schema
from benchrun.runner.store.access import check_companions, is_place_error, unreadable_store
from benchrun.runner.store.faults import (
    StoreDamaged,
    StoreFull,
    has_sqlite_header,
    is_corrupt,
    is_disk_full,
    quick_check,
)
from benchrun.runner.store.schema import APPLICATION_ID

#: the WAL is flushed to the disk (fsync) by the first commit this many seconds after the
#: last flush (synchronous=NORMAL flushes it only at checkpoints)
SYNC_EVERY_S = 1.0

_P = ParamSpec("_P")
_R = TypeVar("_R")
_S = TypeVar("_S", bound="StoreBase")


def guarded(
    method: Callable[Concatenate[_S, _P], _R],
) -> Callable[Concatenate[_S, _P], _R]:
    """``method`` run inside :meth:`StoreBase.reading`: a corrupt page becomes StoreDamaged."""

    @functools.wraps(method)
    def wrapper(self: _S, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self.reading():
            return method(self, *args, **kwargs)

    return wrapper


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


class StoreBase:
    """A connection to a benchrun SQLite store: opening, transactions, snapshots, group
    commit. ``Store`` (runner/store/database.py) adds the tables' reads and writes; use
    its :meth:`open` (existing) or :meth:`create_or_open`."""

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
        #: rows already read in the open read-only snapshot, by what was asked (None
        #: outside one): every read there sees one state of the store, so ``show``'s
        #: second read of a campaign's rounds is not read and decoded again
        self._snapshot_rows: dict[tuple[Any, ...], Any] | None = None

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def create_or_open(cls: type[_S], path: str | Path) -> _S:
        """Open ``path``, creating the file, its directory and the schema if needed.

        The file must be one no other user could have planted or changed (:func:`_claim`),
        so a run as root never writes through a symlink or into another user's file."""
        path = Path(path)
        _claim(path)
        return cls._connect(path, create=True)

    @classmethod
    def open(cls: type[_S], path: str | Path) -> _S:
        """Open an existing store; a missing, corrupt or foreign file is a UserError."""
        path = Path(path)
        if not path.is_file():
            raise UserError(f"{path}: no benchrun database here")
        return cls._connect(path, create=False)

    @classmethod
    def _connect(cls: type[_S], path: Path, create: bool) -> _S:
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
            if is_corrupt(exc) and has_sqlite_header(path):
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
        with self.transaction() as c:
            schema.create(c)

    def _migrate(self) -> None:
        """Upgrade an older store to :data:`~runner.store.schema.SCHEMA_VERSION`, one
        transaction a step; refuse a newer one (runner/store/schema.py)."""
        version = self.schema_version()
        schema.check_readable(version, self.path)
        while version < schema.SCHEMA_VERSION:
            with self.transaction() as c:
                version = schema.upgrade(c, version)

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

    def __enter__(self: _S) -> _S:
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
            if is_corrupt(exc):
                raise StoreDamaged(self.path, str(exc), writing=self.writable) from exc
            raise

    @contextmanager
    def snapshot(self: _S) -> Iterator[_S]:
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
        self._snapshot_rows = {}
        try:
            yield self
        finally:
            self._snapshot_depth = 0
            self._snapshot_rows = None
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
            if isinstance(exc, sqlite3.OperationalError) and is_disk_full(exc):
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
        return StoreFull(self.path, exc) if is_disk_full(exc) else exc

    @guarded
    def schema_version(self) -> int:
        """The schema version recorded in the store (runner/store/schema.py)."""
        return schema.read_version(self.conn)

    def integrity_ok(self) -> bool:
        """``PRAGMA integrity_check`` says ``ok``."""
        return self.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
