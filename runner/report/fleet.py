"""The fleet report's model: one suite on several node types, compared (issue 19).

A campaign whose experiment has ``executor: {node_types: ...}`` (docs/slurm.md, Fleet)
ran every workload once per node type. :func:`find_fleet` gathers what the report's
"Fleet" section shows besides the suite tables (HPT, r-speedup, Speedup-Test, ratio of
geometric means, computed by runner/report/analysis.py with ``node_type`` as the
system factor):

- each benchmark's verdicts between node types: the campaign's comparisons
  (runner/results/comparisons.py; each benchmark's copies form one comparison group);
- each node type's nodes (the rounds' ``node`` fact) and metadata side by side: the
  rows of :func:`runner.machine.describe.describe_machine` of each node's record (its
  ``node-metadata`` event) plus the CPU's microcode, the facts that differ between node
  types marked, and those that differ between the nodes of one type flagged
  (:func:`runner.machine.nodes.node_differences`).

Facts of the moment (load average, timer resolution and overhead as measured, the
affinity of the agent) are left out of the side-by-side table: they differ between any
two collections, even on one node.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from benchrun.runner.config.experiment import NODE_TYPE_PARAM
from benchrun.runner.machine.describe import describe_machine
from benchrun.runner.machine.facts import MachineFacts
from benchrun.runner.machine.nodes import NodeEvent, node_differences
from benchrun.runner.report.model import CampaignModel, WorkloadView
from benchrun.runner.report.verdicts import StoredComparison

#: describe_machine sections that describe a node rather than its moment
SECTIONS_SHOWN = ("Hardware", "Software", "Timer")
#: labels left out: measured at collection (they differ between two collections on one
#: node) or the same by construction (the agent's interpreter path, the hostname, which
#: the "nodes" row gives)
LABELS_LEFT_OUT = frozenset(
    {"Resolution", "Overhead", "Python executable", "Hostname", "Available sources"}
)
#: the current frequency in the "Frequency" row is a reading of the moment
_CURRENT_MHZ = re.compile(r",? ?current \d+(\.\d+)? MHz")


@dataclass
class FactRow:
    """One fact of the side-by-side table: its text on each node type (``values``, by
    type; the nodes' texts joined as ``node: text`` when a type's nodes disagree),
    whether it differs between types, and the types whose nodes disagree on it."""

    section: str
    label: str
    values: dict[str, str]
    differs: bool
    within: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        """The JSON form (the report's ``fleet.metadata``)."""
        return {
            "section": self.section,
            "label": self.label,
            "values": self.values,
            "differs_between_types": self.differs,
            "differs_within": self.within,
        }


@dataclass
class FleetVerdict:
    """A benchmark's comparison between two node types (``a_type`` runs workload
    ``comparison.a``); the ratio is b/a."""

    benchmark: str
    a_type: str
    b_type: str
    comparison: StoredComparison

    def to_dict(self) -> dict[str, object]:
        """The JSON form (the report's ``fleet.verdicts``)."""
        c = self.comparison
        return {
            "benchmark": self.benchmark,
            "a": self.a_type,
            "b": self.b_type,
            "workload_a": c.a,
            "workload_b": c.b,
            "verdict": c.verdict,
            "test": c.test,
            "ratio": c.ratio,
            "ratio_low": c.ratio_low,
            "ratio_high": c.ratio_high,
            "headline": c.headline,
        }


@dataclass
class Fleet:
    """What the Fleet section shows besides the suite tables (module docstring)."""

    node_types: list[str]
    #: node type -> the nodes its rounds ran on
    nodes: dict[str, list[str]]
    #: node -> its metadata record (``node-metadata`` events)
    records: dict[str, Mapping[str, object]]
    #: benchmark labels in the experiment's order
    benchmarks: list[str]
    verdicts: list[FleetVerdict]
    facts: list[FactRow]
    #: node type -> the facts its nodes disagree on (``node_differences`` lines)
    within: dict[str, list[str]]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        """The JSON form (the report's ``fleet``)."""
        return {
            "node_types": self.node_types,
            "nodes": self.nodes,
            "benchmarks": self.benchmarks,
            "verdicts": [v.to_dict() for v in self.verdicts],
            "metadata": [f.to_dict() for f in self.facts],
            "differences_within": self.within,
            "records": self.records,
            "notes": self.notes,
        }


def benchmark_label(view: WorkloadView) -> str:
    """``sum[n=1]`` for ``sum[n=1,node_type=alpha]``: the workload without its node type
    (the same label as the suite tables' benchmarks)."""
    rest = {k: v for k, v in view.params.items() if k != NODE_TYPE_PARAM}
    base = view.base_name or view.name.split("[")[0]
    return base + (("[" + ",".join(f"{k}={v}" for k, v in rest.items()) + "]") if rest else "")


def node_records(model: CampaignModel) -> dict[str, Mapping[str, object]]:
    """Each node's record from the campaign's ``node-metadata`` events (first wins): the
    machine record as the node's agent sent it, walked by runner/machine/describe.py and
    nodes.py; an event without a node is left out, one without a record gives ``{}``
    (:meth:`NodeEvent.from_data`)."""
    out: dict[str, Mapping[str, object]] = {}
    for e in model.events:
        if e.kind == "node-metadata" and (stored := NodeEvent.from_data(e.data)) is not None:
            out.setdefault(stored.node, stored.record)
    return out


def find_fleet(model: CampaignModel) -> Fleet | None:
    """The fleet of ``model`` (its experiment has node types), or None."""
    exp = model.experiment
    if exp is None or exp.executor is None or not exp.executor.node_types:
        return None
    types = list(exp.executor.node_type_names)
    type_of = {w.name: str(w.params.get(NODE_TYPE_PARAM)) for w in model.workloads}
    nodes: dict[str, list[str]] = {t: [] for t in types}
    for w in model.workloads:
        for n in model.nodes.get(w.name, []):
            if type_of[w.name] in nodes and n not in nodes[type_of[w.name]]:
                nodes[type_of[w.name]].append(n)
    nodes = {t: sorted(ns) for t, ns in nodes.items()}
    records = node_records(model)
    label = {w.name: benchmark_label(w) for w in model.workloads}
    benchmarks = list(dict.fromkeys(label[w.name] for w in model.workloads))
    verdicts: list[FleetVerdict] = []
    pairs = model.verdicts.pairs if model.verdicts is not None else ()
    for c in pairs:
        if c.a in type_of and c.b in type_of and label[c.a] == label[c.b]:
            verdicts.append(FleetVerdict(label[c.a], type_of[c.a], type_of[c.b], c))
    notes: list[str] = []
    decided = {v.benchmark for v in verdicts}
    missing = [b for b in benchmarks if b not in decided]
    if missing:
        notes.append(
            f"No comparison between node types for {', '.join(missing)}: "
            + (
                "the campaign did not reach the end of its stopping rule."
                if model.adaptive and model.verdicts is None
                else "too little data on one of the types (see the comparisons)."
            )
        )
    silent = [t for t in types if not nodes[t]]
    if silent:
        notes.append(f"No round ran on node type {', '.join(silent)}.")
    facts, within = side_by_side(types, nodes, records)
    return Fleet(types, nodes, records, benchmarks, verdicts, facts, within, notes)


def _rows(record: MachineFacts) -> dict[tuple[str, str], str]:
    """A node's facts shown side by side: (section, label) -> text."""
    out: dict[tuple[str, str], str] = {}
    for section, label, text in describe_machine(record):
        if section not in SECTIONS_SHOWN or label in LABELS_LEFT_OUT:
            continue
        if label.startswith("Frequency"):
            text = _CURRENT_MHZ.sub("", text)
        out[(section, label)] = text
    code = record.hardware.identity.microcode
    out[("Hardware", "Microcode")] = "unknown" if code is None else code
    return out


def side_by_side(
    types: list[str], nodes: Mapping[str, list[str]], records: Mapping[str, Mapping[str, object]]
) -> tuple[list[FactRow], dict[str, list[str]]]:
    """The metadata table (module docstring) and each type's within-type differences.

    A type's value of a fact is its nodes' common text, or ``node: text; ...`` when they
    disagree (then the type is in ``within``); a type without a record reads
    ``no record``. ``differs`` is True when two types' values are not equal."""
    parsed = {
        n: MachineFacts.from_stored(records[n]) for ns in nodes.values() for n in ns if n in records
    }
    per_node = {n: _rows(record) for n, record in parsed.items()}
    keys: list[tuple[str, str]] = []
    for rows in per_node.values():
        keys.extend(k for k in rows if k not in keys)
    order = {s: i for i, s in enumerate(SECTIONS_SHOWN)}
    keys.sort(key=lambda k: order[k[0]])  # stable: each section in describe_machine's order
    facts = [
        FactRow(
            "Nodes",
            "nodes",
            {t: ", ".join(nodes[t]) or "none" for t in types},
            False,
        )
    ]
    for key in keys:
        values: dict[str, str] = {}
        within: list[str] = []
        for t in types:
            texts = {n: per_node[n].get(key, "unknown") for n in nodes[t] if n in per_node}
            distinct = set(texts.values())
            if not texts:
                values[t] = "no record"
            elif len(distinct) == 1:
                values[t] = next(iter(distinct))
            else:
                values[t] = "; ".join(f"{n}: {v}" for n, v in sorted(texts.items()))
                within.append(t)
        differs = len({values[t] for t in types if values[t] != "no record"}) > 1
        facts.append(FactRow(key[0], key[1], values, differs, within))
    within_lines = {
        t: node_differences({n: parsed[n] for n in nodes[t] if n in parsed}) for t in types
    }
    return facts, {t: lines for t, lines in within_lines.items() if lines}
