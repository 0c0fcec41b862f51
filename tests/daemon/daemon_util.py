"""Helpers for daemon tests: private XDG directories, the real ``benchrun`` console script,
the daemon started and always killed, the queue and results read back with plain sqlite3."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from e2e_util import benchrun_argv  # noqa: E402

from benchrun.runner.daemon.server import read_pid_file  # noqa: E402


def expected_reading(round_index: int) -> float:
    """What the deterministic workload prints in round ``round_index`` (computed here)."""
    return float(round_index * 7 % 13)


class Env:
    """A private set of XDG directories (short paths: a socket path has 107 bytes at most)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="brd"))
        self.vars = {
            "XDG_DATA_HOME": str(self.root / "d"),
            "XDG_STATE_HOME": str(self.root / "s"),
            "XDG_RUNTIME_DIR": str(self.root / "r"),
        }
        self.queue_db = self.root / "d" / "benchrun" / "queue.db"
        self.socket = self.root / "r" / "benchrun" / "daemon.sock"
        self.pid_file = self.root / "s" / "benchrun" / "daemon.pid"
        self.daemons: list[subprocess.Popen[bytes]] = []

    def env(self) -> dict[str, str]:
        full = dict(os.environ)
        full.update(self.vars)
        return full

    def run(
        self, *args: str, timeout: float = 60, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``benchrun ARGS`` (the console script) to completion."""
        return subprocess.run(
            [*benchrun_argv(), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            cwd=cwd,
        )

    def cli(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """``benchrun ARGS`` in this process (``runner.cli.main``: the same code as the
        console script without its ~2 s of imports); stdout/stderr captured as text."""
        import contextlib
        import io

        from benchrun.runner.cli import main

        out, err = io.StringIO(), io.StringIO()
        saved = {k: os.environ.get(k) for k in self.vars}
        old_cwd = os.getcwd()
        os.environ.update(self.vars)
        try:
            if cwd is not None:
                os.chdir(cwd)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main(list(args))
                except SystemExit as exc:  # argparse
                    code = exc.code if isinstance(exc.code, int) else 2
        finally:
            os.chdir(old_cwd)
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        return subprocess.CompletedProcess(
            ["benchrun", *args], code, out.getvalue(), err.getvalue()
        )

    def start_daemon(self, *extra: str, fast: bool = True) -> subprocess.Popen[bytes]:
        """Start the daemon in the foreground as our child; wait until it answers.

        ``fast``: ``python -m benchrun.runner.daemon`` (exactly what ``benchrun daemon start``
        detaches) instead of ``benchrun daemon start --foreground`` (which first imports
        the whole CLI, ~1-2 s).
        """
        argv = (
            [sys.executable, "-m", "benchrun.runner.daemon", *extra]
            if fast
            else [*benchrun_argv(), "daemon", "start", "--foreground", *extra]
        )
        log = open(self.root / "daemon-test.log", "ab")  # noqa: SIM115
        proc = subprocess.Popen(
            argv, env=self.env(), stdout=log, stderr=log, stdin=subprocess.DEVNULL
        )
        log.close()
        self.daemons.append(proc)
        wait_for(lambda: self.answers() or proc.poll() is not None, 30, "daemon start")
        assert proc.poll() is None, (self.root / "daemon-test.log").read_text()
        return proc

    def answers(self) -> bool:
        """True when the daemon answers a ping."""
        from benchrun.runner.daemon.protocol import request
        from benchrun.runner.errors import UserError

        try:
            request("ping", self.paths(), timeout=2)
        except UserError:
            return False
        return True

    def paths(self) -> Any:
        from benchrun.runner.daemon.paths import DaemonPaths

        return DaemonPaths(
            self.root / "d" / "benchrun", self.root / "s" / "benchrun", self.root / "r" / "benchrun"
        )

    def entry(self, entry_id: int) -> dict[str, Any]:
        """One queue entry read from queue.db with plain sqlite3."""
        conn = sqlite3.connect(f"file:{self.queue_db}?mode=ro", uri=True, timeout=10)
        conn.row_factory = sqlite3.Row
        try:
            row = conn.execute("SELECT * FROM entry WHERE id = ?", (entry_id,)).fetchone()
        finally:
            conn.close()
        assert row is not None
        return dict(row)

    def queue_log(self, entry_id: int) -> list[tuple[str, str]]:
        conn = sqlite3.connect(f"file:{self.queue_db}?mode=ro", uri=True, timeout=10)
        try:
            return conn.execute(
                "SELECT kind, message FROM log WHERE entry_id = ? ORDER BY id", (entry_id,)
            ).fetchall()
        finally:
            conn.close()

    def wait_state(
        self, entry_id: int, states: tuple[str, ...], timeout: float = 60
    ) -> dict[str, Any]:
        """Wait until the entry is in one of ``states`` (or a final state: then fail)."""
        final = {"done", "failed", "cancelled"} - set(states)

        def reached() -> bool:
            state = self.entry(entry_id)["state"]
            assert state not in final, self.entry(entry_id)
            return state in states

        wait_for(reached, timeout, f"entry {entry_id} in {states}")
        return self.entry(entry_id)

    def cleanup(self) -> None:
        for proc in self.daemons:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait(10)
        pid = read_pid_file(self.pid_file)
        if pid and _alive(pid) and _is_our_daemon(pid, self.root):
            os.kill(pid, signal.SIGKILL)  # a detached daemon of this test
        shutil.rmtree(self.root, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _is_our_daemon(pid: int, root: Path) -> bool:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return str(root).encode() in environ


@contextmanager
def xdg_env() -> Iterator[Env]:
    env = Env()
    try:
        yield env
    finally:
        env.cleanup()


def wait_for(cond: Callable[[], bool], timeout: float, what: str, interval: float = 0.02) -> None:
    """Poll ``cond`` until true; fail the test after ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def write_experiment(directory: Path, text: str, name: str = "exp.yaml") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text))
    return path


