"""Nodes as a level of variation in a workload's statistics (docs/methods.md §14).

When a workload's steady rounds ran on two or more nodes (``RoundOutcome.node``, stored in
the round's facts), :func:`node_level` groups its independent means by node and runs
:func:`benchrun.stats.node_variation` on them. No subsession mixes nodes: each node's
readings (in time order, after the collector's warm-up cut) are cut into subsessions of the
collector's q on their own, incomplete trailing ones dropped; when the collector took each
round as one subsession (its round means' interval was wider), each round's mean is one
mean of its node. :func:`apply_node_level` makes the node-level CI the workload's CI when
pooling the nodes is not justified (F test at :data:`POOLING_ALPHA`), and says so in a note.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from benchrun.runner.jsonread import JsonFields
from benchrun.stats.nodes import NodeVariation, node_variation

__all__ = ["NODE_CI_NOTE", "POOLING_ALPHA", "node_dict", "node_groups", "node_level", "node_note"]

#: start of the note the collector adds when the workload's CI is the node-level one
NODE_CI_NOTE = "CI from"

#: level of the F test below which the node-mean CI is used instead of the pooled one.
#: A preliminary test at 0.05 misses real node effects often enough that the CI used
#: covers only 0.87-0.91 (docs/methods.md §14); "sometimes pool" at 0.25 (Bancroft 1944;
#: Paull 1950) brings it to 0.93-0.95 for 3+ nodes at little cost when nodes are identical.
POOLING_ALPHA = 0.25


def node_groups(
    values: np.ndarray, labels: Sequence[str], q: int
) -> tuple[dict[str, np.ndarray], int]:
    """Per node, the means of consecutive subsessions of ``q`` of its own ``values``.

    Parameters
    ----------
    values : numpy.ndarray
        The steady series (readings or round values, units of the readings), time order.
    labels : sequence of str
        The node of each value (same length as ``values``).
    q : int
        Subsession size (values per mean), >= 1.

    Returns
    -------
    (dict, int)
        Node -> its subsession means (nodes sorted by name; nodes with fewer
        than ``q`` values are left out) and how many nodes were left out.
    """
    if len(labels) != values.size:
        raise ValueError(f"{len(labels)} node labels for {values.size} values")
    lab = np.asarray(labels, dtype=object)
    out: dict[str, np.ndarray] = {}
    dropped = 0
    for node in sorted(set(labels)):
        x = values[lab == node]
        h = x.size // q
        if h == 0:
            dropped += 1
            continue
        out[node] = x[: h * q].reshape(h, q).mean(axis=1)
    return out, dropped


def node_level(
    values: np.ndarray, labels: Sequence[str], q: int, confidence: float, what: str = ""
) -> tuple[NodeVariation | None, str]:
    """The node analysis of one workload's steady series, or None and why not.

    ``values``/``labels``/``q`` as in :func:`node_groups`; the F test's level is
    :data:`POOLING_ALPHA`, the CIs' ``confidence``. Returns (result, note): the note says how
    the means were grouped, or why no analysis was possible (fewer than 2 nodes with a
    complete subsession, or no node with 2 means). ``what`` names the means in the note
    (default "subsessions of q").
    """
    what = what or f"subsessions of {q}"
    groups, dropped = node_groups(values, labels, q)
    left = f"; {dropped} node(s) without a complete subsession left out" if dropped else ""
    if len(groups) < 2 or sum(g.size for g in groups.values()) <= len(groups):
        return None, (
            f"rounds on {len(dict.fromkeys(labels))} nodes, too few {what} per "
            f"node for the node analysis{left}"
        )
    res = node_variation(groups, confidence=confidence, alpha=POOLING_ALPHA)
    return res, f"{what} within each of {res.k} nodes{left}"


def node_note(res: NodeVariation | Mapping[str, object]) -> str:
    """ "CI from 3 node means: nodes differ, F=12.3, p=0.0004" or "nodes do not differ
    (F=0.8, p=0.47): CI from the 24 pooled means" for a result or its stored ``to_dict``."""
    if isinstance(res, NodeVariation):
        f, p, from_nodes = res.f, res.p_value, res.ci_from == "nodes"
        k: object = res.k
        n: object = res.n
    else:
        d = JsonFields(res, "node analysis")
        f, p = d.loose("f", float), d.loose("p_value", float)
        from_nodes, k, n = d.loose("ci_from", str) == "nodes", res.get("k"), res.get("n")
    ftext = "F=inf" if f is None and p == 0 else (f"F={f:.3g}" if f is not None else "F=n/a")
    ptext = f"p={p:.2g}" if p is not None else "p=n/a"
    if from_nodes:
        if p is not None and p >= 0.05:
            return (
                f"{NODE_CI_NOTE} {k} node means: a node effect is not ruled out, "
                f"{ftext}, {ptext} < {POOLING_ALPHA:g}"
            )
        return f"{NODE_CI_NOTE} {k} node means: nodes differ, {ftext}, {ptext}"
    return f"nodes do not differ ({ftext}, {ptext}): CI from the {n} pooled means"


def node_dict(res: NodeVariation, how: str) -> dict[str, Any]:
    """:meth:`NodeVariation.to_dict` with ``grouping`` (how the means were formed) and
    ``text`` (:func:`node_note`): what :class:`WorkloadStats` carries as ``nodes``."""
    return {**res.to_dict(), "grouping": how, "text": node_note(res)}
