"""The metadata of the nodes a Slurm campaign ran on, and how they differ (issue 19).

Each node's record is :func:`runner.machine.metadata.collect_metadata` run on the node by
benchrun's agent (:func:`node_metadata`, which adds the CPU's microcode revision), stored
once per node as a ``node-metadata`` event. :func:`node_differences` names the facts that
differ between nodes, the ones that change timings (docs/slurm.md "Node metadata").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from benchrun.runner.machine.facts import MachineFacts
from benchrun.runner.machine.metadata import collect_facts


@dataclass(frozen=True)
class ComparedFact:
    """One fact compared between nodes: its label and how to read it from a parsed
    record."""

    label: str
    read: Callable[[MachineFacts], object]


#: the facts compared between nodes, in the order shown
COMPARED_FACTS: tuple[ComparedFact, ...] = (
    ComparedFact("cpu model", lambda m: m.hardware.identity.cpu_model),
    ComparedFact("microcode", lambda m: m.hardware.identity.microcode),
    ComparedFact("kernel", lambda m: m.software.kernel.kernel_release),
    ComparedFact("governor", lambda m: m.hardware.frequency.governor),
    ComparedFact("smt", lambda m: m.hardware.smt.smt_active),
    ComparedFact("cpu count", lambda m: m.hardware.cores.cores_logical),
)

#: a node's record: parsed, or the JSON object stored in its ``node-metadata`` event
NodeRecord = MachineFacts | Mapping[str, object]

#: the file holding the microcode revision (x86 Linux: ``microcode : 0x...`` per CPU)
CPUINFO = Path("/proc/cpuinfo")


def microcode(cpuinfo: Path = CPUINFO) -> str | None:
    """The CPU's microcode revision as ``/proc/cpuinfo`` gives it (its first CPU's); None
    where the kernel does not say (other architectures, virtual machines that hide it)."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "microcode":
            return value.strip() or None
    return None


def node_facts(workload_cpus: Sequence[int] | None = None) -> MachineFacts:
    """This machine's record as a node's: :func:`collect_facts` (no environment
    variables, no experiment file) with the microcode revision of :func:`microcode`.
    Never raises."""
    record = collect_facts((), None, workload_cpus)
    identity = record.hardware.identity
    try:
        identity = dataclasses.replace(identity, microcode=microcode())
    except Exception as exc:  # noqa: BLE001 - metadata collection never raises
        why = {**identity.unavailable, "microcode": f"{type(exc).__name__}: {exc}"}
        identity = dataclasses.replace(identity, microcode=None, unavailable=why)
    hardware = dataclasses.replace(record.hardware, identity=identity)
    return dataclasses.replace(record, hardware=hardware)


def node_metadata(workload_cpus: Sequence[int] | None = None) -> dict[str, object]:
    """:func:`node_facts` as the JSON object the agent sends in its hello (stored as the
    node's ``node-metadata`` event)."""
    return node_facts(workload_cpus).to_json()


class NodeEvent(NamedTuple):
    """The data of a ``node-metadata`` event (runner/campaign/session.py stores it as
    ``{"node": name, "record": record}``): the node's name and its record as the agent
    sent it (the JSON object, for outputs that show it as stored; parse it with
    :meth:`MachineFacts.from_stored`)."""

    node: str
    record: dict[str, object]

    @classmethod
    def from_data(cls, data: object) -> NodeEvent | None:
        """The event's node and record; None when ``data`` names no node (not an object,
        or its ``node`` is missing or empty); a record that is not an object is ``{}``."""
        match data:
            case {"node": node, "record": Mapping() as record} if node:
                return cls(str(node), dict(record))
            case {"node": node} if node:
                return cls(str(node), {})
        return None


def _shown(value: object) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def node_differences(records: Mapping[str, NodeRecord]) -> list[str]:
    """One line per compared fact (:data:`COMPARED_FACTS`) whose value is not the same on
    every node: ``"cpu model differs: vm1 X, vm2 Y"``, nodes in name order. A fact no node
    reports is no difference; one some nodes report and others not is (shown
    ``unknown``). Fewer than two nodes: no lines."""
    if len(records) < 2:
        return []
    names = sorted(records)
    parsed = [MachineFacts.from_stored(records[n]) for n in names]
    lines = []
    for compared in COMPARED_FACTS:
        values = [compared.read(p) for p in parsed]
        if all(v is None for v in values):
            continue
        if any(v != values[0] for v in values[1:]):
            shown = ", ".join(f"{n} {_shown(v)}" for n, v in zip(names, values, strict=True))
            lines.append(f"{compared.label} differs: {shown}")
    return lines


def node_rows(records: Mapping[str, NodeRecord]) -> list[tuple[str, ...]]:
    """One row per node, in name order: the node's name, then each fact of
    :data:`COMPARED_FACTS` as shown (``unknown`` where its record lacks it); the report's
    table of nodes."""
    rows = []
    for name in sorted(records):
        parsed = MachineFacts.from_stored(records[name])
        rows.append((name, *(_shown(f.read(parsed)) for f in COMPARED_FACTS)))
    return rows


def node_summary(node: str, record: NodeRecord) -> str:
    """``vm: AMD EPYC 7B13, kernel 6.1.0-18-amd64``: one node's line in ``show``."""
    parsed = MachineFacts.from_stored(record)
    model = _shown(parsed.hardware.identity.cpu_model)
    kernel = _shown(parsed.software.kernel.kernel_release)
    return f"{node}: {model}, kernel {kernel}"
