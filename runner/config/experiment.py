"""Experiment files: YAML parsed and validated into frozen dataclasses.

CONTRACT (other modules rely on these dataclasses and on ``load_experiment``):
the fields below may gain members, but existing names and meanings stay.
Parsing/validation is implemented below the dataclasses.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchrun.runner.config.keys import (
    INT64_MAX,
    MAX_CAMPAIGN_TIME,
    MAX_CONFIDENCE,
    MAX_CONSECUTIVE_FAILURES,
    MAX_MEMORY_LIMIT,
    MAX_MIN_ROUND_TIME,
    MAX_OUTPUT_LIMIT,
    MAX_READINGS,
    MAX_ROUNDS,
    MAX_TIMEOUT,
    MAX_WORKLOADS,
    setting,
)
from benchrun.runner.config.placeholders import fill_launch_time

Metric = Literal[
    "wall_time",
    "cpu_time",
    "max_rss",
    "readings",
    "instructions",
    "cycles",
    "branch_misses",
    "cache_misses",
    "task_clock",
    "context_switches",
    "page_faults",
]
Direction = Literal["lower_is_better", "higher_is_better"]

#: the counter metrics: counted for a round's whole process tree by the kernel
#: (perf_event_open) or, for instructions without a PMU, by cachegrind
#: (runner/execute/counters.py, docs/metrics.md)
COUNTER_METRICS: tuple[str, ...] = (
    "instructions",
    "cycles",
    "branch_misses",
    "cache_misses",
    "task_clock",
    "context_switches",
    "page_faults",
)
#: every metric a workload may name, in the order the docs list them
METRICS: tuple[str, ...] = ("wall_time", "cpu_time", "max_rss", "readings", *COUNTER_METRICS)

#: unit and direction of each built-in metric
METRIC_UNITS: dict[str, tuple[str, Direction]] = {
    "wall_time": ("s", "lower_is_better"),
    "cpu_time": ("s", "lower_is_better"),
    "max_rss": ("KiB", "lower_is_better"),
    "instructions": ("instructions", "lower_is_better"),
    "cycles": ("cycles", "lower_is_better"),
    "branch_misses": ("misses", "lower_is_better"),
    "cache_misses": ("misses", "lower_is_better"),
    "task_clock": ("s", "lower_is_better"),
    "context_switches": ("switches", "lower_is_better"),
    "page_faults": ("faults", "lower_is_better"),
}


@dataclass(frozen=True)
class ReadingsSpec:
    """How to find readings in a workload's stdout.

    ``format == "regex"``: every match of ``pattern`` (exactly one capture group) is a
    reading; ``format == "jsonl"``: every stdout line that is a JSON object with key
    ``field`` is a reading. Values are floats in ``unit``. A round with more than
    ``max_readings`` readings, or whose output the pattern needs more than
    ``match_timeout`` seconds to search, fails.
    """

    format: Literal["regex", "jsonl"] = "regex"
    pattern: str | None = None
    field: str | None = None
    unit: str = ""
    direction: Direction = "lower_is_better"
    max_readings: int = 100_000
    match_timeout: float = 2.0  # seconds


#: the hooks a workload may have, in the order they run around its rounds
HOOK_KINDS: tuple[str, ...] = ("setup", "prepare", "cleanup")


@dataclass(frozen=True)
class Hook:
    """A command run around a workload's rounds and never timed (docs/oneline.md, Hooks).

    ``setup`` runs once before the workload's first round of a ``benchrun run``,
    ``prepare`` before each of its rounds, ``cleanup`` after its last one. ``command`` is
    an argv, or with ``shell`` a 1-tuple run by ``/bin/sh -c`` (a hook written as one
    string in the file). Every ``params``/``matrix`` placeholder is filled; ``prepare``
    may still hold ``{round}`` and ``{work}``, filled by :meth:`render`.
    """

    command: tuple[str, ...]
    shell: bool = False

    def render(self, round_index: int, work: int | None = None) -> tuple[str, ...]:
        """The argv (or 1-tuple shell string) with ``{round}``/``{work}`` filled in."""
        values = {"round": round_index, "work": work}
        return tuple(fill_launch_time(part, values) for part in self.command)


@dataclass(frozen=True)
class Workload:
    """One thing being measured (docs/methods.md vocabulary), with its parameters bound.

    ``command`` still holds the launch-time placeholders ``{work}`` and ``{round}``; every
    ``params``/``matrix`` placeholder has already been substituted. With ``shell`` the
    command is a single string run by ``/bin/sh -c``.
    """

    name: str
    command: tuple[str, ...]
    shell: bool = False
    params: Mapping[str, Any] = field(default_factory=dict)
    work: int | None = None
    metric: Metric = "wall_time"
    readings: ReadingsSpec | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    timeout: float | None = None  # seconds; None = settings.timeout
    per_work: bool = False
    #: name in the file before matrix expansion (``loop`` for ``loop[n=1]``); None if unexpanded
    base_name: str | None = None
    #: address-space limit of each round in bytes (RLIMIT_AS); None = settings.memory_limit
    memory_limit: int | None = None
    #: run once before the first round (of each ``benchrun run``), untimed; None: nothing
    setup: Hook | None = None
    #: run before every round, untimed; None: nothing
    prepare: Hook | None = None
    #: run after the last round (of each ``benchrun run``), untimed; None: nothing
    cleanup: Hook | None = None
    #: the metrics after the first of a ``metric:`` list: measured in the same rounds,
    #: stored and reported beside it, never deciding (docs/metrics.md)
    extra_metrics: tuple[Metric, ...] = ()

    @property
    def metrics(self) -> tuple[Metric, ...]:
        """Every metric of the workload, the deciding one (:attr:`metric`) first."""
        return (self.metric, *self.extra_metrics)

    @property
    def counters(self) -> tuple[str, ...]:
        """The counter metrics among :attr:`metrics` (what each round must count)."""
        return tuple(m for m in self.metrics if m in COUNTER_METRICS)

    def hook(self, kind: str) -> Hook | None:
        """The workload's ``setup``, ``prepare`` or ``cleanup`` hook (None: none)."""
        if kind not in HOOK_KINDS:
            raise ValueError(f"unknown hook {kind!r}; valid: {', '.join(HOOK_KINDS)}")
        hook: Hook | None = getattr(self, kind)
        return hook

    @property
    def unit(self) -> str:
        """Unit of the analysed metric."""
        if self.metric == "readings" and self.readings is not None:
            return self.readings.unit
        return METRIC_UNITS.get(self.metric, ("", "lower_is_better"))[0]

    @property
    def direction(self) -> Direction:
        """Whether smaller or larger values of the metric are better."""
        if self.metric == "readings" and self.readings is not None:
            return self.readings.direction
        return METRIC_UNITS.get(self.metric, ("", "lower_is_better"))[1]

    def render(self, round_index: int, work: int | None = None) -> tuple[str, ...]:
        """The argv (or 1-tuple shell string) of one round: ``{round}``/``{work}`` filled in."""
        values = {"round": round_index, "work": work if work is not None else self.work}
        return tuple(fill_launch_time(part, values) for part in self.command)


