"""Fixtures of the daemon tests (helpers in daemon_util.py)."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_util import Env, xdg_env


@pytest.fixture
def xdg() -> Iterator[Env]:
    """Private XDG directories; every daemon started through it is killed at the end."""
    with xdg_env() as env:
        yield env


@pytest.fixture
def small_fs() -> Iterator[Path]:
    """A 4 MiB tmpfs, or a skip saying why it cannot be mounted."""
    where = Path(tempfile.mkdtemp(prefix="brfull"))
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        where.rmdir()
        pytest.skip(
            "cannot mount a small tmpfs to fill up (needs root or CAP_SYS_ADMIN): "
            + (proc.stderr.strip() or f"mount exited {proc.returncode}")
        )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
        where.rmdir()
