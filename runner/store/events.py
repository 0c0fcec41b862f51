"""The event and run-span tables of the store: what was decided and why (controller
decisions, interruptions, resumes), and the spans of time each run of a campaign was
active (schema 4; runner/store/spans.py, runner/campaign/budget.py) (:class:`EventTables`).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping

from benchrun.runner.store.connection import StoreBase, guarded
from benchrun.runner.store.records import EventRow, dumps


def insert_event(
    c: sqlite3.Connection,
    campaign_id: int,
    kind: str,
    message: str,
    data: Mapping[str, object] | None,
    at: float,
) -> None:
    """INSERT one event (at ``at``, Unix s) inside the caller's transaction."""
    c.execute(
        "INSERT INTO event (campaign_id, at, kind, message, data_json) VALUES (?, ?, ?, ?, ?)",
        (campaign_id, at, kind, message, dumps(data) if data is not None else None),
    )


class EventTables(StoreBase):
    """Reads and writes of the ``event`` and ``run_span`` tables."""

    # -- events ----------------------------------------------------------------------------

    @guarded
    def add_event(
        self,
        campaign_id: int,
        kind: str,
        message: str,
        data: Mapping[str, object] | None = None,
    ) -> None:
        """Record what was decided and why (controller decisions, interruptions, resumes)."""
        with self.transaction() as c:
            insert_event(c, campaign_id, kind, message, data, time.time())

    #: INSERT one event inside the caller's transaction (kept as a method for callers)
    _event = staticmethod(insert_event)

    @guarded
    def events(self, campaign_id: int) -> list[EventRow]:
        rows = self.conn.execute(
            "SELECT id, at, kind, message, data_json FROM event WHERE campaign_id = ? ORDER BY id",
            (campaign_id,),
        ).fetchall()
        return [EventRow(r[0], r[1], r[2], r[3], json.loads(r[4]) if r[4] else None) for r in rows]

    # -- run spans (schema 4) ---------------------------------------------------------------

    @guarded
    def start_span(self, campaign_id: int, pid: int, started_at: float) -> int:
        """Record that a run (process ``pid``) of the campaign began at ``started_at`` (Unix
        s); returns the span's id (runner/store/spans.py keeps its seconds current)."""
        with self.transaction() as c:
            cur = c.execute(
                "INSERT INTO run_span (campaign_id, pid, started_at, seconds) VALUES (?, ?, ?, 0)",
                (campaign_id, pid, started_at),
            )
            return int(cur.lastrowid or 0)

    @guarded
    def spans(self, campaign_id: int) -> list[tuple[int, float, float]]:
        """``(pid, started_at, seconds)`` of every stored run of the campaign, oldest first
        (rows whose values are not numbers, which benchrun never writes, are left out)."""
        rows = self.conn.execute(
            "SELECT pid, started_at, seconds FROM run_span WHERE campaign_id = ? AND "
            "typeof(pid) = 'integer' AND typeof(started_at) IN ('real', 'integer') AND "
            "typeof(seconds) IN ('real', 'integer') ORDER BY id",
            (campaign_id,),
        ).fetchall()
        return [(int(r[0]), float(r[1]), float(r[2])) for r in rows]
