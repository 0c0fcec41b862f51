"""The keys of an experiment file: one table per section, shared by the validator
(:mod:`runner.config.experiment`) and ``benchrun schema`` (:func:`json_schema`), so the two cannot drift.

Each :class:`Key` names a *kind*; simple kinds are checked and converted by
:func:`check_simple`; structured kinds (command, pin, readings, ...) are checked in
:mod:`runner.config.experiment` and described here only for the JSON Schema.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any

from benchrun.runner.config.cpulist import CPU_LIST_PATTERN
from benchrun.runner.config.durations import (
    DURATION_PATTERN,
    SIZE_PATTERN,
    SLURM_TIME_PATTERN,
    parse_duration,
    parse_size,
)
from benchrun.runner.config.experiment import (
    DEFAULT_OUTPUT,
    EXECUTOR_KINDS,
    METRICS,
    DuetSpec,
    ReadingsSpec,
    Settings,
    SlurmSpec,
    Workload,
)
from benchrun.runner.format import format_duration

#: caps that refuse absurd values at validation (they would overflow SQLite's 64-bit
#: integers, run for years, or exhaust memory); each message says the cap
INT64_MAX = 2**63 - 1
MAX_ROUNDS = 100_000_000
MAX_CONSECUTIVE_FAILURES = 10_000
MAX_TIMEOUT = 7 * 86400.0  # seconds
MAX_CAMPAIGN_TIME = 366 * 86400.0  # seconds
MAX_MIN_ROUND_TIME = 3600.0  # seconds
MAX_MATCH_TIMEOUT = 60.0  # seconds
MAX_READINGS = 10_000_000
MAX_WORK = 10**15
MAX_WORKLOADS = 1_000_000
MAX_OUTPUT_LIMIT = 2**30  # bytes
MAX_MEMORY_LIMIT = 2**60  # bytes
#: the largest ``confidence``: closer to 1, ``1 - (1 - confidence) / 2`` divided over a
#: campaign's comparisons rounds to 1.0 in floating point, the normal quantile is
#: infinite and the controller's sample-size arithmetic overflows (issue 29); six nines
#: leaves room for 10^8 comparisons and is far past any interval worth waiting for
MAX_CONFIDENCE = 0.999999

SIMPLE_KINDS = (
    "int",
    "number",
    "bool",
    "str",
    "enum",
    "enum_list",
    "duration",
    "size",
    "str_list",
    "str_map",
)


@dataclass(frozen=True)
class Key:
    """One key of a section: its kind, bounds and the sentence ``benchrun schema`` shows."""

    name: str
    kind: str
    doc: str
    required: bool = False
    nullable: bool = False
    choices: tuple[str, ...] = ()
    minimum: float | None = None  # inclusive
    exclusive_minimum: float | None = None
    exclusive_maximum: float | None = None
    maximum: float | None = None  # inclusive: a cap that refuses absurd values


TOP_KEYS: tuple[Key, ...] = (
    Key("name", "name", "experiment name; results go to <output>/<name>/", required=True),
    Key("description", "str", "why this experiment exists (stored with the results)"),
    Key("output", "str", "campaign directory root, relative to the current directory"),
    Key("settings", "settings", "campaign-wide settings"),
    Key("workloads", "workloads", "the things to measure", required=True),
    Key("matrix", "matrix", "factorial design: name -> list of values"),
    Key(
        "compare",
        "compare",
        "the experiment's questions: groups of workloads compared with each other (a list "
        "of names or shell-style patterns), or {by: FACTOR} to compare the values of a "
        "matrix factor; default: neighbours in each metric's ranking",
    ),
    Key(
        "setup",
        "hook",
        "default setup of every workload that gives none: run once before its first round, "
        "untimed (a string runs with /bin/sh -c, a list as argv)",
        nullable=True,
    ),
    Key(
        "prepare",
        "hook",
        "default prepare of every workload that gives none: run before each of its rounds, untimed",
        nullable=True,
    ),
    Key(
        "cleanup",
        "hook",
        "default cleanup of every workload that gives none: run after its last round, untimed",
        nullable=True,
    ),
    Key(
        "executor",
        "executor",
        "where rounds run: local (this machine, the default), slurm (a Slurm cluster with "
        "its defaults), or a mapping {kind: slurm, partition, constraint, nodes, account, "
        "time, sbatch_args, ...} (docs/slurm.md)",
    ),
)

SETTINGS_KEYS: tuple[Key, ...] = (
    Key("rounds", "int", "rounds per workload in fixed mode", minimum=1, maximum=MAX_ROUNDS),
    Key(
        "warmup_rounds",
        "int",
        "rounds run, stored and flagged, excluded from analysis",
        minimum=0,
        maximum=MAX_ROUNDS,
    ),
    Key("order", "enum", "order of workloads in a pass", choices=("interleaved", "sequential")),
    Key("pin", "pin", "CPUs for workloads: auto, none, or a CPU list"),
    Key("timeout", "duration", "per-round time limit", exclusive_minimum=0, maximum=MAX_TIMEOUT),
    Key(
        "confidence",
        "number",
        "confidence level of intervals",
        exclusive_minimum=0,
        maximum=MAX_CONFIDENCE,
    ),
    Key("seed", "int", "seed of the random order", minimum=0, maximum=INT64_MAX),
    Key("env", "str_map", "environment variables set for every workload"),
    Key("record_env", "str_list", "names of inherited environment variables to record"),
    Key("fail_fast", "bool", "stop the campaign at the first failed round"),
    Key(
        "max_consecutive_failures",
        "int",
        "give up on a workload after this many failures in a row",
        minimum=1,
        maximum=MAX_CONSECUTIVE_FAILURES,
    ),
    Key(
        "on_interrupt",
        "enum",
        "Ctrl-C: kill the round in flight or let it finish",
        choices=("kill", "finish"),
    ),
    Key(
        "output_limit",
        "size",
        "bytes of stdout/stderr tail kept per round",
        maximum=MAX_OUTPUT_LIMIT,
    ),
    Key("adaptive", "bool", "run until the stopping rule is met (docs/methods.md section 10)"),
    Key(
        "ci_rel_width",
        "number",
        "target CI half-width relative to the estimate",
        nullable=True,
        exclusive_minimum=0,
    ),
    Key(
        "alpha",
        "number",
        "significance level of comparisons",
        exclusive_minimum=0,
        # the controller's own range (runner/control/params.py ControllerParams):
        # refused here, not after the campaign was created
        exclusive_maximum=0.5,
    ),
    Key(
        "margin",
        "number",
        "relative equivalence margin (TOST)",
        exclusive_minimum=0,
        exclusive_maximum=1,
    ),
    Key(
        "min_rounds",
        "int",
        "adaptive: fewest steady rounds per workload",
        minimum=1,
        maximum=MAX_ROUNDS,
    ),
    Key(
        "min_subsessions",
        "int",
        "adaptive: fewest subsession means",
        nullable=True,
        minimum=2,
        maximum=MAX_ROUNDS,
    ),
    Key("max_rounds", "int", "adaptive: most rounds per workload", minimum=1, maximum=MAX_ROUNDS),
    Key(
        "max_time",
        "duration",
        "wall-clock budget of the whole campaign across resumes (hooks, calibration, warm-up, "
        "rounds)",
        exclusive_minimum=0,
        maximum=MAX_CAMPAIGN_TIME,
    ),
    Key(
        "min_round_time",
        "duration",
        "adaptive: grow work until a round lasts this long",
        minimum=0,
        maximum=MAX_MIN_ROUND_TIME,
    ),
    Key(
        "baseline",
        "str",
        "adaptive: previous results to compare with: a campaign directory, its benchrun.db, "
        "or a JSON summary (name -> mean, variance, n_q, q)",
        nullable=True,
    ),
    Key("reference", "str", "adaptive: workload the others are compared with", nullable=True),
    Key(
        "comparison",
        "enum",
        "adaptive: paired = compare workloads on per-pass log ratios (cancels the machine's "
        "drift); independent = Welch on each workload's own subsession means",
        choices=("paired", "independent"),
    ),
    Key(
        "paired_test",
        "enum",
        "adaptive: the test of a paired comparison: rank = Wilcoxon signed-rank on the "
        "per-pass log ratios (median per-pass ratio, Hodges-Lehmann); t = one-sample t test "
        "(geometric-mean ratio)",
        choices=("rank", "t"),
    ),
    Key(
        "warmup_readings",
        "int",
        "readings dropped at the start of every round (null: detected with MSER-5)",
        nullable=True,
        minimum=0,
        maximum=MAX_READINGS,
    ),
    Key(
        "memory_limit",
        "size",
        "address-space limit of every round (RLIMIT_AS), e.g. 512MiB; null: none",
        nullable=True,
        maximum=MAX_MEMORY_LIMIT,
    ),
    Key(
        "quiet_load",
        "number",
        "before each pass wait until the 1-minute load average is below this; null: off",
        nullable=True,
        exclusive_minimum=0,
    ),
    Key(
        "quiet_max_wait",
        "duration",
        "longest wait for a quiet machine",
        minimum=0,
        maximum=MAX_TIMEOUT,
    ),
    Key(
        "max_workloads",
        "int",
        "most workloads the experiment may have after matrix expansion",
        minimum=1,
        maximum=MAX_WORKLOADS,
    ),
    Key(
        "duet",
        "duet",
        "run the two workloads of the comparison at the same time, each pinned to its own "
        "CPU, released together: true, or a mapping of force, solo_every, asymmetry, cpus "
        "(docs/duet.md)",
        nullable=True,
    ),
    Key(
        "hook_timeout",
        "duration",
        "time limit of a setup, prepare or cleanup command (null: the round's timeout)",
        nullable=True,
        exclusive_minimum=0,
        maximum=MAX_TIMEOUT,
    ),
    Key(
        "control",
        "str",
        "a workload that does not change between campaigns (a fixed CPU loop): compare also "
        "gives each workload's ratio divided by the control's (docs/conditions.md)",
        nullable=True,
    ),
    Key(
        "wait_for_cpus",
        "duration",
        "longest wait while another benchrun run holds the CPUs this one needs "
        "(docs/reservation.md); null: refuse at once (exit 4)",
        nullable=True,
        minimum=0,
        maximum=MAX_TIMEOUT,
    ),
    Key(
        "contended",
        "enum",
        "a round that waited for a CPU longer than contended_threshold of its wall time is "
        "flagged contended: exclude = left out of the analysis (counted and named), keep = "
        "analysed (counted), fail = the campaign stops (docs/contention.md)",
        choices=("exclude", "keep", "fail"),
    ),
    Key(
        "contended_threshold",
        "number",
        "share of a round's wall time its processes may wait for a CPU (runnable, not "
        "running) before the round is contended",
        exclusive_minimum=0,
        maximum=1,
    ),
    Key(
        "extend_rounds",
        "bool",
        "adaptive: a paired comparison whose estimate says it decides within the time left "
        "of max_time keeps running past max_rounds; null: on when max_rounds is left at its "
        "default (time is the budget), off when it is set (a cap)",
        nullable=True,
    ),
    Key(
        "secret_env",
        "str_list",
        "names of env variables whose values are secret, besides every name containing "
        "TOKEN, SECRET, PASSWORD, PASSWD, PASSPHRASE, KEY, CREDENTIAL, AUTH or COOKIE: the "
        "workloads receive them, exports, reports and show print <secret> unless "
        "--include-secrets",
    ),
    Key(
        "repository",
        "str",
        "the measured program's git checkout (relative to the experiment file): each "
        "campaign is tagged with its `git describe --always --dirty` (docs/history.md); "
        "null: the directory benchrun runs in, when it is a checkout",
        nullable=True,
    ),
    Key(
        "workdir",
        "str",
        "where the workloads' relative cwd (and their default cwd) start from instead of "
        "the experiment file's directory (relative to the file); the fingerprint records "
        "cwds relative to it, so the experiment run in another checkout of the program "
        "(benchrun sweep's worktrees) stays one series (docs/history.md)",
        nullable=True,
    ),
    Key(
        "tune",
        "bool",
        "tune this machine for the campaign (governor, turbo, perf sampling rate, SMT "
        "siblings, IRQ affinity, as benchrun system tune does on the workload CPUs; root) "
        "and restore every previous value at its end, or after a crash at the next run "
        "(docs/tuning.md)",
    ),
)

WORKLOAD_KEYS: tuple[Key, ...] = (
    Key("name", "str", "unique workload name", required=True),
    Key("command", "command", "argv list, or a string split like a shell would", required=True),
    Key("shell", "bool", "run command (one string) with /bin/sh -c"),
    Key("params", "params", "placeholder values: {name} in command and env"),
    Key(
        "work",
        "int",
        "amount of work per round, substituted for {work}",
        nullable=True,
        minimum=1,
        maximum=MAX_WORK,
    ),
    Key(
        "metric",
        "enum_list",
        "what is analysed; a list: the first decides, the others are stored and reported",
        choices=METRICS,
    ),
    Key("readings", "readings", "how to find values the workload prints"),
    Key("env", "str_map", "environment variables for this workload ({param} allowed)"),
    Key("cwd", "str", "working directory, relative to the experiment file", nullable=True),
    Key(
        "timeout",
        "duration",
        "per-round time limit for this workload",
        nullable=True,
        exclusive_minimum=0,
        maximum=MAX_TIMEOUT,
    ),
    Key("per_work", "bool", "divide the metric by work (needs work)"),
    Key(
        "memory_limit",
        "size",
        "address-space limit of each round (RLIMIT_AS) for this workload",
        nullable=True,
        maximum=MAX_MEMORY_LIMIT,
    ),
    Key(
        "setup",
        "hook",
        "run once before the workload's first round (of each benchrun run), untimed; a "
        "string runs with /bin/sh -c, a list as argv; {param} allowed; null: none",
        nullable=True,
    ),
    Key(
        "prepare",
        "hook",
        "run before each round, untimed; a failure fails the round; {param}, {round} and "
        "{work} allowed; null: none",
        nullable=True,
    ),
    Key(
        "cleanup",
        "hook",
        "run after the workload's last round (of each benchrun run), untimed; a failure is "
        "reported, nothing is lost; {param} allowed; null: none",
        nullable=True,
    ),
)

#: longest Slurm job time limit accepted, seconds
MAX_JOB_TIME = 366 * 86400.0
#: longest wait for a Slurm job to start, seconds
MAX_PENDING_LIMIT = 30 * 86400.0
#: most jobs resubmitted after the first one
MAX_RESUBMITS = 1000
#: most nodes one job may ask for
MAX_NODES = 100_000

EXECUTOR_KEYS: tuple[Key, ...] = (
    Key("kind", "enum", "local or slurm", required=True, choices=EXECUTOR_KINDS),
    Key(
        "partition", "str", "Slurm partition (sbatch --partition); null: the default", nullable=True
    ),
    Key(
        "constraint",
        "str",
        "node features the job needs (sbatch --constraint), e.g. 'skylake&ib'",
        nullable=True,
    ),
    Key("nodes", "nodes", "how many nodes (--nodes), or a list of node names (--nodelist)"),
    Key("account", "str", "account charged for the jobs (sbatch --account)", nullable=True),
    Key(
        "time",
        "slurm_time",
        "time limit of each job: Slurm's form (30, 1:00:00, 2-00:00:00 read as "
        "H:M:S) or a duration (90m, 2h); whole minutes, at least 1 minute; null: the "
        "partition's default",
        nullable=True,
    ),
    Key("sbatch_args", "str_list", "further sbatch options, e.g. [--qos=short, --mem=8G]"),
    Key("exclusive", "bool", "whole nodes for the job (sbatch --exclusive); default true"),
    Key(
        "listen",
        "str",
        "address of this host that the nodes connect to, HOST or HOST:PORT; null: this "
        "host's name as it resolves, any free port",
        nullable=True,
    ),
    Key(
        "python",
        "str",
        "Python with benchrun installed, as the nodes see it; null: this interpreter's path",
        nullable=True,
    ),
    Key(
        "pending_limit",
        "duration",
        "longest wait from submitting a job until it runs; past it benchrun stops with "
        "the job's state and reason",
        exclusive_minimum=0,
        maximum=MAX_PENDING_LIMIT,
    ),
    Key(
        "max_resubmits",
        "int",
        "jobs submitted again after a job ended under a round (cancelled, time limit, node "
        "failure) before the campaign stops",
        minimum=0,
        maximum=MAX_RESUBMITS,
    ),
    Key(
        "node_types",
        "node_types",
        "a fleet: node type name -> where its jobs run (partition, constraint, nodes, "
        "account, sbatch_args, exclusive; the other keys here are shared defaults); each "
        "workload runs on every type and is compared across them (docs/slurm.md, Fleet)",
    ),
)

#: most passes between two solo passes of a duet campaign
MAX_SOLO_EVERY = 1_000_000

DUET_KEYS: tuple[Key, ...] = (
    Key("force", "bool", "run on when a side uses more than one CPU (else the campaign stops)"),
    Key(
        "solo_every",
        "int",
        "every this-many-th pass runs both sides alone, for the asymmetry check (0: none)",
        minimum=0,
        maximum=MAX_SOLO_EVERY,
    ),
    Key(
        "asymmetry",
        "enum",
        "when the pair interferes asymmetrically: warn, or refuse the duet verdict",
        choices=("warn", "refuse"),
    ),
    Key(
        "cpus",
        "enum",
        "which side gets which CPU: alternate (swapped every pass) or random (seeded, "
        "balanced in blocks of four passes)",
        choices=("alternate", "random"),
    ),
)
#: where-keys a node type may set (the rest of ``executor:`` is shared by every type)
NODE_TYPE_KEY_NAMES: tuple[str, ...] = (
    "partition",
    "constraint",
    "nodes",
    "account",
    "sbatch_args",
    "exclusive",
)
NODE_TYPE_KEYS: tuple[Key, ...] = tuple(k for k in EXECUTOR_KEYS if k.name in NODE_TYPE_KEY_NAMES)
#: fewest node types a fleet compares
MIN_NODE_TYPES = 2
#: longest node type name (it is part of every workload name)
MAX_NODE_TYPE_NAME = 64

READINGS_KEYS: tuple[Key, ...] = (
    Key("format", "enum", "regex (pattern) or jsonl (field)", choices=("regex", "jsonl")),
    Key("pattern", "str", "regular expression with exactly one capture group", nullable=True),
    Key("field", "str", "key of the value in each JSON line", nullable=True),
    Key("unit", "str", "unit of the readings"),
    Key(
        "direction", "enum", "which way is better", choices=("lower_is_better", "higher_is_better")
    ),
    Key(
        "max_readings",
        "int",
        "most readings one round may print; a round with more fails",
        minimum=1,
        maximum=MAX_READINGS,
    ),
    Key(
        "match_timeout",
        "duration",
        "longest time the pattern may take on one round's output; past it the round fails",
        exclusive_minimum=0,
        maximum=MAX_MATCH_TIMEOUT,
    ),
)


#: a node type name: letters, digits, ``_``, ``-``, ``.``, ``+``, starting with a letter or
#: digit (it becomes part of workload names, ``bench[node_type=NAME]``)
NODE_TYPE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$"


def key_names(keys: tuple[Key, ...]) -> tuple[str, ...]:
    """The names of ``keys`` in order."""
    return tuple(k.name for k in keys)


def unknown_key_message(key: object, valid: tuple[str, ...]) -> str:
    """``unknown key 'rouns'; did you mean 'rounds'?`` (difflib), else the valid keys."""
    if not isinstance(key, str):
        return f"keys must be strings, got {key!r}; valid keys: {', '.join(valid)}"
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    if close:
        return f"unknown key {key!r}; did you mean {close[0]!r}?"
    return f"unknown key {key!r}; valid keys: {', '.join(valid)}"


def describe(value: object) -> str:
    """Short description of a YAML value for messages: ``string 'abc'``, ``a list``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"number {value!r}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {shown!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _bounds_text(key: Key) -> str:
    parts = []
    if key.minimum is not None:
        parts.append(f">= {key.minimum:g}")
    if key.exclusive_minimum is not None:
        parts.append(f"> {key.exclusive_minimum:g}")
    if key.exclusive_maximum is not None:
        parts.append(f"< {key.exclusive_maximum:g}")
    if key.maximum is not None:
        parts.append(f"<= {_cap_text(key)}")
    return " and ".join(parts)


