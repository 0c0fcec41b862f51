"""``benchrun sweep EXPERIMENT --repo PATH A..B``: the experiment once per revision of the
measured program, each campaign tagged with its revision (docs/history.md).

Each revision is checked out in a git worktree of its own under
``<output>/<name>/.worktrees/<short>``, and measured by the real ``benchrun run`` (a child
process) with ``--revision <short>``, ``--set repository=PATH`` and ``--set
workdir=<the worktree>`` (the workloads' ``cwd`` starts there; the experiment's ``setup``
hook is the build). The campaigns go to one store, ``<output>/<name>/benchrun.db``, which
``benchrun history`` reads as one series per workload. Rerunning the same command reuses
every revision whose campaign finished and resumes the one that was interrupted.

Exit codes: 0 every revision measured; 1 a revision's campaign failed (the others are
measured); 2 bad input; 130 interrupted (rerun the same command to continue).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from benchrun.runner.commands import add_set_option

if TYPE_CHECKING:
    from collections.abc import Callable

    from benchrun.runner.campaign.revisions import Estimate
    from benchrun.runner.campaign.worktrees import Commit
    from benchrun.runner.store.database import CampaignRow

HELP = """\
Run the experiment once per revision of the measured program. Each revision is checked
out in a git worktree of its own (<output>/<name>/.worktrees/<short hash>) and measured by
`benchrun run` with --revision <short hash>, --set repository=PATH and --set
workdir=<the worktree>: the workloads run in the revision's files and the experiment's
setup hook (run there before a workload's first round) is the build. The campaigns go to
one store, <output>/<name>/benchrun.db, that `benchrun history` reads as one series per
workload; a worktree is removed once its campaign finished (--keep-worktrees keeps it).
The same command again reuses every revision whose campaign finished and resumes the one
that was interrupted. Exit status: 0 all measured, 1 a revision's campaign failed, 2 bad
input, 130 interrupted (docs/history.md)."""

EPILOG = """\
examples:
  benchrun sweep bench.yaml --repo ~/src/prog v1.0..main
  benchrun sweep bench.yaml --repo . HEAD~8..HEAD --set max_time=2m
  benchrun sweep bench.yaml --repo . v1.0 v1.1 v1.2      (a list of revisions)
  benchrun history results/bench                          (the series and its changes)

The experiment's paths (a workload's cwd, ./programs) are taken in the revision's worktree:
relative to the experiment file's place in the repository when the file lies inside it,
else relative to the repository's top (settings.workdir moves that start)."""


@dataclass(frozen=True)
class SweepRow:
    """One revision of a sweep: the commit, whether a finished campaign was reused, the
    exit code of its ``benchrun run`` child (0 when reused), the campaign's id (None when
    it failed to start), its status (``failed`` also when it stored no estimate) and each
    workload's estimate."""

    revision: Commit
    reused: bool
    exit_code: int
    campaign: int | None
    status: str
    workloads: list[Estimate]

    def to_json(self) -> dict[str, object]:
        """The revision's entry of ``sweep --json``: the commit's fields, then ``reused``,
        ``exit_code``, ``campaign``, ``status`` and ``workloads``."""
        return {
            **self.revision.to_dict(),
            "reused": self.reused,
            "exit_code": self.exit_code,
            "campaign": self.campaign,
            "status": self.status,
            "workloads": [e.to_dict() for e in self.workloads],
        }


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="run an experiment once per revision of the program (git worktrees), each "
        "campaign tagged; then benchrun history",
        description=HELP,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("experiment", metavar="EXPERIMENT", help="experiment file (YAML)")
    p.add_argument(
        "--repo",
        required=True,
        metavar="PATH",
        help="the measured program's git repository (its worktrees are added there)",
    )
    p.add_argument(
        "revisions",
        nargs="+",
        metavar="REV",
        help="a range A..B (git rev-list --reverse A..B: the commits after A up to B, "
        "oldest first) or revisions, measured in the order given",
    )
    p.add_argument("-o", "--output", metavar="DIR",
                   help="put the campaigns in DIR/<name> instead of the file's output:")  # fmt: skip
    add_set_option(p, "applied to every revision's campaign")
    p.add_argument(
        "--keep-worktrees",
        action="store_true",
        help="keep each revision's worktree (and its build) after its campaign finished",
    )
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress display of the campaigns, only a line per revision")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print one JSON document at the end")
    p.set_defaults(func=main)


def _quoted(value: Path | str) -> str:
    """A path as a YAML value of ``--set`` (JSON text: any character kept)."""
    return json.dumps(str(value))


def _estimates_line(found: list[Estimate]) -> str:
    """Each workload's estimate and interval, as the progress line shows them."""
    from benchrun.runner.format import format_value

    return "; ".join(
        f"{e.workload} {format_value(e.mean, e.unit)} "
        f"[{format_value(e.low, e.unit)}, {format_value(e.high, e.unit)}]"
        for e in found
    )


@dataclass(frozen=True)
class _Place:
    """Where a sweep's campaigns run and go (internal)."""

    top: Path
    campaign_dir: Path
    output: Path
    #: where the workloads start inside a worktree: the counterpart of this directory
    anchor: Path
    #: the ``--set`` item naming the repository
    repository: str


