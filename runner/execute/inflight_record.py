"""The in-flight record of a round: what a run that died left running, as one typed record.

:func:`runner.execute.containment.record_inflight` writes it (one JSON object) before a
round's spawn and again with its process group leader; a later run of the campaign reads
it (:func:`runner.execute.containment.end_leftovers`) to end what the dead run left. The
file may have been written by anyone who could reach it (docs/security.md), so
:meth:`InflightRecord.from_json` checks every field that names something to signal: a
process group id is an integer of at least 2 and neither this process nor its group.

The format (keys in this order; ``others`` only when there are any)::

    {"pid": 1234, "pgid": 1234, "start_ticks": 5678, "boot_id": "...",
     "cgroup": "/sys/fs/cgroup/.../benchrun-1-2/rounds", "campaign_id": 3,
     "runner_pid": 1200, "others": [{"pgid": 1240, "start_ticks": 5690}]}
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from benchrun.runner.jsonread import FieldError, JsonFields


def _pgid(fields: JsonFields, key: str) -> int | None:
    """The process group id in field ``key``: an int (not a bool) that may be signalled;
    never 1 (init), below (0 and -1 would mean our own group or every process) or our
    own; None when missing or null. :class:`FieldError` otherwise."""
    value = fields.optional(key, int)
    if value is None:
        return None
    if value < 2:
        raise FieldError(f"{key} {value!r} is not a process group id")
    if value in (os.getpid(), os.getpgrp()):
        raise FieldError(f"{key} {value} is this runner's own")
    return value


@dataclass(frozen=True)
class InflightGroup:
    """A further process group in flight with the round (the other side of a duet): its
    leader ``pgid`` and that leader's start time in clock ticks since boot."""

    pgid: int
    start_ticks: int | None

    def to_json(self) -> dict[str, object]:
        return {"pgid": self.pgid, "start_ticks": self.start_ticks}

    @classmethod
    def from_json(cls, data: object) -> InflightGroup:
        """:class:`FieldError` unless ``pgid`` and ``start_ticks`` are both there and
        valid (such an entry is skipped by the reader)."""
        fields = JsonFields(data, "in-flight group")
        pgid = _pgid(fields, "pgid")
        if pgid is None:
            raise FieldError("in-flight group: no pgid")
        return cls(pgid, fields.required("start_ticks", int))


@dataclass(frozen=True)
class InflightRecord:
    """One round in flight.

    ``pid``: the leader of the round's process group (None before the spawn);
    ``start_ticks``: its start time (``/proc/PID/stat`` field 22, clock ticks since boot);
    ``boot_id``: the kernel's boot id when it was written (a record of another boot names
    nothing); ``cgroup``: the cgroup the round runs in, None without one; ``campaign_id``
    and ``runner_pid``: whose round it is (shown only); ``others``: further process
    groups in flight with it.
    """

    pid: int | None
    start_ticks: int | None
    boot_id: str | None
    cgroup: str | None = None
    campaign_id: int | None = None
    runner_pid: int | None = None
    others: tuple[InflightGroup, ...] = ()

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "pid": self.pid,
            "pgid": self.pid,
            "start_ticks": self.start_ticks,
            "boot_id": self.boot_id,
            "cgroup": self.cgroup,
            "campaign_id": self.campaign_id,
            "runner_pid": self.runner_pid,
        }
        if self.others:
            out["others"] = [o.to_json() for o in self.others]
        return out

    def to_text(self) -> str:
        """The record as the file holds it: one JSON line."""
        return json.dumps(self.to_json()) + "\n"

    @classmethod
    def from_json(cls, data: object) -> InflightRecord:
        """The record of a file's JSON; :class:`FieldError` (a ValueError) when it is no
        object, its ``pid`` is no process group that may be signalled, or its
        ``start_ticks`` no integer. The fields only shown or compared (``boot_id``,
        ``cgroup``, ``campaign_id``, ``runner_pid``) read as None when of another type;
        an entry of ``others`` that is not valid is left out."""
        fields = JsonFields(data, "in-flight record")
        others: list[InflightGroup] = []
        try:
            entries = fields.raw_list("others") or []
        except FieldError:
            entries = []
        for entry in entries:
            try:
                others.append(InflightGroup.from_json(entry))
            except FieldError:
                continue
        return cls(
            pid=_pgid(fields, "pid"),
            start_ticks=fields.optional("start_ticks", int),
            boot_id=fields.loose("boot_id", str),
            cgroup=fields.loose("cgroup", str),
            campaign_id=fields.loose("campaign_id", int),
            runner_pid=fields.loose("runner_pid", int),
            others=tuple(others),
        )
