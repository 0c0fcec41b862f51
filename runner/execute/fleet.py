"""A fleet's executor: one Slurm executor per node type, each round routed to its type's.

An experiment whose ``executor:`` has ``node_types:`` (docs/slurm.md, Fleet) runs every
workload once per node type; the workload ``bench[node_type=alpha]`` runs on the jobs of
node type ``alpha``. :class:`FleetExecutor` owns one executor per type
(:class:`runner.execute.slurm.SlurmExecutor`, built by runner/execute/factory.py), sends
each :class:`RoundSpec` to the executor of its workload's type, and so holds one job per
type at the same time (a type's job starts at its first round, as a single Slurm
executor's does, and lives until :meth:`FleetExecutor.close`). Faults are the members':
a round lost with its job comes back failed, a member that cannot go on raises
:class:`runner.errors.UserError`, and Ctrl-C interrupts the round in flight on its node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from benchrun.runner.execute.agent_messages import NodeCallback
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec


class Member(Protocol):
    """What the fleet needs of a node type's executor (SlurmExecutor has all of it)."""

    node_metadata: dict[str, dict[str, object]]
    on_node: NodeCallback | None

    def launch(self, spec: RoundSpec) -> RoundOutcome: ...

    def interrupt(self) -> None: ...

    def clear_interrupt(self) -> None: ...

    def close(self) -> None: ...


class FleetExecutor:
    """Route each round to its node type's executor (module docstring).

    Parameters
    ----------
    members : mapping of str to Member
        Node type name -> its executor, in the experiment's order.
    routes : mapping of str to str
        Workload name -> the node type it runs on (every workload of the experiment).
    """

    def __init__(self, members: Mapping[str, Member], routes: Mapping[str, str]) -> None:
        unknown = sorted({t for t in routes.values() if t not in members})
        if unknown:
            raise ValueError(f"workloads routed to unknown node types: {', '.join(unknown)}")
        self.members = dict(members)
        self.routes = dict(routes)
        self._on_node: NodeCallback | None = None
        self._told: set[str] = set()
        self._current: Member | None = None
        self._interrupt_pending = False
        self._closed = False

    # ----------------------------------------------------------------- the protocol

    def node_type(self, workload: str) -> str:
        """The node type ``workload``'s rounds run on (ValueError for a stranger)."""
        try:
            return self.routes[workload]
        except KeyError:
            raise ValueError(f"workload {workload!r} has no node type in this fleet") from None

    def launch(self, spec: RoundSpec) -> RoundOutcome:
        """Run ``spec`` on its workload's node type (that type's job starts now if it has
        none); the outcome is the member's, ``node`` set. Raises what the member raises
        (:class:`runner.errors.UserError` when no job of the type can run it)."""
        member = self.members[self.node_type(spec.workload)]
        self._current = member
        try:
            if self._interrupt_pending:  # Ctrl-C came between two rounds
                self._interrupt_pending = False
                member.interrupt()  # the member's next launch returns "interrupted"
            return member.launch(spec)
        finally:
            self._current = None

    def interrupt(self) -> None:
        """Kill the round in flight (on its type's node); with none in flight the next
        launch returns "interrupted" at once. Safe from a signal handler."""
        member = self._current
        if member is not None:
            member.interrupt()
        else:
            self._interrupt_pending = True

    def clear_interrupt(self) -> None:
        """Forget an interrupt that arrived while no round was in flight."""
        self._interrupt_pending = False
        for member in self.members.values():
            member.clear_interrupt()

    def close(self) -> None:
        """Close every type's executor (each ends its job), all of them even when one
        raises; the first error is raised after. Idempotent."""
        if self._closed:
            return
        self._closed = True
        first: BaseException | None = None
        for member in self.members.values():
            try:
                member.close()
            except BaseException as exc:  # noqa: BLE001 - close the others, then raise it
                first = first or exc
        if first is not None:
            raise first

    # ----------------------------------------------------------------- node metadata

    @property
    def on_node(self) -> NodeCallback | None:
        """Told ``(node, record)`` once per node, by whichever type first ran on it."""
        return self._on_node

    @on_node.setter
    def on_node(self, callback: NodeCallback | None) -> None:
        self._on_node = callback
        for member in self.members.values():
            member.on_node = None if callback is None else self._once

    def _once(self, node: str, record: dict[str, object]) -> None:
        if node in self._told or self._on_node is None:
            return
        self._told.add(node)
        self._on_node(node, record)

    @property
    def node_metadata(self) -> dict[str, dict[str, object]]:
        """Each node's record (the first type's to run on it), merged over the types."""
        out: dict[str, dict[str, object]] = {}
        for member in self.members.values():
            for node, record in member.node_metadata.items():
                out.setdefault(node, record)
        return out

    def nodes_by_type(self) -> dict[str, list[str]]:
        """Node type -> the nodes its jobs ran on so far (sorted)."""
        return {t: sorted(m.node_metadata) for t, m in self.members.items()}
