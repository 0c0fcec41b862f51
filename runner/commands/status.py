"""``benchrun status [ID]``: the live state of the running (or a given) daemon campaign;
``--json``: the same as one JSON document (:func:`status_doc`)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

from benchrun.runner.commands.replies import QueueItem
from benchrun.runner.daemon.live import CampaignLive, campaign_live, render
from benchrun.runner.daemon.protocol import request
from benchrun.runner.format import format_duration


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "status",
        help="live state of the daemon's running campaign (or of campaign ID)",
        description="Per workload: rounds stored, CI half-width vs target, undecided "
        "pairs and the estimated time to finish (adaptive runs); the queue state and "
        "message (e.g. why a campaign is paused).",
    )
    p.add_argument("id", type=int, nargs="?", help="campaign id (default: the running one)")
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON document: the queue entry and its live state (rounds, CI "
        "half-width vs target, undecided pairs, elapsed and estimated seconds); with no "
        'campaign running, {"entry": null, "queued": N}',
    )
    p.set_defaults(func=main)


def describe_entry(entry: QueueItem) -> list[str]:
    """The lines about one queue entry (state, files, message) and its live state."""
    lines = [f"campaign {entry.id} ({entry.name}): {entry.state}"]
    lines.append(f"  experiment: {entry.experiment}")
    lines.append(f"  results:    {entry.db_path}")
    if entry.started_at:
        since = time.time() - entry.started_at
        lines.append(
            f"  started:    {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(entry.started_at))}"
            f" ({format_duration(since)} ago, {entry.launches} launch(es))"
        )
    if entry.message:
        lines.append(f"  message:    {entry.message}")
    if entry.has_live:
        lines.extend(render(_live(entry)))
    return lines


def _live(entry: QueueItem) -> CampaignLive:
    """The live state of the entry's campaign, read from its store."""
    return campaign_live(Path(entry.db_path), entry.campaign_id, entry.base_campaign_id)


def status_doc(entry: QueueItem) -> dict[str, object]:
    """``status --json`` of one queue entry: ``entry`` (the daemon's queue entry as it
    sent it) and ``live`` (:class:`runner.daemon.live.CampaignLive` as a dict: the
    campaign's status, per workload the rounds, warm-up and failed rounds, target
    rounds, CI half-width relative to the mean and its target as fractions, done,
    rounds still needed; undecided pairs, elapsed_s, eta_s, the controller's reason), or
    None while the entry never launched."""
    live = dataclasses.asdict(_live(entry)) if entry.has_live else None
    return {"entry": entry.raw, "live": live}


def main(args: argparse.Namespace) -> int:
    if args.id is None:
        current = request("current")["entry"]
        if current is None:
            queued = [e for e in request("queue")["entries"] if e["state"] == "queued"]
            if args.json:
                print(json.dumps({"entry": None, "queued": len(queued)}, indent=2))
                return 0
            print(f"no campaign is running; {len(queued)} queued (`benchrun queue` lists them)")
            return 0
        entry = QueueItem.from_json(current)
    else:
        entry = QueueItem.from_json(request("get", id=args.id)["entry"])
    if args.json:
        print(json.dumps(status_doc(entry), indent=2, default=str))
        return 0
    print("\n".join(describe_entry(entry)))
    return 0
