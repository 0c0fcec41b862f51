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
import math
import sys
from pathlib import Path
from typing import Any

from benchrun.runner.commands import add_set_option
from benchrun.runner.commands.compare import fraction

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

#: settings a step sets itself (the pair, its level, the threshold as the TOST margin)
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


def _quoted(value: Path | str) -> str:
    return json.dumps(str(value))


def _ratio(step: Any) -> str:
    if step.ratio is None:
        return "no ratio"
    ci = "" if step.low is None or step.high is None else f" [{step.low:.4f}, {step.high:.4f}]"
    return f"{step.ratio:.4f}x{ci} vs GOOD"


def _why(reason: Any, tested: str) -> str:
    """The part of the stored comparisons' reason about the pair with ``tested``."""
    parts = [p.strip() for p in str(reason or "").split(";")]
    return "; ".join(p for p in parts if tested in p)


def _shorts(commits: list[Any], most: int = 8) -> str:
    shown = [c.short for c in commits]
    if len(shown) > most:
        shown = [*shown[: most // 2], "...", *shown[-most // 2 :]]
    return ", ".join(shown)


def main(args: argparse.Namespace) -> int:  # noqa: C901 (one search, read top to bottom)
    from benchrun.runner.campaign.revisions import (
        Search,
        StepResult,
        classify,
        find_campaign,
        revision_of,
        run_child,
        search_steps,
        step_experiment,
        step_names,
        workdir_in,
    )
    from benchrun.runner.campaign.worktrees import (
        WORKTREES,
        between,
        is_ancestor,
        remove_worktree,
        repository_top,
        resolve,
        worktree,
    )
    from benchrun.runner.commands.run import make_campaign_dir
    from benchrun.runner.config.loader import load_experiment, parse_experiment
    from benchrun.runner.errors import UserError
    from benchrun.runner.files import atomic_write_text
    from benchrun.runner.results.comparisons import campaign_verdicts
    from benchrun.runner.store.database import Store

    if not 0 < args.alpha < 0.5:
        raise UserError(f"--alpha {args.alpha}: must be in (0, 0.5)")
    if not 0 < args.threshold < 10:
        raise UserError(f"--threshold {args.threshold}: give a positive fraction, e.g. 5%")
    for item in args.overrides:
        if item.partition("=")[0].strip() in STEP_SETTINGS:
            raise UserError(
                f"--set {item}: bisect sets {item.partition('=')[0].strip()} itself (the pair, "
                "--alpha, --threshold, --repo); drop it"
            )
    experiment = load_experiment(args.experiment, overrides=args.overrides, check_commands=False)
    names = list(experiment.names)
    if args.workload is None:
        if len(names) != 1:
            raise UserError(
                f"the experiment has {len(names)} workloads ({', '.join(names[:5])}"
                f"{', ...' if len(names) > 5 else ''}); choose one with --workload NAME"
            )
        args.workload = names[0]
    chosen = next((w for w in experiment.workloads if w.name == args.workload), None)
    if chosen is None:
        raise UserError(f"--workload {args.workload}: no such workload; valid: {', '.join(names)}")
    top = repository_top(Path(args.repo).expanduser())
    good, bad = resolve(top, args.good), resolve(top, args.bad)
    if good.commit == bad.commit:
        raise UserError(f"GOOD {args.good} and BAD {args.bad} are the same commit; nothing between")
    if not is_ancestor(top, good.commit, bad.commit):
        raise UserError(
            f"GOOD {args.good} is not an ancestor of BAD {args.bad}; give an older GOOD on "
            "BAD's history"
        )
    candidates = between(top, good.commit, bad.commit)
    most = search_steps(len(candidates))
    alpha_step = args.alpha / most
    output = Path(args.output).absolute() if args.output else experiment.output
    step_name = f"{experiment.name}-bisect-{good.short}"[:200]
    store_dir = output / step_name
    make_campaign_dir(store_dir, f"-o {args.output}" if args.output else f"output: {output}")
    cache = store_dir / WORKTREES
    db = store_dir / "benchrun.db"
    assert experiment.source_path is not None
    anchor = (
        Path(experiment.settings.workdir)
        if experiment.settings.workdir is not None
        else experiment.source_path.parent
    )
    text = experiment.source_text
    base = chosen.base_name or chosen.name
    say = (lambda line: print(line, file=sys.stderr, flush=True)) if args.json else print
    say(
        f"bisect {chosen.name} between GOOD {good.short} and BAD {bad.short}: {len(candidates)} "
        f"revisions, at most {most} steps at alpha {alpha_step:.3g} each (search {args.alpha:g}); "
        f"slower means > {1 + args.threshold:.4g}x GOOD"
    )
    good_tree: Path | None = None
    search = Search(candidates)
    while (index := search.next_index()) is not None:
        rev = candidates[index]
        good_name, tested_name = step_names(chosen.name, rev.short)
        good_dir = workdir_in(cache / good.short, top, anchor)
        tested_dir = workdir_in(cache / rev.short, top, anchor)
        step_text = step_experiment(
            text, step_name, base, dict(chosen.params),
            [("good", good_dir), (rev.short, tested_dir)],
        )  # fmt: skip
        sets = [
            *args.overrides,
            f"repository={_quoted(top)}",
            f"reference={_quoted(good_name)}",
            f"alpha={alpha_step!r}",
            f"confidence={1 - alpha_step!r}",
            f"margin={args.threshold!r}",
        ]
        if not any(item.partition("=")[0].strip() == "ci_rel_width" for item in args.overrides):
            # the ratio's CI half-width: narrow enough to fall on one side of the threshold
            # unless the revision's true ratio is within threshold/2 of it
            sets.append(f"ci_rel_width={args.threshold / 2!r}")
        step_file = store_dir / "steps" / f"{rev.short}.yaml"
        fingerprint = parse_experiment(
            step_text, base_dir=step_file.parent, overrides=sets, check_commands=False
        ).measurement_fingerprint()

        def fits(c: Any, fingerprint: str = fingerprint, good_name: str = good_name) -> bool:
            s = c.settings
            return bool(
                c.fingerprint == fingerprint
                and s.get("reference") == good_name
                and math.isclose(float(s.get("alpha", 0)), alpha_step)
                and math.isclose(float(s.get("confidence", 0)), 1 - alpha_step)
                and math.isclose(float(s.get("margin", 0)), args.threshold)
            )

        done, unfinished = find_campaign(db, rev.commit, fits)
        reused = done is not None
        label = (
            f"step {len(search.steps) + 1}/{most}: {rev.short} {rev.date[:10]} {rev.subject[:40]}"
        )
        if done is None:
            good_tree = worktree(top, cache, good)
            tested_tree = worktree(top, cache, rev)
            own = (
                unfinished is not None
                and fits(unfinished)
                and ((r := revision_of(unfinished)) is not None and r.commit == rev.commit)
            )
            if own:
                words = [str(store_dir), "--resume"]
            else:
                step_file.parent.mkdir(mode=0o700, exist_ok=True)
                atomic_write_text(step_file, step_text)
                words = [str(step_file), "-o", str(output), "--revision", rev.short]
                words += [w for item in sets for w in ("--set", item)]
                if unfinished is not None:
                    words.append("--new")
            if not args.quiet:
                say(f"{label}: measuring {good_name} and {tested_name}")
            try:
                code = run_child(words, args.quiet)
            except KeyboardInterrupt:
                print(f"benchrun: interrupted at {rev.short}; the same command continues "
                      "(finished steps are reused, this one is resumed)", file=sys.stderr)  # fmt: skip
                return 130
            done, _ = find_campaign(db, rev.commit, fits)
            if done is None:
                raise UserError(
                    f"the campaign of {rev.short} did not finish (exit {code}, said above); "
                    f"its worktree is kept: {tested_tree}"
                )
            if not args.keep_worktrees and rev.commit != good.commit:
                remove_worktree(top, tested_tree)
        with Store.open(db) as store, store.snapshot():
            verdicts = campaign_verdicts(store, done) or {}
        pair = next(
            (b for b in verdicts.get("baselines") or []
             if b.get("name") == tested_name and b.get("baseline") == good_name),
            None,
        )  # fmt: skip
        verdict, why, ratio, low, high = classify(
            pair, chosen.direction, args.threshold, _why(verdicts.get("reason"), tested_name)
        )
        step = StepResult(
            rev, done.id, str(db), reused, ratio, low, high,
            str(pair.get("verdict")) if pair else "none", verdict, why,
            pair.get("passes") if pair else None,
        )  # fmt: skip
        search.record(index, step)
        say(f"{label}: {_ratio(step)} ({step.comparison}): {verdict}, {why} "
            f"(campaign {done.id}{', reused' if reused else ''})")  # fmt: skip
    if good_tree is not None and not args.keep_worktrees:
        remove_worktree(top, good_tree)
    first = search.first_bad
    remaining = search.remaining
    if first is not None:
        found = next(s for s in search.steps if s.revision.commit == first.commit)
        outcome, code = "found", 0
        line = (f"first revision slower than GOOD by more than {100 * args.threshold:g} %: "
                f"{first.short} {first.subject[:60]} ({_ratio(found)})")  # fmt: skip
    elif search.stopped == "not slower":
        outcome, code = "not slower", EXIT_NOT_SLOWER
        line = (f"BAD {bad.short} is not slower than GOOD by more than "
                f"{100 * args.threshold:g} %: nothing to search")  # fmt: skip
    else:
        outcome, code = "undecided", EXIT_UNDECIDED
        line = (f"undecided at {search.steps[-1].revision.short}: the first slower revision is "
                f"one of {len(remaining)}: {_shorts(remaining)}")  # fmt: skip
    level = (f"error rate of the search at most {args.alpha:g}: {len(search.steps)} of at most "
             f"{most} steps at {alpha_step:.3g} each")  # fmt: skip
    if args.json:
        doc = {
            "experiment": experiment.name,
            "workload": chosen.name,
            "repository": str(top),
            "store": str(db),
            "good": good.to_dict(),
            "bad": bad.to_dict(),
            "threshold": args.threshold,
            "alpha": args.alpha,
            "alpha_step": alpha_step,
            "max_steps": most,
            "candidates": len(candidates),
            "steps": [s.to_dict() for s in search.steps],
            "outcome": outcome,
            "first_bad": None if first is None else {
                **first.to_dict(),
                **{k: v for k, v in found.to_dict().items() if k.startswith("ratio")},
            },
            "remaining": [c.short for c in remaining] if outcome == "undecided" else [],
        }  # fmt: skip
        print(json.dumps(doc, indent=2))
        print(f"{line} ({level})", file=sys.stderr)
    else:
        print(line)
        print(level)
    return code
