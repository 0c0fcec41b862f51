"""What ``benchrun status`` shows about a campaign: its live state, read defensively.

Two sources: ``<campaign_dir>/status.json`` (written atomically by adaptive runs after
every round: CI half-width vs target, undecided pairs, estimated time to finish) when it
exists and belongs to this campaign, and always the campaign's results DB (rounds per
workload, counted with plain SQL in read-only mode, so a running campaign is not
disturbed). Missing keys, a missing file or an unreadable DB only make the view shorter.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchrun.runner.campaign.livestatus import LiveStatus
from benchrun.runner.daemon.child import CAMPAIGN_AFTER_SQL, connect_read_only
from benchrun.runner.format import format_duration
from benchrun.runner.results.settings import campaign_settings


@dataclass
class WorkloadLive:
    """One workload: ``rounds`` stored (ok, steady), ``failed`` rounds, ``target`` rounds
    (fixed mode) and, from status.json, the CI half-width relative to the mean and its
    target (fractions), ``done`` and the controller's estimate of rounds still needed."""

    name: str
    rounds: int = 0
    warmup: int = 0
    failed: int = 0
    target_rounds: int | None = None
    rel_half_width: float | None = None
    target_width: float | None = None
    done: bool | None = None
    rounds_needed: int | None = None


@dataclass
class CampaignLive:
    """The live state of one campaign; ``eta_s``/``elapsed_s`` are seconds."""

    campaign_id: int | None
    status: str | None = None
    adaptive: bool = False
    workloads: list[WorkloadLive] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)
    elapsed_s: float | None = None
    eta_s: float | None = None
    reason: str | None = None
    note: str | None = None


def read_status_json(campaign_dir: Path) -> LiveStatus | None:
    """The campaign's ``status.json`` (written by adaptive runs after every round).

    Parameters
    ----------
    campaign_dir : Path
        The directory holding the results DB.

    Returns
    -------
    LiveStatus or None
        None if the file is missing, unreadable or not a JSON object
        (:meth:`runner.campaign.livestatus.LiveStatus.from_json`).
    """
    try:
        text = (campaign_dir / "status.json").read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    return LiveStatus.from_json(text)


def campaign_live(db_path: Path, campaign_id: int | None, base_id: int = 0) -> CampaignLive:
    """Read the live state of a campaign without disturbing it (read-only SQL).

    Parameters
    ----------
    db_path : Path
        The campaign's results DB.
    campaign_id : int or None
        The campaign; None: the first campaign after ``base_id``.
    base_id : int
        The highest campaign id before the queue entry's first launch.

    Returns
    -------
    CampaignLive
        What could be read; a missing or unreadable DB gives a ``note`` saying so.
    """
    live = CampaignLive(campaign_id)
    if not db_path.is_file():
        live.note = f"{db_path} does not exist yet"
        return live
    try:
        conn = connect_read_only(db_path)
        try:
            if campaign_id is None:
                row = conn.execute(CAMPAIGN_AFTER_SQL, (base_id,)).fetchone()
                if row is None:
                    live.note = "the campaign has not been created yet"
                    return live
                campaign_id = live.campaign_id = int(row[0])
            row = conn.execute(
                "SELECT status, settings_json, created_at FROM campaign WHERE id = ?",
                (campaign_id,),
            ).fetchone()
            if row is None:
                live.note = f"no campaign {campaign_id} in {db_path}"
                return live
            live.status = row[0]
            settings = campaign_settings(json.loads(row[1]) if row[1] else None)
            live.adaptive = bool(settings.adaptive)
            target = warmup_target = None
            # the stored values are as the campaign wrote them: checked, not trusted
            if not live.adaptive and isinstance(settings.rounds, int):
                target = settings.rounds
                warmup_target = int(settings.warmup_rounds or 0)
            live.elapsed_s = time.time() - float(row[2])
            # steady: ok, not warm-up, not a contended round the analysis leaves out
            # (docs/contention.md; every contended round counts with contended: keep)
            keep = 1 if settings.contended == "keep" else 0
            counts = conn.execute(
                "SELECT w.name, sum(r.status = 'ok' AND r.warmup = 0 AND (? OR"
                " (',' || r.flags || ',') NOT LIKE '%,contended,%')), sum(r.warmup),"
                " sum(r.status != 'ok'), count(r.id) FROM workload w LEFT JOIN round r"
                " ON r.workload_id = w.id WHERE w.campaign_id = ? GROUP BY w.id ORDER BY w.position",
                (keep, campaign_id),
            ).fetchall()
        finally:
            conn.close()
    except (sqlite3.Error, ValueError) as exc:
        live.note = f"cannot read {db_path}: {exc}"
        return live
    launched = 0
    for name, ok, warm, failed, total in counts:
        live.workloads.append(
            WorkloadLive(name, int(ok or 0), int(warm or 0), int(failed or 0), target)
        )
        launched += int(total or 0)
    if target is not None and live.status == "running" and launched and live.elapsed_s:
        remaining = sum(
            max(0, target - w.rounds) + max(0, (warmup_target or 0) - w.warmup)
            for w in live.workloads
        )
        live.eta_s = remaining * live.elapsed_s / launched
    _merge_status_json(live, db_path.parent)
    return live


