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
from typing import Literal

from benchrun.runner.config.placeholders import fill_launch_time
from benchrun.runner.config.settings import (
    DEFAULT_CONTENDED_THRESHOLD,
    DuetSpec,
    PinSpec,
    Settings,
)

#: re-exported: the settings live in runner/config/settings.py
__all__ = ["DEFAULT_CONTENDED_THRESHOLD", "DuetSpec", "PinSpec", "Settings"]

#: the value of a ``params:`` or ``matrix:`` placeholder, as the YAML gave it
ParamValue = str | int | float | bool

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
    params: Mapping[str, ParamValue] = field(default_factory=dict)
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
    matrix: Mapping[str, tuple[ParamValue, ...]] = field(default_factory=dict)
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
        doc: dict[str, object] = {
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
            executor: dict[str, object] = {
                "kind": "slurm",
                "partition": e.partition,
                "constraint": e.constraint,
                "nodes": e.nodes if isinstance(e.nodes, int) else list(e.nodes),
            }
            if e.node_types:  # only in a fleet, so other Slurm campaigns keep theirs
                executor["node_types"] = {
                    name: {
                        "partition": t.partition,
                        "constraint": t.constraint,
                        "nodes": t.nodes if isinstance(t.nodes, int) else list(t.nodes),
                    }
                    for name, t in e.node_types
                }
            doc["executor"] = executor
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
