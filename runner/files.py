"""Files written whole or not at all, with an explicit mode.

The mode is set on the file itself, whatever the umask: 0600 unless the caller chooses
otherwise (reports and exports, meant to be handed around, choose 0644:
:data:`~benchrun.runner.safefs.PUBLIC_FILE_MODE`). The directory is reached without
following a symlink another user could have planted (runner/safefs.py), the temporary
file is created ``O_EXCL`` under a random name, and the rename replaces whatever is at the
name (a planted symlink is replaced, never followed).
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path

from benchrun.runner.errors import UserError
from benchrun.runner.safefs import PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, create_file, open_dir

__all__ = ["atomic_write_bytes", "atomic_write_text"]


def atomic_write_bytes(
    path: Path, data: bytes, mode: int = PRIVATE_FILE_MODE, dir_mode: int = PRIVATE_DIR_MODE
) -> int:
    """Replace ``path`` with ``data`` so that a reader sees the old or the new file, never a
    part: write a temporary file beside it, then rename it over ``path`` (atomic on POSIX).

    Creates missing parent directories with ``dir_mode`` (0700 unless a report's own
    directory). The file gets exactly ``mode``. Returns the
    size written, in bytes. Raises ``OSError`` as the file system does (the temporary file
    is then removed), and ``OSError`` (``EPERM``, the one-line reason as its text) when the
    directory is refused or cannot be made (runner/safefs.py
    :func:`~benchrun.runner.safefs.open_dir`), so that every caller handles one exception.
    """
    try:
        dir_fd = open_dir(path.parent, create=True, check=False, mode=dir_mode)
    except UserError as exc:
        raise OSError(errno.EPERM, exc.message) from None
    try:
        tmp = f".{path.name}.{secrets.token_hex(4)}.tmp"
        fd = create_file(dir_fd, tmp, path.with_name(tmp), mode)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            os.rename(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass
            raise
    finally:
        os.close(dir_fd)
    return len(data)


def atomic_write_text(path: Path, text: str, mode: int = PRIVATE_FILE_MODE) -> int:
    """:func:`atomic_write_bytes` of ``text`` in UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8"), mode)


def make_campaign_dir(campaign_dir: Path, given: str) -> None:
    """Create ``campaign_dir`` (and its parents) or raise a UserError saying why not.

    ``given`` names where the location came from (``-o DIR`` or the file's ``output:``),
    so that the one-line error points at what to change.
    """
    blocker = next(
        (p for p in (campaign_dir, *campaign_dir.parents) if p.exists() and not p.is_dir()),
        None,
    )
    if blocker is not None:
        raise UserError(
            f"{given}: {blocker} is a file, not a directory; choose a directory for the results"
        )
    try:  # made 0700 whatever the umask, refused if another user could plant files there
        os.close(open_dir(campaign_dir, create=True))
    except OSError as exc:
        raise UserError(
            f"{given}: cannot create {campaign_dir}: {exc.strerror or exc}; choose a "
            "writable directory"
        ) from None
    if not os.access(campaign_dir, os.W_OK | os.X_OK):
        raise UserError(f"{given}: cannot write into {campaign_dir}; choose a writable directory")
