"""The ``settings:`` section of an experiment file: :class:`Settings`, each of whose
fields is the one declaration of a setting (runner/config/keys.py :func:`setting`), and the
values some settings hold (:data:`PinSpec`, :class:`DuetSpec`).

:class:`Settings` is composed of three frozen dataclasses by subject (how rounds run; the
stopping rule and the comparisons; limits, the machine and the program's checkout);
``dataclasses.fields(Settings)`` lists every setting in the order of ``benchrun schema``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

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
    MAX_SOLO_EVERY,
    MAX_TIMEOUT,
    MAX_WORKLOADS,
    setting,
)

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

    force: bool = setting(
        False,
        kind="bool",
        doc="run on when a side uses more than one CPU (else the campaign stops)",
    )
    solo_every: int = setting(
        5,
        kind="int",
        doc="every this-many-th pass runs both sides alone, for the asymmetry check (0: none)",
        minimum=0,
        maximum=MAX_SOLO_EVERY,
    )
    asymmetry: Literal["warn", "refuse"] = setting(
        "warn",
        kind="enum",
        doc="when the pair interferes asymmetrically: warn, or refuse the duet verdict",
        choices=("warn", "refuse"),
    )
    cpus: Literal["alternate", "random"] = setting(
        "alternate",
        kind="enum",
        doc="which side gets which CPU: alternate (swapped every pass) or random (seeded, "
        "balanced in blocks of four passes)",
        choices=("alternate", "random"),
    )

    def fingerprint(self) -> bool | dict[str, object]:
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


#: default ``settings.confidence``: the level of every interval where a caller gives none
DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class RoundSettings:
    """The settings of how rounds run (both modes): the first of the three parts of
    :class:`Settings`, which is what callers use."""

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
        DEFAULT_CONFIDENCE,
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
    output_limit: int = setting(
        65536,
        kind="size",
        doc="bytes of stdout/stderr tail kept per round",
        init=("64KiB", "tail of stdout/stderr kept per round (bytes, or 64KiB, 1MB)"),
        maximum=MAX_OUTPUT_LIMIT,
    )


@dataclass(frozen=True)
class AnalysisSettings(RoundSettings):
    """The settings of the stopping rule and the comparisons (adaptive mode, baselines,
    the within-round warm-up): the second part of :class:`Settings`."""

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
        doc="wall-clock budget of the whole campaign across resumes (hooks, calibration, "
        "warm-up, rounds)",
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
        doc="adaptive: previous results to compare with: a campaign directory, its "
        "benchrun.db, or a JSON summary (name -> mean, variance, n_q, q)",
        init=(
            "null",
            "earlier results to compare with: a campaign directory, its",
            "benchrun.db or a JSON summary (null: none)",
        ),
        nullable=True,
    )
    reference: str | None = setting(
        None,
        kind="str",
        doc="adaptive: workload the others are compared with",
        init=("null", "a workload the others are compared with (null: none)"),
        nullable=True,
    )
    comparison: Literal["paired", "independent"] = setting(
        "paired",
        kind="enum",
        doc="adaptive: paired = compare workloads on per-pass log ratios (cancels the "
        "machine's drift); independent = Welch on each workload's own subsession means",
        init=(
            "paired",
            "paired: decide pairs on per-pass log ratios (cancels the",
            "machine's drift) | independent: Welch on each workload's means",
        ),
        choices=("paired", "independent"),
    )
    paired_test: Literal["rank", "t"] = setting(
        "rank",
        kind="enum",
        doc="adaptive: the test of a paired comparison: rank = Wilcoxon signed-rank on the "
        "per-pass log ratios (median per-pass ratio, Hodges-Lehmann); t = one-sample t "
        "test (geometric-mean ratio)",
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


@dataclass(frozen=True)
class Settings(AnalysisSettings):
    """Campaign-wide settings: the ``settings:`` section of an experiment file.

    Each field is the one declaration of its setting (runner/config/keys.py
    :func:`setting`): type and default here, kind, bounds and description in its key,
    its line in ``benchrun init``'s example beside it; the validator, the JSON Schema,
    ``init``'s example and docs/settings.md are derived from these fields, in field order
    (:class:`RoundSettings`' first, then :class:`AnalysisSettings`', then these: limits,
    the machine, where the program is).
    """

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
    max_workloads: int = setting(
        10_000,
        kind="int",
        doc="most workloads the experiment may have after matrix expansion",
        init=("10000", "most workloads after matrix expansion (a typo guard)"),
        minimum=1,
        maximum=MAX_WORKLOADS,
    )
    duet: DuetSpec | None = setting(
        None,
        kind="duet",
        doc="run the two workloads of the comparison at the same time, each pinned to its own"
        " CPU, released together: true, or a mapping of force, solo_every, asymmetry, "
        "cpus (docs/duet.md)",
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
    control: str | None = setting(
        None,
        kind="str",
        doc="a workload that does not change between campaigns (a fixed CPU loop): compare "
        "also gives each workload's ratio divided by the control's (docs/conditions.md)",
        init=(
            "null",
            "a workload that does not change between campaigns (a fixed",
            "CPU loop): compare also divides each ratio by its ratio",
        ),
        nullable=True,
    )
    # seconds; benchrun run --wait-for-cpus overrides it
    wait_for_cpus: float | None = setting(
        None,
        kind="duration",
        doc="longest wait while another benchrun run holds the CPUs this one needs "
        "(docs/reservation.md); null: refuse at once (exit 4)",
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
    contended: Literal["exclude", "keep", "fail"] = setting(
        "exclude",
        kind="enum",
        doc="a round that waited for a CPU longer than contended_threshold of its wall time "
        "is flagged contended: exclude = left out of the analysis (counted and named), "
        "keep = analysed (counted), fail = the campaign stops (docs/contention.md)",
        init=(
            "exclude",
            "a round that waited for a CPU (another process shared it)",
            "longer than contended_threshold of its wall time is flagged",
            "contended: exclude (left out of the analysis, counted),",
            "keep (analysed, counted) or fail (the campaign stops)",
        ),
        choices=("exclude", "keep", "fail"),
    )
    contended_threshold: float = setting(
        DEFAULT_CONTENDED_THRESHOLD,
        kind="number",
        doc="share of a round's wall time its processes may wait for a CPU (runnable, not "
        "running) before the round is contended",
        init=("0.25", "that share of the round's wall time, in (0, 1]"),
        exclusive_minimum=0,
        maximum=1,
    )
    # the loader resolves None, so a stored campaign keeps what it ran with
    # (docs/controller.md, "Budgets")
    extend_rounds: bool | None = setting(
        None,
        kind="bool",
        doc="adaptive: a paired comparison whose estimate says it decides within the time "
        "left of max_time keeps running past max_rounds; null: on when max_rounds is left"
        " at its default (time is the budget), off when it is set (a cap)",
        init=(
            "null",
            "a paired comparison about to decide runs past max_rounds",
            "within max_time (null: when max_rounds is left at",
            "its default; set max_rounds for a hard cap)",
        ),
        nullable=True,
    )
    secret_env: tuple[str, ...] = setting(
        (),
        kind="str_list",
        doc="names of env variables whose values are secret, besides every name containing "
        "TOKEN, SECRET, PASSWORD, PASSWD, PASSPHRASE, KEY, CREDENTIAL, AUTH or COOKIE: "
        "the workloads receive them, exports, reports and show print <secret> unless "
        "--include-secrets",
        init=(
            "[]",
            "names whose values are secret, besides every name with",
            "TOKEN, SECRET, PASSWORD, KEY, CREDENTIAL, AUTH... in it:",
            "workloads get them, outputs show <secret> (docs/security.md)",
        ),
    )
    # an absolute path once loaded (runner/machine/revision.py reads its revision)
    repository: str | None = setting(
        None,
        kind="str",
        doc="the measured program's git checkout (relative to the experiment file): each "
        "campaign is tagged with its `git describe --always --dirty` (docs/history.md); "
        "null: the directory benchrun runs in, when it is a checkout",
        init=(
            "null",
            "the measured program's git checkout: campaigns are tagged",
            "with its revision (null: the directory benchrun runs in)",
        ),
        nullable=True,
    )
    # an absolute path once loaded; Experiment.measurement_fingerprint records each cwd
    # relative to it
    workdir: str | None = setting(
        None,
        kind="str",
        doc="where the workloads' relative cwd (and their default cwd) start from instead of "
        "the experiment file's directory (relative to the file); the fingerprint records "
        "cwds relative to it, so the experiment run in another checkout of the program "
        "(benchrun sweep's worktrees) stays one series (docs/history.md)",
        init=(
            "null",
            "where relative cwd: paths start (null: this file's directory);",
            "benchrun sweep points it into each revision's worktree",
        ),
        nullable=True,
    )
    tune: bool = setting(
        False,
        kind="bool",
        doc="tune this machine for the campaign (governor, turbo, perf sampling rate, SMT "
        "siblings, IRQ affinity, as benchrun system tune does on the workload CPUs; root)"
        " and restore every previous value at its end, or after a crash at the next run "
        "(docs/tuning.md)",
        init=(
            "false",
            "true: tune this machine for the campaign (root), restore",
            "it at the end (docs/tuning.md; benchrun system tune)",
        ),
    )
