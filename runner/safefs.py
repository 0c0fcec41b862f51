"""Files in a directory another user may be able to write, opened without trusting it.

benchrun often runs as root, and a campaign directory may be shared (``/tmp/results``,
a group project directory). Anything another user can write there is hostile input
(docs/security.md): a symbolic link planted where benchrun will create a file, a file of
theirs under a name benchrun reads, a directory swapped while a path is walked. The
functions here are the one place that opens such files:

- :func:`open_dir` walks a path from ``/`` one component at a time with ``O_NOFOLLOW``; a
  symbolic link on the way is followed only where nobody else could have put it (in a
  directory owned by root or us that others cannot write, or, in a sticky directory, a
  link owned by root or us); missing directories are created 0700 whatever the umask; the
  directory at the end must belong to root or us and be writable by others only with the
  sticky bit (:func:`check_dir`).
- :func:`open_file` opens a name relative to that verified descriptor with
  ``O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK``, never truncating, creates with
  ``O_CREAT | O_EXCL`` and an explicit mode, and checks with ``fstat`` on the opened
  descriptor that it is a regular file with one link, owned by us and (where its content
  is trusted) not writable by group or others.
- :func:`read_trusted` reads a small record that may decide what benchrun does (the
  in-flight record names processes to kill): only through those checks.

A refusal is an :class:`UnsafePath`: one line naming the path, what is wrong and what to do.
"""

from __future__ import annotations

import errno
import grp
import os
import pwd
import stat
from pathlib import Path

from benchrun.runner.errors import UserError

__all__ = [
    "EXIT_NO_SPACE",
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "PUBLIC_DIR_MODE",
    "PUBLIC_FILE_MODE",
    "UnsafePath",
    "check_dir",
    "cannot",
    "check_entry",
    "create_file",
    "open_dir",
    "open_file",
    "others_may_write",
    "private_group",
    "read_trusted",
]

#: mode of every directory benchrun creates (campaign, report and runtime directories)
PRIVATE_DIR_MODE = 0o700
#: mode of a directory that belongs to a report (its figures), by the same choice as
#: :data:`PUBLIC_FILE_MODE`
PUBLIC_DIR_MODE = 0o755
#: mode of every file benchrun creates unless told otherwise: stores, locks, records,
#: status files and submitted experiment texts hold ``env:`` values, which may be secrets
PRIVATE_FILE_MODE = 0o600
#: mode of the files meant to be handed around: reports and exports (the choice is made
#: where they are written: runner/report/render.py, runner/commands/export.py)
PUBLIC_FILE_MODE = 0o644
#: exit status when a file cannot be created for lack of space (EX_TEMPFAIL, as a full
#: store: runner/store/database.py EXIT_DISK_FULL): try again once space is freed
EXIT_NO_SPACE = 75
#: most symbolic links followed in one walk (the kernel's own limit, MAXSYMLINKS)
MAX_LINKS = 40

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class UnsafePath(UserError):
    """A path benchrun refuses to use because another user could have planted or changed
    what is there (or it is not what benchrun expects: a symlink, a directory...).

    ``path``: the path as shown; ``reason``: what is wrong, without the path (for notes
    that say what was left alone)."""

    def __init__(self, path: Path | str, reason: str, fix: str) -> None:
        super().__init__(f"{path}: {reason}; {fix}")
        self.path = str(path)
        self.reason = reason


def cannot(path: Path | str, exc: OSError, action: str = "create") -> UserError:
    """The one line for a file or directory that cannot be made or opened (a full disk:
    exit :data:`EXIT_NO_SPACE`, as a full store)."""
    why = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return UserError(
            f"cannot {action} {path}: {why}; free some space (or choose another output "
            "directory) and run again",
            exit_code=EXIT_NO_SPACE,
        )
    return UserError(f"cannot {action} {path}: {why}; choose a directory you may write")


def private_group(gid: int, euid: int) -> bool:
    """Whether ``gid`` is the non-root user ``euid``'s own private group (the "user private
    group" scheme, whose umask 002 makes files group-writable): its primary group, named
    like the user, with no other member. Root's group is never taken as private (system
    accounts often have gid 0). The same rule as the daemon's directories
    (runner/daemon/paths.py)."""
    if euid == 0:
        return False
    try:
        user = pwd.getpwuid(euid)
        group = grp.getgrgid(gid)
    except KeyError:
        return False
    return (
        user.pw_gid == gid and group.gr_name == user.pw_name and set(group.gr_mem) <= {user.pw_name}
    )


def others_may_write(st: os.stat_result, euid: int | None = None) -> bool:
    """Whether someone other than the owner may write what ``st`` describes: the
    other-write bit, or the group-write bit of a group that is not the user's private group
    (:func:`private_group`; ``euid`` defaults to ours)."""
    if st.st_mode & stat.S_IWOTH:
        return True
    me = os.geteuid() if euid is None else euid
    return bool(st.st_mode & stat.S_IWGRP) and not private_group(st.st_gid, me)


