"""The campaign and workload tables of the store: a campaign created with its workloads,
its status, metadata and stop reason; the workloads' states (:class:`CampaignTables`).

Several campaigns may live in one file (each ``benchrun run`` without ``--resume`` starts a
new one, so nothing is ever overwritten); commands default to the newest.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from benchrun.runner.errors import UserError
from benchrun.runner.store.connection import StoreBase, guarded
from benchrun.runner.store.events import insert_event
from benchrun.runner.store.records import CampaignRow, WorkloadRow, dumps

if TYPE_CHECKING:
    from benchrun.runner.config.experiment import Experiment


class CampaignTables(StoreBase):
    """Reads and writes of the ``campaign`` and ``workload`` tables."""

    # -- campaigns -------------------------------------------------------------------------

    @guarded
    def create_campaign(
        self,
        *,
        name: str,
        config_path: str | None,
        config_text: str,
        fingerprint: str,
        settings: Mapping[str, object],
        workloads: Sequence[Mapping[str, object]],
        benchrun_version: str,
        command_line: str | None,
        experiment: Experiment | None = None,
    ) -> int:
        """Insert a campaign (status ``running``) with its workloads; returns its id.

        Each workload mapping has ``name, metric, unit, direction, spec``. ``experiment``:
        the parsed experiment, stored as JSON (``experiment_json``, schema 6:
        runner/config/stored.py) so that readers need not parse ``config_text``; without
        it the column is NULL and readers parse the text.
        """
        if experiment is not None:
            from benchrun.runner.config.stored import experiment_to_json

            experiment_json: str | None = experiment_to_json(experiment)
        else:
            experiment_json = None
        now = time.time()
        with self.transaction() as c:
            cur = c.execute(
                "INSERT INTO campaign (name, status, created_at, updated_at, config_path,"
                " config_text, fingerprint, settings_json, benchrun_version, command_line,"
                " experiment_json) VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    name,
                    now,
                    now,
                    config_path,
                    config_text,
                    fingerprint,
                    dumps(settings),
                    benchrun_version,
                    command_line,
                    experiment_json,
                ),
            )
            campaign_id = int(cur.lastrowid or 0)
            for position, w in enumerate(workloads):
                c.execute(
                    "INSERT INTO workload (campaign_id, name, position, metric, unit, direction,"
                    " spec_json) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        campaign_id,
                        w["name"],
                        position,
                        w["metric"],
                        w["unit"],
                        w["direction"],
                        dumps(w["spec"]),
                    ),
                )
            insert_event(c, campaign_id, "start", f"campaign {name} started", None, now)
        return campaign_id

    @guarded
    def set_metadata(self, campaign_id: int, metadata: Mapping[str, object]) -> None:
        with self.transaction() as c:
            c.execute(
                "UPDATE campaign SET metadata_json = ?, updated_at = ? WHERE id = ?",
                (dumps(metadata), time.time(), campaign_id),
            )

    @guarded
    def set_status(self, campaign_id: int, status: str, reason: str | None = None) -> None:
        """Set the campaign status (running/interrupted/done/failed) and record an event."""
        now = time.time()
        with self.transaction() as c:
            c.execute(
                "UPDATE campaign SET status = ?, stop_reason = ?, updated_at = ? WHERE id = ?",
                (status, reason, now, campaign_id),
            )
            insert_event(
                c, campaign_id, "status", f"{status}: {reason or ''}".rstrip(": "), None, now
            )

    @guarded
    def campaigns(self) -> list[CampaignRow]:
        rows = self.conn.execute("SELECT * FROM campaign ORDER BY id").fetchall()
        return [self._campaign(r) for r in rows]

    @guarded
    def campaign(self, campaign_id: int | None = None) -> CampaignRow:
        """The campaign with ``campaign_id``, or the newest one."""
        if campaign_id is None:
            row = self.conn.execute("SELECT * FROM campaign ORDER BY id DESC LIMIT 1").fetchone()
            if row is None:
                raise UserError(f"{self.path}: no campaign in this database")
        else:
            row = self.conn.execute(
                "SELECT * FROM campaign WHERE id = ?", (campaign_id,)
            ).fetchone()
            if row is None:
                ids = ", ".join(str(c.id) for c in self.campaigns()) or "none"
                raise UserError(f"{self.path}: no campaign {campaign_id} (campaigns: {ids})")
        return self._campaign(row)

    @staticmethod
    def _campaign(r: tuple[Any, ...]) -> CampaignRow:
        return CampaignRow(
            id=r[0],
            name=r[1],
            status=r[2],
            created_at=r[3],
            updated_at=r[4],
            config_path=r[5],
            config_text=r[6],
            fingerprint=r[7],
            settings=json.loads(r[8]),
            metadata=json.loads(r[9]) if r[9] else None,
            benchrun_version=r[10],
            command_line=r[11],
            stop_reason=r[12],
            experiment_json=r[13],
        )

    # -- workloads -------------------------------------------------------------------------

    @guarded
    def workloads(self, campaign_id: int) -> list[WorkloadRow]:
        rows = self.conn.execute(
            "SELECT id, name, position, metric, unit, direction, spec_json, status, status_reason"
            " FROM workload WHERE campaign_id = ? ORDER BY position",
            (campaign_id,),
        ).fetchall()
        return [
            WorkloadRow(
                id=r[0],
                name=r[1],
                position=r[2],
                metric=r[3],
                unit=r[4],
                direction=r[5],
                spec=json.loads(r[6]),
                status=r[7],
                status_reason=r[8],
            )
            for r in rows
        ]

    @guarded
    def set_workload_status(self, workload_id: int, status: str, reason: str | None) -> None:
        with self.transaction() as c:
            c.execute(
                "UPDATE workload SET status = ?, status_reason = ? WHERE id = ?",
                (status, reason, workload_id),
            )
