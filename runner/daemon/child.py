"""One ``benchrun run`` child: its command line, its launch, the campaign it writes, its end.

The child runs in its own session, dies with the daemon (``PR_SET_PDEATHSIG``) and marks
its workloads with ``BENCHRUN_DAEMON_ENTRY``; docs/daemon.md says why and lists the exit
codes. Nothing here touches the queue: :mod:`runner.daemon.supervisor` does.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import psutil

#: exit code of ``benchrun run`` when the store's disk is full (runner.store.database.StoreFull)
EXIT_STORE_FULL = 75
#: environment variable marking a daemon child and every workload it starts
ENTRY_ENV = "BENCHRUN_DAEMON_ENTRY"

_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int) -> Callable[[], None]:
    """A preexec function: SIGKILL this child when the daemon (``parent_pid``) dies."""

    def preexec() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - not Linux
            return
        if os.getppid() != parent_pid:  # the daemon died between fork and prctl
            os._exit(137)

    return preexec


def child_argv(
    experiment: str, output: str, resume: bool, overrides: Sequence[str] = ()
) -> list[str]:
    """The ``benchrun run`` command line of a daemon child (``overrides``: the ``--set``
    items given to ``benchrun submit``, passed on unchanged)."""
    argv = [
        sys.executable,
        "-m",
        "benchrun.runner.cli",
        "run",
        experiment,
        "-o",
        output,
        "-q",
        "--resume" if resume else "--new",
    ]
    for item in overrides:
        argv += ["--set", item]
    return argv


def launch(
    argv: list[str],
    *,
    cwd: str,
    log_path: Path,
    entry_id: int,
    extra_env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start the child (own session, dies with the daemon, output appended to the log)."""
    env = dict(os.environ)
    env.update(extra_env or {})
    env[ENTRY_ENV] = str(entry_id)
    env["PYTHONUNBUFFERED"] = "1"
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        return subprocess.Popen(
            argv,
            cwd=cwd if os.path.isdir(cwd) else None,
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            env=env,
            start_new_session=True,
            preexec_fn=_die_with_parent(os.getpid()),
        )
    finally:
        os.close(log_fd)


def last_error_line(log_path: Path, limit: int = 65536) -> str | None:
    """The last ``benchrun: ...`` line of a log (what the child said when it ended)."""
    try:
        with open(log_path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            tail = f.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        if line.startswith("benchrun: "):
            text = line[len("benchrun: ") :]
            return text[len("error: ") :] if text.startswith("error: ") else text
    return None


def max_campaign_id(db_path: Path) -> int:
    """The highest campaign id in a results DB (0 if there is none or it is unreadable)."""
    if not db_path.is_file():
        return 0
    try:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5.0)
        try:
            row = conn.execute("SELECT coalesce(max(id), 0) FROM campaign").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return 0
    return int(row[0])


def campaign_after(db_path: Path, base_id: int) -> tuple[int, str] | None:
    """The first campaign created after ``base_id`` in ``db_path``: (id, status), if any."""
    if not db_path.is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5.0)
        try:
            row = conn.execute(
                "SELECT id, status FROM campaign WHERE id > ? ORDER BY id LIMIT 1", (base_id,)
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return (int(row[0]), str(row[1])) if row else None


def wait_gone(pid: int | None, timeout: float) -> bool:
    """Wait until ``pid`` no longer runs (zombies count as gone); True if it is gone."""
    if not pid:
        return True
    end = time.monotonic() + timeout
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.02)


def wait_campaign_lock(campaign_dir: Path, timeout: float) -> bool:
    """Wait until nobody holds ``campaign_dir/.benchrun.lock`` (see runner.campaign.session)."""
    path = campaign_dir / ".benchrun.lock"
    if not path.exists():
        return True
    end = time.monotonic() + timeout
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return True
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
                return True
            except BlockingIOError:
                if time.monotonic() >= end:
                    return False
                time.sleep(0.02)
    finally:
        os.close(fd)


def kill_leftovers(entry_ids: set[int]) -> list[int]:
    """SIGKILL this user's processes marked with one of ``entry_ids`` (workloads of a dead
    child, and their process groups); returns the pids killed."""
    if not entry_ids:
        return []
    wanted = {str(i) for i in entry_ids}
    me = os.getpid()
    my_group = os.getpgid(0)
    uid = os.getuid()
    killed: list[int] = []
    for proc in psutil.process_iter(["pid", "uids"]):
        try:
            if proc.pid == me or proc.info["uids"] is None or proc.info["uids"].real != uid:
                continue
            if proc.environ().get(ENTRY_ENV) not in wanted:
                continue
            group = os.getpgid(proc.pid)
            if group != my_group:
                os.killpg(group, signal.SIGKILL)
            else:
                proc.kill()
            killed.append(proc.pid)
        except (psutil.Error, OSError):
            continue
    return killed


def append_line(path: Path, line: str) -> None:
    """Append one line to a campaign log (best effort: a full disk must not stop us)."""
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    except OSError:
        pass


def kill(pid: int, signum: int) -> None:
    """Send ``signum`` to ``pid``; a process already gone is not an error."""
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def signal_name(signum: int) -> str:
    """``SIGTERM`` for 15; ``signal N`` for a number Python does not name."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
