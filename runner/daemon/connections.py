"""Connection handling: the Unix socket, peer check and framing of one request per connection.

:class:`Connections` accepts clients, refuses other uids, reads up to the first newline
(at most :data:`runner.daemon.protocol.MAX_MESSAGE` bytes, within :data:`CLIENT_DEADLINE`
seconds), hands the request bytes to a callback and sends its reply. What a request
means is :mod:`runner.daemon.handlers`' business.
"""

from __future__ import annotations

import errno
import os
import selectors
import socket
import stat
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchrun.runner.daemon.log import log
from benchrun.runner.daemon.paths import owner_text
from benchrun.runner.daemon.protocol import MAX_MESSAGE, error_reply
from benchrun.runner.errors import UserError

#: seconds a client may take to send its request
CLIENT_DEADLINE = 10.0
#: most client connections open at once; more are closed at accept
MAX_CONNECTIONS = 64
#: seconds an oversized request is drained (so the client can read the error) before close
DRAIN_SECONDS = 1.0
#: seconds a client may take to read its reply; the loop never waits on one client
REPLY_SECONDS = 5.0


@dataclass
class Conn:
    """One client connection: its socket, the bytes read so far and when it expires."""

    sock: socket.socket
    deadline: float
    buf: bytearray = field(default_factory=bytearray)
    draining: bool = False
    #: the reply not yet sent (None until the request is answered)
    out: memoryview | None = None


