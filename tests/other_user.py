"""Helpers for tests that play a second local user (the threat model of docs/security.md).

The second user is ``nobody`` (uid/gid 65534), present on every Linux distribution, so no
account is created. The suite runs as root in CI; tests that need root to change owners or
drop privileges skip elsewhere with :data:`needs_root`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

#: uid and gid of ``nobody``: the other user of these tests
OTHER_UID = 65534
OTHER_GID = 65534

#: mark for a test that must run as root (chown to another user, setuid in a child)
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="plays another user: needs root")


def plant(path: Path, data: bytes | str = b"", *, uid: int = OTHER_UID, mode: int = 0o644) -> Path:
    """Write ``data`` to ``path`` and give it to ``uid`` with ``mode``, as if that user wrote it.

    Returns ``path``. Needs root.
    """
    raw = data.encode() if isinstance(data, str) else data
    path.write_bytes(raw)
    os.chown(path, uid, uid)
    os.chmod(path, mode)
    return path


def plant_symlink(link: Path, target: Path | str, *, uid: int = OTHER_UID) -> Path:
    """Create the symbolic link ``link`` -> ``target`` owned by ``uid`` (the link itself)."""
    os.symlink(str(target), link)
    os.lchown(link, uid, uid)
    return link


def shared_dir(path: Path) -> Path:
    """Make ``path`` a directory every user may write (mode 01777, like /tmp) and return it."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o1777)
    return path


def as_other_user(fn: Callable[[], Any], *, uid: int = OTHER_UID, gid: int = OTHER_GID) -> Any:
    """Run ``fn`` in a forked child that dropped to ``uid``/``gid``; return what it returned.

    The value must be JSON-serialisable; it comes back through a pipe. An exception in the
    child fails the calling test with its repr. The child never returns into pytest (it ends
    with ``os._exit``). Needs root.
    """
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            payload = json.dumps({"value": fn()})
        except BaseException as exc:  # noqa: BLE001 - report, never return into pytest
            payload = json.dumps({"child_error": repr(exc)})
            code = 1
        try:
            os.write(w, payload.encode())
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 65536):
        chunks.append(chunk)
    os.close(r)
    os.waitpid(pid, 0)
    got = json.loads(b"".join(chunks))
    assert "child_error" not in got, got["child_error"]
    return got["value"]
