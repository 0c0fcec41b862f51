"""The metadata of the nodes a Slurm campaign ran on, and how they differ (issue 19).

Each node's record is :func:`runner.machine.metadata.collect_metadata` run on the node by
benchrun's agent (:func:`node_metadata`, which adds the CPU's microcode revision), stored
once per node as a ``node-metadata`` event. :func:`node_differences` names the facts that
differ between nodes, the ones that change timings (docs/slurm.md "Node metadata").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchrun.runner.machine.metadata import collect_metadata

#: the facts compared between nodes: (label, section of the record, key)
COMPARED: tuple[tuple[str, str, str], ...] = (
    ("cpu model", "hardware", "cpu_model"),
    ("microcode", "hardware", "microcode"),
    ("kernel", "software", "kernel_release"),
    ("governor", "hardware", "governor"),
    ("smt", "hardware", "smt_active"),
    ("cpu count", "hardware", "cores_logical"),
)

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


def node_metadata(workload_cpus: Sequence[int] | None = None) -> dict[str, Any]:
    """This machine's record as a node's: :func:`collect_metadata` (no environment
    variables, no experiment file) plus ``hardware.microcode``. Never raises."""
    record = collect_metadata((), None, workload_cpus)
    hardware = record.get("hardware")
    if isinstance(hardware, dict):
        try:
            hardware["microcode"] = microcode()
        except Exception as exc:  # noqa: BLE001 - metadata collection never raises
            hardware["microcode"] = None
            hardware.setdefault("_unavailable", {})["microcode"] = f"{type(exc).__name__}: {exc}"
    return record


def fact(record: Mapping[str, Any], section: str, key: str) -> Any:
    """``record[section][key]``, or None where the record lacks it."""
    part = record.get(section)
    return part.get(key) if isinstance(part, Mapping) else None


def _shown(value: Any) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def node_differences(records: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per compared fact (:data:`COMPARED`) whose value is not the same on every
    node: ``"cpu model differs: vm1 X, vm2 Y"``, nodes in name order. A fact no node
    reports is no difference; one some nodes report and others not is (shown
    ``unknown``). Fewer than two nodes: no lines."""
    if len(records) < 2:
        return []
    names = sorted(records)
    lines = []
    for label, section, key in COMPARED:
        values = [fact(records[n], section, key) for n in names]
        if all(v is None for v in values):
            continue
        if any(v != values[0] for v in values[1:]):
            shown = ", ".join(f"{n} {_shown(v)}" for n, v in zip(names, values, strict=True))
            lines.append(f"{label} differs: {shown}")
    return lines


def node_rows(records: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, ...]]:
    """One row per node, in name order: the node's name, then each :data:`COMPARED` fact
    as shown (``unknown`` where its record lacks it); the report's table of nodes."""
    return [
        (name, *(_shown(fact(records[name], section, key)) for _, section, key in COMPARED))
        for name in sorted(records)
    ]


def node_summary(node: str, record: Mapping[str, Any]) -> str:
    """``vm: AMD EPYC 7B13, kernel 6.1.0-18-amd64``: one node's line in ``show``."""
    model = _shown(fact(record, "hardware", "cpu_model"))
    kernel = _shown(fact(record, "software", "kernel_release"))
    return f"{node}: {model}, kernel {kernel}"