def det_experiment(
    directory: Path,
    out: Path,
    rounds: int,
    *,
    name: str = "det",
    workloads: tuple[str, ...] = ("a",),
    sleep: float = 0.0,
    settings: str = "",
) -> Path:
    """An experiment whose workloads print ``v=<7 r mod 13>`` in round r (after sleeping
    ``sleep`` seconds), fixed mode, ``rounds`` rounds, no warm-up."""
    code = f"import time; time.sleep({sleep}); " if sleep else ""
    command = f'["python3", "-c", "{code}print(\'v=%d\' % ({{round}} * 7 % 13))"]'
    items = "".join(
        f"""
          - name: {w}
            command: {command}
            metric: readings
            readings: {{pattern: 'v=([0-9]+)', unit: u}}"""
        for w in workloads
    )
    extra = f", {settings}" if settings else ""
    return write_experiment(
        directory,
        f"""
        name: {name}
        output: {out}
        settings: {{adaptive: false, rounds: {rounds}, warmup_rounds: 0{extra}}}
        workloads:{items}
        """,
        name=f"{name}.yaml",
    )


def rounds_of(db: Path) -> list[tuple[str, int, str, tuple[float, ...]]]:
    """(workload, round_index, status, readings) of every round, read with plain sqlite3."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        rows = conn.execute(
            "SELECT w.name, r.round_index, r.status, r.id FROM round r JOIN workload w"
            " ON w.id = r.workload_id ORDER BY w.name, r.round_index, r.id"
        ).fetchall()
        out = []
        for name, idx, status, rid in rows:
            vals = tuple(
                v
                for (v,) in conn.execute(
                    "SELECT value FROM reading WHERE round_id = ? ORDER BY idx", (rid,)
                )
            )
            out.append((name, idx, status, vals))
        return out
    finally:
        conn.close()


def count_rounds(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
        try:
            return int(conn.execute("SELECT count(*) FROM round").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def fill(directory: Path) -> Path:
    """Write zeros until ENOSPC (big blocks, then small ones); returns the filler file."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (65536, 512, 1):
            block = b"\0" * size
            try:
                while True:
                    os.write(fd, block)
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler
