"""One campaign per revision of the measured program (``benchrun sweep``) and the binary
search for the first slower one (``benchrun bisect``); docs/history.md.

Each campaign is the real ``benchrun run``, started as a child process with the options
that place it: ``--revision <short hash>`` (resolved to the commit and its date in the
repository, so ``benchrun history`` orders the campaigns by commit), ``--set
repository=<the repository>`` and, for a sweep, ``--set workdir=<the revision's
worktree>`` (the workloads run there; the fingerprint records their directories relative
to it, so the campaigns of every revision are one series). The experiment's ``setup``
hook runs in the worktree before a workload's first round: the build. A bisection step is
one campaign of two workloads, the chosen one at GOOD (``NAME@good``) and at the tested
revision (``NAME@<short>``), each with its ``cwd`` in its worktree and ``settings.reference``
the GOOD side, so the pair is compared paired, within passes.

Everything is read back from the store, so a rerun of the same command reuses the
campaigns that finished and resumes the one that was interrupted.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import yaml

from benchrun.runner.campaign.worktrees import Commit
from benchrun.runner.errors import UserError
from benchrun.runner.machine.revision import Revision
from benchrun.runner.results.campaigns import DONE
from benchrun.runner.store.database import CampaignRow, Store

if TYPE_CHECKING:
    from benchrun.runner.results.verdicts import StoredComparison

#: exit status of a child ``benchrun run`` stopped by Ctrl-C
EXIT_INTERRUPTED = 130


def run_child(words: Sequence[str], quiet: bool) -> int:
    """Run ``benchrun run WORDS`` as a child process (its results go to the store, its
    stdout is dropped, its progress and errors to this stderr) and return its exit code.

    Ctrl-C reaches the child too (one process group); a SIGTERM sent to this process
    alone (a CI job's timeout, ``kill``) is passed on to the child. Either way the child
    stops cleanly, is waited for, and the interruption is raised here as
    :class:`KeyboardInterrupt`.
    """
    argv = [sys.executable, "-m", "benchrun.runner.cli", "run", *words]
    if quiet:
        argv.append("-q")
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    terminated = False

    def pass_on(signum: int, frame: object) -> None:
        nonlocal terminated
        terminated = True
        if proc.poll() is None:
            proc.send_signal(signum)

    previous = signal.signal(signal.SIGTERM, pass_on)
    interrupted = False
    try:
        while True:
            try:
                code = proc.wait()
                break
            except KeyboardInterrupt:
                interrupted = True  # the child had the same signal: wait for its clean stop
    finally:
        signal.signal(signal.SIGTERM, previous)
    if interrupted or terminated or code == EXIT_INTERRUPTED:
        raise KeyboardInterrupt
    return code


def workdir_in(worktree: Path, top: Path, anchor: Path) -> Path:
    """Where the workloads start in ``worktree``: the counterpart of ``anchor`` (the
    experiment's ``workdir``, else its file's directory) when it lies inside the
    repository ``top``, else the worktree's top (an experiment file kept outside the
    repository names its paths relative to the repository)."""
    rel = os.path.relpath(anchor.resolve(), top.resolve())
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return worktree
    return Path(os.path.normpath(worktree / rel))


def revision_of(campaign: CampaignRow) -> Revision | None:
    """The revision a stored campaign is tagged with."""
    match campaign.metadata:
        case {"revision": stored}:
            return Revision.from_dict(stored)
    return None


def find_campaign(
    db: Path, commit: str, fits: Callable[[CampaignRow], bool]
) -> tuple[CampaignRow | None, CampaignRow | None]:
    """In the store ``db`` (when it exists): the newest finished campaign tagged with
    ``commit`` for which ``fits(campaign)`` holds, and the newest campaign when it is
    unfinished (running or interrupted)."""
    if not db.is_file():
        return None, None
    with Store.open(db) as store:
        rows = store.campaigns()
    done = [
        c for c in rows
        if c.status == DONE and (r := revision_of(c)) is not None and r.commit == commit
        and fits(c)
    ]  # fmt: skip
    latest = rows[-1] if rows else None
    unfinished = (
        latest if latest is not None and latest.status in ("running", "interrupted") else None
    )
    return (done[-1] if done else None), unfinished


class CampaignInterrupted(Exception):
    """Ctrl-C while a revision's campaign ran (it stopped cleanly; the same command
    resumes it)."""


def start_or_resume(
    store_dir: Path,
    commit: str,
    unfinished: CampaignRow | None,
    fits: Callable[[CampaignRow], bool],
    fresh: Sequence[str],
    quiet: bool,
    before_fresh: Callable[[], None] | None = None,
) -> int:
    """Run the campaign of ``commit`` as a ``benchrun run`` child and return its exit code:
    ``--resume`` of ``store_dir`` when its ``unfinished`` campaign is this revision's and
    ``fits``, else ``fresh`` (the words of a new campaign, after ``before_fresh()``, e.g.
    writing the file they name; ``--new`` added when another campaign is unfinished, which
    then stays so). :class:`CampaignInterrupted` on Ctrl-C."""
    own = (
        unfinished is not None
        and fits(unfinished)
        and ((r := revision_of(unfinished)) is not None and r.commit == commit)
    )
    words = [str(store_dir), "--resume"] if own else list(fresh)
    if not own and before_fresh is not None:
        before_fresh()
    if unfinished is not None and not own:
        words.append("--new")
    try:
        return run_child(words, quiet)
    except KeyboardInterrupt:
        raise CampaignInterrupted(commit) from None


class EstimateJSON(TypedDict):
    """:meth:`Estimate.to_dict`: a workload's estimate in a sweep's JSON output."""

    workload: str
    unit: str
    mean: float | None
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class Estimate:
    """A workload's estimate in one campaign: ``mean`` and its interval in ``unit``."""

    workload: str
    unit: str
    mean: float | None
    low: float | None
    high: float | None

    def to_dict(self) -> EstimateJSON:
        """The JSON record."""
        return {"workload": self.workload, "unit": self.unit, "mean": self.mean,
                "ci_low": self.low, "ci_high": self.high}  # fmt: skip