def check_dir(st: os.stat_result, shown: Path | str, euid: int | None = None) -> None:
    """Refuse a directory whose files another user could plant or swap: one owned by
    someone other than root or us, or writable by group or others without the sticky bit
    (where they may rename or delete our files and put theirs in their place)."""
    me = os.geteuid() if euid is None else euid
    if st.st_uid not in (0, me):
        raise UnsafePath(
            shown,
            f"the directory belongs to uid {st.st_uid}, who could plant or swap the files "
            "benchrun keeps there",
            "choose a directory of yours",
        )
    if others_may_write(st, me) and not st.st_mode & stat.S_ISVTX:
        raise UnsafePath(
            shown,
            f"the directory is writable by other users (mode {stat.S_IMODE(st.st_mode):04o}, "
            "no sticky bit), who could swap the files benchrun keeps there",
            "chmod go-w it (or +t), or choose another directory",
        )


def _may_follow(parent: os.stat_result, link: os.stat_result, euid: int) -> bool:
    """Whether a symbolic link found in a directory was put there by root or us: the
    directory is ours or root's and nobody else may write it, or it is sticky (others may
    add names but not replace ours) and the link is ours or root's."""
    if parent.st_uid not in (0, euid):
        return False
    if not others_may_write(parent, euid):
        return True
    return bool(parent.st_mode & stat.S_ISVTX) and link.st_uid in (0, euid)


def _show(names: list[str], part: str = "") -> str:
    return "/" + "/".join([*names, part] if part else names)


def open_dir(
    path: Path | str, *, create: bool = False, check: bool = True, mode: int = PRIVATE_DIR_MODE
) -> int:
    """A descriptor (``O_RDONLY | O_DIRECTORY``) of directory ``path``, reached without
    following a symbolic link another user could have planted (module docstring).

    Parameters
    ----------
    path : Path or str
        The directory; relative to the working directory when not absolute.
    create : bool
        Make missing directories, with ``mode`` whatever the umask (an existing directory
        keeps its mode).
    check : bool
        Refuse the directory at the end unless it is root's or ours and writable by others
        only with the sticky bit (:func:`check_dir`). Off for a directory that only receives
        a finished file by rename (a report), where no file in it is ever read.
    mode : int
        The mode of the directories made: 0700 (:data:`PRIVATE_DIR_MODE`) unless a report's
        own directory (:data:`PUBLIC_DIR_MODE`).

    Raises
    ------
    UnsafePath
        A component is a symlink others could have put there, or not a directory; the
        directory at the end fails :func:`check_dir`.
    FileNotFoundError
        A component is missing and ``create`` is false.
    UserError
        A directory cannot be made or entered (a full disk: exit 75).
    """
    euid = os.geteuid()
    given = Path(path)
    # ".." is taken as the kernel takes it (the parent of where a symlink led), not lexically
    todo = list((given if given.is_absolute() else Path(os.getcwd()) / given).parts[1:])
    fds = [os.open("/", _DIR_FLAGS)]
    names: list[str] = []
    links = 0
    try:
        while todo:
            part = todo.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if len(fds) > 1:
                    os.close(fds.pop())
                    names.pop()
                continue
            shown = _show(names, part)
            made = False
            try:
                try:
                    fd = os.open(part, _DIR_FLAGS, dir_fd=fds[-1])
                except FileNotFoundError:
                    if not create:
                        raise
                    try:
                        os.mkdir(part, mode, dir_fd=fds[-1])
                        made = True
                    except FileExistsError:
                        pass
                    fd = os.open(part, _DIR_FLAGS, dir_fd=fds[-1])
            except FileNotFoundError:
                raise
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise cannot(shown, exc, "create" if create else "open") from None
                target = _link_target(fds[-1], part, shown, euid)
                links += 1
                if links > MAX_LINKS:
                    raise UnsafePath(
                        shown, "too many symbolic links", "give the real path"
                    ) from None
                if target.startswith("/"):
                    while len(fds) > 1:
                        os.close(fds.pop())
                    names.clear()
                todo[:0] = list(Path(target).parts[1 if target.startswith("/") else 0 :])
                continue
            if made and os.fstat(fd).st_uid == euid:
                os.fchmod(fd, mode)  # the umask may have taken bits away
            fds.append(fd)
            names.append(part)
        if check:
            check_dir(os.fstat(fds[-1]), _show(names), euid)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    for fd in fds[:-1]:
        os.close(fd)
    return fds[-1]


