"""What goes wrong with the store's file itself: a full disk (:class:`StoreFull`, exit 75)
and a damaged file (:class:`StoreDamaged`, exit 65, found by :func:`quick_check` when
opened or by a read), told apart from SQLite's other errors (docs/limits.md).
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

from benchrun.runner.errors import UserError
from benchrun.runner.store.access import is_place_error

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
        if is_place_error(exc) and not is_corrupt(exc):
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


def is_corrupt(exc: sqlite3.DatabaseError) -> bool:
    """SQLITE_CORRUPT or SQLITE_NOTADB: the file's pages are not what SQLite wrote."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


def has_sqlite_header(path: Path) -> bool:
    """The file starts with SQLite's magic string (a damaged store, not a foreign file)."""
    try:
        with path.open("rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def is_disk_full(exc: BaseException) -> bool:
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
