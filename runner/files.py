"""Files written whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path


def atomic_write_text(path: Path, text: str) -> int:
    """Replace ``path`` with ``text`` (UTF-8) so that a reader sees the old or the new file,
    never a part: write ``path.tmp`` beside it, then :func:`os.replace` (atomic on POSIX).

    Creates missing parent directories. Returns the size written, in bytes. Raises
    ``OSError`` as the file system does; the temporary file is removed on failure.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        size = tmp.write_bytes(text.encode("utf-8"))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return size
