"""The Fleet section's own tables (runner/report/fleet.py), as plain strings shared by
the HTML and Markdown renderers: each benchmark's verdicts between node types, and the
node types' metadata side by side. The hardware comparison across the suite (HPT,
r-speedup, Speedup-Test) is :func:`runner.report.tables.suite_tables`."""

from __future__ import annotations

from benchrun.runner.report.fleet import Fleet
from benchrun.runner.report.tables import Table, ratio_text

#: the mark of a fact that differs between node types
DIFFERS = "differs between types"


def verdicts_table(fleet: Fleet, confidence: float) -> Table:
    """One row per (benchmark, pair of node types): the verdict and the ratio b/a."""
    rows = [
        (
            v.benchmark,
            f"{v.a_type} vs {v.b_type}",
            v.comparison.verdict,
            ratio_text(v.comparison.ratio, v.comparison.ratio_low, v.comparison.ratio_high),
            v.comparison.test_name,
        )
        for v in fleet.verdicts
    ]
    return Table(
        "per-benchmark verdicts between node types",
        (
            "benchmark",
            "node types (a vs b)",
            "verdict",
            f"ratio b/a [{100 * confidence:g} % CI]",
            "test",
        ),
        rows,
        "Each benchmark on one node type against the same benchmark on the other (the "
        "campaign's comparisons, docs/paired.md); ratio above 1: the metric is larger on b.",
    )


def metadata_table(fleet: Fleet) -> Table:
    """The node types' metadata side by side; the last column marks the facts that differ
    between node types and names the types whose nodes disagree."""
    rows = []
    for f in fleet.facts:
        marks = [DIFFERS] if f.differs else []
        marks += [f"differs within {t}" for t in f.within]
        rows.append(
            (f.section, f.label, *(f.values[t] for t in fleet.node_types), "; ".join(marks))
        )
    return Table(
        "node types side by side",
        ("section", "fact", *fleet.node_types, "differs"),
        rows,
        "Each node's record was collected on it by benchrun's agent (docs/slurm.md, Node "
        "metadata); a node type's value is its nodes' common one, or each node's when they "
        "disagree. Facts of the moment (load, timer overhead) are left out.",
    )