def estimates(db: Path, campaign_id: int) -> list[Estimate]:
    """Each workload's estimate in a stored campaign, as ``benchrun show`` gives it: the
    mean with its CI, or the uncertified interval where there is no CI (docs/methods.md
    §4.1); no mean and no interval without an estimate."""
    from benchrun.runner.results.settings import campaign_settings
    from benchrun.runner.results.workloads import workload_results

    out = []
    with Store.open(db) as store, store.snapshot():
        campaign = store.campaign(campaign_id)
        confidence = campaign_settings(campaign.settings).confidence
        for r in workload_results(store, campaign, confidence):
            e = r.estimate
            if e is None:
                out.append(Estimate(r.name, r.unit, None, None, None))
                continue
            out.append(
                Estimate(
                    r.name, r.unit, e.mean, e.ci_low or e.interval_low, e.ci_high or e.interval_high
                )
            )
    return out


# --- bisection -------------------------------------------------------------------------


def search_steps(candidates: int) -> int:
    """Most campaigns a bisection of ``candidates`` revisions after GOOD takes: one that
    checks BAD, then ``ceil(log2 N)`` halvings of the N revisions the first slower one
    may be."""
    if candidates < 1:
        raise ValueError("no revision to search")
    return 1 + math.ceil(math.log2(candidates))


def step_names(workload: str, tested: str) -> tuple[str, str]:
    """The two workloads of a step: ``NAME@good`` and ``NAME@<short>`` (a matrix
    workload ``name[n=1]`` keeps its brackets at the end: ``name@good[n=1]``)."""
    base, bracket, rest = workload.partition("[")
    return f"{base}@good{bracket}{rest}", f"{base}@{tested}{bracket}{rest}"