def _cap_text(key: Key) -> str:
    assert key.maximum is not None
    if key.kind == "duration":
        days = key.maximum / 86400
        return f"{days:g} days" if days >= 1 else format_duration(key.maximum)
    if key.kind == "size":
        return f"{key.maximum:.0f} bytes (2^{math.log2(key.maximum):g})"
    return f"{key.maximum:g}"


def _check_bounds(key: Key, number: float, shown: object) -> None:
    ok = (
        (key.minimum is None or number >= key.minimum)
        and (key.exclusive_minimum is None or number > key.exclusive_minimum)
        and (key.exclusive_maximum is None or number < key.exclusive_maximum)
        and (key.maximum is None or number <= key.maximum)
    )
    if not ok:
        raise ValueError(f"{shown!r} is out of range; must be {_bounds_text(key)}")


def check_simple(key: Key, value: Any) -> Any:
    """Check ``value`` against a simple-kind ``key`` and return it converted
    (durations to seconds, sizes to bytes, maps to ``dict[str, str]``, lists to tuples).
    Raises ``ValueError`` with ``what is wrong; what is valid``."""
    if value is None:
        if key.nullable:
            return None
        raise ValueError(f"must not be null; {_expected(key)}")
    kind = key.kind
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer, got {describe(value)}")
        _check_bounds(key, value, value)
        return value
    if kind == "number":
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise ValueError(f"expected a number, got {describe(value)}")
        _check_bounds(key, value, value)
        return float(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {describe(value)}")
        return value
    if kind == "str":
        if not isinstance(value, str):
            raise ValueError(f"expected a string, got {describe(value)}")
        return value
    if kind == "enum":
        if value not in key.choices:
            raise ValueError(f"got {describe(value)}; valid: {' | '.join(key.choices)}")
        return value
    if kind == "enum_list":
        items = value if isinstance(value, list) else [value]
        if not items:
            raise ValueError(f"expected one of {' | '.join(key.choices)} or a list of them, got []")
        for item in items:
            if item not in key.choices:
                raise ValueError(f"got {describe(item)}; valid: {' | '.join(key.choices)}")
        twice = sorted({v for v in items if items.count(v) > 1})
        if twice:
            raise ValueError(f"{', '.join(twice)} named twice; name each once")
        return tuple(items)
    if kind == "duration":
        seconds = parse_duration(value)
        _check_bounds(key, seconds, value)
        return seconds
    if kind == "size":
        size = parse_size(value)
        _check_bounds(key, size, value)
        return size
    if kind == "str_list":
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"expected a list of strings, got {describe(value)}")
        return tuple(value)
    if kind == "str_map":
        return check_str_map(value)
    raise AssertionError(f"not a simple kind: {kind}")  # pragma: no cover