def _merge_status_json(live: CampaignLive, campaign_dir: Path) -> None:
    status = read_status_json(campaign_dir)
    if status is None:
        return
    if status.campaign_id is not None and status.campaign_id != live.campaign_id:
        return  # written by another campaign of the same directory
    if status.eta_s is not None:
        live.eta_s = status.eta_s
    if status.elapsed_s is not None:
        live.elapsed_s = status.elapsed_s
    if status.reason is not None:
        live.reason = status.reason
    if status.undecided:
        live.undecided = list(status.undecided)
    by_name = {w.name: w for w in live.workloads}
    for name, info in status.workloads.items():
        w = by_name.get(name)
        if w is None:
            w = WorkloadLive(name)
            live.workloads.append(w)
        w.rel_half_width = info.rel_half_width
        w.target_width = info.target
        if info.done is not None:
            w.done = info.done
        if info.rounds_needed is not None:
            w.rounds_needed = info.rounds_needed


def _duration(seconds: float | None) -> str:
    """:func:`runner.format.format_duration`, or ``?`` when unknown."""
    return "?" if seconds is None else format_duration(seconds)


def render(live: CampaignLive) -> list[str]:
    """The lines ``benchrun status`` prints for a campaign's live state.

    Parameters
    ----------
    live : CampaignLive
        From :func:`campaign_live`.

    Returns
    -------
    list of str
        Indented lines: campaign, note, one per workload, undecided pairs, controller.
    """
    lines: list[str] = []
    if live.campaign_id is not None:
        mode = "adaptive" if live.adaptive else "fixed"
        line = (
            f"  results campaign {live.campaign_id} ({mode}, {live.status or '?'}): "
            f"elapsed {_duration(live.elapsed_s)}"
        )
        if live.status == "running":
            line += f", estimated time to finish {_duration(live.eta_s)}"
        lines.append(line)
    if live.note:
        lines.append(f"  {live.note}")
    if live.workloads:
        width = max(8, *(len(w.name) for w in live.workloads))
        lines.append(f"  {'workload':<{width}}  rounds      failed  CI half-width / target")
        for w in live.workloads:
            rounds = str(w.rounds) + (f"/{w.target_rounds}" if w.target_rounds else "")
            if w.warmup:
                rounds += f" +{w.warmup}w"
            ci = "-"
            if w.rel_half_width is not None:
                ci = f"{w.rel_half_width:.2%}"
                if w.target_width is not None:
                    ci += f" / {w.target_width:.2%}"
            if w.done is not None:
                ci += " done" if w.done else ""
            if w.rounds_needed is not None and not w.done:
                ci += f" (~{w.rounds_needed} more rounds)"
            lines.append(f"  {w.name:<{width}}  {rounds:<10}  {w.failed:>6}  {ci}")
    if live.undecided:
        lines.append(f"  undecided pairs: {', '.join(live.undecided)}")
    if live.reason:
        lines.append(f"  controller: {live.reason}")
    return lines
