"""The binary search of ``benchrun bisect`` (runner/commands/bisect.py): its plan (GOOD,
BAD, the revisions between, the level of each step), the measurement of one step as a
paired campaign of GOOD and the tested revision (reused when stored, resumed when
interrupted) and the step's result read back from the store; docs/history.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchrun.runner.campaign.revisions import (
    Search,
    StepResult,
    classify,
    find_campaign,
    search_steps,
    start_or_resume,
    step_experiment,
    step_names,
    workdir_in,
)
from benchrun.runner.campaign.worktrees import (
    WORKTREES,
    Commit,
    between,
    is_ancestor,
    remove_worktree,
    repository_top,
    resolve,
    worktree,
)
from benchrun.runner.config.experiment import Experiment, Workload
from benchrun.runner.config.loader import load_experiment, parse_experiment
from benchrun.runner.errors import UserError
from benchrun.runner.files import atomic_write_text, make_campaign_dir
from benchrun.runner.results.comparisons import campaign_verdicts
from benchrun.runner.results.settings import campaign_settings
from benchrun.runner.results.verdicts import verdicts_from_dict
from benchrun.runner.store.database import CampaignRow, Store

#: settings a step sets itself (the pair, its level, the threshold as the TOST margin)
STEP_SETTINGS = ("reference", "alpha", "confidence", "margin", "repository", "workdir")

__all__ = ["BisectPlan", "BisectRequest", "Search", "StepResult"]


@dataclass(frozen=True)
class BisectRequest:
    """What the user asked ``bisect`` for (the command line, checked by
    :func:`check_request`): the threshold and the search's error rate as fractions."""

    experiment_file: str
    repo: str
    good: str
    bad: str
    threshold: float
    alpha: float
    workload: str | None
    output: str | None
    overrides: tuple[str, ...]
    keep_worktrees: bool
    quiet: bool


def _quoted(value: Path | str) -> str:
    """A path as a YAML value of ``--set`` (JSON text: any character kept)."""
    return json.dumps(str(value))


def _why(reason: object, tested: str) -> str:
    """The part of the stored comparisons' reason about the pair with ``tested``."""
    parts = [p.strip() for p in str(reason or "").split(";")]
    return "; ".join(p for p in parts if tested in p)


@dataclass(frozen=True)
class BisectPlan:
    """What one bisection searches and where its steps go (internal)."""

    experiment: Experiment
    chosen: Workload
    top: Path
    good: Commit
    bad: Commit
    candidates: list[Commit]
    #: the most steps of the search, and the level of each
    most: int
    alpha_step: float
    output: Path
    step_name: str
    store_dir: Path
    #: where the workloads start inside a worktree: the counterpart of this directory
    anchor: Path

    @property
    def db(self) -> Path:
        return self.store_dir / "benchrun.db"

    @property
    def cache(self) -> Path:
        return self.store_dir / WORKTREES


def check_request(req: BisectRequest) -> None:
    """:class:`UserError` for an --alpha, --threshold or --set bisect cannot take."""
    if not 0 < req.alpha < 0.5:
        raise UserError(f"--alpha {req.alpha}: must be in (0, 0.5)")
    if not 0 < req.threshold < 10:
        raise UserError(f"--threshold {req.threshold}: give a positive fraction, e.g. 5%")
    for item in req.overrides:
        if item.partition("=")[0].strip() in STEP_SETTINGS:
            raise UserError(
                f"--set {item}: bisect sets {item.partition('=')[0].strip()} itself (the pair, "
                "--alpha, --threshold, --repo); drop it"
            )


def _chosen(experiment: Experiment, name: str | None) -> Workload:
    """The workload searched on: ``--workload`` NAME, or the experiment's only one."""
    names = list(experiment.names)
    if name is None:
        if len(names) != 1:
            raise UserError(
                f"the experiment has {len(names)} workloads ({', '.join(names[:5])}"
                f"{', ...' if len(names) > 5 else ''}); choose one with --workload NAME"
            )
        name = names[0]
    chosen = next((w for w in experiment.workloads if w.name == name), None)
    if chosen is None:
        raise UserError(f"--workload {name}: no such workload; valid: {', '.join(names)}")
    return chosen


def plan_search(req: BisectRequest) -> BisectPlan:
    """Load the experiment, resolve GOOD and BAD, list the revisions between them and make
    the steps' campaign directory."""
    check_request(req)
    experiment = load_experiment(req.experiment_file, overrides=req.overrides, check_commands=False)
    chosen = _chosen(experiment, req.workload)
    top = repository_top(Path(req.repo).expanduser())
    good, bad = resolve(top, req.good), resolve(top, req.bad)
    if good.commit == bad.commit:
        raise UserError(f"GOOD {req.good} and BAD {req.bad} are the same commit; nothing between")
    if not is_ancestor(top, good.commit, bad.commit):
        raise UserError(
            f"GOOD {req.good} is not an ancestor of BAD {req.bad}; give an older GOOD on "
            "BAD's history"
        )
    candidates = between(top, good.commit, bad.commit)
    most = search_steps(len(candidates))
    output = Path(req.output).absolute() if req.output else experiment.output
    step_name = f"{experiment.name}-bisect-{good.short}"[:200]
    store_dir = output / step_name
    make_campaign_dir(store_dir, f"-o {req.output}" if req.output else f"output: {output}")
    assert experiment.source_path is not None
    anchor = (
        Path(experiment.settings.workdir)
        if experiment.settings.workdir is not None
        else experiment.source_path.parent
    )
    return BisectPlan(
        experiment, chosen, top, good, bad, candidates, most, req.alpha / most, output,
        step_name, store_dir, anchor,
    )  # fmt: skip