def check_str_map(value: Any) -> dict[str, str]:
    """An environment mapping: string names (no ``=``) to strings or numbers (kept as text)."""
    if not isinstance(value, dict):
        raise ValueError(f'expected a mapping like {{NAME: "value"}}, got {describe(value)}')
    out: dict[str, str] = {}
    for name, item in value.items():
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            raise ValueError(f"bad variable name {name!r}; names are non-empty and have no '='")
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise ValueError(
                f'{name}: expected a string or number, got {describe(item)}; quote it, e.g. "1"'
            )
        out[name] = str(item)
    return out


def _expected(key: Key) -> str:
    texts = {
        "int": "an integer",
        "number": "a number",
        "bool": "true or false",
        "str": "a string",
        "enum": " | ".join(key.choices),
        "enum_list": " | ".join(key.choices) + " or a list of them",
        "duration": "a duration like 90s",
        "size": "a size like 64KiB",
        "str_list": "a list of strings",
        "str_map": "a mapping",
    }
    return "expected " + texts.get(key.kind, key.kind)


# --------------------------------------------------------------------------- JSON Schema

_SCALAR = {"type": ["string", "number", "integer", "boolean"]}


def _fragment(key: Key) -> dict[str, Any]:
    kind = key.kind
    frag: dict[str, Any]
    if kind in ("int", "number"):
        frag = {"type": "integer" if kind == "int" else "number"}
        for attr, word in (
            ("minimum", "minimum"),
            ("exclusive_minimum", "exclusiveMinimum"),
            ("exclusive_maximum", "exclusiveMaximum"),
            ("maximum", "maximum"),
        ):
            if getattr(key, attr) is not None:
                frag[word] = getattr(key, attr)
    elif kind == "bool":
        frag = {"type": "boolean"}
    elif kind in ("str", "name"):
        frag = {"type": "string", "minLength": 1} if kind == "name" else {"type": "string"}
    elif kind == "enum":
        frag = {"enum": list(key.choices)}
    elif kind == "enum_list":
        frag = {
            "anyOf": [
                {"enum": list(key.choices)},
                {
                    "type": "array",
                    "minItems": 1,
                    "uniqueItems": True,
                    "items": {"enum": list(key.choices)},
                },
            ]
        }
    elif kind == "duration":
        number: dict[str, Any] = {"type": "number"}
        if key.exclusive_minimum is not None:
            number["exclusiveMinimum"] = key.exclusive_minimum
        else:
            number["minimum"] = 0
        if key.maximum is not None:
            number["maximum"] = key.maximum
        frag = {"anyOf": [number, {"type": "string", "pattern": DURATION_PATTERN}]}
    elif kind == "size":
        integer: dict[str, Any] = {"type": "integer", "minimum": 0}
        if key.maximum is not None:
            integer["maximum"] = int(key.maximum)
        frag = {"anyOf": [integer, {"type": "string", "pattern": SIZE_PATTERN}]}
    elif kind == "str_list":
        frag = {"type": "array", "items": {"type": "string"}}
    elif kind == "str_map":
        frag = {"type": "object", "additionalProperties": {"type": ["string", "number", "integer"]}}
    elif kind == "pin":
        frag = {
            "anyOf": [
                {"enum": ["auto", "none"]},
                {"type": "integer", "minimum": 0},
                {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}},
                {"type": "string", "pattern": CPU_LIST_PATTERN},
            ]
        }
    elif kind == "command":
        frag = {
            "anyOf": [
                {"type": "string", "minLength": 1},
                {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": ["string", "number", "integer"]},
                },
            ]
        }
    elif kind == "hook":
        frag = {
            "anyOf": [
                {"type": "string", "minLength": 1},
                {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": ["string", "number", "integer"]},
                },
            ]
        }
    elif kind == "params":
        frag = {"type": "object", "additionalProperties": _SCALAR}
    elif kind == "matrix":
        frag = {
            "type": "object",
            "additionalProperties": {"type": "array", "minItems": 1, "items": _SCALAR},
        }
    elif kind == "compare":
        group = {
            "anyOf": [
                {"type": "array", "minItems": 2, "items": {"type": "string"}},
                {
                    "type": "object",
                    "properties": {"by": {"type": "string"}},
                    "required": ["by"],
                    "additionalProperties": False,
                },
            ]
        }
        frag = {"type": "array", "minItems": 1, "items": group}
    elif kind == "executor":
        frag = {"anyOf": [{"enum": list(EXECUTOR_KINDS)}, _section(EXECUTOR_KEYS)]}
    elif kind == "node_types":
        frag = {
            "type": "object",
            "minProperties": MIN_NODE_TYPES,
            "propertyNames": {"pattern": NODE_TYPE_NAME_PATTERN},
            "additionalProperties": _section(NODE_TYPE_KEYS),
        }
    elif kind == "nodes":
        frag = {
            "anyOf": [
                {"type": "integer", "minimum": 1, "maximum": MAX_NODES},
                {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
            ]
        }
    elif kind == "slurm_time":
        frag = {
            "anyOf": [
                {"type": "number", "minimum": 60},
                {"type": "string", "pattern": f"{SLURM_TIME_PATTERN}|{DURATION_PATTERN}"},
            ]
        }
    elif kind == "duet":
        frag = {"anyOf": [{"type": "boolean"}, _section(DUET_KEYS)]}
    elif kind == "readings":
        frag = _section(READINGS_KEYS)
        frag["anyOf"] = [{"required": ["pattern"]}, {"required": ["field"]}]
    elif kind == "settings":
        frag = _section(SETTINGS_KEYS)
    elif kind == "workloads":
        frag = {"type": "array", "minItems": 1, "items": _section(WORKLOAD_KEYS)}
    else:  # pragma: no cover
        raise AssertionError(kind)
    if key.nullable:
        frag = {"anyOf": [frag, {"type": "null"}]}
    frag["description"] = key.doc
    return frag


def _section(keys: tuple[Key, ...]) -> dict[str, Any]:
    section: dict[str, Any] = {
        "type": "object",
        "properties": {k.name: _fragment(k) for k in keys},
        "additionalProperties": False,
    }
    required = [k.name for k in keys if k.required]
    if required:
        section["required"] = required
    return section


def json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of an experiment file, built from the key tables above.

    It checks structure and types only; cross-key rules (placeholders, matrix names,
    executables on PATH, CPUs present) need ``benchrun validate``.
    """
    from dataclasses import MISSING, fields

    schema = _section(TOP_KEYS)
    props = schema["properties"]
    props["output"]["default"] = DEFAULT_OUTPUT
    workload_props = props["workloads"]["items"]["properties"]
    readings_props = workload_props["readings"]["properties"]
    executor_props = props["executor"]["anyOf"][1]["properties"]
    duet_props = props["settings"]["properties"]["duet"]["anyOf"][0]["anyOf"][1]["properties"]
    for cls, section in (
        (Settings, props["settings"]["properties"]),
        (DuetSpec, duet_props),
        (SlurmSpec, executor_props),
        (Workload, workload_props),
        (ReadingsSpec, readings_props),
    ):
        for f in fields(cls):
            if f.name in section and f.default is not MISSING and f.name != "node_types":
                section[f.name]["default"] = f.default
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://benchrun.invalid/schema/experiment.json",
        "title": "benchrun experiment file",
        "description": "Validated fully by `benchrun validate FILE`; this schema covers structure and types.",
        **schema,
    }
