"""The journal of ``benchrun system tune``: every changed kernel setting's previous value.

One JSON file (:data:`JOURNAL_NAME`) in a state directory (:func:`journal_dir`), written
before each change (atomically, ``fsync``-ed with its directory) so that a crash at any
point leaves the values to restore on disk; docs/tuning.md describes the format. Beside it,
:data:`LOCK_NAME` is ``flock``-ed by whoever changes the journal, and held by a campaign
for as long as it keeps the machine tuned: the kernel drops the lock when the process dies
(SIGKILL included), so a journal whose lock can be taken belongs to nobody alive.

The journal decides which files benchrun writes as root, so it is read as hostile input
(docs/security.md): the directory is reached with runner/safefs.py's checks, the file must
be ours, with one link and not writable by group or others, at most :data:`JOURNAL_LIMIT`
bytes, and every entry's path must be one of the settings benchrun tunes
(:data:`TUNABLE_PATHS`) under the recorded root.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from benchrun.runner.errors import UserError
from benchrun.runner.safefs import (
    PRIVATE_FILE_MODE,
    UnsafePath,
    cannot,
    create_file,
    open_dir,
    open_file,
)

#: environment variable naming the journal's directory (tests; a site that wants another)
ENV_TUNING_DIR = "BENCHRUN_TUNING_DIR"
#: root's state directory (the Filesystem Hierarchy Standard's /var/lib)
SYSTEM_DIR = Path("/var/lib/benchrun")
#: the journal and its lock, in that directory
JOURNAL_NAME = "tuning.json"
LOCK_NAME = "tuning.lock"
#: the ``format`` field of a journal, and its version
FORMAT = "benchrun-tuning-journal"
VERSION = 1
#: most bytes read of a journal (a few hundred IRQs fit many times over)
JOURNAL_LIMIT = 1 << 20
#: longest value kept (an affinity list of a large machine fits)
VALUE_LIMIT = 4096

#: the files benchrun may write, relative to the root (``/`` but for tests): a journal
#: naming anything else is refused
TUNABLE_PATHS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        r"sys/devices/system/cpu/cpu[0-9]+/cpufreq/scaling_governor",
        r"sys/devices/system/cpu/intel_pstate/no_turbo",
        r"sys/devices/system/cpu/cpufreq/boost",
        r"proc/sys/kernel/perf_event_max_sample_rate",
        r"proc/sys/kernel/randomize_va_space",
        r"sys/devices/system/cpu/cpu[0-9]+/online",
        r"proc/irq/[0-9]+/smp_affinity_list",
        r"proc/irq/default_smp_affinity",
    )
)


@dataclass(frozen=True)
class Entry:
    """One changed setting: its name as shown, its file relative to the root, the value
    read before the change and the value written (read back after it, when it worked)."""

    setting: str
    path: str
    before: str
    after: str

    @classmethod
    def from_stored(cls, doc: object) -> Entry | None:
        """The change in a stored ``tuning`` record (``asdict`` of an entry): each of the
        four keys as text; None when one is missing or ``doc`` is not an object. The
        journal itself is checked more strictly (:func:`parse_journal`)."""
        match doc:
            case {"setting": setting, "path": path, "before": before, "after": after}:
                return cls(str(setting), str(path), str(before), str(after))
        return None

    @classmethod
    def changes_of(cls, record: object) -> tuple[Entry, ...]:
        """The changes of a campaign's stored ``tuning`` record (``TuneReport.to_dict``:
        ``{"changes": [entry, ...], ...}``), in order; a change that is not an object of
        the four keys is left out, and anything else has none."""
        match record:
            case {"changes": list(changes)}:
                return tuple(e for e in map(cls.from_stored, changes) if e is not None)
        return ()


@dataclass(frozen=True)
class Owner:
    """Who tuned: ``kind`` ``manual`` (``benchrun system tune``: until ``system reset``) or
    ``campaign`` (``settings.tune``: until the campaign ends, or its process dies); the
    process, when (Unix time, s) and, for a campaign, its directory."""

    kind: str
    pid: int
    started: float
    campaign: str | None = None

    def describe(self) -> str:
        """``benchrun system tune (pid 12, 2026-11-28 05:01:02 UTC)`` or ``campaign DIR ...``."""
        at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.started))
        if self.kind == "campaign":
            return f"the campaign {self.campaign} (pid {self.pid}, {at})"
        return f"benchrun system tune (pid {self.pid}, {at})"


@dataclass(frozen=True)
class Journal:
    """The journal's content: the root its paths are under, who tuned, the changes in the
    order they were made (restored in the reverse order)."""

    root: str
    owner: Owner
    entries: tuple[Entry, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, object]:
        """The JSON document (docs/tuning.md "Journal")."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "root": self.root,
            "owner": asdict(self.owner),
            "entries": [asdict(e) for e in self.entries],
        }

    def with_entries(self, entries: tuple[Entry, ...]) -> Journal:
        """The same journal with other entries."""
        return replace(self, entries=entries)


