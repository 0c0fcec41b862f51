"""Build an expensive read-only fixture (real campaigns) once per test run, not once per
pytest-xdist worker or per module.

The first caller builds into a directory of the run's temporary root (shared by every
worker: ``basetemp/..`` under xdist, the basetemp itself serially) while holding an
``flock``; the others wait for the lock and find it built. Only fixtures whose builds are
the same by construction (the same seeded experiments) are shared this way, and their
tests only read them (or write reports beside them, the same for every reader).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path


def run_root(tmp_dir: Path) -> Path:
    """The directory every worker of this run shares, from a directory made by
    ``tmp_path_factory.mktemp`` (``<run>/popen-gwN/name0`` under xdist, ``<run>/name0``)."""
    base = tmp_dir.parent  # the worker's basetemp
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def build_once(tmp_dir: Path, key: str, build: Callable[[Path], object]) -> Path:
    """The directory ``build(directory)`` filled, built once per test run for ``key``
    (``tmp_dir``: any directory made by ``tmp_path_factory.mktemp`` in this run)."""
    shared = run_root(tmp_dir) / f"shared-{key}"
    shared.mkdir(parents=True, exist_ok=True)
    work = shared / "build"
    with open(shared / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (shared / ".built").exists():
                shutil.rmtree(work, ignore_errors=True)  # a build that failed half-way
                work.mkdir()
                build(work)
                (shared / ".built").write_text("ok")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return work
