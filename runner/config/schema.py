"""The keys of an experiment file: one table per section, shared by the validator
(:mod:`runner.config.loader`) and ``benchrun schema`` (:func:`json_schema`), so the two
cannot drift. The table of ``settings:`` is read from the fields of
:class:`runner.config.settings.Settings`, where each setting is declared
(runner/config/keys.py :func:`setting`).

Each :class:`Key` names a *kind*; simple kinds are checked and converted by
:func:`check_simple`; structured kinds (command, pin, readings, ...) are checked in
:mod:`runner.config.experiment` and described here only for the JSON Schema.
"""

from __future__ import annotations

import copy
import difflib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, fields
from typing import Any, TypeAlias

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
from benchrun.runner.config.keys import (
    INT64_MAX,
    MAX_CAMPAIGN_TIME,
    MAX_CONFIDENCE,
    MAX_CONSECUTIVE_FAILURES,
    MAX_MATCH_TIMEOUT,
    MAX_MEMORY_LIMIT,
    MAX_MIN_ROUND_TIME,
    MAX_OUTPUT_LIMIT,
    MAX_READINGS,
    MAX_ROUNDS,
    MAX_SOLO_EVERY,
    MAX_TIMEOUT,
    MAX_WORK,
    SIMPLE_KINDS,
    Key,
    declared_keys,
)
from benchrun.runner.format import format_duration

#: re-exported: the caps and :class:`Key` live in runner/config/keys.py (Settings declares
#: its keys with them), callers keep importing them from here
__all__ = [
    "INT64_MAX",
    "MAX_CAMPAIGN_TIME",
    "MAX_CONFIDENCE",
    "MAX_CONSECUTIVE_FAILURES",
    "MAX_MATCH_TIMEOUT",
    "MAX_MEMORY_LIMIT",
    "MAX_MIN_ROUND_TIME",
    "MAX_OUTPUT_LIMIT",
    "MAX_READINGS",
    "MAX_ROUNDS",
    "MAX_SOLO_EVERY",
    "MAX_TIMEOUT",
    "MAX_WORK",
    "SIMPLE_KINDS",
    "Key",
]


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

#: the keys of ``settings:``, declared once as the fields of ``Settings``
SETTINGS_KEYS: tuple[Key, ...] = declared_keys(Settings)

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

#: the keys of ``settings.duet``, declared once as the fields of ``DuetSpec``
DUET_KEYS: tuple[Key, ...] = declared_keys(DuetSpec)
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


def bounds_text(key: Key) -> str:
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
        raise ValueError(f"{shown!r} is out of range; must be {bounds_text(key)}")