#: what ``pin`` may hold after parsing: "auto", "none", or an explicit CPU tuple
PinSpec = str | tuple[int, ...]


@dataclass(frozen=True)
class DuetSpec:
    """``settings.duet``: how the compared pair runs at the same time (docs/duet.md).

    ``force``: run on even when a side uses more than one CPU (else the campaign stops).
    ``solo_every``: every this-many-th pass (after warm-up) runs both sides alone, one
    after the other, for the asymmetry check; 0: no solo passes, no check.
    ``asymmetry``: ``warn`` when the check finds the pair interferes asymmetrically, or
    ``refuse`` to give the duet verdict then. ``cpus``: which side gets which CPU in each
    duet: ``alternate`` (swapped every pass) or ``random`` (seeded by ``settings.seed``,
    each side on each CPU twice in every block of four passes).
    """

    force: bool = False
    solo_every: int = 5
    asymmetry: Literal["warn", "refuse"] = "warn"
    cpus: Literal["alternate", "random"] = "alternate"

    def fingerprint(self) -> Any:
        """What of the spec changes what is measured: True for the defaults (so campaigns
        stored before the options existed keep their fingerprint), else the solo passes
        and the CPU pattern."""
        if (self.solo_every, self.cpus) == (DuetSpec.solo_every, DuetSpec.cpus):
            return True
        return {"solo_every": self.solo_every, "cpus": self.cpus}


#: default ``settings.contended_threshold``: a round pinned to a CPU it shares with one busy
#: process for its whole length waits about half its wall time (measured 0.47-0.51 on the
#: 2-core VM); a quarter flags sharing for at least half the round, and stays above the
#: wake-up waits of short sleeping rounds on a busy machine (docs/contention.md)
DEFAULT_CONTENDED_THRESHOLD = 0.25


@dataclass(frozen=True)
class Settings:
    """Campaign-wide settings: the ``settings:`` section of an experiment file.

    Each field is the one declaration of its setting (runner/config/keys.py
    :func:`setting`): type and default here, kind, bounds and description in its key,
    its line in ``benchrun init``'s example beside it; the validator, the JSON Schema,
    ``init``'s example and docs/settings.md are derived from these fields.
    """

    rounds: int = setting(
        20,
        kind="int",
        doc="rounds per workload in fixed mode",
        init=("10", "rounds per workload (fixed mode only)"),
        commented_out=True,
        minimum=1,
        maximum=MAX_ROUNDS,
    )
    warmup_rounds: int = setting(
        1,
        kind="int",
        doc="rounds run, stored and flagged, excluded from analysis",
        init=("1", "extra first rounds: run, stored, flagged, not analysed"),
        minimum=0,
        maximum=MAX_ROUNDS,
    )
    order: Literal["interleaved", "sequential"] = setting(
        "interleaved",
        kind="enum",
        doc="order of workloads in a pass",
        init=(
            "interleaved",
            "interleaved: random order of workloads in each pass (seeded)",
            "sequential: all rounds of one workload, then the next",
        ),
        choices=("interleaved", "sequential"),
    )
    pin: PinSpec = setting(
        "auto",
        kind="pin",
        doc="CPUs for workloads: auto, none, or a CPU list",
        init=(
            "auto",
            "auto: runner on one CPU, workloads on the others",
            'none: no pinning;  or CPUs: 1, [1, 3], "2-3", "0,2-3"',
        ),
    )
    # seconds per round
    timeout: float = setting(
        60.0,
        kind="duration",
        doc="per-round time limit",
        init=("60s", "per round; a round that takes longer is killed and failed"),
        exclusive_minimum=0,
        maximum=MAX_TIMEOUT,
    )
    confidence: float = setting(
        0.95,
        kind="number",
        doc="confidence level of intervals",
        init=("0.95", "confidence level of the reported intervals, in (0, 1)"),
        exclusive_minimum=0,
        maximum=MAX_CONFIDENCE,
    )
    seed: int = setting(
        1,
        kind="int",
        doc="seed of the random order",
        init=("1", "seed of the random order (same seed, same order)"),
        minimum=0,
        maximum=INT64_MAX,
    )
    env: Mapping[str, str] = setting(
        factory=dict,
        kind="str_map",
        doc="environment variables set for every workload",
        init=('{OMP_NUM_THREADS: "1"}', "set for every workload, and recorded"),
    )
    # names of inherited variables to record
    record_env: tuple[str, ...] = setting(
        (),
        kind="str_list",
        doc="names of inherited environment variables to record",
        init=("[PATH]", "inherited variables to record (not to set)"),
    )
    fail_fast: bool = setting(
        False,
        kind="bool",
        doc="stop the campaign at the first failed round",
        init=("false", "true: stop the whole campaign at the first failed round"),
    )
    max_consecutive_failures: int = setting(
        3,
        kind="int",
        doc="give up on a workload after this many failures in a row",
        init=("3", "give up on a workload after this many failures in a row"),
        minimum=1,
        maximum=MAX_CONSECUTIVE_FAILURES,
    )
    on_interrupt: Literal["kill", "finish"] = setting(
        "kill",
        kind="enum",
        doc="Ctrl-C: kill the round in flight or let it finish",
        init=("kill", "Ctrl-C kills the round in flight (kill) or lets it end (finish)"),
        choices=("kill", "finish"),
    )
    # bytes of stdout/stderr tail kept per round
    output_limit: int = setting(
        65536,
        kind="size",
        doc="bytes of stdout/stderr tail kept per round",
        init=("64KiB", "tail of stdout/stderr kept per round (bytes, or 64KiB, 1MB)"),
        maximum=MAX_OUTPUT_LIMIT,
    )
    # adaptive mode (the default; docs/methods.md §10, docs/controller.md); fixed mode uses
    # `rounds` (a file that sets `rounds:` and not `adaptive:` is in fixed mode)
    adaptive: bool = setting(
        True,
        kind="bool",
        doc="run until the stopping rule is met (docs/methods.md section 10)",
        init=("true", "false: fixed mode, exactly `rounds` rounds per workload"),
    )
    ci_rel_width: float | None = setting(
        0.05,
        kind="number",
        doc="target CI half-width relative to the estimate",
        init=("0.05", "stop when the CI half-width is within 5 % of the mean (null: off)"),
        nullable=True,
        exclusive_minimum=0,
    )
    alpha: float = setting(
        0.01,
        kind="number",
        doc="significance level of comparisons",
        init=("0.01", "significance level when telling workloads apart"),
        exclusive_minimum=0,
        exclusive_maximum=0.5,
    )
    margin: float = setting(
        0.01,
        kind="number",
        doc="relative equivalence margin (TOST)",
        init=("0.01", "two workloads within 1 % count as equivalent (TOST)"),
        exclusive_minimum=0,
        exclusive_maximum=1,
    )
    min_rounds: int = setting(
        5,
        kind="int",
        doc="adaptive: fewest steady rounds per workload",
        init=("5", "fewest steady (non-warm-up) rounds per workload"),
        minimum=1,
        maximum=MAX_ROUNDS,
    )
    min_subsessions: int | None = setting(
        None,
        kind="int",
        doc="adaptive: fewest subsession means",
        init=("null", "fewest subsession means (null: benchrun decides, 8)"),
        nullable=True,
        minimum=2,
        maximum=MAX_ROUNDS,
    )
    max_rounds: int = setting(
        500,
        kind="int",
        doc="adaptive: most rounds per workload",
        init=("500", "most steady rounds per workload (budget; warmup_rounds <= it)"),
        minimum=1,
        maximum=MAX_ROUNDS,
    )
    max_time: float = setting(
        3600.0,
        kind="duration",
        doc=(
            "wall-clock budget of the whole campaign across resumes (hooks, calibration, "
            "warm-up, rounds)"
        ),
        init=(
            "1h",
            "wall-clock budget for the whole campaign, resumes included",
            "(hooks, calibration, warm-up and rounds alike)",
        ),
        exclusive_minimum=0,
        maximum=MAX_CAMPAIGN_TIME,
    )
    # seconds; 0 turns the calibration of {work} off
    min_round_time: float = setting(
        0.5,
        kind="duration",
        doc="adaptive: grow work until a round lasts this long",
        init=(
            "500ms",
            "with {work}: grow it until one round lasts at least this",
            "(and launch overhead is < 1 % of it); 0: use work: as is",
        ),
        minimum=0,
        maximum=MAX_MIN_ROUND_TIME,
    )
    baseline: str | None = setting(
        None,
        kind="str",
        doc=(
            "adaptive: previous results to compare with: a campaign directory, its "
            "benchrun.db, or a JSON summary (name -> mean, variance, n_q, q)"
        ),
        init=(
            "null",
            "earlier results to compare with: a campaign directory, its",
            "benchrun.db or a JSON summary (null: none)",
        ),
        nullable=True,
    )
    # a workload of this experiment the others are compared with
    reference: str | None = setting(
        None,
        kind="str",
        doc="adaptive: workload the others are compared with",
        init=("null", "a workload the others are compared with (null: none)"),
        nullable=True,
    )
    #: paired: comparisons within the campaign on per-pass log ratios (docs/paired.md);
    #: independent: Welch on each workload's own subsession means
    comparison: Literal["paired", "independent"] = setting(
        "paired",
        kind="enum",
        doc=(
            "adaptive: paired = compare workloads on per-pass log ratios (cancels the "
            "machine's drift); independent = Welch on each workload's own subsession means"
        ),
        init=(
            "paired",
            "paired: decide pairs on per-pass log ratios (cancels the",
            "machine's drift) | independent: Welch on each workload's means",
        ),
        choices=("paired", "independent"),
    )
    #: the test of a paired comparison: rank = Wilcoxon signed-rank on the per-pass log
    #: ratios (Hodges-Lehmann ratio); t = the one-sample t test (geometric-mean ratio)
    paired_test: Literal["rank", "t"] = setting(
        "rank",
        kind="enum",
        doc=(
            "adaptive: the test of a paired comparison: rank = Wilcoxon signed-rank on the "
            "per-pass log ratios (median per-pass ratio, Hodges-Lehmann); t = one-sample t "
            "test (geometric-mean ratio)"
        ),
        init=(
            "rank",
            "rank: Wilcoxon signed-rank on the per-pass log ratios (the",
            "median per-pass ratio) | t: one-sample t (geometric mean)",
        ),
        choices=("rank", "t"),
    )
    # fixed within-round warm-up; None = MSER-5 (§2)
    warmup_readings: int | None = setting(
        None,
        kind="int",
        doc=("readings dropped at the start of every round (null: detected with MSER-5)"),
        init=("null", "readings dropped at the start of every round (null: MSER-5)"),
        nullable=True,
        minimum=0,
        maximum=MAX_READINGS,
    )
    # limits and the quiet-machine guard (issue 6; docs/daemon.md)
    # bytes of address space per round (RLIMIT_AS); None: off
    memory_limit: int | None = setting(
        None,
        kind="size",
        doc=("address-space limit of every round (RLIMIT_AS), e.g. 512MiB; null: none"),
        init=(
            "null",
            "address-space limit of every round (RLIMIT_AS), e.g. 512MiB;",
            "a round that exceeds it fails, naming the limit (null: none)",
        ),
        nullable=True,
        maximum=MAX_MEMORY_LIMIT,
    )
    # wait for 1-min load average below this; None: off
    quiet_load: float | None = setting(
        None,
        kind="number",
        doc=("before each pass wait until the 1-minute load average is below this; null: off"),
        init=(
            "null",
            "before each pass wait until the 1-minute load average is",
            "below this, e.g. 0.5 (null: off, or the daemon's --quiet-load)",
        ),
        nullable=True,
        exclusive_minimum=0,
    )
    # seconds; longest wait for a quiet machine
    quiet_max_wait: float = setting(
        600.0,
        kind="duration",
        doc="longest wait for a quiet machine",
        init=("10m", "... but at most this long; the wait is recorded"),
        minimum=0,
        maximum=MAX_TIMEOUT,
    )
    # most workloads after matrix expansion
    max_workloads: int = setting(
        10_000,
        kind="int",
        doc="most workloads the experiment may have after matrix expansion",
        init=("10000", "most workloads after matrix expansion (a typo guard)"),
        minimum=1,
        maximum=MAX_WORKLOADS,
    )
    #: run the compared pair at the same time, one CPU each (docs/duet.md); None: off
    duet: DuetSpec | None = setting(
        None,
        kind="duet",
        doc=(
            "run the two workloads of the comparison at the same time, each pinned to its own"
            " CPU, released together: true, or a mapping of force, solo_every, asymmetry, "
            "cpus (docs/duet.md)"
        ),
        init=(
            "true",
            "run the compared pair at the same time, one CPU each",
            "(two workloads or one compare: group of 2; docs/duet.md);",
            "or {solo_every: 5, asymmetry: warn, cpus: alternate,",
            "force: false}: solo passes check the pair's symmetry",
        ),
        commented_out=True,
        nullable=True,
    )
    #: time limit of a setup/prepare/cleanup hook, seconds; None = the round's timeout
    hook_timeout: float | None = setting(
        None,
        kind="duration",
        doc=("time limit of a setup, prepare or cleanup command (null: the round's timeout)"),
        init=(
            "null",
            "time limit of a setup/prepare/cleanup command (null: the",
            "round's timeout)",
        ),
        nullable=True,
        exclusive_minimum=0,
        maximum=MAX_TIMEOUT,
    )
    #: a workload that does not change between campaigns (a fixed CPU loop): `compare` also
    #: gives every other workload's ratio divided by the control's (docs/conditions.md)
    control: str | None = setting(
        None,
        kind="str",
        doc=(
            "a workload that does not change between campaigns (a fixed CPU loop): compare "
            "also gives each workload's ratio divided by the control's (docs/conditions.md)"
        ),
        init=(
            "null",
            "a workload that does not change between campaigns (a fixed",
            "CPU loop): compare also divides each ratio by its ratio",
        ),
        nullable=True,
    )
    #: seconds `benchrun run` waits while another run holds the CPUs it needs
    #: (docs/reservation.md); None: refuse at once (exit 4); --wait-for-cpus overrides
    wait_for_cpus: float | None = setting(
        None,
        kind="duration",
        doc=(
            "longest wait while another benchrun run holds the CPUs this one needs "
            "(docs/reservation.md); null: refuse at once (exit 4)"
        ),
        init=(
            "null",
            "another benchrun run holds the CPUs this one needs: wait",
            "at most this long, e.g. 30m (null: refuse at once, exit 4;",
            "`benchrun run --wait-for-cpus` overrides; docs/reservation.md)",
        ),
        nullable=True,
        minimum=0,
        maximum=MAX_TIMEOUT,
    )
    #: what happens to a round that waited for a CPU more than ``contended_threshold`` of
    #: its wall time (flagged ``contended``; docs/contention.md): left out of the analysis,
    #: kept in it (counted), or the campaign stops
    contended: Literal["exclude", "keep", "fail"] = setting(
        "exclude",
        kind="enum",
        doc=(
            "a round that waited for a CPU longer than contended_threshold of its wall time "
            "is flagged contended: exclude = left out of the analysis (counted and named), "
            "keep = analysed (counted), fail = the campaign stops (docs/contention.md)"
        ),
        init=(
            "exclude",
            "a round that waited for a CPU (another process shared it)",
            "longer than contended_threshold of its wall time is flagged",
            "contended: exclude (left out of the analysis, counted),",
            "keep (analysed, counted) or fail (the campaign stops)",
        ),
        choices=("exclude", "keep", "fail"),
    )
    #: share of a round's wall time its processes may wait for a CPU before it is contended
    contended_threshold: float = setting(
        DEFAULT_CONTENDED_THRESHOLD,
        kind="number",
        doc=(
            "share of a round's wall time its processes may wait for a CPU (runnable, not "
            "running) before the round is contended"
        ),
        init=("0.25", "that share of the round's wall time, in (0, 1]"),
        exclusive_minimum=0,
        maximum=1,
    )
    #: a paired comparison about to decide runs past max_rounds within max_time
    #: (docs/controller.md, "Budgets"); None: on when max_rounds was left at its default
    #: (the loader resolves it, so a stored campaign keeps what it ran with)
    extend_rounds: bool | None = setting(
        None,
        kind="bool",
        doc=(
            "adaptive: a paired comparison whose estimate says it decides within the time "
            "left of max_time keeps running past max_rounds; null: on when max_rounds is left"
            " at its default (time is the budget), off when it is set (a cap)"
        ),
        init=(
            "null",
            "a paired comparison about to decide runs past max_rounds",
            "within max_time (null: when max_rounds is left at",
            "its default; set max_rounds for a hard cap)",
        ),
        nullable=True,
    )
    #: names of env variables whose values are secret besides those whose names contain
    #: TOKEN, SECRET, PASSWORD, KEY... (runner/config/secrets.py): the workloads receive
    #: them, every output shows "<secret>" unless --include-secrets
    secret_env: tuple[str, ...] = setting(
        (),
        kind="str_list",
        doc=(
            "names of env variables whose values are secret, besides every name containing "
            "TOKEN, SECRET, PASSWORD, PASSWD, PASSPHRASE, KEY, CREDENTIAL, AUTH or COOKIE: "
            "the workloads receive them, exports, reports and show print <secret> unless "
            "--include-secrets"
        ),
        init=(
            "[]",
            "names whose values are secret, besides every name with",
            "TOKEN, SECRET, PASSWORD, KEY, CREDENTIAL, AUTH... in it:",
            "workloads get them, outputs show <secret> (docs/security.md)",
        ),
    )
    #: the measured program's git checkout (an absolute path once loaded): campaigns are
    #: tagged with its revision (runner/machine/revision.py); None: the working directory
    repository: str | None = setting(
        None,
        kind="str",
        doc=(
            "the measured program's git checkout (relative to the experiment file): each "
            "campaign is tagged with its `git describe --always --dirty` (docs/history.md); "
            "null: the directory benchrun runs in, when it is a checkout"
        ),
        init=(
            "null",
            "the measured program's git checkout: campaigns are tagged",
            "with its revision (null: the directory benchrun runs in)",
        ),
        nullable=True,
    )
    #: where the workloads' relative ``cwd:`` (and their default cwd) start from instead of
    #: the experiment file's directory (an absolute path once loaded); the measurement
    #: fingerprint records each cwd relative to it, so one experiment run in two checkouts
    #: of the program (benchrun sweep's worktrees) is one series. None: the file's directory
    workdir: str | None = setting(
        None,
        kind="str",
        doc=(
            "where the workloads' relative cwd (and their default cwd) start from instead of "
            "the experiment file's directory (relative to the file); the fingerprint records "
            "cwds relative to it, so the experiment run in another checkout of the program "
            "(benchrun sweep's worktrees) stays one series (docs/history.md)"
        ),
        init=(
            "null",
            "where relative cwd: paths start (null: this file's directory);",
            "benchrun sweep points it into each revision's worktree",
        ),
        nullable=True,
    )
    #: tune the machine around the campaign (``benchrun system tune`` on the workload CPUs)
    #: and restore it at its end; after a crash, at the next run (docs/tuning.md)
    tune: bool = setting(
        False,
        kind="bool",
        doc=(
            "tune this machine for the campaign (governor, turbo, perf sampling rate, SMT "
            "siblings, IRQ affinity, as benchrun system tune does on the workload CPUs; root)"
            " and restore every previous value at its end, or after a crash at the next run "
            "(docs/tuning.md)"
        ),
        init=(
            "false",
            "true: tune this machine for the campaign (root), restore",
            "it at the end (docs/tuning.md; benchrun system tune)",
        ),
    )


