"""Helpers for end-to-end tests: run the real ``benchrun`` console script, read SQLite back."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def benchrun_argv() -> list[str]:
    """The installed console script (as a user would call it), else ``python -m``."""
    exe = shutil.which("benchrun")
    return [exe] if exe else [sys.executable, "-m", "benchrun.runner.cli"]


def run_benchrun(
    *args: str, cwd: Path | None = None, timeout: float = 120, env: dict | None = None
) -> subprocess.CompletedProcess:
    """Run ``benchrun ARGS`` to completion; returns the completed process (text mode)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [*benchrun_argv(), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        stdin=subprocess.DEVNULL,
    )


def start_benchrun(*args: str, cwd: Path | None = None) -> subprocess.Popen:
    """Start ``benchrun ARGS`` without waiting (for interruption tests)."""
    return subprocess.Popen(
        [*benchrun_argv(), *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def write_experiment(directory: Path, text: str, name: str = "exp.yaml") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text))
    return path


def query(db: Path, sql: str, params: tuple = ()) -> list[tuple]:
    """Read the store with plain sqlite3 (not through benchrun's own code)."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()
