"""The group commit of rounds (docs/loop.md "Durability").

Short ok rounds are committed in groups: the open group is committed once its first round
is ``window_s`` seconds old, and before a round that may take that long is launched; any
other round (a failure, a hook, an event) commits the group first. A round is reported to
the display only once it is committed, so the user never sees a round a crash could lose.
"""

from __future__ import annotations

from benchrun.runner.campaign.workload_state import Display
from benchrun.runner.execute.executor import RoundOutcome
from benchrun.runner.store.database import Store


class GroupCommit:
    """The open group of rounds of ``store`` and the display calls of its rounds, made once
    it is committed; ``window_s``: the group commit window, s (0: one commit per round)."""

    def __init__(self, store: Store, display: Display, window_s: float) -> None:
        self.store = store
        self.display = display
        self.window_s = window_s
        #: the display calls of the rounds in the open group, made once it is committed
        self._unreported: list[tuple[str, RoundOutcome, float | None, bool]] = []
        #: wall time of each workload's last round in this run, ns
        self._last_wall: dict[str, int] = {}

    def grouped(self, ok: bool) -> bool:
        """Whether a round (``ok``: it succeeded) joins the open group rather than being
        committed on its own."""
        return ok and self.window_s > 0

    def commit(self) -> None:
        """Commit the open group of rounds, then report them (the display): a round is
        never reported before it is committed."""
        self.store.commit_group()
        unreported, self._unreported = self._unreported, []
        for name, outcome, value, warmup in unreported:
            self.display.round_done(name, outcome, value, warmup)

    def before_launch(self, name: str) -> None:
        """Commit the open group before a round of ``name`` that may be long: the first
        of ``name`` in this run, or one after a round of ``window_s`` or more, so that no
        group stays open while a long round runs."""
        if self.store.group_rounds and (self._last_wall.get(name, 1 << 62) >= self.window_s * 1e9):
            self.commit()

    def stored(self, name: str, wall_ns: int) -> None:
        """Note that a round of ``name`` lasting ``wall_ns`` ns was stored."""
        self._last_wall[name] = wall_ns

    def report_later(
        self, name: str, outcome: RoundOutcome, value: float | None, warmup: bool
    ) -> None:
        """Report a grouped round once its group is committed; commit the group now if its
        first round is ``window_s`` old."""
        self._unreported.append((name, outcome, value, warmup))
        if self.store.group_age() >= self.window_s:
            self.commit()
