"""The daemon process: lock, socket, queue, one ``benchrun run`` child at a time.

Single-threaded event loop (``selectors``): the listening socket, client connections, a
pidfd of the running child and a self-pipe for signals. Every request gets one reply;
a malformed, oversized or foreign (other uid) request gets an error reply and the daemon
carries on. See docs/daemon.md for the states and the recovery rules.
"""

from __future__ import annotations

import errno
import fcntl
import os
import selectors
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from benchrun.runner import __version__
from benchrun.runner.daemon import supervisor
from benchrun.runner.daemon.paths import DaemonPaths
from benchrun.runner.daemon.protocol import (
    MAX_MESSAGE,
    ProtocolError,
    decode_request,
    encode,
    error_reply,
)
from benchrun.runner.daemon.queue import FINAL_STATES, Entry, QueueDB
from benchrun.runner.errors import UserError

#: seconds a client may take to send its request
CLIENT_DEADLINE = 10.0
#: most client connections open at once; more are closed at accept
MAX_CONNECTIONS = 64
#: seconds an oversized request is drained (so the client can read the error) before close
DRAIN_SECONDS = 1.0


@dataclass
class _Conn:
    sock: socket.socket
    deadline: float
    buf: bytearray = field(default_factory=bytearray)
    draining: bool = False


