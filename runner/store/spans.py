"""The span of a running campaign, kept current in its store by a thread of its own.

``max_time`` is the campaign's wall time across resumes (runner/campaign/budget.py): each
run of a campaign stores how long it has been active in the ``run_span`` table (schema 4,
runner/store/database.py). A run killed with SIGKILL keeps what it last wrote, so the span
must be written while the run does anything at all, including what takes seconds without a
round (the first decision imports scipy; a prepare hook; a calibration round). The main
thread cannot promise that, so :class:`SpanHeartbeat` writes it every
:data:`SPAN_EVERY_S` from a thread, through a connection of its own (a ``sqlite3``
connection belongs to the thread that made it; WAL lets it write between the campaign's
commits). What a SIGKILL can take from the count is the last :data:`SPAN_EVERY_S`.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

#: seconds between two writes of the span (what a SIGKILL can take from the budget's count)
SPAN_EVERY_S = 0.5

_UPDATE = "UPDATE run_span SET seconds = ? WHERE id = ?"


class SpanHeartbeat:
    """Store ``clock() - t0`` as the seconds of span ``span_id`` every ``every`` seconds,
    from a daemon thread, until :meth:`stop` (which writes the last value).

    The connection opens the existing file read-write without creating it (an SQLite URI
    with ``mode=rw``): the store was opened, and its directory locked, before. A failed
    write (a full disk, a lock held past ``busy_ms``) is skipped: the next one, or the
    main thread's own write of the span, carries the count on.
    """

    def __init__(
        self,
        db_path: Path,
        span_id: int,
        t0: float,
        clock: Callable[[], float] = time.monotonic,
        every: float = SPAN_EVERY_S,
        busy_ms: int = 2000,
    ) -> None:
        #: the path the store was opened by, made absolute now (no symlink resolved)
        self.db_path = Path(db_path).absolute()
        self.span_id = span_id
        self.t0 = t0
        self._clock = clock
        self._every = every
        self._busy_ms = busy_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: writes that succeeded (for tests and the curious)
        self.writes = 0

    def start(self) -> SpanHeartbeat:
        """Start the thread (once); returns self."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"benchrun-span-{self.span_id}", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread and wait for it; it writes the span one last time on its way out."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        uri = f"file:{quote(str(self.db_path))}?mode=rw"
        try:
            conn = sqlite3.connect(
                uri, uri=True, timeout=self._busy_ms / 1000, isolation_level=None
            )
        except sqlite3.Error:
            return  # the main thread's writes of the span remain
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_ms)}")
            conn.execute("PRAGMA synchronous = NORMAL")
            while not self._stop.wait(self._every):
                self._write(conn)
            self._write(conn)
        finally:
            conn.close()

    def _write(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute(_UPDATE, (self._clock() - self.t0, self.span_id))
            self.writes += 1
        except sqlite3.Error:
            pass  # skipped: see the class docstring
