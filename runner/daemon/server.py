"""The daemon process: lock, signals and the event loop that ties the three parts together.

One thread, one ``selectors`` loop over the listening socket, client connections
(:mod:`runner.daemon.connections`), the running child's pidfd
(:mod:`runner.daemon.supervisor`) and a self-pipe for signals; requests go to
:mod:`runner.daemon.handlers`. States and recovery rules: docs/daemon.md.
"""

from __future__ import annotations

import fcntl
import os
import selectors
import signal
import socket
import sqlite3
import stat
import time
from pathlib import Path

from benchrun.runner import __version__
from benchrun.runner.daemon import handlers
from benchrun.runner.daemon.connections import Connections, listen_unix
from benchrun.runner.daemon.handlers import DaemonState, rss_kib
from benchrun.runner.daemon.log import log
from benchrun.runner.daemon.paths import DaemonPaths, owner_text
from benchrun.runner.daemon.queue import QueueDB
from benchrun.runner.daemon.supervisor import Supervisor
from benchrun.runner.errors import UserError
from benchrun.runner.machine.tuning import recover


def read_pid_file(path: Path) -> int | None:
    """The pid written in the daemon's pid file, if any."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def acquire_lock(paths: DaemonPaths) -> int:
    """flock the pid file (one daemon per user) and write our pid into it.

    Returns
    -------
    int
        The file descriptor holding the lock; keep it open while the daemon runs.

    Raises
    ------
    UserError
        Another daemon holds the lock, or the pid file is not a regular file of this user
        (a link or a file planted there is never written through; exit code 1).
    """
    try:
        fd = os.open(
            paths.pid_file,
            os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK,
            0o600,
        )
    except OSError as exc:
        raise UserError(
            f"{paths.pid_file}: cannot open the daemon's lock: {exc.strerror}", 1
        ) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_nlink != 1:
        os.close(fd)
        raise UserError(
            f"{paths.pid_file}: the daemon's lock is not a regular file of yours with one link "
            f"(owner {owner_text(st.st_uid)}); refusing to write to it: move it away",
            exit_code=1,
        )
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise UserError(
            f"another benchrun daemon is already running (pid {holder}, lock {paths.pid_file}); "
            "stop it with `benchrun daemon stop` first",
            exit_code=1,
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def lock_holder(paths: DaemonPaths) -> int | None:
    """The pid of the running daemon (-1 if its pid file is unreadable), or None when
    nobody holds the lock."""
    try:
        fd = os.open(paths.pid_file, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return read_pid_file(paths.pid_file) or -1
    finally:
        os.close(fd)
    return None


def recover_tuning() -> None:
    """At the daemon's start: restore what a campaign killed while it kept the machine
    tuned left (docs/tuning.md), each line in the daemon's log; a journal that cannot be
    trusted is logged and left."""
    try:
        restored = recover()
    except UserError as exc:
        log(f"tuning journal not restored: {exc.message}")
        return
    if restored is None:
        return
    who = restored.owner.describe() if restored.owner else "a campaign"
    for line in restored.lines():
        log(f"{who} ended without restoring the machine's tuning: {line}")


class Daemon:
    """The daemon process.

    Parameters
    ----------
    paths : DaemonPaths
        Where the queue, logs, lock and socket live.
    quiet_load : float, optional
        Daemon-wide quiet-machine guard (1-minute load average); None: off.
    quiet_max_wait : float
        Seconds to wait for a quiet machine before starting a campaign anyway.
    stop_timeout : float
        Seconds ``daemon stop`` lets the child finish before it is killed (its in-flight
        round is then redone on resume).
    """

    def __init__(
        self,
        paths: DaemonPaths,
        *,
        quiet_load: float | None = None,
        quiet_max_wait: float = 600.0,
        stop_timeout: float = 120.0,
    ) -> None:
        self.paths = paths
        self.quiet_load = quiet_load
        self.quiet_max_wait = quiet_max_wait
        self.stop_timeout = stop_timeout
        self.started_at = time.time()
        self.sel = selectors.DefaultSelector()
        self.state: DaemonState | None = None

    def serve(self) -> int:
        """Run until stopped; returns the exit code (0 after a clean stop).

        Raises
        ------
        UserError
            Another daemon runs, the socket cannot be bound, or the queue file is
            damaged or foreign.
        """
        self.paths.ensure()
        lock_fd = acquire_lock(self.paths)
        try:
            queue = QueueDB.open(self.paths.queue_db)
            supervisor = Supervisor(
                queue,
                self.sel,
                quiet_load=self.quiet_load,
                quiet_max_wait=self.quiet_max_wait,
                stop_timeout=self.stop_timeout,
            )
            state = self.state = DaemonState(self.paths, queue, supervisor, self.started_at)
            connections = Connections(self.sel, lambda raw: handlers.dispatch(state, raw))
            listening = listen_unix(self.paths.socket)
            listener = listening.sock
            wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
            old_wakeup = signal.set_wakeup_fd(wake_w)
            old = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
            old_hup = signal.signal(signal.SIGHUP, signal.SIG_IGN)
            self.sel.register(listener, selectors.EVENT_READ, "listen")
            self.sel.register(wake_r, selectors.EVENT_READ, "wake")
            try:
                recover_tuning()
                supervisor.recover()
                state.rss_at_start_kib = rss_kib()
                log(
                    f"listening on {self.paths.socket} (queue {self.paths.queue_db}, "
                    f"benchrun {__version__})"
                )
                self._loop(state, connections)
            finally:
                for s, h in old.items():
                    signal.signal(s, h)
                signal.signal(signal.SIGHUP, old_hup)
                signal.set_wakeup_fd(old_wakeup)
                connections.close_all()
                self.sel.close()
                listener.close()
                os.close(wake_r)
                os.close(wake_w)
                listening.remove()
                queue.close()
        finally:
            os.close(lock_fd)
        log("stopped")
        return 0

    def _on_signal(self, signum: int, frame: object) -> None:
        if self.state is not None:
            self.state.stop_requested = True

    def _loop(self, state: DaemonState, connections: Connections) -> None:
        supervisor = state.supervisor
        while True:
            if state.stop_requested and not supervisor.stopping:
                supervisor.begin_stop()
            if supervisor.stopped(time.monotonic()):
                return
            for key, _ in self.sel.select(connections.timeout()):
                if key.data == "listen":
                    assert isinstance(key.fileobj, socket.socket)
                    connections.accept(key.fileobj)
                elif key.data == "wake":
                    try:
                        os.read(key.fd, 512)
                    except BlockingIOError:
                        pass
                elif key.data == "child":
                    pass  # reaped below
                else:
                    connections.readable(key.data)
            try:
                supervisor.reap()
                if not supervisor.stopping and not state.stop_requested:
                    if supervisor.running is None:
                        supervisor.maybe_start()
            except sqlite3.OperationalError as exc:
                # e.g. the data directory's disk is full: keep serving, try again later
                log(f"queue {self.paths.queue_db}: {exc}; retrying in 5 s")
                time.sleep(5.0)
            connections.expire()