def check_simple(key: Key, value: object) -> Any:
    """Check ``value`` (YAML as given) against a simple-kind ``key`` and return it
    converted (durations to seconds, sizes to bytes, maps to ``dict[str, str]``, lists to
    tuples): of the type of the field the key declares, which depends on its kind, so
    ``Any``.
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
        items: list[object] = value if isinstance(value, list) else [value]
        if not items:
            raise ValueError(f"expected one of {' | '.join(key.choices)} or a list of them, got []")
        names: list[str] = []
        for item in items:
            if not isinstance(item, str) or item not in key.choices:
                raise ValueError(f"got {describe(item)}; valid: {' | '.join(key.choices)}")
            names.append(item)
        twice = sorted({v for v in names if names.count(v) > 1})
        if twice:
            raise ValueError(f"{', '.join(twice)} named twice; name each once")
        return tuple(names)
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


def check_str_map(value: object) -> dict[str, str]:
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

#: a JSON value as :func:`json.dumps` writes it: what a JSON Schema fragment holds
JsonValue: TypeAlias = (
    None | bool | int | float | str | Sequence["JsonValue"] | Mapping[str, "JsonValue"]
)
#: a JSON object: one fragment of the JSON Schema (built here, mutated only while built)
Fragment: TypeAlias = dict[str, JsonValue]

_SCALAR: Fragment = {"type": ["string", "number", "integer", "boolean"]}

#: a command or a hook: one string (split like a shell, or run by /bin/sh -c) or an argv
_COMMAND: Fragment = {
    "anyOf": [
        {"type": "string", "minLength": 1},
        {"type": "array", "minItems": 1, "items": {"type": ["string", "number", "integer"]}},
    ]
}

#: the fragments of the kinds whose schema does not depend on the key (copied before use)
_FIXED_FRAGMENTS: dict[str, Fragment] = {
    "bool": {"type": "boolean"},
    "str": {"type": "string"},
    "name": {"type": "string", "minLength": 1},
    "str_list": {"type": "array", "items": {"type": "string"}},
    "str_map": {
        "type": "object",
        "additionalProperties": {"type": ["string", "number", "integer"]},
    },
    "pin": {
        "anyOf": [
            {"enum": ["auto", "none"]},
            {"type": "integer", "minimum": 0},
            {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}},
            {"type": "string", "pattern": CPU_LIST_PATTERN},
        ]
    },
    "command": _COMMAND,
    "hook": _COMMAND,
    "params": {"type": "object", "additionalProperties": _SCALAR},
    "matrix": {
        "type": "object",
        "additionalProperties": {"type": "array", "minItems": 1, "items": _SCALAR},
    },
    "compare": {
        "type": "array",
        "minItems": 1,
        "items": {
            "anyOf": [
                {"type": "array", "minItems": 2, "items": {"type": "string"}},
                {
                    "type": "object",
                    "properties": {"by": {"type": "string"}},
                    "required": ["by"],
                    "additionalProperties": False,
                },
            ]
        },
    },
    "nodes": {
        "anyOf": [
            {"type": "integer", "minimum": 1, "maximum": MAX_NODES},
            {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
        ]
    },
    "slurm_time": {
        "anyOf": [
            {"type": "number", "minimum": 60},
            {"type": "string", "pattern": f"{SLURM_TIME_PATTERN}|{DURATION_PATTERN}"},
        ]
    },
}


def _number_fragment(key: Key) -> Fragment:
    """An ``int`` or ``number`` key: its JSON type and bounds."""
    frag: Fragment = {"type": "integer" if key.kind == "int" else "number"}
    for bound, word in (
        (key.minimum, "minimum"),
        (key.exclusive_minimum, "exclusiveMinimum"),
        (key.exclusive_maximum, "exclusiveMaximum"),
        (key.maximum, "maximum"),
    ):
        if bound is not None:
            frag[word] = bound
    return frag


def _enum_list_fragment(key: Key) -> Fragment:
    """One of the choices, or a list of distinct ones."""
    choices: Fragment = {"enum": list(key.choices)}
    array: Fragment = {"type": "array", "minItems": 1, "uniqueItems": True, "items": dict(choices)}
    return {"anyOf": [choices, array]}


def _duration_fragment(key: Key) -> Fragment:
    """Seconds (bounded like the key) or a duration string."""
    number: Fragment = {"type": "number"}
    if key.exclusive_minimum is not None:
        number["exclusiveMinimum"] = key.exclusive_minimum
    else:
        number["minimum"] = 0
    if key.maximum is not None:
        number["maximum"] = key.maximum
    return {"anyOf": [number, {"type": "string", "pattern": DURATION_PATTERN}]}


def _size_fragment(key: Key) -> Fragment:
    """Bytes (bounded like the key) or a size string."""
    integer: Fragment = {"type": "integer", "minimum": 0}
    if key.maximum is not None:
        integer["maximum"] = int(key.maximum)
    return {"anyOf": [integer, {"type": "string", "pattern": SIZE_PATTERN}]}


def _readings_fragment(key: Key) -> Fragment:
    """The readings section, which needs a pattern or a field."""
    frag = _section(READINGS_KEYS, _defaults(ReadingsSpec))
    frag["anyOf"] = [{"required": ["pattern"]}, {"required": ["field"]}]
    return frag


#: the fragments built from the key (its bounds, choices) or from a section's keys
_BUILT_FRAGMENTS: dict[str, Callable[[Key], Fragment]] = {
    "int": _number_fragment,
    "number": _number_fragment,
    "enum": lambda key: {"enum": list(key.choices)},
    "enum_list": _enum_list_fragment,
    "duration": _duration_fragment,
    "size": _size_fragment,
    "executor": lambda key: {
        "anyOf": [{"enum": list(EXECUTOR_KINDS)}, _section(EXECUTOR_KEYS, _defaults(SlurmSpec))]
    },
    "node_types": lambda key: {
        "type": "object",
        "minProperties": MIN_NODE_TYPES,
        "propertyNames": {"pattern": NODE_TYPE_NAME_PATTERN},
        "additionalProperties": _section(NODE_TYPE_KEYS),
    },
    "duet": lambda key: {"anyOf": [{"type": "boolean"}, _section(DUET_KEYS, _defaults(DuetSpec))]},
    "readings": _readings_fragment,
    "settings": lambda key: _section(SETTINGS_KEYS, _defaults(Settings)),
    "workloads": lambda key: {
        "type": "array",
        "minItems": 1,
        "items": _section(WORKLOAD_KEYS, _defaults(Workload)),
    },
}


def _fragment(key: Key) -> Fragment:
    """The JSON Schema of one key: its kind's fragment, nullable when the key is, with the
    key's sentence as its description."""
    if key.kind in _FIXED_FRAGMENTS:
        frag = copy.deepcopy(_FIXED_FRAGMENTS[key.kind])
    else:
        frag = _BUILT_FRAGMENTS[key.kind](key)
    if key.nullable:
        frag = {"anyOf": [frag, {"type": "null"}]}
    frag["description"] = key.doc
    return frag


def _defaults(record: type) -> dict[str, JsonValue]:
    """The default of each field of dataclass ``record`` that has a plain one (not a
    factory; ``node_types``, a fleet's, aside): the ``default`` of its key's schema."""
    return {
        f.name: f.default
        for f in fields(record)
        if f.default is not MISSING and f.name != "node_types"
    }


def _section(keys: tuple[Key, ...], defaults: Mapping[str, JsonValue] | None = None) -> Fragment:
    """The JSON Schema of a mapping of ``keys``; each key named in ``defaults`` (the
    defaults of the dataclass the section is read into, :func:`_defaults`) states its
    default."""
    defaults = defaults or {}
    properties: Fragment = {}
    for key in keys:
        frag = _fragment(key)
        if key.name in defaults:
            frag["default"] = defaults[key.name]
        properties[key.name] = frag
    section: Fragment = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    required = [k.name for k in keys if k.required]
    if required:
        section["required"] = required
    return section


def json_schema() -> Fragment:
    """JSON Schema (draft 2020-12) of an experiment file, built from the key tables above
    (with the default of each key whose section is read into a dataclass, and ``output``'s).

    It checks structure and types only; cross-key rules (placeholders, matrix names,
    executables on PATH, CPUs present) need ``benchrun validate``.
    """
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://benchrun.invalid/schema/experiment.json",
        "title": "benchrun experiment file",
        "description": "Validated fully by `benchrun validate FILE`; this schema covers structure and types.",
        **_section(TOP_KEYS, {"output": DEFAULT_OUTPUT}),
    }
