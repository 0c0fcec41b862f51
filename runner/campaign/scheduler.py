"""Planning rounds: which workloads run in which order (docs/design.md, runner/scheduler).

Rounds are launched in *passes*. In pass ``p`` every workload that still needs a round gets
exactly one, in an order that is a seeded random permutation (``order: interleaved``, the
default: it spreads slow drifts of the machine evenly over the workloads) or the file's
order (``sequential``). The permutation of pass ``p`` depends only on ``(seed, p)`` and the
full list of workloads, never on what already ran, so a resumed campaign continues in
exactly the order the uninterrupted one would have used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def pass_order(names: Sequence[str], pass_index: int, order: str, seed: int) -> list[str]:
    """The launch order of pass ``pass_index`` over all ``names`` (in file order).

    ``interleaved``: a permutation drawn from ``numpy.random.default_rng([seed, pass_index])``;
    ``sequential``: ``names`` unchanged. Workloads that need no round in this pass are
    skipped by the caller, so the order of the others is unaffected by them.
    """
    if order == "sequential":
        return list(names)
    if order != "interleaved":
        raise ValueError(f"unknown order {order!r}; use 'interleaved' or 'sequential'")
    if len(names) < 2:  # the only permutation (the generator costs ~50 us a pass)
        return list(names)
    import numpy as np  # here: a campaign of one workload starts without it (0.1-0.2 s)

    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, int(pass_index)])
    return [names[i] for i in rng.permutation(len(names))]


class PassScheduler:
    """Yields ``(pass_index, workload_name)`` launches until no workload needs a round.

    ``needs_round(name)`` says whether a workload wants another round (it is asked just
    before each launch, so a workload that finishes or is stopped mid-pass is skipped);
    ``done_in_pass(name, p)`` says whether pass ``p`` already holds a round of the workload
    (used on resume, to finish the pass that was interrupted without repeating anything).
    """

    def __init__(
        self,
        names: Sequence[str],
        order: str,
        seed: int,
        needs_round: Callable[[str], bool],
        done_in_pass: Callable[[str, int], bool],
        first_pass: int = 0,
    ) -> None:
        self.names = list(names)
        self.order = order
        self.seed = seed
        self.needs_round = needs_round
        self.done_in_pass = done_in_pass
        self.pass_index = first_pass

    def __iter__(self) -> PassScheduler:
        self._queue: list[str] = []
        self._started = False
        return self

    def __next__(self) -> tuple[int, str]:
        while True:
            while self._queue:
                name = self._queue.pop(0)
                if self.needs_round(name) and not self.done_in_pass(name, self.pass_index):
                    return self.pass_index, name
            if self._started:
                self.pass_index += 1
            self._started = True
            if not any(self.needs_round(n) for n in self.names):
                raise StopIteration
            self._queue = pass_order(self.names, self.pass_index, self.order, self.seed)
