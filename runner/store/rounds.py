"""The round, reading and hook tables of the store: a round and its readings (and the
hooks of its transaction) appended in one transaction or in the open group, read back in
launch order (:class:`RoundTables`).

``UNIQUE(workload_id, round_index)`` makes a duplicate round impossible. Raw data is never
rewritten by analysis; flags decide what is used. Units: times in the ``round`` table are
Unix seconds (``started_at``), nanoseconds (``wall_ns``) and CPU seconds (``user_s``,
``sys_s``); ``max_rss_kib`` is KiB. Readings are in the workload's unit.
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from benchrun.runner.store.connection import StoreBase, guarded
from benchrun.runner.store.faults import StoreFull, is_disk_full
from benchrun.runner.store.records import (
    HOOK_COLUMNS,
    INSERT_HOOK,
    INSERT_METRIC,
    INSERT_READING,
    ROUND_COLUMNS,
    HookRow,
    NewHook,
    NewRound,
    RoundMetric,
    RoundRow,
    round_row,
)

#: INSERT statements of ``round``, by column names (add_round)
_INSERT_ROUND: dict[tuple[str, ...], str] = {}


class RoundTables(StoreBase):
    """Reads and writes of the ``round``, ``reading`` and ``hook`` tables."""

    # -- rounds ----------------------------------------------------------------------------

    @guarded
    def add_round(
        self, new: NewRound | None = None, /, *, group: bool = False, **fields: Any
    ) -> int:
        """Append one round and its readings in ONE transaction; returns the round id.

        ``new`` is the round; keyword arguments (the fields of :class:`NewRound`) build one
        instead. A second insert of the same (workload, round_index) raises
        ``sqlite3.IntegrityError``: rounds are never duplicated.

        ``group=True``: the round joins the open *group* transaction (opened by the first
        such round) and is committed with it by :meth:`commit_group`, by the next write of
        its own (:meth:`transaction`) or by :meth:`close`; until then other connections do
        not see it and a crash of the process loses it (docs/loop.md "Durability"). A
        round that fails to insert is undone alone (a savepoint); the group stays open.
        """
        rec = new if new is not None else NewRound(**fields)
        if group:
            return self._add_grouped(rec)
        with self.transaction() as c:
            return self._insert_round(c, rec)

    def _add_grouped(self, rec: NewRound) -> int:
        c = self.conn
        if not self._group_rounds:
            try:
                c.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise self._full_or(exc) from exc
            self._group_since = time.monotonic()
        c.execute("SAVEPOINT grouped_round")
        try:
            round_id = self._insert_round(c, rec)
        except BaseException as exc:
            try:
                c.execute("ROLLBACK TO grouped_round")
                c.execute("RELEASE grouped_round")
            except sqlite3.Error:
                pass
            if not self._group_rounds:  # the group held nothing: end its transaction
                self._rollback_quietly()
            if isinstance(exc, sqlite3.OperationalError) and is_disk_full(exc):
                raise StoreFull(self.path, exc) from exc
            raise
        c.execute("RELEASE grouped_round")
        self._group_rounds += 1
        return round_id

    def _insert_round(self, c: sqlite3.Connection, rec: NewRound) -> int:
        """INSERT the round, its readings and hooks inside the caller's transaction."""
        row = rec.columns()
        sql = _INSERT_ROUND.get(tuple(row))
        if sql is None:
            names = ", ".join(row)
            marks = ", ".join("?" * len(row))
            sql = _INSERT_ROUND[tuple(row)] = f"INSERT INTO round ({names}) VALUES ({marks})"
        now = time.time()
        cur = c.execute(sql, tuple(row.values()))
        round_id = int(cur.lastrowid or 0)
        if len(rec.readings) == 1:
            c.execute(INSERT_READING, (round_id, 0, float(rec.readings[0])))
        elif rec.readings:
            c.executemany(
                INSERT_READING, [(round_id, i, float(v)) for i, v in enumerate(rec.readings)]
            )
        if rec.hooks:
            c.executemany(INSERT_HOOK, [h.row() for h in rec.hooks])
        if rec.metrics:
            c.executemany(
                INSERT_METRIC,
                [(round_id, m.name, float(m.value), m.source, m.scope) for m in rec.metrics],
            )
        # the campaign's updated_at: to the second (a row write fewer in most rounds)
        if now - self._updated_at.get(rec.campaign_id, 0.0) >= 1.0:
            self._updated_at[rec.campaign_id] = now
            c.execute("UPDATE campaign SET updated_at = ? WHERE id = ?", (now, rec.campaign_id))
        return round_id

    @guarded
    def rounds(self, campaign_id: int, workload_id: int | None = None) -> list[RoundRow]:
        """Rounds in launch order (``seq``), each with its readings (inside a read-only
        :meth:`snapshot`, read once: a second call returns the same rows)."""
        cached = self._snapshot_rows
        key = ("rounds", campaign_id, workload_id)
        if cached is not None and key in cached:
            return list(cached[key])
        sql = f"SELECT {', '.join(ROUND_COLUMNS)} FROM round WHERE campaign_id = ?"
        params: list[Any] = [campaign_id]
        if workload_id is not None:
            sql += " AND workload_id = ?"
            params.append(workload_id)
        cur = self.conn.execute(sql + " ORDER BY seq", params)
        cur.row_factory = sqlite3.Row
        rows = cur.fetchall()
        readings: dict[int, list[float]] = {}
        rsql = (
            "SELECT reading.round_id, reading.value FROM reading JOIN round"
            " ON round.id = reading.round_id WHERE round.campaign_id = ?"
        )
        rparams: list[Any] = [campaign_id]
        if workload_id is not None:
            rsql += " AND round.workload_id = ?"
            rparams.append(workload_id)
        for round_id, value in self.conn.execute(
            rsql + " ORDER BY reading.round_id, reading.idx", rparams
        ):
            readings.setdefault(round_id, []).append(value)
        out = [round_row(r, readings.get(r["id"], ())) for r in rows]
        if cached is not None:
            cached[key] = out
            return list(out)
        return out

    @guarded
    def round_metrics(self, campaign_id: int) -> dict[int, tuple[RoundMetric, ...]]:
        """Every stored metric of the campaign's rounds (schema 5), by round id, in the
        order of the workload's ``metric:`` list; rounds without any are left out."""
        out: dict[int, list[RoundMetric]] = {}
        rows = self.conn.execute(
            "SELECT m.round_id, m.name, m.value, m.source, m.scope FROM round_metric m"
            " JOIN round ON round.id = m.round_id WHERE round.campaign_id = ?"
            " ORDER BY m.round_id, m.rowid",
            (campaign_id,),
        )
        for round_id, name, value, source, scope in rows:
            out.setdefault(round_id, []).append(RoundMetric(name, value, source, scope))
        return {k: tuple(v) for k, v in out.items()}

    @guarded
    def reading_flags(self, campaign_id: int) -> dict[tuple[int, int], str]:
        """Flags stored on individual readings, by (round id, reading index); readings
        without one are left out (:class:`RoundRow` holds the values only)."""
        rows = self.conn.execute(
            "SELECT reading.round_id, reading.idx, reading.flags FROM reading JOIN round ON "
            "round.id = reading.round_id WHERE round.campaign_id = ? AND reading.flags != ''",
            (campaign_id,),
        ).fetchall()
        return {(r[0], r[1]): r[2] for r in rows}

    # -- hooks -----------------------------------------------------------------------------

    @guarded
    def add_hook(self, hook: NewHook) -> int:
        """Store one run of a setup/prepare/cleanup hook (its own transaction); its id."""
        with self.transaction() as c:
            cur = c.execute(INSERT_HOOK, hook.row())
            return int(cur.lastrowid or 0)

    @guarded
    def hooks(self, campaign_id: int, workload_id: int | None = None) -> list[HookRow]:
        """The stored hook runs of a campaign (of one workload), in the order they ran."""
        sql = f"SELECT id, {', '.join(HOOK_COLUMNS)} FROM hook WHERE campaign_id = ?"
        params: list[Any] = [campaign_id]
        if workload_id is not None:
            sql += " AND workload_id = ?"
            params.append(workload_id)
        rows = self.conn.execute(sql + " ORDER BY id", params).fetchall()
        out = []
        for r in rows:
            values = dict(zip(("id", *HOOK_COLUMNS), r, strict=True))
            values["argv"] = json.loads(values.pop("argv_json"))
            out.append(HookRow(**values))
        return out

    @guarded
    def next_seq(self, campaign_id: int) -> int:
        row = self.conn.execute(
            "SELECT coalesce(max(seq), -1) + 1 FROM round WHERE campaign_id = ?", (campaign_id,)
        ).fetchone()
        return int(row[0])
