"""What a campaign knows of each workload while it runs, and what it tells the user.

:class:`WorkloadState` is the bookkeeping of one workload (rounds stored, steady readings,
failures in a row, why it stopped), updated as each round is stored and rebuilt from the
store on resume (runner/campaign/session.py ``load_states``); the flags here mark the
stored rounds that are not steady. :class:`Display` is what the campaign tells the user
(runner/ui/display.py implements it). Both are shared by the launcher's parts (hooks,
group commit, failure rules) and the loops.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from benchrun.runner.config.experiment import Workload
from benchrun.runner.execute.contention import flagged_contended, left_out_as_contended
from benchrun.runner.execute.executor import RoundOutcome
from benchrun.runner.store.database import CampaignRow

if TYPE_CHECKING:  # the controller (scipy) is imported at the first decision
    from benchrun.runner.control.decision import Decision

#: flag of the rounds that calibrated a workload's ``{work}`` (stored, never analysed)
CALIBRATION_FLAG = "calibration"
#: flag of a round of a duet campaign's solo pass (docs/duet.md): stored as warm-up, so
#: no analysis but the asymmetry check (runner/campaign/duets.py) reads it
DUET_SOLO_FLAG = "duet-solo"
#: flag of a duet side's probe round: alone, on both duet CPUs, before its first duet
DUET_PROBE_FLAG = "duet-probe"


class Display(Protocol):
    """What the campaign tells the user while it runs (see runner/ui/display.py)."""

    def start(
        self, campaign: CampaignRow, targets: dict[str, int], done: dict[str, int]
    ) -> None: ...

    def round_done(
        self, workload: str, outcome: RoundOutcome, value: float | None, warmup: bool
    ) -> None: ...

    def message(self, text: str) -> None: ...

    def show_decision(self, decision: Decision, eta_s: float | None) -> None: ...

    def stop(self) -> None: ...


@dataclass
class WorkloadState:
    """Bookkeeping of one workload during a campaign (rebuilt from the store on resume)."""

    workload: Workload
    workload_id: int
    launched: int = 0  # rounds stored (any status)
    steady_ok: int = 0  # ok rounds that are not warm-up
    failed: int = 0
    consecutive_failures: int = 0
    passes: set[int] = field(default_factory=set)
    stopped: str | None = None  # reason the workload was stopped early
    calibration: int = 0  # rounds launched to calibrate {work} (stored, flagged)
    warmup_launched: int = 0  # warm-up rounds stored (calibration, solo, probe excluded)
    solo: int = 0  # a duet campaign's solo-pass and probe rounds (stored, flagged)
    #: ok non-warm-up rounds flagged contended (docs/contention.md); with
    #: ``contended: exclude`` (or fail) they are not steady: not in the lists below
    contended: int = 0
    #: readings of every steady ok round, in launch order, and the work amount of each
    steady_readings: list[tuple[float, ...]] = field(default_factory=list)
    steady_work: list[int | None] = field(default_factory=list)
    steady_passes: list[int] = field(default_factory=list)  # pass of each steady ok round
    #: node of each steady ok round (None: this machine; docs/methods.md §14)
    steady_nodes: list[str | None] = field(default_factory=list)
    seconds: float = 0.0  # wall time of every stored round, s

    def record(
        self,
        ok: bool,
        warmup: bool,
        pass_index: int,
        readings: tuple[float, ...],
        work: int | None,
        flags: str,
        wall_ns: int,
        node: str | None = None,
        contended: str = "exclude",
    ) -> None:
        """Account for one stored round (as it happens, or when rebuilding on resume);
        ``node``: where it ran (None: this machine); ``contended``: the campaign's
        ``settings.contended`` (a round flagged contended is not steady unless ``keep``)."""
        self.launched += 1
        self.passes.add(pass_index)
        self.seconds += wall_ns / 1e9
        marks = flags.split(",")
        if CALIBRATION_FLAG in marks:
            self.calibration += 1
        elif DUET_SOLO_FLAG in marks or DUET_PROBE_FLAG in marks:
            self.solo += 1
        elif warmup:
            self.warmup_launched += 1
        if not ok:
            self.failed += 1
            self.consecutive_failures += 1
            return
        self.consecutive_failures = 0
        if not warmup and flagged_contended(flags):
            self.contended += 1
            if left_out_as_contended(flags, contended):
                return
        if not warmup:
            self.steady_ok += 1
            self.steady_readings.append(readings)
            self.steady_work.append(work)
            self.steady_passes.append(pass_index)
            self.steady_nodes.append(node)