def journal_dir(environ: dict[str, str] | None = None, euid: int | None = None) -> Path:
    """Where the journal lives: ``$BENCHRUN_TUNING_DIR``; else root's
    :data:`SYSTEM_DIR`; else ``$XDG_STATE_HOME/benchrun`` (``~/.local/state/benchrun``)."""
    env = os.environ if environ is None else environ
    given = env.get(ENV_TUNING_DIR, "")
    if given:
        return Path(given)
    if (os.geteuid() if euid is None else euid) == 0:
        return SYSTEM_DIR
    state = env.get("XDG_STATE_HOME", "")
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "benchrun"


def _malformed(path: Path, why: str) -> UserError:
    return UserError(
        f"{path}: not a benchrun tuning journal ({why}); restore the values it lists by hand "
        "and remove it"
    )


def _text(doc: object, key: str, path: Path, limit: int = VALUE_LIMIT) -> str:
    """The string under ``key`` of the JSON object ``doc``: short and printable, else
    :class:`UserError` naming the key."""
    value = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(value, str) or len(value) > limit or not value.isprintable():
        raise _malformed(path, f"{key!r} is not a short printable string")
    return value


def _owner(doc: dict[str, object], path: Path) -> Owner:
    """The journal's ``owner`` object, checked: kind, pid, start time, campaign path."""
    match doc:
        case {"owner": {"kind": "manual" | "campaign" as kind} as own}:
            pass
        case _:
            raise _malformed(path, "owner is not manual nor campaign")
    match own:
        case {"pid": int(pid), "started": int() | float() as started} if type(
            pid
        ) is int and not isinstance(started, bool):
            pass
        case _:
            raise _malformed(path, "owner has no pid or start time")
    campaign: str | None = None  # a manual tune names none
    match own:
        case {"campaign": str(named)} if named.isprintable():
            campaign = named
        case {"campaign": value} if value is not None:
            raise _malformed(path, "owner's campaign is not a path")
    return Owner(kind, pid, float(started), campaign)


