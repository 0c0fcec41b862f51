"""Helpers for end-to-end tests: run the real ``benchrun`` console script, read SQLite back."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
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


def cli(
    *args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    """``benchrun ARGS`` in this process: ``benchrun.runner.cli.main``, the function the
    console script calls, without the interpreter's start-up (0.4-1 s a call). For tests
    that check what a command prints, stores or returns; ``run_benchrun`` for those that
    need a separate process (signals, the console script itself, a child's exit status).
    stdout and stderr are captured as text; ``env`` is set for the call only; a call
    longer than ``timeout`` seconds fails the test (SIGALRM), as the subprocess would."""
    from benchrun.runner.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = {k: os.environ.get(k) for k in env or {}}
    old_cwd = os.getcwd()
    os.environ.update(env or {})

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"benchrun {' '.join(args)}: still running after {timeout} s")

    old_alarm = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse: --help, usage errors
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_alarm)
        os.chdir(old_cwd)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return subprocess.CompletedProcess(["benchrun", *args], code, out.getvalue(), err.getvalue())


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


def rounds_stored(db: Path) -> int:
    """The rounds ``db`` holds; 0 while a live run has not yet created the file or its tables."""
    if not db.exists():
        return 0
    try:
        return int(query(db, "SELECT count(*) FROM round")[0][0])
    except sqlite3.OperationalError:
        return 0