def step_experiment(
    text: str,
    name: str,
    base_name: str,
    params: Mapping[str, object],
    sides: Sequence[tuple[str, Path]],
) -> str:
    """The experiment file of one bisection step: ``text`` (the user's experiment) with
    only the entry named ``base_name`` (a matrix workload's base name; the matrix narrowed to
    ``params``' values), once per side ``(tag, directory)``, named ``NAME@tag`` and run in
    that directory (its own relative ``cwd:`` under it); named ``name``; its ``compare:`` and the settings that name workloads
    or paths of the user's file (``reference``, ``control``, ``baseline``, ``workdir``)
    dropped (the step sets its own)."""
    data = yaml.safe_load(text)  # the user's experiment (load_experiment checked it)
    entry = None
    match data:
        case {"workloads": list(entries)}:
            entry = _entry_named(entries, base_name)
    if entry is None:
        raise UserError(f"workload {base_name!r} is not an entry of the experiment file")
    match data:
        case {"matrix": dict(matrix)}:
            narrowed = {k: [params[k]] for k in matrix if k in params}
        case _:
            narrowed = {}
    if narrowed:
        data["matrix"] = narrowed
    else:
        data.pop("matrix", None)
    data.pop("compare", None)
    data["name"] = name
    settings: dict[str, object] = {}
    match data:
        case {"settings": dict(given)}:
            settings = dict(given)
    for key in ("reference", "control", "baseline", "workdir"):
        settings.pop(key, None)
    data["settings"] = settings
    own = ""  # the entry's own cwd, relative to the worktree's place of the file
    match entry:
        case {"cwd": str(given_cwd)}:
            own = given_cwd
    workloads = []
    for tag, directory in sides:
        w = dict(entry)
        w["name"] = f"{base_name}@{tag}"
        w["cwd"] = str(directory / own) if own else str(directory)
        workloads.append(w)
    data["workloads"] = workloads
    return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def _entry_named(entries: list[object], name: str) -> dict[str, object] | None:
    """A copy of the entry named ``name`` in the ``workloads:`` list of a parsed
    experiment file, or None."""
    for w in entries:
        match w:
            case {"name": found} if found == name and isinstance(w, dict):
                return dict(w)
    return None


@dataclass(frozen=True)
class StepResult:
    """One bisection step: ``revision`` against GOOD in campaign ``campaign`` of ``store``.

    ``ratio`` (with ``low``, ``high``): the tested side over GOOD in the workload's
    worse direction (> 1: slower); ``comparison``: the stored verdict of the pair
    (slower, faster, equivalent, undecided); ``verdict``: ``"bad"`` (slower than GOOD by
    more than the threshold), ``"good"`` (not) or ``"undecided"``, and ``why``.
    """

    revision: Commit
    campaign: int
    store: str
    reused: bool
    ratio: float | None
    low: float | None
    high: float | None
    comparison: str
    verdict: str
    why: str
    passes: int | None = None

    def to_dict(self) -> StepJSON:
        """The JSON record of the step."""
        return {
            "revision": self.revision.short,
            "commit": self.revision.commit,
            "date": self.revision.date,
            "subject": self.revision.subject,
            "campaign": self.campaign,
            "store": self.store,
            "reused": self.reused,
            "ratio": self.ratio,
            "ratio_low": self.low,
            "ratio_high": self.high,
            "passes": self.passes,
            "comparison": self.comparison,
            "verdict": self.verdict,
            "why": self.why,
        }


class StepJSON(TypedDict):
    """:meth:`StepResult.to_dict`: one step in ``bisect --json``."""

    revision: str
    commit: str
    date: str
    subject: str
    campaign: int
    store: str
    reused: bool
    ratio: float | None
    ratio_low: float | None
    ratio_high: float | None
    passes: int | None
    comparison: str
    verdict: str
    why: str


