"""A test double for the executor: scripted rounds, no processes, a virtual clock."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from benchrun.runner.execute.contention import SOURCE_FAKE
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec, RoundStatus

#: Unix time (s) at which a :class:`FakeExecutor`'s virtual clock starts by default
DEFAULT_START = 1.7e9


@dataclass(frozen=True)
class FakeRound:
    """What one scripted round does.

    Parameters
    ----------
    wall_s : float
        Wall time of the round, seconds (> 0).
    status : {"ok", "failed", "timeout", "interrupted"}
        Outcome; a round longer than the spec's timeout becomes ``"timeout"`` anyway.
    readings : tuple of float
        Values the round "printed" (used when the workload's metric is ``readings``).
    exit_code : int or None
        Exit status; defaults to 0 for ``ok`` and 1 for ``failed``.
    reason : str or None
        One line for a non-ok status.
    stdout, stderr : str
        What the round "printed" (its output tails).
    cpu_s : float or None
        User CPU seconds of the round (None: equal to ``wall_s``, one busy CPU).
    wait_s : float or None
        Seconds the round waited for a CPU (its contention; the outcome's ``wait_ns``,
        source ``"fake"``); None: not measured.
    """

    wall_s: float
    status: RoundStatus = "ok"
    readings: tuple[float, ...] = ()
    exit_code: int | None = None
    reason: str | None = None
    stdout: str = ""
    stderr: str = ""
    cpu_s: float | None = None
    wait_s: float | None = None


#: A script: (spec, index of this launch for the workload, virtual clock in s) -> round
Script = Callable[[RoundSpec, int, float], FakeRound]


def constant(wall_s: float) -> Script:
    """A workload whose every round takes ``wall_s`` seconds."""
    return lambda spec, k, clock: FakeRound(wall_s)


def lognormal(
    mean_s: float,
    cv: float,
    *,
    seed: int,
    drift: Callable[[float], float] | None = None,
    readings: int = 0,
) -> Script:
    """A workload whose wall time is lognormal with mean ``mean_s`` (s) and coefficient
    of variation ``cv``, times ``drift(clock)`` (a factor of the machine's speed at the
    virtual time ``clock`` in s, shared by every workload that uses the same function).

    With ``readings`` > 0 each round also yields that many readings, lognormal around the
    round's wall time divided by ``readings`` with the same ``cv``. Deterministic for a
    given ``seed`` and launch order.
    """
    rng = np.random.default_rng(seed)
    sigma = math.sqrt(math.log1p(cv * cv))
    mu = math.log(mean_s) - sigma * sigma / 2.0

    def script(spec: RoundSpec, k: int, clock: float) -> FakeRound:
        factor = drift(clock) if drift is not None else 1.0
        wall = float(rng.lognormal(mu, sigma)) * factor
        values: tuple[float, ...] = ()
        if readings:
            per = wall / readings
            values = tuple(
                float(v) for v in rng.lognormal(math.log(per) - sigma * sigma / 2, sigma, readings)
            )
        return FakeRound(wall, readings=values)

    return script


#: Where a round runs: (spec, index of this launch for the workload) -> node name or None
NodeOf = Callable[[RoundSpec, int], str | None]


def round_robin(nodes: tuple[str, ...]) -> NodeOf:
    """Launch k of each workload runs on ``nodes[k % len(nodes)]`` (a multi-node job whose
    passes are spread over the nodes, pass p on node p mod N, when each pass runs every
    workload once)."""
    if not nodes:
        raise ValueError("round_robin needs at least one node")
    return lambda spec, k: nodes[k % len(nodes)]


def failing_every(every: int, inner: Script, reason: str = "exit status 1") -> Script:
    """``inner``, except that launches ``every - 1``, ``2 * every - 1``, ... fail."""

    def script(spec: RoundSpec, k: int, clock: float) -> FakeRound:
        r = inner(spec, k, clock)
        if (k + 1) % every == 0:
            return FakeRound(r.wall_s, status="failed", exit_code=1, reason=reason)
        return r

    return script


def contended_every(every: int, inner: Script, slowdown: float = 2.0, first: int = 0) -> Script:
    """``inner`` with a measured wait of 0 s, except that launches ``first``,
    ``first + every``, ... share their CPU with a busy process: their wall time (and
    readings) are ``slowdown`` times longer and they waited the difference for the CPU
    (a hog on the CPU: ``slowdown`` 2, a wait of half the wall time; docs/contention.md)."""
    if every < 1 or slowdown < 1:
        raise ValueError("contended_every needs every >= 1 and slowdown >= 1")

    def script(spec: RoundSpec, k: int, clock: float) -> FakeRound:
        r = inner(spec, k, clock)
        if k >= first and (k - first) % every == 0:
            return replace(
                r,
                wall_s=r.wall_s * slowdown,
                readings=tuple(v * slowdown for v in r.readings),
                wait_s=r.wall_s * (slowdown - 1),
            )
        return replace(r, wait_s=0.0)

    return script


def _on_node(r: FakeRound, factor: float) -> FakeRound:
    """``r`` on a node ``factor`` times slower: wall time, CPU time and readings scaled."""
    if factor == 1.0:
        return r
    return replace(
        r,
        wall_s=r.wall_s * factor,
        cpu_s=None if r.cpu_s is None else r.cpu_s * factor,
        readings=tuple(v * factor for v in r.readings),
    )


@dataclass
class FakeExecutor:
    """An :class:`~runner.execute.executor.Executor` that runs no process.

    Each workload has a :data:`Script`; :meth:`launch` calls it, advances a virtual clock
    by the round's wall time and returns the outcome a real round with that behaviour
    would have (status, wall time in ns, CPU time = wall time, readings). Every spec
    received is kept in :attr:`launched`, so tests can check order, pinning and
    environment. A launch of ``true`` (the launch-overhead probe of calibration) takes
    ``overhead_s``.

    Parameters
    ----------
    scripts : mapping of str to Script
        Per workload name. A workload without a script fails the test with ``KeyError``.
    overhead_s : float
        Wall time of a ``true`` round, seconds.
    start : float
        Unix time (s) of the virtual clock's start.
    on_launch : callable, optional
        Called with (spec, index of the launch over all workloads) before each round;
        a test can, for example, send itself SIGINT at a chosen launch.
    hooks : mapping of str to Script
        Scripts of hook runs (``spec.hook`` set), by ``"KIND:WORKLOAD"`` (``"prepare:a"``)
        or ``"KIND"`` for every workload; a hook without a script is ok and takes no time.
        Hook runs are kept in :attr:`launched` too, and do not count as the workload's
        launches.
    node_of : callable, optional
        :data:`NodeOf`: the node each round of a workload runs on (set on its outcome's
        ``node``, as a remote executor does); None = every round runs here (node None).
        Calibration probes (``true``) and hooks run here.
    node_speed : mapping of str to float
        Per node, a factor multiplying the wall time and readings of every round it runs
        (1.1 = 10 % slower); nodes not listed run at 1.0. A simulation with a known truth:
        the true mean of a workload over nodes is its mean times the mean factor.
    duet_slowdown : mapping of str to float
        Per workload, the factor its wall (and CPU) time is multiplied by when it runs in
        a duet (:meth:`launch_duet`), the slowdown the other side causes; 1 when absent.
        Unequal factors model asymmetric interference (docs/duet.md).
    """

    scripts: Mapping[str, Script]
    overhead_s: float = 0.001
    start: float = DEFAULT_START
    on_launch: Callable[[RoundSpec, int], None] | None = None
    hooks: Mapping[str, Script] = field(default_factory=dict)
    node_of: NodeOf | None = None
    node_speed: Mapping[str, float] = field(default_factory=dict)
    launched: list[RoundSpec] = field(default_factory=list)
    duets: list[tuple[RoundSpec, RoundSpec]] = field(default_factory=list)
    duet_slowdown: Mapping[str, float] = field(default_factory=dict)
    clock: float = 0.0
    interrupts: int = 0
    _counts: dict[str, int] = field(default_factory=dict)
    _interrupted: bool = False

    def launch(self, spec: RoundSpec) -> RoundOutcome:
        """Play the next scripted round of ``spec.workload`` (see the class docstring)."""
        self._interrupted = False  # a signal between rounds finds no round to kill
        if self.on_launch is not None:
            self.on_launch(spec, len(self.launched))
        self.launched.append(spec)
        started = self.start + self.clock
        if self._interrupted:
            self._interrupted = False
            return self._outcome(spec, FakeRound(0.0, "interrupted", reason="interrupted"), started)
        if spec.hook is not None:
            key = f"{spec.hook}:{spec.workload}"
            hook = self.hooks.get(key, self.hooks.get(spec.hook))
            k = self._counts.get(key, 0)
            self._counts[key] = k + 1
            r = hook(spec, k, self.clock) if hook is not None else FakeRound(0.0)
        elif os.path.basename(spec.argv[0]) == "true" and len(spec.argv) == 1:
            r = FakeRound(self.overhead_s)
        else:
            k = self._counts.get(spec.workload, 0)
            self._counts[spec.workload] = k + 1
            r = self.scripts[spec.workload](spec, k, self.clock)
            node = self.node_of(spec, k) if self.node_of is not None else None
            if node is not None:
                r = _on_node(r, self.node_speed.get(node, 1.0))
                return self._finish(spec, r, started, node)
        return self._finish(spec, r, started, None)

    def _finish(
        self, spec: RoundSpec, r: FakeRound, started: float, node: str | None
    ) -> RoundOutcome:
        """Apply the timeout, advance the clock and build the outcome (with ``node``)."""
        if r.wall_s > spec.timeout:
            r = FakeRound(
                spec.timeout, "timeout", reason=f"timed out after {spec.timeout:g} s", exit_code=-9
            )
        self.clock += r.wall_s
        out = self._outcome(spec, r, started)
        return replace(out, node=node) if node is not None else out

    def launch_duet(self, a: RoundSpec, b: RoundSpec) -> tuple[RoundOutcome, RoundOutcome]:
        """Play the next scripted rounds of ``a`` and ``b`` as one duet (docs/duet.md):
        both start at the same virtual time (so a ``drift`` of the clock is the same for
        both), each side's time is multiplied by its :attr:`duet_slowdown`, and the clock
        advances by the longer of the two. Both specs are kept in :attr:`launched` (``a``
        first) and in :attr:`duets` as a pair."""
        self._interrupted = False
        if self.on_launch is not None:
            self.on_launch(a, len(self.launched))
        self.launched.extend((a, b))
        self.duets.append((a, b))
        started = self.start + self.clock
        if self._interrupted:
            self._interrupted = False
            r = FakeRound(0.0, "interrupted", reason="interrupted")
            return self._outcome(a, r, started), self._outcome(b, r, started)
        rounds = []
        for spec in (a, b):
            k = self._counts.get(spec.workload, 0)
            self._counts[spec.workload] = k + 1
            r = self.scripts[spec.workload](spec, k, self.clock)
            slow = self.duet_slowdown.get(spec.workload, 1.0)
            if slow != 1.0:
                cpu = None if r.cpu_s is None else r.cpu_s * slow
                r = dataclasses.replace(r, wall_s=r.wall_s * slow, cpu_s=cpu)
            if r.wall_s > spec.timeout:
                r = FakeRound(
                    spec.timeout,
                    "timeout",
                    reason=f"timed out after {spec.timeout:g} s",
                    exit_code=-9,
                )
            rounds.append(r)
        self.clock += max(r.wall_s for r in rounds)
        return self._outcome(a, rounds[0], started), self._outcome(b, rounds[1], started)

    def interrupt(self) -> None:
        """Mark the round in flight as interrupted (the next launch returns ``interrupted``
        if none is in flight, as a signal between two rounds would find it)."""
        self.interrupts += 1
        self._interrupted = True

    @staticmethod
    def _outcome(spec: RoundSpec, r: FakeRound, started: float) -> RoundOutcome:
        exit_code = r.exit_code
        if exit_code is None and r.status in ("ok", "failed"):
            exit_code = 0 if r.status == "ok" else 1
        return RoundOutcome(
            status=r.status,
            wall_ns=int(round(r.wall_s * 1e9)),
            user_s=r.wall_s if r.cpu_s is None else r.cpu_s,
            sys_s=0.0,
            max_rss_kib=1024,
            exit_code=exit_code,
            started_at=started,
            cpus=spec.cpus,
            readings=r.readings if spec.readings is not None else (),
            reason=r.reason,
            stdout_tail=r.stdout,
            stderr_tail=r.stderr,
            wait_ns=None if r.wait_s is None else int(round(r.wait_s * 1e9)),
            wait_source=None if r.wait_s is None else SOURCE_FAKE,
        )
