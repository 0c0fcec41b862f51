"""The quiet-machine guard (``settings.quiet_load``, docs/loop.md): before the first round
of each pass, wait until the machine's 1-minute load average is below the threshold
(runner/machine/quiet.py, which also gives the daemon-wide default).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from benchrun.runner.campaign.workload_state import Display
from benchrun.runner.config.experiment import Settings
from benchrun.runner.machine.quiet import quiet_settings, wait_for_quiet
from benchrun.runner.store.database import Store


class QuietGuard:
    """Waits for a quiet machine once per pass of one campaign. ``commit``: commits the
    open group of rounds (no group stays open through a wait); ``interrupted``: whether
    SIGINT/SIGTERM was received (it ends the wait)."""

    def __init__(
        self,
        store: Store,
        campaign_id: int,
        settings: Settings,
        display: Display,
        *,
        commit: Callable[[], None],
        interrupted: Callable[[], bool],
    ) -> None:
        self.store = store
        self.campaign_id = campaign_id
        self.settings = settings
        self.display = display
        self.commit = commit
        self.interrupted = interrupted
        self.guarded_pass: int | None = None  # the last pass guarded

    def before_pass(self, pass_index: int) -> None:
        """Quiet-machine guard (``settings.quiet_load``, runner/machine/quiet.py): before the first
        round of each pass, wait until the 1-minute load average is below the threshold,
        at most ``quiet_max_wait`` seconds; a wait is stored as a "quiet-wait" event.
        Ctrl-C ends the wait at once."""
        settings = self.settings
        # the experiment's quiet_load, else the daemon-wide default (runner/machine/quiet.py)
        max_load, max_wait = quiet_settings(settings.quiet_load, settings.quiet_max_wait)
        if max_load is None or pass_index == self.guarded_pass:
            return
        self.guarded_pass = pass_index
        self.commit()  # no group stays open through a wait
        waited = wait_for_quiet(max_load, max_wait, should_stop=self.interrupted)
        if waited < 0.05 or self.interrupted():  # quiet at once: nothing worth recording
            return
        load = os.getloadavg()[0]
        quiet = load < max_load
        text = (
            f"waited {waited:.1f} s for the load average to fall below {max_load:g}"
            if quiet
            else f"load average still {load:.2f} after {waited:.1f} s (quiet_load "
            f"{max_load:g}); measuring anyway"
        )
        self.store.add_event(
            self.campaign_id,
            "quiet-wait",
            text,
            {"seconds": waited, "load": load, "quiet": quiet, "pass": pass_index},
        )
        self.display.message(text)