def classify(
    comparison: StoredComparison | None, direction: str, threshold: float, reason: str = ""
) -> tuple[str, str, float | None, float | None, float | None]:
    """A step's verdict from the stored comparison of the tested side with GOOD (a
    baseline comparison: ratio tested/GOOD with its CI).

    ``bad``: the comparison says slower (worse in the metric's direction) and the whole CI
    of the worse-way ratio lies above ``1 + threshold``; ``good``: it says faster or
    equivalent (TOST within ``margin``, which the step sets to the threshold), or slower
    with the whole CI at or below ``1 + threshold``; else ``undecided``. ``reason``: the
    stored comparisons' reason (why a CI is missing), quoted when it decides nothing.

    Returns
    -------
    tuple
        (verdict, why, ratio, low, high), the ratio the worse way round (> 1: slower).
    """
    if comparison is None:
        return "undecided", "the campaign stored no comparison of the pair", None, None, None
    said = comparison.verdict
    r, lo, hi = comparison.ratio, comparison.ratio_low, comparison.ratio_high
    if direction != "lower_is_better":  # worse = smaller: turn it round
        r, lo, hi = (None if x is None or x <= 0 else 1.0 / x for x in (r, hi, lo))
    limit = 1.0 + threshold
    if said in ("faster", "equivalent"):
        why = ("faster than GOOD" if said == "faster"
               else f"equivalent to GOOD within ±{100 * threshold:g} %")  # fmt: skip
        return "good", why, r, lo, hi
    if said == "slower":
        if lo is None or hi is None:
            return ("undecided", "slower than GOOD, but the ratio has no CI yet"
                    + (f" ({reason})" if reason else ""), r, lo, hi)  # fmt: skip
        if lo > limit:
            return "bad", f"slower than GOOD by more than {100 * threshold:g} %", r, lo, hi
        if hi <= limit:
            return "good", f"slower than GOOD, but by at most {100 * threshold:g} %", r, lo, hi
        return ("undecided", f"slower than GOOD, but the CI holds {limit:.4g}x: more passes "
                "would tell (--set ci_rel_width= below threshold/2, or a longer max_time)",
                r, lo, hi)  # fmt: skip
    return (
        "undecided",
        f"the comparison ended {said}" + (f" ({reason})" if reason else ""),
        r,
        lo,
        hi,
    )


@dataclass
class Search:
    """The state of a bisection: ``candidates`` (the revisions after GOOD up to BAD,
    oldest first); the first slower one lies in ``candidates[lo + 1 : hi + 1]``
    (``lo = -1``: GOOD; ``hi``: the newest revision known bad, None until BAD is checked).
    """

    candidates: list[Commit]
    lo: int = -1
    hi: int | None = None
    steps: list[StepResult] = field(default_factory=list)
    stopped: str | None = None

    def next_index(self) -> int | None:
        """The candidate the next step measures (BAD first), None when the search ended."""
        if self.stopped is not None:
            return None
        if self.hi is None:
            return len(self.candidates) - 1
        if self.hi - self.lo <= 1:
            return None
        return (self.lo + self.hi) // 2

    def record(self, index: int, step: StepResult) -> None:
        """Narrow the range with the verdict of the step that measured ``candidates[index]``."""
        self.steps.append(step)
        if step.verdict == "undecided":
            self.stopped = "undecided"
        elif self.hi is None:
            if step.verdict == "bad":
                self.hi = index
            else:
                self.stopped = "not slower"
        elif step.verdict == "bad":
            self.hi = index
        else:
            self.lo = index

    @property
    def remaining(self) -> list[Commit]:
        """The revisions the first slower one may still be."""
        hi = len(self.candidates) - 1 if self.hi is None else self.hi
        return self.candidates[self.lo + 1 : hi + 1]

    @property
    def first_bad(self) -> Commit | None:
        """The first revision slower than GOOD beyond the threshold, once found."""
        if self.stopped is None and self.hi is not None and self.hi - self.lo <= 1:
            return self.candidates[self.hi]
        return None
