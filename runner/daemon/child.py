"""One ``benchrun run`` child: its command line, its launch, the campaign it writes, its end.

The child runs in its own session, dies with the daemon (``PR_SET_PDEATHSIG``) and marks
its workloads with ``BENCHRUN_DAEMON_ENTRY``; docs/daemon.md says why and lists the exit
codes. Nothing here touches the queue: :mod:`runner.daemon.supervisor` does.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psutil

from benchrun.runner.execute.slurm_jobs import cancel_leftover_jobs

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
    experiment: str,
    output: str,
    resume: bool,
    overrides: Sequence[str] = (),
    config_file: str | None = None,
) -> list[str]:
    """The ``benchrun run`` command line of a daemon child.

    Parameters
    ----------
    experiment, output : str
        The experiment file and the output directory (absolute paths).
    resume : bool
        ``--resume`` (continue the campaign) instead of ``--new``.
    overrides : sequence of str
        The ``--set KEY=VALUE`` items given to ``benchrun submit``, passed on unchanged.
    config_file : str, optional
        A file holding the experiment's text as submitted: the child runs it instead of
        the experiment file as it is now (``experiment`` still anchors relative paths).

    Returns
    -------
    list of str
        ``[python, "-m", "benchrun.runner.cli", "run", ...]``, with ``--wait-for-cpus``
        (no limit): a campaign whose CPUs another run holds waits for them.
    """
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
        # another benchrun run holding the CPUs makes a queued campaign wait, not fail
        # (docs/reservation.md); the wait is logged in the campaign's log
        "--wait-for-cpus",
    ]
    for item in overrides:
        argv += ["--set", item]
    if config_file is not None:
        argv += ["--config-text", config_file]
    return argv


def launch(
    argv: list[str],
    *,
    cwd: str,
    log_path: Path,
    entry_id: int,
    extra_env: dict[str, str] | None = None,
    queue_path: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start the child: own session, dies with the daemon, output appended to the log.

    Parameters
    ----------
    argv : list of str
        From :func:`child_argv`.
    cwd : str
        Where ``benchrun submit`` was called (the daemon's directory if it is gone).
    log_path : Path
        The campaign log; stdout and stderr are appended to it.
    entry_id : int
        The queue entry; with ``queue_path`` it makes the mark exported as
        ``BENCHRUN_DAEMON_ENTRY`` to the child and its workloads (:func:`entry_mark`).
    extra_env : dict, optional
        More environment variables (the daemon's quiet-machine default).
    queue_path : Path, optional
        The daemon's queue database, so that two daemons of one user (separate
        ``XDG_*`` directories) never take each other's workloads for their own.

    Returns
    -------
    subprocess.Popen
        The running child.

    Raises
    ------
    OSError
        The log cannot be opened or the child cannot be started.
    """
    env = dict(os.environ)
    env.update(extra_env or {})
    env[ENTRY_ENV] = entry_mark(entry_id, queue_path)
    env["PYTHONUNBUFFERED"] = "1"
    log_fd = os.open(
        log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600
    )
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
    """What the child said when it ended: the last ``benchrun: ...`` line of its log.

    Parameters
    ----------
    log_path : Path
        The campaign log.
    limit : int
        Bytes read from the end of the log.

    Returns
    -------
    str or None
        The line without ``benchrun:`` and ``error:``; None if there is none or the log
        is unreadable.
    """
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


#: (id, status) of the first campaign after a given id
CAMPAIGN_AFTER_SQL = "SELECT id, status FROM campaign WHERE id > ? ORDER BY id LIMIT 1"


def connect_read_only(db_path: Path) -> sqlite3.Connection:
    """Open a results DB read-only, so that a running campaign is not disturbed.

    Raises
    ------
    sqlite3.Error
        The file cannot be opened.
    """
    return sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5.0)


def _fetch_one(db_path: Path, sql: str, *params: object) -> tuple[Any, ...] | None:
    """The first row of a read-only query; None if the DB is missing or unreadable."""
    if not db_path.is_file():
        return None
    try:
        conn = connect_read_only(db_path)
        try:
            row: tuple[Any, ...] | None = conn.execute(sql, params).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return row


def max_campaign_id(db_path: Path) -> int:
    """The highest campaign id in a results DB, read-only.

    Parameters
    ----------
    db_path : Path
        The campaign's results DB.

    Returns
    -------
    int
        0 when the DB does not exist, has no campaign or cannot be read.
    """
    row = _fetch_one(db_path, "SELECT coalesce(max(id), 0) FROM campaign")
    return int(row[0]) if row else 0


def campaign_after(db_path: Path, base_id: int) -> tuple[int, str] | None:
    """The first campaign created after ``base_id`` in a results DB, read-only.

    Parameters
    ----------
    db_path : Path
        The campaign's results DB.
    base_id : int
        The highest campaign id before the entry's first launch.

    Returns
    -------
    (int, str) or None
        ``(campaign id, status)``; None when there is none or the DB cannot be read.
    """
    row = _fetch_one(db_path, CAMPAIGN_AFTER_SQL, base_id)
    return (int(row[0]), str(row[1])) if row else None


def wait_gone(pid: int | None, timeout: float) -> bool:
    """Wait until a process no longer runs (a zombie counts as gone).

    Parameters
    ----------
    pid : int or None
        The process; None or 0 is gone already.
    timeout : float
        Seconds to wait at most.

    Returns
    -------
    bool
        True if it is gone.
    """
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
    """Wait until nobody holds the campaign directory's lock (runner.campaign.session).

    Parameters
    ----------
    campaign_dir : Path
        The directory holding ``.benchrun.lock``.
    timeout : float
        Seconds to wait at most.

    Returns
    -------
    bool
        True when the lock is free (or there is none).
    """
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


def entry_mark(entry_id: int, queue_path: Path | None) -> str:
    """The value of ``BENCHRUN_DAEMON_ENTRY`` for a queue entry: ``ID:QUEUE`` with the
    queue database's absolute path (just ``ID`` without one)."""
    return f"{entry_id}:{queue_path.resolve()}" if queue_path is not None else str(entry_id)


def kill_leftovers(entry_ids: set[int], queue_path: Path | None = None) -> list[int]:
    """SIGKILL the workloads a dead child left, with their process groups.

    Parameters
    ----------
    entry_ids : set of int
        Queue entries whose marked processes (``BENCHRUN_DAEMON_ENTRY``) are killed;
        only this user's processes are looked at.
    queue_path : Path, optional
        The queue the entries belong to: only processes marked with it are killed
        (:func:`entry_mark`), never another daemon's.

    Returns
    -------
    list of int
        The pids killed.
    """
    if not entry_ids:
        return []
    wanted = {entry_mark(i, queue_path) for i in entry_ids}
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


#: an experiment text that may run through Slurm (``executor: slurm`` or ``kind: slurm``)
_SLURM_TEXT = re.compile(r"\bslurm\b")


def cancel_slurm_jobs(config_text: str, campaign_dir: Path) -> list[str]:
    """Cancel the Slurm jobs a dead child left for the campaign in ``campaign_dir``
    (:func:`runner.execute.slurm_jobs.cancel_leftover_jobs`), when its experiment text
    mentions Slurm and ``squeue`` is on ``PATH``; else nothing is run.

    Returns
    -------
    list of str
        The job ids cancelled.
    """
    if not _SLURM_TEXT.search(config_text) or shutil.which("squeue") is None:
        return []
    return cancel_leftover_jobs(campaign_dir)


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
