"""The store's records: what a caller gives the store (:class:`NewRound`,
:class:`NewHook`) and what it reads back (:class:`CampaignRow`, :class:`WorkloadRow`,
:class:`RoundRow`, :class:`HookRow`, :class:`EventRow`), with the one mapping between a
record's fields and its table's columns.

Units: ``started_at`` Unix seconds, ``wall_ns`` and ``wait_ns`` nanoseconds, ``user_s`` and
``sys_s`` CPU seconds, ``max_rss_kib`` KiB; readings in the workload's unit.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from benchrun.runner.jsonread import record_from_json


@dataclass(frozen=True)
class StoredEnvironment:
    """The ``environment`` section of a campaign's metadata: the variables
    ``settings.record_env`` recorded (name -> value)."""

    variables: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class MetadataSections:
    """The sections of a campaign's stored metadata record (runner/machine/metadata.py
    writes it) that the outputs read, each as stored: ``revision`` (what was measured,
    runner/machine/revision.py), ``tuning`` (what ``settings.tune`` changed,
    runner/machine/tuning.py), ``environment``. None: the record has no such section, or
    one of another shape."""

    revision: Mapping[str, object] | None = None
    tuning: Mapping[str, object] | None = None
    environment: StoredEnvironment | None = None


@dataclass(frozen=True)
class WorkloadSpec:
    """What readers use of a stored workload's ``spec`` (the workload of
    runner/config/experiment.py as JSON): its ``params``, its name before matrix expansion,
    whether readings are per unit of work, its command (an argv, or one string) and its
    ``env``. A field the spec lacks, or holds with another type, takes the default."""

    params: Mapping[str, object] = field(default_factory=dict)
    base_name: str | None = None
    per_work: bool = False
    command: tuple[str, ...] | str | None = None
    env: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class CampaignRow:
    """One campaign as stored."""

    id: int
    name: str
    status: str
    created_at: float
    updated_at: float
    config_path: str | None
    config_text: str
    fingerprint: str
    settings: dict[str, Any]
    metadata: dict[str, object] | None
    benchrun_version: str
    command_line: str | None
    stop_reason: str | None
    #: the experiment as parsed when the campaign started, as JSON (schema 6;
    #: runner/config/stored.py); None: not stored, "null": not known (module docstring of
    #: runner/store/schema.py)
    experiment_json: str | None = None

    @functools.cached_property
    def sections(self) -> MetadataSections:
        """The metadata sections the outputs read (:class:`MetadataSections`), parsed once."""
        return record_from_json(MetadataSections, self.metadata or {}, lenient=True)


@dataclass(frozen=True)
class WorkloadRow:
    """One workload of a campaign as stored."""

    id: int
    name: str
    position: int
    metric: str
    unit: str
    direction: str
    spec: dict[str, Any]
    status: str
    status_reason: str | None

    @functools.cached_property
    def typed_spec(self) -> WorkloadSpec:
        """What readers use of :attr:`spec` (:class:`WorkloadSpec`), parsed once."""
        return record_from_json(WorkloadSpec, self.spec, lenient=True)


@dataclass(frozen=True)
class RoundRow:
    """One stored round, with its readings (in the workload's unit)."""

    id: int
    workload_id: int
    seq: int
    pass_: int
    round_index: int
    status: str
    reason: str | None
    exit_code: int | None
    started_at: float
    wall_ns: int
    user_s: float
    sys_s: float
    max_rss_kib: int
    cpus: str | None
    argv: list[str]
    work: int | None
    warmup: bool
    flags: str
    stdout_tail: str | None
    stderr_tail: str | None
    facts: dict[str, Any] | None
    readings: tuple[float, ...]
    #: ns the round waited for a CPU and the signal (schema 3; None before, or unmeasured)
    wait_ns: int | None = None
    wait_source: str | None = None

    @property
    def node(self) -> str | None:
        """The compute node the round ran on (its ``node`` fact, executor: slurm); None
        for a round run on this machine."""
        node = None if self.facts is None else self.facts.get("node")
        return str(node) if node else None


@dataclass(frozen=True)
class RoundMetric:
    """One metric of a stored round (schema 5): ``value`` in the metric's unit (seconds,
    KiB, a count), the ``source`` that measured it and its ``scope``."""

    name: str
    value: float
    source: str
    scope: str


@dataclass(frozen=True)
class NewRound:
    """A round to store (:meth:`Store.add_round`): what the launcher knows after it ran.

    Units: ``started_at`` Unix seconds, ``wall_ns`` nanoseconds, ``user_s``/``sys_s`` CPU
    seconds, ``max_rss_kib`` KiB, ``readings`` in the workload's unit. ``cpus`` is the
    CPU list the child was pinned to ("0,1"), ``pass_`` the pass index.
    """

    campaign_id: int
    workload_id: int
    seq: int
    pass_: int
    round_index: int
    status: str
    reason: str | None
    exit_code: int | None
    started_at: float
    wall_ns: int
    user_s: float
    sys_s: float
    max_rss_kib: int
    cpus: str | None
    argv: Sequence[str]
    work: int | None
    warmup: bool
    readings: Sequence[float]
    stdout_tail: str | None = None
    stderr_tail: str | None = None
    facts: Mapping[str, object] | None = None
    flags: str = ""
    #: the hooks stored in the round's transaction (its prepare)
    hooks: Sequence[NewHook] = ()
    #: ns the round's processes were runnable but not running, and the signal it was read
    #: from (:class:`runner.execute.executor.RoundOutcome`); None: not measured
    wait_ns: int | None = None
    wait_source: str | None = None
    #: every metric of the round's workload (table ``round_metric``, schema 5)
    metrics: Sequence[RoundMetric] = ()

    def columns(self) -> dict[str, object]:
        """Column -> value of the ``round`` table row (readings go to ``reading``, hooks
        to ``hook``)."""
        out: dict[str, object] = {}
        for name in _ROUND_FIELDS:
            value: object = getattr(self, name)
            if name == "argv":
                value = _argv_json(tuple(self.argv))
            elif name == "facts":
                value = dumps(self.facts) if self.facts is not None else None
            elif name == "warmup":
                value = int(self.warmup)
            out[_COLUMN.get(name, name)] = value
        return out


@functools.lru_cache(maxsize=256)
def _argv_json(argv: tuple[str, ...]) -> str:
    """``argv`` as stored (a JSON list); the same argv recurs in every round of a workload."""
    return json.dumps(list(argv))


@dataclass(frozen=True)
class NewHook:
    """What one run of a workload's ``setup``, ``prepare`` or ``cleanup`` did.

    Units as in :class:`NewRound`: ``started_at`` Unix seconds, ``wall_ns`` nanoseconds
    (how long the hook took; never part of a measurement). ``round_index``: the round a
    prepare ran before (None for setup and cleanup). ``status``: ok, failed, timeout or
    interrupted, ``reason`` one line for the others.
    """

    campaign_id: int
    workload_id: int
    kind: str
    round_index: int | None
    status: str
    reason: str | None
    exit_code: int | None
    started_at: float
    wall_ns: int
    argv: Sequence[str]
    stdout_tail: str | None = None
    stderr_tail: str | None = None

    def row(self) -> tuple[Any, ...]:
        """The values of :data:`HOOK_COLUMNS`, in order."""
        return (
            self.campaign_id,
            self.workload_id,
            self.kind,
            self.round_index,
            self.status,
            self.reason,
            self.exit_code,
            self.started_at,
            self.wall_ns,
            json.dumps(list(self.argv)),
            self.stdout_tail,
            self.stderr_tail,
        )


#: the ``hook`` table's columns that :class:`NewHook` fills, in :meth:`NewHook.row` order
HOOK_COLUMNS = (
    "campaign_id",
    "workload_id",
    "kind",
    "round_index",
    "status",
    "reason",
    "exit_code",
    "started_at",
    "wall_ns",
    "argv_json",
    "stdout_tail",
    "stderr_tail",
)


@dataclass(frozen=True)
class HookRow:
    """One stored hook run (:class:`NewHook`) with its id."""

    id: int
    campaign_id: int
    workload_id: int
    kind: str
    round_index: int | None
    status: str
    reason: str | None
    exit_code: int | None
    started_at: float
    wall_ns: int
    argv: list[str]
    stdout_tail: str | None
    stderr_tail: str | None


#: NewRound/RoundRow field -> round table column, where the names differ
_COLUMN = {"pass_": "pass", "argv": "argv_json", "facts": "facts_json"}
#: the fields of NewRound that are columns of ``round``, in order
_ROUND_FIELDS = tuple(
    f.name for f in fields(NewRound) if f.name not in ("readings", "hooks", "metrics")
)
INSERT_READING = "INSERT INTO reading (round_id, idx, value) VALUES (?, ?, ?)"
INSERT_METRIC = (
    "INSERT INTO round_metric (round_id, name, value, source, scope) VALUES (?, ?, ?, ?, ?)"
)
#: (RoundRow field, round table column) of every field but the readings, in order
_ROUND_ROW_FIELDS = tuple(
    (f.name, _COLUMN.get(f.name, f.name)) for f in fields(RoundRow) if f.name != "readings"
)
#: the round table's columns that RoundRow reads, derived from the record
ROUND_COLUMNS = tuple(column for _, column in _ROUND_ROW_FIELDS)


def round_row(r: sqlite3.Row, readings: Sequence[float]) -> RoundRow:
    """A RoundRow from a ``round`` row read with :data:`ROUND_COLUMNS` (by column name):
    ``argv_json`` and ``facts_json`` parsed, ``warmup`` as a bool."""
    return RoundRow(
        id=r["id"],
        workload_id=r["workload_id"],
        seq=r["seq"],
        pass_=r["pass"],
        round_index=r["round_index"],
        status=r["status"],
        reason=r["reason"],
        exit_code=r["exit_code"],
        started_at=r["started_at"],
        wall_ns=r["wall_ns"],
        user_s=r["user_s"],
        sys_s=r["sys_s"],
        max_rss_kib=r["max_rss_kib"],
        cpus=r["cpus"],
        argv=json.loads(r["argv_json"]),
        work=r["work"],
        warmup=bool(r["warmup"]),
        flags=r["flags"],
        stdout_tail=r["stdout_tail"],
        stderr_tail=r["stderr_tail"],
        facts=json.loads(r["facts_json"]) if r["facts_json"] else None,
        readings=tuple(readings),
        wait_ns=r["wait_ns"],
        wait_source=r["wait_source"],
    )


@dataclass(frozen=True)
class EventRow:
    """One stored event: what was decided or happened (``kind``, one line ``message``, its
    data), at ``at`` (Unix s)."""

    id: int
    at: float
    kind: str
    message: str
    data: dict[str, Any] | None


#: INSERT statement of one hook run (:meth:`NewHook.row`)
INSERT_HOOK = (
    f"INSERT INTO hook ({', '.join(HOOK_COLUMNS)}) VALUES ({', '.join('?' * len(HOOK_COLUMNS))})"
)


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, allow_nan=False)