def _step_settings(plan: BisectPlan, req: BisectRequest, good_name: str) -> list[str]:
    """The ``--set`` items of a step's campaign: the user's, then the pair, its level and
    the threshold as the TOST margin (and the CI width it needs, unless given)."""
    sets = [
        *req.overrides,
        f"repository={_quoted(plan.top)}",
        f"reference={_quoted(good_name)}",
        f"alpha={plan.alpha_step!r}",
        f"confidence={1 - plan.alpha_step!r}",
        f"margin={req.threshold!r}",
    ]
    if not any(item.partition("=")[0].strip() == "ci_rel_width" for item in req.overrides):
        # the ratio's CI half-width: narrow enough to fall on one side of the threshold
        # unless the revision's true ratio is within threshold/2 of it
        sets.append(f"ci_rel_width={req.threshold / 2!r}")
    return sets


def measure_step(
    plan: BisectPlan, req: BisectRequest, rev: Commit, label: str, say: Callable[[str], None]
) -> tuple[CampaignRow, bool]:
    """The finished campaign of the step at ``rev`` (a stored one when it fits, else
    measured now, an interrupted one resumed) and whether it was reused."""
    good_name, tested_name = step_names(plan.chosen.name, rev.short)
    step_text = step_experiment(
        plan.experiment.source_text, plan.step_name, plan.chosen.base_name or plan.chosen.name,
        dict(plan.chosen.params),
        [("good", workdir_in(plan.cache / plan.good.short, plan.top, plan.anchor)),
         (rev.short, workdir_in(plan.cache / rev.short, plan.top, plan.anchor))],
    )  # fmt: skip
    sets = _step_settings(plan, req, good_name)
    step_file = plan.store_dir / "steps" / f"{rev.short}.yaml"
    fingerprint = parse_experiment(
        step_text, base_dir=step_file.parent, overrides=sets, check_commands=False
    ).measurement_fingerprint()

    def fits(c: CampaignRow) -> bool:
        s = campaign_settings(c.settings)
        return bool(
            c.fingerprint == fingerprint
            and s.reference == good_name
            and math.isclose(float(s.alpha), plan.alpha_step)
            and math.isclose(float(s.confidence), 1 - plan.alpha_step)
            and math.isclose(float(s.margin), req.threshold)
        )

    done, unfinished = find_campaign(plan.db, rev.commit, fits)
    if done is not None:
        return done, True
    worktree(plan.top, plan.cache, plan.good)
    tested_tree = worktree(plan.top, plan.cache, rev)
    fresh = [str(step_file), "-o", str(plan.output), "--revision", rev.short]
    fresh += [w for item in sets for w in ("--set", item)]

    def write_step_file() -> None:
        step_file.parent.mkdir(mode=0o700, exist_ok=True)
        atomic_write_text(step_file, step_text)

    if not req.quiet:
        say(f"{label}: measuring {good_name} and {tested_name}")
    code = start_or_resume(
        plan.store_dir, rev.commit, unfinished, fits, fresh, req.quiet, write_step_file
    )
    done, _ = find_campaign(plan.db, rev.commit, fits)
    if done is None:
        raise UserError(
            f"the campaign of {rev.short} did not finish (exit {code}, said above); "
            f"its worktree is kept: {tested_tree}"
        )
    if not req.keep_worktrees and rev.commit != plan.good.commit:
        remove_worktree(plan.top, tested_tree)
    return done, False


def judge_step(plan: BisectPlan, req: BisectRequest, rev: Commit, done: CampaignRow,
           reused: bool) -> StepResult:  # fmt: skip
    """The step's result: its stored paired comparison of the tested side with GOOD,
    classified against the threshold."""
    good_name, tested_name = step_names(plan.chosen.name, rev.short)
    with Store.open(plan.db) as store, store.snapshot():
        stored = campaign_verdicts(store, done)
    verdicts = verdicts_from_dict(stored or {})
    pair = next((b for b in verdicts.baselines if b.b == tested_name and b.a == good_name), None)
    verdict, why, ratio, low, high = classify(
        pair, plan.chosen.direction, req.threshold, _why(verdicts.reason, tested_name)
    )
    return StepResult(
        rev, done.id, str(plan.db), reused, ratio, low, high,
        pair.verdict if pair else "none", verdict, why, pair.passes if pair else None,
    )  # fmt: skip
