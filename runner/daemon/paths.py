"""Where the daemon keeps its files, following the XDG base directory specification.

- data (``$XDG_DATA_HOME/benchrun``, default ``~/.local/share/benchrun``): the queue
  database ``queue.db`` and one log file per campaign under ``logs/``.
- state (``$XDG_STATE_HOME/benchrun``, default ``~/.local/state/benchrun``): the lock and
  pid file ``daemon.pid`` and the daemon's own log ``daemon.log``.
- runtime (``$XDG_RUNTIME_DIR/benchrun``, else the state directory): ``daemon.sock``.

Every directory is created with mode 0700: the socket and the logs are the user's only.
The daemon often runs as root and its runtime directory may sit in a directory others can
write (``XDG_RUNTIME_DIR=/tmp/...``): :meth:`DaemonPaths.ensure` therefore refuses a
``benchrun`` directory that is not the user's own, that others may write, or that lies
under a directory (or a symbolic link) someone else could change; it never changes the
mode of a directory it does not own. The threat model is in docs/security.md.
"""

from __future__ import annotations

import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path

from benchrun.runner.errors import UserError
from benchrun.runner.safefs import others_may_write

#: longest path a Unix socket address holds on Linux (sun_path is 108 bytes with the NUL)
MAX_SOCKET_PATH = 107


#: most symbolic links followed while checking one path (the kernel's own limit)
MAX_SYMLINKS = 40


def user_name(uid: int) -> str:
    """The login name of ``uid``, or ``no such user`` (for messages)."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return "no such user"


def owner_text(uid: int) -> str:
    """``uid N (name)``: who owns something, for messages."""
    return f"uid {uid} ({user_name(uid)})"


def _xdg(var: str, default: str) -> Path:
    value = os.environ.get(var, "")
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / default


@dataclass(frozen=True)
class DaemonPaths:
    """The daemon's files for the current user (see the module docstring)."""

    data_dir: Path
    state_dir: Path
    runtime_dir: Path

    @classmethod
    def from_env(cls) -> DaemonPaths:
        """Paths from ``XDG_DATA_HOME``, ``XDG_STATE_HOME`` and ``XDG_RUNTIME_DIR``."""
        data = _xdg("XDG_DATA_HOME", ".local/share") / "benchrun"
        state = _xdg("XDG_STATE_HOME", ".local/state") / "benchrun"
        runtime_root = os.environ.get("XDG_RUNTIME_DIR", "")
        runtime = Path(runtime_root) / "benchrun" if os.path.isabs(runtime_root) else state
        return cls(data, state, runtime)

    @property
    def queue_db(self) -> Path:
        return self.data_dir / "queue.db"

    @property
    def logs_dir(self) -> Path:
        return self.data_dir / "logs"

    def campaign_log(self, entry_id: int) -> Path:
        """The log file of queue entry ``entry_id`` (the child's stdout and stderr)."""
        return self.logs_dir / f"{entry_id}.log"

    @property
    def pid_file(self) -> Path:
        return self.state_dir / "daemon.pid"

    @property
    def daemon_log(self) -> Path:
        return self.state_dir / "daemon.log"

    @property
    def socket(self) -> Path:
        return self.runtime_dir / "daemon.sock"

    def roles(self) -> tuple[tuple[Path, DirRole], ...]:
        """Each directory with what it is and the variable that moves it (for messages)."""
        runtime_var = "XDG_RUNTIME_DIR" if self.runtime_dir != self.state_dir else "XDG_STATE_HOME"
        return (
            (self.data_dir, DirRole("data directory", "XDG_DATA_HOME")),
            (self.logs_dir, DirRole("log directory", "XDG_DATA_HOME")),
            (self.state_dir, DirRole("state directory", "XDG_STATE_HOME")),
            (self.runtime_dir, DirRole("runtime directory", runtime_var)),
        )

    def existing_data_dir(self) -> Path | None:
        """The data directory checked like :meth:`ensure` does, without creating it: None
        when it does not exist (``benchrun queue`` reads the queue file there when no
        daemon answers, and must not read one another user planted)."""
        return private_dir(self.data_dir, self.roles()[0][1], create=False)

    def ensure(self) -> None:
        """Create the directories (mode 0700) or check the existing ones.

        Each must be a directory of this user (the effective uid) that nobody else may
        write, reached only through directories and symbolic links of root or this user
        that others cannot change (writable by others only with the sticky bit, like
        /tmp): otherwise another local user could plant a socket, queue or lock there,
        or swap the directory later, and a daemon running as root would serve, read or
        write it. An own directory with group or other read bits is narrowed to 0700; one
        that others may write is refused, not repaired (what was planted in it stays).

        Raises
        ------
        UserError
            A directory cannot be created, or is not safe (exit code 1, one line naming
            the directory, its owner or mode, and the variable to set instead).
        """
        for d, role in self.roles():
            private_dir(d, role, create=True)
        if len(os.fsencode(str(self.socket))) > MAX_SOCKET_PATH:
            raise UserError(
                f"socket path {self.socket} is longer than {MAX_SOCKET_PATH} bytes; set "
                "XDG_RUNTIME_DIR to a shorter directory",
                exit_code=1,
            )