def parse_journal(data: bytes, path: Path) -> Journal:
    """The journal in ``data`` (read from ``path``, named in messages), checked field by
    field; :class:`UserError` (one line) when anything is not as benchrun writes it."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _malformed(path, f"invalid JSON: {exc}") from None
    match doc:
        case {"format": fmt} if fmt == FORMAT:
            pass
        case _:
            raise _malformed(path, "no format field")
    match doc:
        case {"version": version} if version == VERSION:
            pass
        case {"version": version}:
            raise _malformed(path, f"version {version!r}, this benchrun reads {VERSION}")
        case _:
            raise _malformed(path, f"version None, this benchrun reads {VERSION}")
    root = _text(doc, "root", path)
    if not root.startswith("/"):
        raise _malformed(path, "root is not an absolute path")
    owner = _owner(doc, path)
    match doc:
        case {"entries": list(raw)}:
            pass
        case _:
            raise _malformed(path, "no list of entries")
    entries = []
    for item in raw:
        rel = _text(item, "path", path)
        if not any(p.fullmatch(rel) for p in TUNABLE_PATHS):
            raise _malformed(path, f"{rel!r} is not a setting benchrun tunes")
        entries.append(
            Entry(
                _text(item, "setting", path),
                rel,
                _text(item, "before", path),
                _text(item, "after", path),
            )
        )
    return Journal(root, owner, tuple(entries))


class JournalStore:
    """The journal's directory, opened once with runner/safefs.py's checks.

    Parameters
    ----------
    directory : Path
        The state directory (:func:`journal_dir`).
    create : bool
        Make the directory (0700) when missing; else a missing one is an empty store.
    """

    def __init__(self, directory: Path, *, create: bool) -> None:
        self.directory = directory
        self.path = directory / JOURNAL_NAME
        self.fd: int | None = None
        try:
            self.fd = open_dir(directory, create=create)
        except FileNotFoundError:
            if create:
                raise
        self.lock_fd: int | None = None

    def close(self) -> None:
        """Release the lock (when held) and the directory."""
        self.unlock()
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> JournalStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the lock ---------------------------------------------------------------------

    def try_lock(self) -> bool:
        """Take the lock without waiting; False when a live process holds it (a campaign
        that keeps the machine tuned, or a ``system tune`` or ``reset`` at work)."""
        if self.fd is None:
            raise FileNotFoundError(self.directory)
        if self.lock_fd is not None:
            return True
        shown = self.directory / LOCK_NAME
        try:
            fd = open_file(self.fd, LOCK_NAME, shown, create=True)
        except OSError as exc:
            raise cannot(shown, exc, "open") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self.lock_fd = fd
        return True

    def unlock(self) -> None:
        """Release the lock (closing its descriptor drops it)."""
        if self.lock_fd is not None:
            os.close(self.lock_fd)
            self.lock_fd = None

    # -- the journal ------------------------------------------------------------------

    def read(self) -> Journal | None:
        """The journal, or None when there is none; :class:`UnsafePath` when it is not a
        file of ours that only we may write, :class:`UserError` when malformed."""
        if self.fd is None:
            return None
        try:
            fd = open_file(self.fd, JOURNAL_NAME, self.path)
        except FileNotFoundError:
            return None
        except UnsafePath:
            raise
        except OSError as exc:
            raise cannot(self.path, exc, "read") from None
        try:
            data = os.read(fd, JOURNAL_LIMIT + 1)
        finally:
            os.close(fd)
        if len(data) > JOURNAL_LIMIT:
            raise UnsafePath(self.path, f"longer than {JOURNAL_LIMIT} bytes", "remove it")
        return parse_journal(data, self.path)

    def write(self, journal: Journal) -> None:
        """Replace the journal with ``journal``, durably: a temporary file written and
        ``fsync``-ed, renamed over the journal, the directory ``fsync``-ed."""
        assert self.fd is not None and self.lock_fd is not None, "write under the lock"
        data = (json.dumps(journal.to_dict(), indent=1) + "\n").encode()
        tmp = f".{JOURNAL_NAME}.{secrets.token_hex(4)}.tmp"
        try:
            fd = create_file(self.fd, tmp, self.directory / tmp, PRIVATE_FILE_MODE)
        except OSError as exc:
            raise cannot(self.path, exc, "write") from None
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(tmp, JOURNAL_NAME, src_dir_fd=self.fd, dst_dir_fd=self.fd)
            os.fsync(self.fd)
        except OSError as exc:
            try:
                os.unlink(tmp, dir_fd=self.fd)
            except OSError:
                pass
            raise cannot(self.path, exc, "write") from None

    def remove(self) -> None:
        """Remove the journal (every value restored), durably."""
        assert self.fd is not None and self.lock_fd is not None, "remove under the lock"
        try:
            os.unlink(JOURNAL_NAME, dir_fd=self.fd)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise cannot(self.path, exc, "remove") from None
        os.fsync(self.fd)


@contextmanager
def opened(directory: Path | None = None, *, create: bool = False) -> Iterator[JournalStore]:
    """:class:`JournalStore` of ``directory`` (default :func:`journal_dir`), closed after."""
    store = JournalStore(directory if directory is not None else journal_dir(), create=create)
    try:
        yield store
    finally:
        store.close()


def is_missing(exc: OSError) -> bool:
    """Whether ``exc`` says a file is absent (a setting this machine does not have)."""
    return exc.errno in (errno.ENOENT, errno.ENOTDIR)
