"""The failure rules of a campaign (docs/loop.md, docs/configuration.md).

``max_consecutive_failures`` failed rounds in a row stop a workload, a failed ``setup``
stops its workload, ``fail_fast`` stops the campaign at the first failed round and
``contended: fail`` at the first contended steady round (runner/campaign/contended.py).
A stopped workload is stored as stopped, so a resume does not retry it; why the campaign
stopped is :attr:`FailureRules.failure_stop`, which the loops read after every round.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from benchrun.runner.campaign.workload_state import Display, WorkloadState
from benchrun.runner.config.experiment import Settings
from benchrun.runner.execute.executor import RoundOutcome
from benchrun.runner.store.database import Store


class FailureRules:
    """Apply the failure rules to the rounds of one campaign.

    ``states``: the workloads' bookkeeping (their ``stopped`` set here); ``commit``: commits
    the open group of rounds (runner/campaign/groupcommit.py) before a workload is stopped;
    ``campaign_dir``: named in the messages that point at ``benchrun show``."""

    def __init__(
        self,
        store: Store,
        campaign_id: int,
        settings: Settings,
        states: dict[str, WorkloadState],
        display: Display,
        campaign_dir: Path,
        commit: Callable[[], None],
    ) -> None:
        self.store = store
        self.campaign_id = campaign_id
        self.settings = settings
        self.states = states
        self.display = display
        self.campaign_dir = campaign_dir
        self.commit = commit
        #: why the campaign stops (fail_fast, contended: fail, a duet side on several
        #: CPUs); None while it goes on
        self.failure_stop: str | None = None

    def stop_campaign(self, reason: str | None) -> None:
        """Stop the campaign for ``reason`` (None: nothing), unless it is stopping already."""
        if reason and not self.failure_stop:
            self.failure_stop = reason

    def stop_workload(self, name: str, reason: str) -> None:
        """Give up on a workload for good (stored, so a resume does not retry it)."""
        self.commit()
        st = self.states[name]
        st.stopped = reason
        self.store.set_workload_status(st.workload_id, "stopped", reason)
        self.store.add_event(self.campaign_id, "workload-stopped", f"{name}: {reason}")

    def round_failed(self, name: str, round_index: int, outcome: RoundOutcome) -> None:
        """Say that round ``round_index`` of ``name`` (stored, accounted for) did not
        succeed; stop the campaign (``fail_fast``) or the workload after
        ``max_consecutive_failures`` failures in a row."""
        settings, st = self.settings, self.states[name]
        self.display.message(f"{name}: round {round_index} {outcome.status}: {outcome.reason}")
        if settings.fail_fast:
            self.failure_stop = (
                f"{name} round {round_index} {outcome.status} ({outcome.reason}) "
                "and fail_fast is set"
            )
        elif st.consecutive_failures >= settings.max_consecutive_failures:
            self.stop_workload(
                name, f"{st.consecutive_failures} failures in a row, last: {outcome.reason}"
            )
            self.display.message(
                f"{name}: stopped after {st.stopped}; see `benchrun show "
                f"{self.campaign_dir}` for its output"
            )

    def setup_failed(self, name: str, what: str) -> None:
        """Stop ``name``, whose setup failed (``what``: the hook's reason and last line of
        output), unless the campaign or the workload is stopping already."""
        if not self.failure_stop and not self.states[name].stopped:
            self.stop_workload(name, f"setup failed: {what}")
            self.display.message(
                f"{name}: stopped: its setup failed; see `benchrun show "
                f"{self.campaign_dir} --failures` for its output"
            )