@dataclass(frozen=True)
class DirRole:
    """What one of the daemon's directories is, for messages: its ``name`` (``data
    directory``) and the ``variable`` that moves it (``XDG_DATA_HOME``)."""

    name: str
    variable: str

    @property
    def advice(self) -> str:
        return f"set {self.variable} to a directory of your own"


def _trusted_entry(path: Path, st: os.stat_result, euid: int, role: DirRole, final: Path) -> None:
    """Refuse ``path`` (a directory or link on the way to ``final``) when someone other than
    root or ``euid`` owns it, or when it is a directory others may write without the
    sticky bit: its owner, or anyone, could then replace what lies below it."""
    if st.st_uid not in (0, euid):
        raise UserError(
            f"{path} belongs to {owner_text(st.st_uid)}, not to root or you; the daemon's "
            f"{role.name} {final} under it is not safe: {role.advice}",
            exit_code=1,
        )
    writable = others_may_write(st, euid)
    if stat.S_ISDIR(st.st_mode) and writable and not st.st_mode & stat.S_ISVTX:
        raise UserError(
            f"{path} is writable by others without the sticky bit (mode "
            f"{stat.S_IMODE(st.st_mode):04o}); the daemon's {role.name} {final} under it is "
            f"not safe: {role.advice}",
            exit_code=1,
        )


def _resolve_trusted(path: Path, euid: int, role: DirRole) -> tuple[Path, list[str]]:
    """Walk ``path`` from ``/`` with lstat, checking every directory and symbolic link on
    the way (:func:`_trusted_entry`) and following a link only once it is checked.

    Returns
    -------
    (Path, list of str)
        The resolved existing part, and the components still missing below it (empty when
        the whole path exists).
    """
    pending = list(Path(os.path.abspath(path)).parts[1:])
    current = Path("/")
    _trusted_entry(current, os.lstat(current), euid, role, path)
    links = 0
    while pending:
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            current = current.parent
            continue
        entry = current / part
        try:
            st = os.lstat(entry)
        except FileNotFoundError:
            return current, [part, *pending]
        except OSError as exc:
            raise UserError(f"cannot check {entry}: {exc.strerror or exc}", exit_code=1) from None
        if pending or stat.S_ISLNK(st.st_mode):  # the directory itself: private_dir's rules
            _trusted_entry(entry, st, euid, role, path)
        if stat.S_ISLNK(st.st_mode):
            links += 1
            if links > MAX_SYMLINKS:
                raise UserError(f"{path}: too many symbolic links", exit_code=1)
            target = Path(os.readlink(entry))
            if target.is_absolute():
                current = Path("/")
                pending = [*target.parts[1:], *pending]
            else:
                pending = [*target.parts, *pending]
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise UserError(
                f"{entry} is not a directory; the daemon's {role.name} {path} cannot be "
                f"there: {role.advice}",
                exit_code=1,
            )
        current = entry
    return current, []


def private_dir(path: Path, role: DirRole, *, create: bool) -> Path | None:
    """Check (and, with ``create``, make) one of the daemon's directories.

    Parameters
    ----------
    path : Path
        The directory.
    role : DirRole
        What it is (for messages).
    create : bool
        Make the missing components with mode 0700; else a missing directory gives None.

    Returns
    -------
    Path or None
        The directory's resolved path (every component checked), or None when it is
        missing and ``create`` is false.

    Raises
    ------
    UserError
        The directory or a component above it is unsafe (see :meth:`DaemonPaths.ensure`),
        or it cannot be created (exit code 1).
    """
    euid = os.geteuid()
    where, missing = _resolve_trusted(path, euid, role)
    if missing:
        if not create:
            return None
        for part in missing:
            where = where / part
            try:
                os.mkdir(where, 0o700)  # the umask can only take bits away
            except FileExistsError:
                pass  # made meanwhile: checked below like any existing directory
            except OSError as exc:
                raise UserError(
                    f"cannot create {where}: {exc.strerror or exc}", exit_code=1
                ) from None
        where, missing = _resolve_trusted(path, euid, role)
        if missing:
            raise UserError(f"cannot create {path}: it vanished meanwhile", exit_code=1)
    st = os.lstat(where)
    if st.st_uid != euid:
        raise UserError(
            f"{path}: the daemon's {role.name} belongs to {owner_text(st.st_uid)}, not to "
            f"you ({owner_text(euid)}); refusing to use it (its owner could replace the "
            f"socket, queue or lock in it): {role.advice}",
            exit_code=1,
        )
    mode = stat.S_IMODE(st.st_mode)
    if others_may_write(st, euid):
        raise UserError(
            f"{path}: the daemon's {role.name} is writable by others (mode {mode:04o}); "
            "refusing to use it (anything in it may have been planted): remove it, or check "
            f"its contents and chmod 700 it; or {role.advice}",
            exit_code=1,
        )
    if mode != 0o700:
        os.chmod(where, 0o700)  # our own directory: keep the logs and the socket private
    return where