def _link_target(dir_fd: int, name: str, shown: str, euid: int) -> str:
    """The target of the symbolic link ``name`` in ``dir_fd`` when it may be followed;
    :class:`UnsafePath` when it is not a link (a file where a directory should be) or was
    possibly planted."""
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if not stat.S_ISLNK(st.st_mode):
        raise UnsafePath(shown, "not a directory", "choose a directory")
    if not _may_follow(os.fstat(dir_fd), st, euid):
        raise UnsafePath(
            shown,
            f"a symbolic link (owned by uid {st.st_uid}) in a directory other users can "
            "write, so it may have been planted",
            "give the real path",
        )
    return os.readlink(name, dir_fd=dir_fd)


def _check_file(st: os.stat_result, shown: Path | str, private: bool, euid: int) -> None:
    """Refuse an opened (or lstat'ed) entry that is not a regular file of ours with one link
    (``private``: not writable by group or others either)."""
    fix = "remove it (its owner or root) or choose another directory"
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePath(shown, f"a symbolic link (owned by uid {st.st_uid})", fix)
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath(shown, "not a regular file", fix)
    if st.st_uid != euid:
        raise UnsafePath(
            shown,
            f"owned by uid {st.st_uid}, not by you: another user may have planted it",
            f"run benchrun as uid {st.st_uid} if the file is theirs, else {fix}",
        )
    if st.st_nlink != 1:
        raise UnsafePath(shown, f"has {st.st_nlink} hard links (a planted link?)", fix)
    if private and others_may_write(st, euid):
        raise UnsafePath(
            shown,
            f"writable by other users (mode {stat.S_IMODE(st.st_mode):04o}), who could have "
            "changed it",
            "chmod go-w it if you trust its content, or remove it",
        )


def check_entry(dir_fd: int, name: str, shown: Path | str, *, private: bool = True) -> bool:
    """Whether ``name`` exists in the verified directory ``dir_fd``; when it does, it must
    pass the checks of :func:`open_file` (looked at without following a link), else
    :class:`UnsafePath`. For files another program opens by path (SQLite's database and
    its ``-wal``, ``-shm`` and ``-journal`` files)."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    _check_file(st, shown, private, os.geteuid())
    return True


def create_file(
    dir_fd: int, name: str, shown: Path | str, mode: int = PRIVATE_FILE_MODE, flags: int = 0
) -> int:
    """Create ``name`` in ``dir_fd`` (``O_CREAT | O_EXCL``: never an existing file or
    symlink) with exactly ``mode``, whatever the umask; returns its descriptor, opened
    ``O_WRONLY`` unless ``flags`` holds ``O_RDWR``. ``FileExistsError`` when the name is
    taken; ``OSError`` as the file system says (:func:`cannot` makes it one line)."""
    access = os.O_RDWR if flags & os.O_RDWR else os.O_WRONLY
    fd = os.open(name, access | os.O_CREAT | os.O_EXCL | _FILE_FLAGS, mode, dir_fd=dir_fd)
    try:
        os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(
    dir_fd: int,
    name: str,
    shown: Path | str,
    *,
    write: bool = False,
    create: bool = False,
    private: bool = True,
    mode: int = PRIVATE_FILE_MODE,
) -> int:
    """Open ``name`` in the verified directory ``dir_fd``: never through a symlink, never
    truncated, a regular file of ours with one link (``private``: not writable by group or
    others), checked with ``fstat`` on the opened descriptor.

    ``write``: ``O_RDWR`` rather than ``O_RDONLY``; ``create``: make it (``O_EXCL``, with
    ``mode`` whatever the umask) when missing. Raises :class:`UnsafePath` (planted or not
    ours), ``FileNotFoundError`` (missing, ``create`` false), ``OSError`` as the file
    system says otherwise (a full disk: :func:`cannot` makes it one line)."""
    access = os.O_RDWR if write else os.O_RDONLY
    while True:
        try:
            fd = os.open(name, access | _FILE_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            if not create:
                raise
            try:
                return create_file(dir_fd, name, shown, mode, access)
            except FileExistsError:
                continue  # made meanwhile: open what is there, with the same checks
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                _check_file(st, shown, private, os.geteuid())  # raises: a symlink
            raise
        try:
            _check_file(os.fstat(fd), shown, private, os.geteuid())
        except BaseException:
            os.close(fd)
            raise
        return fd


def read_trusted(path: Path, limit: int) -> bytes:
    """The content of ``path``, at most ``limit`` bytes, when it may decide what benchrun
    does: a regular file of ours with one link that nobody else may write, in a directory
    reached as :func:`open_dir` does (not required to be ours: the file's own checks
    decide). ``FileNotFoundError`` when missing; :class:`UnsafePath` when refused (also
    when longer than ``limit``)."""
    dir_fd = open_dir(path.parent, check=False)
    try:
        fd = open_file(dir_fd, path.name, path)
    finally:
        os.close(dir_fd)
    try:
        data = os.read(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise UnsafePath(path, f"longer than {limit} bytes", "remove it")
    return data