#: the param (and name part, ``bench[node_type=alpha]``) of a fleet's node type; reserved
#: as a matrix factor and param name when ``executor:`` has ``node_types:``
NODE_TYPE_PARAM = "node_type"

#: what ``executor:`` may name: this machine, or a Slurm cluster
EXECUTOR_KINDS: tuple[str, ...] = ("local", "slurm")


@dataclass(frozen=True)
class SlurmSpec:
    """``executor: {kind: slurm, ...}``: rounds run on the nodes of a Slurm cluster
    (docs/slurm.md), one batch job holding benchrun's agent at a time.

    ``partition``, ``constraint``, ``account``: sbatch's ``--partition``,
    ``--constraint``, ``--account`` (None: the cluster's default). ``nodes``: a count
    (``--nodes``) or node names / hostlist expressions (``--nodelist``). ``time``: the
    job's time limit in seconds, a whole number of minutes >= 60 (None: the partition's
    default). ``sbatch_args``: further sbatch options, passed as given. ``exclusive``:
    ask for whole nodes (``--exclusive``), so that no other job shares the measured node.
    ``listen``: the submit host's address the agents connect to, ``HOST`` or
    ``HOST:PORT`` (None: this host's name as it resolves, any free port). ``python``: the
    Python interpreter on the nodes that has benchrun installed (None: the submitting
    interpreter's path, which must exist on the nodes too). ``pending_limit``: seconds a
    job may take from submission until its agent connects before benchrun gives up with
    the job's state and reason. ``max_resubmits``: jobs submitted after the first one
    (when a job ended under a round) before the campaign stops.
    """

    partition: str | None = None
    constraint: str | None = None
    nodes: int | tuple[str, ...] = 1
    account: str | None = None
    time: float | None = None
    sbatch_args: tuple[str, ...] = ()
    exclusive: bool = True
    listen: str | None = None
    python: str | None = None
    pending_limit: float = 600.0
    max_resubmits: int = 3
    #: a fleet (docs/slurm.md "Fleet"): each node type's name and the spec its jobs use
    #: (this mapping's keys with the type's ``partition``, ``constraint``, ``nodes``,
    #: ``account``, ``sbatch_args``, ``exclusive`` on top; its own ``node_types`` empty);
    #: empty: one kind of node
    node_types: tuple[tuple[str, SlurmSpec], ...] = ()

    @property
    def node_type_names(self) -> tuple[str, ...]:
        """The fleet's node type names in file order (empty without node types)."""
        return tuple(name for name, _ in self.node_types)

    def node_type(self, name: str) -> SlurmSpec:
        """The spec of node type ``name`` (KeyError when there is none)."""
        for n, spec in self.node_types:
            if n == name:
                return spec
        raise KeyError(name)

    @property
    def node_count(self) -> int | None:
        """Nodes asked for by count; None when ``nodes`` names them."""
        return self.nodes if isinstance(self.nodes, int) else None

    def time_text(self) -> str | None:
        """``time`` in Slurm's ``D-HH:MM:SS`` form, rounded up to whole minutes (Slurm
        keeps job time limits in minutes); None without a limit."""
        if self.time is None:
            return None
        minutes = max(1, int(-(-self.time // 60)))
        days, rest = divmod(minutes, 1440)
        hours, mins = divmod(rest, 60)
        return f"{days}-{hours:02d}:{mins:02d}:00"


@dataclass(frozen=True)
class Experiment:
    """A whole experiment file: metadata, settings and the expanded list of workloads."""

    name: str
    description: str
    output: Path
    settings: Settings
    workloads: tuple[Workload, ...]
    source_path: Path | None = None
    source_text: str = ""
    #: the file's ``matrix:`` (factor name -> values), empty without one
    matrix: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    #: the file's ``compare:`` resolved to groups of workload names (None: every metric's
    #: ranking; see :meth:`comparison_group`)
    compare: tuple[tuple[str, ...], ...] | None = None
    #: the file's top-level hooks, placeholders unfilled: the default of every workload
    #: that gives none of its own (each workload holds its own, filled, in ``workloads``)
    setup: Hook | None = None
    prepare: Hook | None = None
    cleanup: Hook | None = None
    #: where rounds run: None = this machine (``executor: local``), else a Slurm cluster
    executor: SlurmSpec | None = None

    def comparison_group(self, name: str) -> str | None:
        """Label of the group ``name`` is compared within: its metric and unit, and with
        ``compare:`` the index of its group (None: compared with nothing)."""
        w = next(w for w in self.workloads if w.name == name)
        base = f"{w.metric}:{w.unit}"
        if self.compare is None:
            return base
        for i, group in enumerate(self.compare):
            if name in group:
                return f"{base}#{i + 1}"
        return None

    def duet_pair(self) -> tuple[str, str] | None:
        """The two workloads a duet runs together (docs/duet.md): the experiment's two
        workloads, or its one ``compare:`` group of two; None when there is no such pair."""
        if len(self.workloads) == 2:
            return (self.workloads[0].name, self.workloads[1].name)
        if self.compare is not None and len(self.compare) == 1 and len(self.compare[0]) == 2:
            a, b = self.compare[0]
            return (a, b)
        return None

    def node_type_of(self, name: str) -> str | None:
        """The node type workload ``name`` runs on (its ``node_type`` param in a fleet,
        docs/slurm.md "Fleet"); None outside a fleet."""
        if self.executor is None or not self.executor.node_types:
            return None
        w = next(w for w in self.workloads if w.name == name)
        value = w.params.get(NODE_TYPE_PARAM)
        return None if value is None else str(value)

    @property
    def names(self) -> tuple[str, ...]:
        """Workload names in file order (after matrix expansion)."""
        return tuple(w.name for w in self.workloads)

    @property
    def campaign_dir(self) -> Path:
        """``<output>/<name>``: where the campaign's database and reports live."""
        return self.output / self.name

    @property
    def db_path(self) -> Path:
        return self.campaign_dir / "benchrun.db"

    def measurement_fingerprint(self) -> str:
        """SHA-256 of everything that changes what is measured (used to refuse a resume).

        Name, description and output location are excluded; settings that only steer how
        long to run (rounds, budgets, targets) are excluded too, so a resume may extend them.
        """
        s = self.settings
        doc: dict[str, Any] = {
            "workloads": [
                {
                    "name": w.name,
                    "command": list(w.command),
                    "shell": w.shell,
                    "work": w.work,
                    "metric": w.metric,
                    "readings": None if w.readings is None else vars(w.readings),
                    "env": dict(w.env),
                    "cwd": _fingerprint_cwd(w.cwd, s.workdir),
                    "per_work": w.per_work,
                }
                for w in self.workloads
            ],
            "pin": list(s.pin) if isinstance(s.pin, tuple) else s.pin,
            "env": dict(s.env),
            "warmup_rounds": s.warmup_rounds,
            "order": s.order,
            "seed": s.seed,
        }
        if any(w.extra_metrics for w in self.workloads):
            # only with a metric list, so campaigns stored before keep their fingerprint
            doc["extra_metrics"] = {w.name: list(w.extra_metrics) for w in self.workloads}
        if any(w.hook(k) is not None for w in self.workloads for k in HOOK_KINDS):
            # only with hooks, so campaigns stored before hooks existed keep their fingerprint
            doc["hooks"] = {
                w.name: {
                    k: None if h is None else {"command": list(h.command), "shell": h.shell}
                    for k in HOOK_KINDS
                    for h in (w.hook(k),)
                }
                for w in self.workloads
            }
        if s.duet is not None:  # only with duet, so other campaigns keep their fingerprint
            doc["duet"] = s.duet.fingerprint()
        if self.executor is not None:
            # only for Slurm, so local campaigns keep their fingerprint; where the rounds
            # run (partition, features, nodes) changes what is measured, limits do not
            e = self.executor
            doc["executor"] = {
                "kind": "slurm",
                "partition": e.partition,
                "constraint": e.constraint,
                "nodes": e.nodes if isinstance(e.nodes, int) else list(e.nodes),
            }
            if e.node_types:  # only in a fleet, so other Slurm campaigns keep theirs
                doc["executor"]["node_types"] = {
                    name: {
                        "partition": t.partition,
                        "constraint": t.constraint,
                        "nodes": t.nodes if isinstance(t.nodes, int) else list(t.nodes),
                    }
                    for name, t in e.node_types
                }
        blob = json.dumps(doc, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()


#: default root of campaign directories, relative to the current working directory
DEFAULT_OUTPUT = "results"


def _fingerprint_cwd(cwd: str | None, workdir: str | None) -> str | None:
    """A workload's directory as the measurement fingerprint records it: as loaded, or,
    with ``settings.workdir``, relative to it (``{workdir}/sub``), so that the same
    experiment run in another checkout of the program keeps its fingerprint."""
    if workdir is None or cwd is None:
        return cwd
    rel = os.path.relpath(cwd, workdir)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return cwd  # outside the workdir: where it is
    return "{workdir}" if rel == os.curdir else "{workdir}/" + rel
