"""The entry point of a campaign: dispatch to the adaptive or the fixed loop."""

from __future__ import annotations

from typing import Any

from benchrun.runner.campaign.fixed import run_fixed
from benchrun.runner.campaign.session import CampaignOutcome, Display
from benchrun.runner.config.experiment import Experiment
from benchrun.runner.execute.executor import Executor


def run_campaign(
    experiment: Experiment, executor: Executor, display: Display, **kw: Any
) -> CampaignOutcome:
    """Run (or resume) a campaign in the experiment's mode: adaptive (the default, see
    runner/campaign/adaptive.py) or fixed (``settings.adaptive: false``). Keyword arguments as
    :func:`run_fixed`."""
    if experiment.settings.adaptive:
        # the controller and the statistics (scipy) only where they are used
        from benchrun.runner.campaign.adaptive import run_adaptive

        return run_adaptive(experiment, executor, display, **kw)
    return run_fixed(experiment, executor, display, **kw)
