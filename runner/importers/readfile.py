"""Reading an imported file within a size cap: the one way importers get a file's text.

``benchrun analyze`` and ``benchrun compare`` read files other tools (or other people)
wrote: hyperfine, pyperf and Google Benchmark JSON, long-form CSV, benchrun's own exports,
a weights CSV. Parsing costs several times the file's size in memory (a 200 MB hyperfine
file took 2.8 GB of RSS: the text, the parsed JSON's floats, one array per process), so a
file larger than :data:`MAX_IMPORT_BYTES` (64 MiB; the largest realistic export measured is
a few MiB, docs/imported-data.md "Size") is refused with one line, before it is read:
the size ``fstat`` reports on the opened file is checked first, and a pipe, a device or a
file still growing is read at most one byte past the cap. A gzip file (pyperf writes
``.json.gz``) is held to the same cap compressed and decompressed (a 64 KiB gzip bomb
expands to 64 MiB and stops there). ``BENCHRUN_MAX_IMPORT_BYTES`` raises the cap.
"""

from __future__ import annotations

import os
import stat
import zlib
from pathlib import Path

from benchrun.runner.config.yamlsource import env_limit
from benchrun.runner.errors import UserError
from benchrun.runner.format import printable

#: largest imported file read, in bytes (compressed and decompressed)
MAX_IMPORT_BYTES = 64 << 20
#: environment variable that raises :data:`MAX_IMPORT_BYTES`
MAX_IMPORT_BYTES_ENV = "BENCHRUN_MAX_IMPORT_BYTES"
#: bytes read at a time from a pipe or a decompressor
_CHUNK = 1 << 20


def import_limit() -> int:
    """:data:`MAX_IMPORT_BYTES`, or the value of :data:`MAX_IMPORT_BYTES_ENV`."""
    return env_limit(MAX_IMPORT_BYTES_ENV, MAX_IMPORT_BYTES, "bytes")


def _too_big(path: Path, limit: int, what: str) -> UserError:
    """The one line refusing ``path``: ``what`` it is ("12 bytes", "decompresses to more")."""
    return UserError(
        f"{printable(str(path))}: {what} than the {limit} bytes imported files may hold; "
        f"set {MAX_IMPORT_BYTES_ENV} to raise the limit"
    )


def read_import_bytes(path: str | Path, kind: str = "a data file") -> bytes:
    """The bytes of the file at ``path`` (decompressed when it is gzip), refused with a
    :class:`UserError` when it is missing, a directory, unreadable, or larger than
    :func:`import_limit` (module docstring); ``kind`` names the file in messages."""
    path = Path(path)
    limit = import_limit()
    name = printable(str(path))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise UserError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{name}: is a directory, expected {kind}") from None
    except OSError as exc:
        raise UserError(f"{name}: cannot read ({exc.strerror})") from None
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode) or (stat.S_ISREG(st.st_mode) and st.st_size > limit):
        os.close(fd)
        if stat.S_ISDIR(st.st_mode):
            raise UserError(f"{name}: is a directory, expected {kind}")
        raise _too_big(path, limit, f"{st.st_size} bytes, more")
    with os.fdopen(fd, "rb") as fh:
        try:
            data = fh.read(limit + 1)  # a pipe, /proc, a file growing: no more than this
        except OSError as exc:
            raise UserError(f"{name}: cannot read ({exc.strerror})") from None
    if len(data) > limit:
        raise _too_big(path, limit, "more")
    if data[:2] == b"\x1f\x8b":
        return _gunzip(data, path, limit)
    return data


def _gunzip(data: bytes, path: Path, limit: int) -> bytes:
    """``data`` (one or more gzip members) decompressed, at most ``limit`` bytes of it."""
    out = bytearray()
    rest = data
    while rest:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)  # a gzip header and trailer
        chunk = rest
        try:
            while chunk:
                out += d.decompress(chunk, limit + 1 - len(out))
                if len(out) > limit:
                    raise _too_big(path, limit, "decompresses to more")
                chunk = d.unconsumed_tail
            out += d.flush()
        except zlib.error as exc:
            raise UserError(f"{printable(str(path))}: damaged gzip file ({exc})") from None
        if not d.eof:
            raise UserError(f"{printable(str(path))}: damaged gzip file (truncated)")
        if len(out) > limit:
            raise _too_big(path, limit, "decompresses to more")
        rest = d.unused_data.lstrip(b"\x00")  # members follow each other; padding NULs
    return bytes(out)


def read_import_text(path: str | Path, kind: str = "a data file") -> str:
    """The UTF-8 text (a BOM dropped) of :func:`read_import_bytes`; a file that is not
    UTF-8 is refused with one line."""
    data = read_import_bytes(path, kind)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UserError(f"{printable(str(path))}: not a text file (not UTF-8)") from None
