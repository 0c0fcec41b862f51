"""``benchrun bisect EXPERIMENT --repo PATH GOOD BAD --threshold PCT``: the first revision
after GOOD that is slower than GOOD by more than PCT, by binary search
(docs/history.md).

Each step is one campaign of two workloads: the chosen workload at GOOD (``NAME@good``)
and at the revision tested (``NAME@<short>``), each run in a git worktree of its
revision, in the same passes (interleaved), compared paired on their per-pass ratios with
GOOD as ``settings.reference``: the strongest test benchrun has. The first step checks
BAD itself; then the revisions between GOOD and BAD (``git log --ancestry-path``) are
halved, at most ``1 + ceil(log2 N)`` steps in all for N revisions after GOOD. Every step
runs at alpha / (that many steps), so the error rate of the whole search is at most
``--alpha`` (Bonferroni). A step that cannot tell stops the search and names the
revisions the first slower one may still be. The steps' campaigns are stored in
``<output>/<name>-bisect-<good>/benchrun.db``; the same command again reuses every
finished step and resumes an interrupted one.

Exit codes: 0 the first slower revision found; 1 BAD is not slower than GOOD by more than
PCT (nothing to search); 3 a step could not tell (the remaining revisions are listed);
2 bad input; 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from benchrun.runner.commands import add_set_option
from benchrun.runner.commands.compare import fraction

if TYPE_CHECKING:
    from benchrun.runner.campaign.bisection import BisectPlan, Search, StepResult
    from benchrun.runner.campaign.worktrees import Commit

HELP = """\
Find the first revision after GOOD that is slower than GOOD by more than --threshold, by
binary search. Each step is one campaign of two workloads, the chosen one at GOOD
(NAME@good) and at the revision tested (NAME@<short hash>), each run in a git worktree of
its revision, in the same passes, compared paired with GOOD as settings.reference. The
first step checks BAD; then the N revisions between GOOD and BAD (git log --ancestry-path)
are halved: at most 1 + ceil(log2 N) steps, each at alpha divided by that many, so the
error rate of the whole search is at most --alpha. A step is bad when the comparison says
slower and the ratio's whole CI lies above 1 + threshold, good when it says faster or
equivalent (within the threshold) or slower with the CI below it; an undecided step stops
the search and names the revisions that remain. The steps are stored in
<output>/<name>-bisect-<GOOD>/benchrun.db; the same command again reuses finished steps.
Exit status: 0 found, 1 BAD is not slower beyond the threshold, 3 undecided, 2 bad input,
130 interrupted (docs/history.md)."""

#: exit status: BAD is not slower than GOOD beyond the threshold
EXIT_NOT_SLOWER = 1
#: exit status: a step could not tell
EXIT_UNDECIDED = 3

#: settings a step sets itself (runner/campaign/bisection.py checks the same tuple)
STEP_SETTINGS = ("reference", "alpha", "confidence", "margin", "repository", "workdir")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bisect",
        help="find the first revision slower than GOOD by more than a threshold (binary "
        "search, each step a paired campaign of GOOD and one revision)",
        description=HELP,
        epilog="example:\n  benchrun bisect bench.yaml --repo ~/src/prog v1.0 main --threshold 5%",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("experiment", metavar="EXPERIMENT", help="experiment file (YAML)")
    p.add_argument("--repo", required=True, metavar="PATH",
                   help="the measured program's git repository")  # fmt: skip
    p.add_argument("good", metavar="GOOD", help="a revision measured as the reference")
    p.add_argument("bad", metavar="BAD", help="a later revision (GOOD must be its ancestor)")
    p.add_argument(
        "--threshold",
        required=True,
        type=fraction,
        metavar="PCT",
        help="slower than GOOD by more than this counts as slower, e.g. 5%% or 0.05",
    )
    p.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        help="error rate of the whole search (default 0.05), split evenly over its most steps",
    )
    p.add_argument(
        "--workload",
        metavar="NAME",
        help="the workload to search on (needed when the experiment has several)",
    )
    p.add_argument("-o", "--output", metavar="DIR",
                   help="put the steps' store in DIR instead of the file's output:")  # fmt: skip
    add_set_option(p, "applied to every step's campaign; the step sets " + ", ".join(STEP_SETTINGS))
    p.add_argument("--keep-worktrees", action="store_true",
                   help="keep the worktrees (and builds) of the revisions measured")  # fmt: skip
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress display of the campaigns, only a line per step")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print one JSON document at the end")
    p.set_defaults(func=main)


def _ratio(step: StepResult) -> str:
    if step.ratio is None:
        return "no ratio"
    ci = "" if step.low is None or step.high is None else f" [{step.low:.4f}, {step.high:.4f}]"
    return f"{step.ratio:.4f}x{ci} vs GOOD"


def _shorts(commits: list[Commit], most: int = 8) -> str:
    shown = [c.short for c in commits]
    if len(shown) > most:
        shown = [*shown[: most // 2], "...", *shown[-most // 2 :]]
    return ", ".join(shown)


def _say(args: argparse.Namespace, line: str) -> None:
    """A progress line: on stderr under ``--json`` (stdout is the document), else stdout."""
    print(line, file=sys.stderr if args.json else sys.stdout, flush=True)


def _report(plan: BisectPlan, args: argparse.Namespace, search: Search) -> int:
    """Print the search's outcome (a line and the error rate, or the JSON document) and
    return the exit status."""
    first = search.first_bad
    remaining = search.remaining
    found: StepResult | None = None
    if first is not None:
        found = next(s for s in search.steps if s.revision.commit == first.commit)
        outcome, code = "found", 0
        line = (f"first revision slower than GOOD by more than {100 * args.threshold:g} %: "
                f"{first.short} {first.subject[:60]} ({_ratio(found)})")  # fmt: skip
    elif search.stopped == "not slower":
        outcome, code = "not slower", EXIT_NOT_SLOWER
        line = (f"BAD {plan.bad.short} is not slower than GOOD by more than "
                f"{100 * args.threshold:g} %: nothing to search")  # fmt: skip
    else:
        outcome, code = "undecided", EXIT_UNDECIDED
        line = (f"undecided at {search.steps[-1].revision.short}: the first slower revision is "
                f"one of {len(remaining)}: {_shorts(remaining)}")  # fmt: skip
    level = (f"error rate of the search at most {args.alpha:g}: {len(search.steps)} of at most "
             f"{plan.most} steps at {plan.alpha_step:.3g} each")  # fmt: skip
    if not args.json:
        print(line)
        print(level)
        return code
    doc = {
        "experiment": plan.experiment.name,
        "workload": plan.chosen.name,
        "repository": str(plan.top),
        "store": str(plan.db),
        "good": plan.good.to_dict(),
        "bad": plan.bad.to_dict(),
        "threshold": args.threshold,
        "alpha": args.alpha,
        "alpha_step": plan.alpha_step,
        "max_steps": plan.most,
        "candidates": len(plan.candidates),
        "steps": [s.to_dict() for s in search.steps],
        "outcome": outcome,
        "first_bad": None if first is None or found is None else {
            **first.to_dict(),
            **{k: v for k, v in found.to_dict().items() if k.startswith("ratio")},
        },
        "remaining": [c.short for c in remaining] if outcome == "undecided" else [],
    }  # fmt: skip
    print(json.dumps(doc, indent=2))
    print(f"{line} ({level})", file=sys.stderr)
    return code


def main(args: argparse.Namespace) -> int:
    """Run the search: plan it, measure (or reuse) one step after another until the
    search ends, then report."""
    from benchrun.runner.campaign.bisection import (
        BisectRequest,
        Search,
        judge_step,
        measure_step,
        plan_search,
    )
    from benchrun.runner.campaign.revisions import CampaignInterrupted
    from benchrun.runner.campaign.worktrees import remove_worktree

    req = BisectRequest(
        args.experiment, args.repo, args.good, args.bad, args.threshold, args.alpha,
        args.workload, args.output, tuple(args.overrides), args.keep_worktrees, args.quiet,
    )  # fmt: skip
    plan = plan_search(req)

    def say(line: str) -> None:
        _say(args, line)

    say(
        f"bisect {plan.chosen.name} between GOOD {plan.good.short} and BAD {plan.bad.short}: "
        f"{len(plan.candidates)} revisions, at most {plan.most} steps at alpha "
        f"{plan.alpha_step:.3g} each (search {args.alpha:g}); slower means > "
        f"{1 + args.threshold:.4g}x GOOD"
    )
    measured_any = False
    search = Search(plan.candidates)
    while (index := search.next_index()) is not None:
        rev = plan.candidates[index]
        label = (
            f"step {len(search.steps) + 1}/{plan.most}: {rev.short} {rev.date[:10]} "
            f"{rev.subject[:40]}"
        )
        try:
            done, reused = measure_step(plan, req, rev, label, say)
        except CampaignInterrupted:
            print(f"benchrun: interrupted at {rev.short}; the same command continues "
                  "(finished steps are reused, this one is resumed)", file=sys.stderr)  # fmt: skip
            return 130
        measured_any = measured_any or not reused
        step = judge_step(plan, req, rev, done, reused)
        search.record(index, step)
        say(f"{label}: {_ratio(step)} ({step.comparison}): {step.verdict}, {step.why} "
            f"(campaign {done.id}{', reused' if reused else ''})")  # fmt: skip
    if measured_any and not req.keep_worktrees:
        remove_worktree(plan.top, plan.cache / plan.good.short)
    return _report(plan, args, search)