def _log(text: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
    print(f"{stamp} benchrun-daemon[{os.getpid()}]: {text}", file=sys.stderr, flush=True)


def read_pid_file(path: Path) -> int | None:
    """The pid written in the daemon's pid file, if any."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def acquire_lock(paths: DaemonPaths) -> int:
    """flock the pid file (one daemon per user); returns the fd, kept open while running."""
    fd = os.open(paths.pid_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
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
    """The pid of the running daemon, or None when nobody holds the lock."""
    try:
        fd = os.open(paths.pid_file, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return read_pid_file(paths.pid_file) or -1
    finally:
        os.close(fd)
    return None


class Daemon:
    """The daemon. ``quiet_load``/``quiet_max_wait``: daemon-wide quiet-machine guard
    (1-minute load average, seconds); ``stop_timeout``: seconds ``daemon stop`` lets the
    child finish before it is killed (its in-flight round is then redone on resume)."""

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
        self.queue: QueueDB | None = None
        self.sel = selectors.DefaultSelector()
        self.conns: dict[int, _Conn] = {}
        self.child: subprocess.Popen[bytes] | None = None
        self.child_entry: int | None = None
        self.child_pidfd: int | None = None
        self.cancel_requested: int | None = None
        self.stop_requested = False
        self.stop_deadline: float | None = None
        self.quiet_since: float | None = None
        self.rss_at_start_kib = 0

    # -- lifecycle -------------------------------------------------------------------------

    def serve(self) -> int:
        """Run until stopped; returns the exit code (0 after a clean stop)."""
        self.paths.ensure()
        lock_fd = acquire_lock(self.paths)
        try:
            self.queue = QueueDB.open(self.paths.queue_db)
            listener = self._listen()
            wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
            old_wakeup = signal.set_wakeup_fd(wake_w)
            old = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
            old_hup = signal.signal(signal.SIGHUP, signal.SIG_IGN)
            self.sel.register(listener, selectors.EVENT_READ, "listen")
            self.sel.register(wake_r, selectors.EVENT_READ, "wake")
            try:
                self._recover()
                self.rss_at_start_kib = _rss_kib()
                _log(
                    f"listening on {self.paths.socket} (queue {self.paths.queue_db}, "
                    f"benchrun {__version__})"
                )
                self._loop()
            finally:
                for s, h in old.items():
                    signal.signal(s, h)
                signal.signal(signal.SIGHUP, old_hup)
                signal.set_wakeup_fd(old_wakeup)
                for conn in list(self.conns.values()):
                    self._close(conn)
                self.sel.close()
                listener.close()
                os.close(wake_r)
                os.close(wake_w)
                try:
                    self.paths.socket.unlink()
                except OSError:
                    pass
                self.queue.close()
        finally:
            os.close(lock_fd)
        _log("stopped")
        return 0

    def _listen(self) -> socket.socket:
        path = self.paths.socket
        try:
            path.unlink()  # we hold the lock: a socket file left here is stale
        except FileNotFoundError:
            pass
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            sock.bind(str(path))
        except OSError as exc:
            sock.close()
            raise UserError(f"cannot listen on {path}: {exc.strerror or exc}", 1) from None
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)
        sock.listen(MAX_CONNECTIONS)
        sock.setblocking(False)
        return sock

    def _on_signal(self, signum: int, frame: object) -> None:
        self.stop_requested = True

    def _loop(self) -> None:
        while True:
            now = time.monotonic()
            if self.stop_requested and self.stop_deadline is None:
                self._begin_stop()
            if self.stop_deadline is not None:
                if self.child is None:
                    return
                if now >= self.stop_deadline and self.child.poll() is None:
                    _log(f"child {self.child.pid} did not stop in {self.stop_timeout:g} s: SIGKILL")
                    _kill(self.child.pid, signal.SIGKILL)
                    self.stop_deadline = now + 3600
            for key, _ in self.sel.select(self._timeout()):
                if key.data == "listen":
                    self._accept(key.fileobj)  # type: ignore[arg-type]
                elif key.data == "wake":
                    try:
                        os.read(key.fd, 512)
                    except BlockingIOError:
                        pass
                elif key.data == "child":
                    pass  # handled by _reap below
                else:
                    self._readable(key.data)
            try:
                self._reap()
                if self.stop_deadline is None and not self.stop_requested and self.child is None:
                    self._maybe_start()
            except sqlite3.OperationalError as exc:
                # e.g. the data directory's disk is full: keep serving, try again later
                _log(f"queue {self.paths.queue_db}: {exc}; retrying in 5 s")
                time.sleep(5.0)
            self._expire()

    def _timeout(self) -> float:
        t = 1.0
        if self.conns:
            t = min(t, max(0.0, min(c.deadline for c in self.conns.values()) - time.monotonic()))
        return max(t, 0.01)

    def _begin_stop(self) -> None:
        self.stop_deadline = time.monotonic() + self.stop_timeout
        if self.child is not None and self.child.poll() is None:
            _log(f"stopping: SIGTERM to campaign {self.child_entry} (pid {self.child.pid})")
            _kill(self.child.pid, signal.SIGTERM)
        else:
            _log("stopping")

    # -- recovery --------------------------------------------------------------------------

    def _recover(self) -> None:
        """Entries left ``running`` by a dead daemon, or interrupted by ``daemon stop``,
        go back to the queue; leftover workloads of a dead child are killed."""
        assert self.queue is not None
        crashed: set[int] = set()
        for e in self.queue.entries(("running",)):
            crashed.add(e.id)
            why = (
                f"the daemon (pid {e.daemon_pid}) died while campaign {e.id} was running "
                f"(child pid {e.pid}); committed rounds are kept and the round in flight "
                "is redone"
            )
            self.queue.update(e.id, state="queued", resume=True, message=why)
            self.queue.log(e.id, "crash-detected", why)
            _append(Path(e.log_path), f"[benchrun daemon] {why}")
            _log(why)
        for e in self.queue.entries(("interrupted",)):
            if e.auto_resume:
                why = f"campaign {e.id} was stopped by `benchrun daemon stop`; continuing it"
                self.queue.update(e.id, state="queued", resume=True, auto_resume=False, message=why)
                self.queue.log(e.id, "requeued", why)
        killed = supervisor.kill_leftovers(crashed)
        if killed:
            _log(f"killed leftover workload processes {killed}")

    # -- running campaigns -----------------------------------------------------------------

    def _maybe_start(self) -> None:
        assert self.queue is not None
        entry = self.queue.next_runnable(time.time())
        if entry is None:
            self.quiet_since = None
            return
        if self.quiet_load is not None:
            load = os.getloadavg()[0]
            now = time.monotonic()
            if self.quiet_since is None:
                self.quiet_since = now
            waited = now - self.quiet_since
            if load >= self.quiet_load and waited < self.quiet_max_wait:
                return
            self.queue.log(
                entry.id,
                "quiet",
                f"waited {waited:.1f} s for the 1-minute load average ({load:.2f}) to drop "
                f"below {self.quiet_load:g}"
                + ("" if load < self.quiet_load else " (gave up: quiet_max_wait reached)"),
            )
            self.quiet_since = None
        self._start(entry)

    def _start(self, entry: Entry) -> None:
        assert self.queue is not None
        db = Path(entry.db_path)
        base = entry.base_campaign_id
        resume = False
        if entry.launches == 0 or base is None:
            base = supervisor.max_campaign_id(db)
            self.queue.update(entry.id, base_campaign_id=base)
        else:
            found = supervisor.campaign_after(db, base)
            if found is not None:
                cid, status = found
                self.queue.update(entry.id, campaign_id=cid)
                if status in ("running", "interrupted"):
                    resume = True
                else:
                    # the child ended and committed before the daemon could see it
                    state = "done" if status == "done" else "failed"
                    msg = f"campaign {cid} in {db} is {status}"
                    self.queue.update(entry.id, state=state, finished_at=time.time(), message=msg)
                    self.queue.log(entry.id, state, msg)
                    return
        log_path = Path(entry.log_path)
        supervisor.wait_gone(entry.pid, 5.0)
        supervisor.wait_campaign_lock(db.parent, 10.0)
        if resume:
            why = entry.message or "resumed"
            self._campaign_event(entry, db, "daemon-resume", f"daemon pid {os.getpid()}: {why}")
            self.queue.log(entry.id, "resume", why)
        argv = supervisor.child_argv(entry.experiment, entry.output, resume, entry.overrides)
        extra: dict[str, str] = {}
        if self.quiet_load is not None:
            extra["BENCHRUN_QUIET_LOAD"] = f"{self.quiet_load:g}"
            extra["BENCHRUN_QUIET_MAX_WAIT"] = f"{self.quiet_max_wait:g}"
        _append(
            log_path,
            f"[benchrun daemon] {time.strftime('%Y-%m-%d %H:%M:%S')} launch "
            f"{entry.launches + 1}: {' '.join(argv[2:])}",
        )
        try:
            child = supervisor.launch(
                argv, cwd=entry.cwd, log_path=log_path, entry_id=entry.id, extra_env=extra
            )
        except OSError as exc:
            msg = f"cannot start benchrun run: {exc.strerror or exc}"
            self.queue.update(entry.id, state="failed", message=msg, finished_at=time.time())
            self.queue.log(entry.id, "failed", msg)
            return
        self.child, self.child_entry = child, entry.id
        try:
            self.child_pidfd = os.pidfd_open(child.pid)
            self.sel.register(self.child_pidfd, selectors.EVENT_READ, "child")
        except (OSError, AttributeError):
            self.child_pidfd = None  # polled every second instead
        self.queue.update(
            entry.id,
            state="running",
            pid=child.pid,
            daemon_pid=os.getpid(),
            started_at=entry.started_at or time.time(),
            launches=entry.launches + 1,
            resume=False,
            message="resumed" if resume else "running",
        )
        self.queue.log(entry.id, "launch", f"pid {child.pid}: {' '.join(argv[2:])}")
        _log(f"campaign {entry.id}: started pid {child.pid}")

    def _campaign_event(self, entry: Entry, db: Path, kind: str, message: str) -> None:
        """Record ``message`` in the campaign's own event log (best effort)."""
        from benchrun.runner.store.database import Store

        found = supervisor.campaign_after(db, entry.base_campaign_id or 0)
        if found is None:
            return
        try:
            with Store.open(db) as store:
                store.add_event(found[0], kind, message)
        except Exception as exc:  # noqa: BLE001 - the child will report a broken store
            _log(f"campaign {entry.id}: cannot record {kind} in {db}: {exc}")

    def _reap(self) -> None:
        if self.child is None:
            return
        code = self.child.poll()
        if code is None:
            return
        assert self.queue is not None and self.child_entry is not None
        entry_id = self.child_entry
        if self.child_pidfd is not None:
            self.sel.unregister(self.child_pidfd)
            os.close(self.child_pidfd)
        self.child = self.child_entry = self.child_pidfd = None
        entry = self.queue.get(entry_id)
        assert entry is not None
        db = Path(entry.db_path)
        found = supervisor.campaign_after(db, entry.base_campaign_id or 0)
        said = supervisor.last_error_line(Path(entry.log_path))
        auto_resume = False
        if self.cancel_requested == entry_id:
            state, msg = "cancelled", "cancelled by `benchrun cancel`"
            self.cancel_requested = None
        elif code == 0:
            state, msg = "done", f"done; results in {db}"
        elif code == supervisor.EXIT_STORE_FULL:
            state = "paused"
            msg = (
                f"paused: {said or 'the disk is full'}; after freeing space run "
                f"`benchrun resume {entry_id}`"
            )
        elif code >= 128 or code < 0:
            signum = code - 128 if code >= 128 else -code
            name = _signal_name(signum)
            if self.stop_deadline is not None:
                state, auto_resume = "interrupted", True
                msg = (
                    f"stopped by `benchrun daemon stop` ({name}); continues when the daemon starts"
                )
            else:
                state = "interrupted"
                msg = f"interrupted by {name}; continue it with `benchrun resume {entry_id}`"
        else:
            state = "failed"
            msg = said or f"benchrun run exited with code {code}"
        self.queue.update(
            entry_id,
            state=state,
            exit_code=code,
            message=msg,
            finished_at=time.time() if state in FINAL_STATES else None,
            campaign_id=found[0] if found else entry.campaign_id,
            auto_resume=auto_resume,
        )
        self.queue.log(entry_id, state, f"exit code {code}: {msg}")
        _append(Path(entry.log_path), f"[benchrun daemon] campaign {entry_id} {state}: {msg}")
        _log(f"campaign {entry_id}: {state} (exit code {code})")

    # -- connections -----------------------------------------------------------------------

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                sock, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    _log(f"accept: {exc.strerror}")
                    return
                raise
            if len(self.conns) >= MAX_CONNECTIONS:
                sock.close()
                continue
            try:
                creds = sock.getsockopt(
                    socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")
                )
                pid, uid, _gid = struct.unpack("3i", creds)
            except OSError:
                sock.close()
                continue
            sock.setblocking(False)
            conn = _Conn(sock, time.monotonic() + CLIENT_DEADLINE)
            self.conns[sock.fileno()] = conn
            self.sel.register(sock, selectors.EVENT_READ, conn)
            if uid != os.getuid():
                _log(f"refused a connection from uid {uid} (pid {pid})")
                self._reply_and_drain(
                    conn,
                    error_reply(
                        f"permission denied: this daemon belongs to uid {os.getuid()}, "
                        f"you are uid {uid}"
                    ),
                )

    def _readable(self, conn: _Conn) -> None:
        try:
            data = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(conn)
            return
        if conn.draining:
            if not data:
                self._close(conn)
            return
        if data:
            conn.buf += data
            newline = conn.buf.find(b"\n")
            if newline < 0 and len(conn.buf) <= MAX_MESSAGE:
                return
            if newline < 0 or newline + 1 > MAX_MESSAGE:
                self._oversized(conn)
                return
            raw = bytes(conn.buf[:newline])
        else:
            raw = bytes(conn.buf)  # the client half-closed without a newline
            if not raw:
                self._close(conn)
                return
        try:
            reply = self._handle(decode_request(raw))
        except ProtocolError as exc:
            reply = error_reply(str(exc), 2)
        except UserError as exc:
            reply = error_reply(exc.message, exc.exit_code)
        except Exception as exc:  # noqa: BLE001 - a request must never kill the daemon
            _log(f"internal error handling a request: {exc!r}")
            reply = error_reply(f"internal error in the daemon: {exc}")
        self.sel.unregister(conn.sock)
        del self.conns[conn.sock.fileno()]
        self._send_and_close(conn.sock, reply)

    def _oversized(self, conn: _Conn) -> None:
        self._reply_and_drain(
            conn, error_reply(f"request too large (more than {MAX_MESSAGE} bytes); not read", 2)
        )

    def _reply_and_drain(self, conn: _Conn, reply: bytes) -> None:
        """Answer without reading the request (oversized, foreign uid), then read and drop
        what the client sends for a moment: closing with unread data would reset the
        connection, and the client would see ECONNRESET instead of the reply."""
        try:
            conn.sock.setblocking(True)
            conn.sock.settimeout(2.0)
            conn.sock.sendall(reply)
            conn.sock.shutdown(socket.SHUT_WR)
            conn.sock.setblocking(False)
        except OSError:
            self._close(conn)
            return
        conn.buf.clear()
        conn.draining = True
        conn.deadline = time.monotonic() + DRAIN_SECONDS

    def _send_and_close(self, sock: socket.socket, data: bytes) -> None:
        try:
            sock.setblocking(True)
            sock.settimeout(2.0)
            sock.sendall(data)
        except OSError:
            pass
        finally:
            sock.close()

    def _close(self, conn: _Conn) -> None:
        fd = conn.sock.fileno()
        if fd in self.conns:
            del self.conns[fd]
            self.sel.unregister(conn.sock)
        conn.sock.close()

    def _expire(self) -> None:
        now = time.monotonic()
        for conn in [c for c in self.conns.values() if c.deadline <= now]:
            if conn.draining:
                self._close(conn)
            else:
                self.sel.unregister(conn.sock)
                del self.conns[conn.sock.fileno()]
                self._send_and_close(
                    conn.sock,
                    error_reply(f"no complete request within {CLIENT_DEADLINE:g} s", 2),
                )

    # -- requests --------------------------------------------------------------------------

    def _handle(self, req: dict[str, Any]) -> bytes:
        op = req["op"]
        handler = getattr(self, "_op_" + op.replace("-", "_"), None)
        if handler is None or not op.replace("-", "_").isidentifier():
            raise ProtocolError(f"unknown op {op!r}; valid: {', '.join(OPS)}")
        return encode({"ok": True, **handler(req)})

    def _entry(self, req: dict[str, Any]) -> Entry:
        assert self.queue is not None
        raw = req.get("id")
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise UserError(f"bad campaign id {raw!r}; expected a number from `benchrun queue`")
        entry = self.queue.get(raw)
        if entry is None:
            raise UserError(f"no campaign {raw} in the queue; `benchrun queue` lists them")
        return entry

    def _op_ping(self, req: dict[str, Any]) -> dict[str, Any]:
        return {"pid": os.getpid(), "version": __version__}

    def _op_daemon_status(self, req: dict[str, Any]) -> dict[str, Any]:
        assert self.queue is not None
        return {
            "pid": os.getpid(),
            "version": __version__,
            "started_at": self.started_at,
            "rss_kib": _rss_kib(),
            "rss_at_start_kib": self.rss_at_start_kib,
            "socket": str(self.paths.socket),
            "queue_db": str(self.paths.queue_db),
            "running": self.child_entry,
            "queued": len(self.queue.entries(("queued",))),
            "quiet_load": self.quiet_load,
            "quiet_max_wait": self.quiet_max_wait,
            "stopping": self.stop_deadline is not None,
        }

    def _op_submit(self, req: dict[str, Any]) -> dict[str, Any]:
        assert self.queue is not None
        if self.stop_requested:
            raise UserError("the daemon is stopping; submit again after it restarts", 1)
        fields: dict[str, Any] = {}
        for key in ("experiment", "name", "output", "db_path", "cwd", "config_text"):
            value = req.get(key)
            if not isinstance(value, str) or not value or "\0" in value:
                raise ProtocolError(f"submit: {key} must be a non-empty string")
            fields[key] = value
        for key in ("experiment", "output", "db_path", "cwd"):
            if not os.path.isabs(fields[key]):
                raise ProtocolError(f"submit: {key} must be an absolute path")
        priority = req.get("priority", 0)
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise ProtocolError("submit: priority must be an integer")
        not_before = req.get("not_before")
        if not_before is not None and (
            isinstance(not_before, bool) or not isinstance(not_before, (int, float))
        ):
            raise ProtocolError("submit: not_before must be a Unix time in seconds or null")
        overrides = req.get("overrides", [])
        if not isinstance(overrides, list) or not all(
            isinstance(o, str) and "=" in o and "\0" not in o for o in overrides
        ):
            raise ProtocolError("submit: overrides must be a list of KEY=VALUE strings")
        entry_id = self.queue.add(
            **fields,
            priority=priority,
            not_before=not_before,
            log_dir=self.paths.logs_dir,
            overrides=overrides,
        )
        _log(f"campaign {entry_id}: queued {fields['experiment']}")
        return {"id": entry_id, "log_path": str(self.paths.campaign_log(entry_id))}

    def _op_queue(self, req: dict[str, Any]) -> dict[str, Any]:
        assert self.queue is not None
        return {"entries": [e.to_json() for e in self.queue.entries()], "running": self.child_entry}

    def _op_get(self, req: dict[str, Any]) -> dict[str, Any]:
        assert self.queue is not None
        entry = self._entry(req)
        events = [{"at": at, "kind": k, "message": m} for at, k, m in self.queue.events(entry.id)]
        return {"entry": entry.to_json(), "events": events}

    def _op_current(self, req: dict[str, Any]) -> dict[str, Any]:
        assert self.queue is not None
        if self.child_entry is None:
            return {"entry": None}
        entry = self.queue.get(self.child_entry)
        return {"entry": entry.to_json() if entry else None}

    def _op_cancel(self, req: dict[str, Any]) -> dict[str, Any]:
        assert self.queue is not None
        entry = self._entry(req)
        if entry.state in FINAL_STATES:
            raise UserError(f"campaign {entry.id} is already {entry.state}; nothing to cancel")
        if entry.id == self.child_entry and self.child is not None:
            self.cancel_requested = entry.id
            _kill(self.child.pid, signal.SIGTERM)
            self.queue.log(entry.id, "cancel", "cancel requested: SIGTERM to the campaign")
            return {"state": "cancelling"}
        msg = f"cancelled by `benchrun cancel` while {entry.state}"
        self.queue.update(entry.id, state="cancelled", message=msg, finished_at=time.time())
        self.queue.log(entry.id, "cancelled", msg)
        return {"state": "cancelled"}

    def _op_resume(self, req: dict[str, Any]) -> dict[str, Any]:
        assert self.queue is not None
        entry = self._entry(req)
        if entry.state not in ("paused", "interrupted"):
            raise UserError(
                f"campaign {entry.id} is {entry.state}; only paused or interrupted campaigns "
                "can be resumed"
            )
        why = f"resumed by `benchrun resume` after it was {entry.state}"
        self.queue.update(entry.id, state="queued", resume=True, message=why)
        self.queue.log(entry.id, "requeued", why)
        return {"state": "queued"}

    def _op_stop(self, req: dict[str, Any]) -> dict[str, Any]:
        self.stop_requested = True
        return {"pid": os.getpid(), "running": self.child_entry}


OPS = tuple(name[4:].replace("_", "-") for name in sorted(vars(Daemon)) if name.startswith("_op_"))


def _kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _append(path: Path, line: str) -> None:
    """Append one line to a campaign log (best effort: a full disk must not stop us)."""
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    except OSError:
        pass


def _rss_kib() -> int:
    return int(psutil.Process().memory_info().rss // 1024)
