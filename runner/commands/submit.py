"""``benchrun submit EXPERIMENT``: validate an experiment and queue it for the daemon."""

from __future__ import annotations

import argparse
import datetime as dt
import os

from benchrun.runner.commands import add_set_option
from benchrun.runner.config.loader import load_experiment
from benchrun.runner.daemon.protocol import request
from benchrun.runner.errors import UserError


def parse_not_before(text: str, now: dt.datetime | None = None) -> float:
    """``22:00`` (the next time the clock shows it, local time) or an ISO date and time
    (``2026-11-24T22:00``) as Unix seconds; ValueError with what is valid otherwise."""
    now = now or dt.datetime.now().astimezone()
    text = text.strip()
    try:
        clock = dt.time.fromisoformat(text)
    except ValueError:
        clock = None
    if clock is not None and len(text) <= 8:
        when = now.replace(hour=clock.hour, minute=clock.minute, second=clock.second, microsecond=0)
        if when <= now:
            when += dt.timedelta(days=1)
        return when.timestamp()
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"bad time {text!r}; use HH:MM (the next such time, local) or YYYY-MM-DDTHH:MM"
        ) from None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return moment.timestamp()


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "submit",
        help="queue an experiment for the daemon; prints the campaign id",
        description="Validate EXPERIMENT (the same checks as `benchrun validate`) and queue "
        "it; the daemon runs queued campaigns one at a time, highest priority first. "
        "Prints the campaign id used by status, logs and cancel.",
    )
    p.add_argument("experiment", help="experiment file (YAML)")
    p.add_argument(
        "--not-before",
        metavar="TIME",
        help="do not start before TIME: HH:MM (next occurrence, local time) or an ISO date-time",
    )
    p.add_argument(
        "--priority", type=int, default=0, metavar="N", help="higher runs first (default 0)"
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="put the campaign in DIR/<name> instead of the file's `output:`",
    )
    add_set_option(p, "checked now, applied at every launch and resume")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    experiment = load_experiment(args.experiment, overrides=args.overrides, collect=True)
    output = os.path.abspath(args.output) if args.output else str(experiment.output)
    db_path = os.path.join(output, experiment.name, "benchrun.db")
    if os.path.exists(db_path):
        from benchrun.runner.store.database import Store

        with Store.open(db_path):  # refuses a corrupt or foreign file with a clear error
            pass
    not_before = None
    if args.not_before:
        try:
            not_before = parse_not_before(args.not_before)
        except ValueError as exc:
            raise UserError(f"--not-before: {exc}") from None
    assert experiment.source_path is not None
    reply = request(
        "submit",
        experiment=str(experiment.source_path),
        name=experiment.name,
        output=output,
        db_path=db_path,
        cwd=os.getcwd(),
        config_text=experiment.source_text,
        priority=args.priority,
        not_before=not_before,
        overrides=list(args.overrides),
    )
    print(reply["id"])
    return 0