def _kind(st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return "symbolic link"
    if stat.S_ISSOCK(st.st_mode):
        return "socket"
    if stat.S_ISREG(st.st_mode):
        return "file"
    if stat.S_ISDIR(st.st_mode):
        return "directory"
    return "special file"


def remove_stale_socket(path: Path) -> None:
    """Remove the socket a previous daemon of this user left at ``path`` (the caller holds
    the daemon lock, so no daemon serves it).

    Only a socket owned by this user is removed: anything else there (a symbolic link, a
    file, another user's socket) was not made by a daemon of ours, and is refused rather
    than removed or followed.

    Raises
    ------
    UserError
        Something other than an own socket is at ``path`` (exit code 1).
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.geteuid():
        raise UserError(
            f"{path}: a {_kind(st)} of {owner_text(st.st_uid)} is where the daemon's socket "
            "goes, and no daemon of yours made it; refusing to remove or use it: move it "
            "away (after a look at who planted it) and start the daemon again",
            exit_code=1,
        )
    try:
        path.unlink()
    except FileNotFoundError:
        pass


@dataclass(frozen=True)
class Listener:
    """The daemon's listening socket and the identity (device, inode) of the socket file it
    bound, so that only that file is removed at exit (see :meth:`remove`)."""

    sock: socket.socket
    path: Path
    dev: int
    ino: int

    def remove(self) -> None:
        """Unlink the socket file if it is still the one bound (never a file put there since)."""
        try:
            st = os.lstat(self.path)
        except OSError:
            return
        if (st.st_dev, st.st_ino) == (self.dev, self.ino):
            try:
                self.path.unlink()
            except OSError:
                pass


def listen_unix(path: Path) -> Listener:
    """Listen on a fresh Unix socket (mode 0600, non-blocking).

    Parameters
    ----------
    path : Path
        The socket file, in a directory :meth:`DaemonPaths.ensure` checked; a stale socket
        of this user there is removed (:func:`remove_stale_socket`), anything else refused.

    Returns
    -------
    Listener
        The listening socket and the file it is bound to.

    Raises
    ------
    UserError
        Something not ours is at ``path``, or the socket cannot be bound (exit code 1).
    """
    remove_stale_socket(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)  # bind creates the file 0600: never readable by others
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise UserError(f"cannot listen on {path}: {exc.strerror or exc}", 1) from None
    finally:
        os.umask(old_umask)
    st = os.lstat(path)
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        sock.close()
        raise UserError(f"{path}: the socket just bound is not a private socket of yours", 1)
    sock.listen(MAX_CONNECTIONS)
    sock.setblocking(False)
    return Listener(sock, path, st.st_dev, st.st_ino)


def _send_and_close(sock: socket.socket, data: bytes) -> None:
    try:
        sock.setblocking(True)
        sock.settimeout(2.0)
        sock.sendall(data)
    except OSError:
        pass
    finally:
        sock.close()


class Connections:
    """The open client connections of the daemon's event loop.

    Parameters
    ----------
    selector : selectors.BaseSelector
        The daemon's event loop; each connection is registered with itself (a
        :class:`Conn`) as data, and the loop calls :meth:`readable` with it.
    handle : callable
        ``handle(request_bytes) -> reply_bytes`` for one complete request line (without
        its newline); it must not raise.
    """

    def __init__(self, selector: selectors.BaseSelector, handle: Callable[[bytes], bytes]) -> None:
        self.sel = selector
        self.handle = handle
        self.conns: dict[int, Conn] = {}

    def timeout(self) -> float:
        """Seconds the event loop may sleep: at most 1, at least 0.01, until the next deadline."""
        t = 1.0
        if self.conns:
            t = min(t, max(0.0, min(c.deadline for c in self.conns.values()) - time.monotonic()))
        return max(t, 0.01)

    def accept(self, listener: socket.socket) -> None:
        """Accept every pending client of ``listener``; answer another uid's with an error."""
        while True:
            try:
                sock, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    log(f"accept: {exc.strerror}")
                    return
                raise
            if len(self.conns) >= MAX_CONNECTIONS and not self._evict_idle():
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
            conn = Conn(sock, time.monotonic() + CLIENT_DEADLINE)
            self.conns[sock.fileno()] = conn
            self.sel.register(sock, selectors.EVENT_READ, conn)
            if uid != os.getuid():
                log(f"refused a connection from uid {uid} (pid {pid})")
                self._reply_and_drain(
                    conn,
                    error_reply(
                        f"permission denied: this daemon belongs to uid {os.getuid()}, "
                        f"you are uid {uid}"
                    ),
                )

    def _evict_idle(self) -> bool:
        """Close the oldest connection that has sent nothing yet, to make room for a new
        client (idle connections cannot lock everyone out); False when there is none."""
        idle = [c for c in self.conns.values() if not c.buf and c.out is None and not c.draining]
        if not idle:
            return False
        self.close(min(idle, key=lambda c: c.deadline))
        return True

    def readable(self, conn: Conn) -> None:
        """Read what ``conn`` sent; once its request line is complete, answer and close.

        A request over :data:`MAX_MESSAGE` bytes is refused unread; a client that
        half-closes without a newline has sent its whole request. The reply is sent
        without blocking: what the client does not read at once waits for the socket to
        become writable (the loop calls this method again), for :data:`REPLY_SECONDS`.
        """
        if conn.out is not None:
            self._flush(conn)
            return
        try:
            data = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.close(conn)
            return
        if conn.draining:
            if not data:
                self.close(conn)
            return
        if data:
            conn.buf += data
            newline = conn.buf.find(b"\n")
            if newline < 0 and len(conn.buf) <= MAX_MESSAGE:
                return
            if newline < 0 or newline + 1 > MAX_MESSAGE:
                self._reply_and_drain(
                    conn,
                    error_reply(f"request too large (more than {MAX_MESSAGE} bytes); not read", 2),
                )
                return
            raw = bytes(conn.buf[:newline])
        else:
            raw = bytes(conn.buf)  # the client half-closed without a newline
            if not raw:
                self.close(conn)
                return
        self._reply(conn, self.handle(raw))

    def _reply(self, conn: Conn, reply: bytes) -> None:
        conn.out = memoryview(reply)
        conn.deadline = time.monotonic() + REPLY_SECONDS
        self._flush(conn)

    def _flush(self, conn: Conn) -> None:
        """Send what the socket takes now; close once all is sent, else wait to write."""
        assert conn.out is not None
        try:
            sent = conn.sock.send(conn.out)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self.close(conn)
            return
        conn.out = conn.out[sent:]
        if not conn.out:
            self.close(conn)
            return
        self.sel.modify(conn.sock, selectors.EVENT_WRITE, conn)

    def _reply_and_drain(self, conn: Conn, reply: bytes) -> None:
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
            self.close(conn)
            return
        conn.buf.clear()
        conn.draining = True
        conn.deadline = time.monotonic() + DRAIN_SECONDS

    def _forget(self, conn: Conn) -> None:
        self.sel.unregister(conn.sock)
        del self.conns[conn.sock.fileno()]

    def close(self, conn: Conn) -> None:
        """Close ``conn`` without a reply."""
        fd = conn.sock.fileno()
        if fd in self.conns:
            del self.conns[fd]
            self.sel.unregister(conn.sock)
        conn.sock.close()

    def close_all(self) -> None:
        """Close every open connection (the daemon is exiting)."""
        for conn in list(self.conns.values()):
            self.close(conn)

    def expire(self) -> None:
        """Close connections past their deadline; one still sending its request gets an error."""
        now = time.monotonic()
        for conn in [c for c in self.conns.values() if c.deadline <= now]:
            if conn.draining or conn.out is not None:  # a reply the client never read
                self.close(conn)
            else:
                self._forget(conn)
                _send_and_close(
                    conn.sock,
                    error_reply(f"no complete request within {CLIENT_DEADLINE:g} s", 2),
                )
