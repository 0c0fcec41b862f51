"""Why SQLite could not read a store whose file is fine: a full disk, a read-only place.

A benchrun store is in WAL mode, and SQLite reads a WAL database only through its
shared-memory index ``benchrun.db-shm`` (and the ``benchrun.db-wal`` file) beside it:
a reader creates them when they are missing and grows the index to 32 KiB. On a full
file system that fails with ``disk I/O error`` (SQLITE_IOERR_SHMSIZE, leaving a
3-byte ``-shm``); in a read-only directory (a read-only mount, or a directory the user
may not write) with ``unable to open database file`` (SQLITE_CANTOPEN). Neither says
anything about the store itself, which is intact: before issue 29, ``show`` and
``report`` called it "not a usable SQLite database ... move it away", advice that could
lose a campaign. :func:`unreadable_store` says what is wrong with the place instead
(docs/limits.md "The store's file system").

The same files are a way in for another user who may write the directory: SQLite
*replays* a ``-wal`` it finds (and a hot ``-journal``) into the store when it opens it,
so a ``benchrun.db-wal`` planted there decides what root's ``show`` prints and what
``run --resume`` runs (issue 29: a crafted WAL renamed root's campaign and could rewrite
its stored experiment). :func:`check_companions` refuses such a file before SQLite opens
the store.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

from benchrun.runner.errors import UserError

#: exit code when the store cannot be read for lack of room (EX_TEMPFAIL, as a full disk
#: while writing: runner.store.database.EXIT_STORE_FULL)
EXIT_NO_ROOM = 75
#: exit code when the store's directory is read-only or not the user's (EX_NOPERM)
EXIT_NO_PERMISSION = 77

#: SQLite's primary result codes that come from the file system, not from the file's pages
_SQLITE_IOERR = 10
_SQLITE_FULL = 13
_SQLITE_CANTOPEN = 14
_SQLITE_READONLY = 8
_PLACE_CODES = (_SQLITE_IOERR, _SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_READONLY)


def is_place_error(exc: BaseException) -> bool:
    """True for an SQLite error caused by the store's file system or directory (I/O, full,
    cannot open, read-only) rather than by its content (corrupt, not a database)."""
    if not isinstance(exc, sqlite3.Error):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _PLACE_CODES
    text = str(exc).lower()
    return any(
        s in text
        for s in ("disk i/o error", "disk is full", "unable to open", "readonly", "read-only")
    )


def _room(directory: Path) -> tuple[bool, bool]:
    """(read-only file system, no free block for this user) of ``directory``'s file system;
    (False, False) when statvfs fails."""
    try:
        st = os.statvfs(directory)
    except OSError:
        return False, False
    return bool(st.f_flag & os.ST_RDONLY), st.f_bavail == 0


def unreadable_store(path: Path, exc: BaseException) -> UserError | BaseException:
    """The one-line error for a store SQLite could not open or read because of its place.

    Returns ``exc`` unchanged when it is not such an error (:func:`is_place_error`), so a
    caller may ``raise unreadable_store(path, exc) from exc`` for any SQLite error.

    The cause is read from the file system, not guessed from SQLite's words: statvfs says
    whether it is mounted read-only or has no free block; ``os.access`` whether this user
    may create ``-shm``/``-wal`` files in the directory.
    """
    if not is_place_error(exc):
        return exc
    where = path.parent
    readonly_fs, full = _room(where)
    code = getattr(exc, "sqlite_errorcode", None)
    if full or (code is not None and code & 0xFF == _SQLITE_FULL):
        return UserError(
            f"{path}: cannot read the store: the file system of {where} is full, and SQLite "
            f"needs room there for {path.name}-shm to read it ({exc}); the store is not "
            "damaged: free some space there and run the command again",
            exit_code=EXIT_NO_ROOM,
        )
    if readonly_fs:
        return UserError(
            f"{path}: cannot read the store: {where} is on a read-only file system, and "
            f"SQLite must create {path.name}-shm and {path.name}-wal beside the store to "
            f"read it ({exc}); the store is not damaged: copy the directory to a writable "
            "place (cp -a) and read the copy",
            exit_code=EXIT_NO_PERMISSION,
        )
    if not os.access(where, os.W_OK | os.X_OK) or (
        (path.parent / f"{path.name}-shm").exists()
        and not os.access(where / f"{path.name}-shm", os.R_OK | os.W_OK)
    ):
        return UserError(
            f"{path}: cannot read the store: you may not write in {where}, and SQLite must "
            f"create or update {path.name}-shm there to read the store ({exc}); the store "
            "is not damaged: read it as the user who owns it, or copy the directory "
            "(cp -a) and read the copy",
            exit_code=EXIT_NO_PERMISSION,
        )
    return UserError(
        f"{path}: cannot read the store: SQLite reports an I/O error ({exc}); check the "
        f"disk holding {where} (dmesg) and that {path.name}-shm and {path.name}-wal there "
        "are regular files this user can read and write",
        exit_code=1,
    )


#: the files SQLite keeps beside a store and reads, or replays into it, when it opens it
COMPANION_SUFFIXES = ("-wal", "-shm", "-journal")


def check_companions(path: Path) -> None:
    """Refuse the store ``path`` when a file SQLite would read beside it (``-wal``,
    ``-shm``, ``-journal``) is not a regular file, or belongs to neither this user nor the
    store file's owner: another user planted it.

    Why: SQLite replays a ``-wal`` into the store when it opens it, so whoever wrote that
    file decides the store's content. The files are examined with ``lstat`` (a symbolic
    link is never followed; SQLite refuses one too, with a bare "unable to open database
    file"). A file SQLite made itself belongs to the user who opened the store, which is
    the store's owner or this user. This check does not close a race with a user who may
    write the directory and swaps a file after it; a campaign directory others may write
    is refused as a whole where it is opened (docs/security.md).
    """
    try:
        owner = os.stat(path).st_uid
    except OSError:
        return  # the opener reports a missing or unreadable store
    # SQLite keeps the files beside the file a symbolic link names (unixFullPathname)
    path = Path(os.path.realpath(path))
    mine = os.geteuid()
    for suffix in COMPANION_SUFFIXES:
        companion = path.with_name(path.name + suffix)
        try:
            st = os.lstat(companion)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a regular file"
            raise UserError(
                f"{companion}: is {what}, where SQLite keeps its own {suffix} file of "
                f"{path.name}; benchrun will not open the store: remove it if you did not "
                "make it"
            )
        if st.st_uid not in (mine, owner):
            raise UserError(
                f"{companion}: belongs to uid {st.st_uid}, neither you (uid {mine}) nor the "
                f"store's owner (uid {owner}); SQLite would replay it into {path.name}, so "
                "another user could change what benchrun reads and resumes: benchrun will "
                f"not open the store; remove {companion.name} if you trust {path.name} as it "
                "is on disk"
            )