def _measure(
    args: argparse.Namespace,
    place: _Place,
    rev: Commit,
    unfinished: CampaignRow | None,
    fits: Callable[[CampaignRow], bool],
    head: str,
    say: Callable[[str], None],
) -> tuple[int, CampaignRow | None]:
    """Measure ``rev`` in a worktree of its own (an interrupted campaign of it resumed):
    the child's exit code and the finished campaign (None when it did not finish)."""
    from benchrun.runner.campaign.revisions import find_campaign, start_or_resume, workdir_in
    from benchrun.runner.campaign.worktrees import WORKTREES, remove_worktree, worktree
    from benchrun.runner.errors import UserError

    where = worktree(place.top, place.campaign_dir / WORKTREES, rev)
    workdir = workdir_in(where, place.top, place.anchor)
    fresh = [args.experiment, "-o", str(place.output), "--revision", rev.short]
    fresh += [w for item in args.overrides for w in ("--set", item)]
    fresh += ["--set", place.repository, "--set", f"workdir={_quoted(workdir)}"]
    if not args.quiet:
        say(f"{head}: measuring in {workdir}")
    code = start_or_resume(place.campaign_dir, rev.commit, unfinished, fits, fresh, args.quiet)
    if code in (2, 4):  # the experiment or the machine refused: so would the next
        raise UserError(
            f"the campaign of {rev.short} did not start (exit {code}, said above); "
            "nothing more measured"
        )
    done, _ = find_campaign(place.campaign_dir / "benchrun.db", rev.commit, fits)
    if done is not None and not args.keep_worktrees:
        remove_worktree(place.top, where)
    return code, done


def main(args: argparse.Namespace) -> int:
    """Measure each revision (or reuse its finished campaign), a line each, then the
    summary line or the JSON document."""
    from benchrun.runner.campaign.revisions import CampaignInterrupted, estimates, find_campaign
    from benchrun.runner.campaign.worktrees import WORKTREES, repository_top, revisions
    from benchrun.runner.config.loader import load_experiment
    from benchrun.runner.files import make_campaign_dir

    experiment = load_experiment(args.experiment, overrides=args.overrides, check_commands=False)
    top = repository_top(Path(args.repo).expanduser())
    revs = revisions(top, args.revisions)
    output = Path(args.output).absolute() if args.output else experiment.output
    campaign_dir = output / experiment.name
    make_campaign_dir(campaign_dir, f"-o {args.output}" if args.output else f"output: {output}")
    cache = campaign_dir / WORKTREES
    db = campaign_dir / "benchrun.db"
    assert experiment.source_path is not None
    anchor = (
        Path(experiment.settings.workdir)
        if experiment.settings.workdir is not None
        else experiment.source_path.parent
    )
    placed = [f"repository={_quoted(top)}"]
    place = _Place(top, campaign_dir, output, anchor, placed[0])
    # the fingerprint of every revision's campaign: cwds are recorded relative to workdir,
    # so any worktree path gives it
    fingerprint = load_experiment(
        args.experiment,
        overrides=[*args.overrides, *placed, f"workdir={_quoted(cache / 'any')}"],
        check_commands=False,
    ).measurement_fingerprint()

    def fits(c: CampaignRow) -> bool:
        return bool(c.name == experiment.name and c.fingerprint == fingerprint)

    rows: list[SweepRow] = []
    failed = 0
    say = (lambda line: print(line, file=sys.stderr, flush=True)) if args.json else print
    for i, rev in enumerate(revs, 1):
        head = f"[{i}/{len(revs)}] {rev.short} {rev.date[:10]} {rev.subject[:50]}"
        done, unfinished = find_campaign(db, rev.commit, fits)
        reused = done is not None
        code = 0
        if done is None:
            try:
                code, done = _measure(args, place, rev, unfinished, fits, head, say)
            except CampaignInterrupted:
                print(
                    f"benchrun: interrupted at {rev.short}; the same command continues "
                    "(finished revisions are reused, this one is resumed)",
                    file=sys.stderr,
                )
                return 130
        found = [] if done is None else estimates(db, done.id)
        status = "failed" if done is None else done.status
        if done is not None and not any(e.mean is not None for e in found):
            status = "failed"  # the build or every round failed
        row = SweepRow(rev, reused, code, None if done is None else done.id, status, found)
        if done is None:
            say(f"{head}: campaign failed (exit {code}); its worktree is kept: {cache / rev.short}")
        elif not any(e.mean is not None for e in found):  # the build or every round failed
            say(f"{head}: no estimate (campaign {done.id}: its setup or its rounds failed; "
                f"benchrun show {campaign_dir} --campaign {done.id} --failures)")  # fmt: skip
        else:
            say(f"{head}: {_estimates_line(found)} "
                f"(campaign {done.id}{', reused' if reused else ''})")  # fmt: skip
        failed += row.status == "failed"
        rows.append(row)
    hint = f"benchrun history {campaign_dir}"
    if args.json:
        doc = {
            "experiment": experiment.name,
            "repository": str(top),
            "store": str(db),
            "revisions": [r.to_json() for r in rows],
            "failed": failed,
            "history_command": hint,
        }
        print(json.dumps(doc, indent=2))
    else:
        print(f"{len(rows) - failed} of {len(rows)} revisions measured in {db}; over "
              f"revisions: {hint}")  # fmt: skip
    return 1 if failed else 0
