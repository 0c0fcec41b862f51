"""The entry point of a campaign: dispatch to the adaptive or the fixed loop, tuned around
it when ``settings.tune`` asks (docs/tuning.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from benchrun.runner.campaign.fixed import run_fixed
from benchrun.runner.campaign.session import (
    CampaignOutcome,
    Display,
    MetadataFn,
    RoundFactsFn,
    SessionOptions,
)
from benchrun.runner.config.experiment import Experiment
from benchrun.runner.errors import UserError
from benchrun.runner.execute.executor import Executor
from benchrun.runner.execute.fleet import FleetExecutor
from benchrun.runner.execute.slurm import SlurmExecutor
from benchrun.runner.machine.tuning import (
    CampaignTuning,
    ResetReport,
    campaign_tuning,
    change_lines,
    recover,
)
from benchrun.runner.store.database import Store


def run_campaign(
    experiment: Experiment,
    executor: Executor,
    display: Display,
    *,
    tuning_root: Path = Path("/"),
    tuning_dir: Path | None = None,
    resume: bool = False,
    new: bool = False,
    metadata_fn: MetadataFn | None = None,
    round_facts_fn: RoundFactsFn | None = None,
    workload_cpus: tuple[int, ...] | None = None,
    resume_command: str | None = None,
    on_start: Callable[[Store, int], None] | None = None,
) -> CampaignOutcome:
    """Run (or resume) a campaign in the experiment's mode: adaptive (the default, see
    runner/campaign/adaptive.py) or fixed (``settings.adaptive: false``). The keyword
    arguments after ``tuning_dir`` are the fields of
    :class:`runner.campaign.session.SessionOptions`; ``tuning_root`` / ``tuning_dir``: the
    root of sysfs and procfs and the tuning journal's directory (tests).

    First, what a campaign killed while it kept the machine tuned left is restored. With
    ``settings.tune`` (rounds on this machine), the machine is tuned for the campaign and
    restored at its end; the campaign's metadata and events record both."""
    options = SessionOptions(
        resume=resume,
        new=new,
        metadata_fn=metadata_fn,
        round_facts_fn=round_facts_fn,
        workload_cpus=workload_cpus,
        resume_command=resume_command,
        on_start=on_start,
    )
    remote = isinstance(executor, (SlurmExecutor, FleetExecutor))
    if not experiment.settings.tune or remote:
        recovered = _recover(display, tuning_root, tuning_dir)
        if experiment.settings.tune:
            display.message("tune: the rounds run on Slurm nodes; this machine is not tuned")
        return _loop(experiment, executor, display, _recorded(options, recovered, None))
    restored: list[ResetReport] = []
    campaign = str(experiment.campaign_dir.absolute())
    with campaign_tuning(
        workload_cpus, campaign, root=tuning_root, directory=tuning_dir, restored=restored
    ) as tuning:
        _say_recovered(display, tuning.recovered)
        _say_tuned(display, tuning)
        outcome = _loop(experiment, executor, display, _recorded(options, tuning.recovered, tuning))
    return _after(outcome, display, restored[0] if restored else None)


def _loop(
    experiment: Experiment, executor: Executor, display: Display, options: SessionOptions
) -> CampaignOutcome:
    if experiment.settings.adaptive:
        # the controller and the statistics (scipy) only where they are used
        from benchrun.runner.campaign.adaptive import run_adaptive

        return run_adaptive(experiment, executor, display, options)
    return run_fixed(experiment, executor, display, options)


def _recover(display: Display, root: Path, directory: Path | None) -> ResetReport | None:
    """Restore a dead campaign's tuning; a journal that cannot be trusted is one line and
    the campaign goes on (``benchrun system reset`` says the same)."""
    try:
        recovered = recover(root=root, directory=directory)
    except UserError as exc:
        display.message(f"tuning journal not restored: {exc.message}")
        return None
    _say_recovered(display, recovered)
    return recovered


def _say_recovered(display: Display, recovered: ResetReport | None) -> None:
    if recovered is None:
        return
    who = recovered.owner.describe() if recovered.owner else "a campaign"
    for line in recovered.lines():
        display.message(f"{who} ended without restoring the machine's tuning: {line}")


def _say_tuned(display: Display, tuning: CampaignTuning) -> None:
    if tuning.note is not None:
        display.message(f"tune: {tuning.note}")
    report = tuning.report
    if report is None:
        return
    if report.changes:
        display.message("tuned: " + "; ".join(change_lines(report.changes)))
    if report.needs_root:
        display.message(
            "tune: needs root, left as it is: " + ", ".join(s.setting for s in report.needs_root)
        )
    for skip in report.skipped:
        if skip.kind == "refused":
            display.message(f"tune: {skip.setting}: {skip.reason}")


def _recorded(
    options: SessionOptions, recovered: ResetReport | None, tuning: CampaignTuning | None
) -> SessionOptions:
    """The session's options with the tuning recorded: the metadata of a new campaign gets
    ``tuning`` (before and after of each change), the campaign events ``tuned`` and
    ``tuning-restored`` (a dead campaign's journal restored at this start)."""
    if recovered is None and tuning is None:
        return options
    metadata_fn = options.metadata_fn
    if tuning is not None and metadata_fn is not None:

        def metadata() -> dict[str, object]:
            return {**metadata_fn(), "tuning": tuning.to_dict()}

        options = dataclasses.replace(options, metadata_fn=metadata)
    on_start = options.on_start

    def started(store: Store, campaign_id: int) -> None:
        if recovered is not None:
            store.add_event(
                campaign_id,
                "tuning-restored",
                "restored what a campaign that died had left tuned",
                recovered.to_dict(),
            )
        if tuning is not None:
            changes = tuning.report.changes if tuning.report else ()
            text = "; ".join(change_lines(changes)) or (tuning.note or "nothing to change")
            store.add_event(campaign_id, "tuned", f"tuned: {text}", tuning.to_dict())
        if on_start is not None:
            on_start(store, campaign_id)

    return dataclasses.replace(options, on_start=started)


def _after(
    outcome: CampaignOutcome, display: Display, restored: ResetReport | None
) -> CampaignOutcome:
    """Record the restore at the campaign's end as a ``tuning-restored`` event; a value the
    kernel refused is a warning of the outcome (and stays in the journal)."""
    if restored is None:
        return outcome
    with Store.open(outcome.db_path) as store:
        store.add_event(
            outcome.campaign_id,
            "tuning-restored",
            f"restored {len(restored.restored)} tuned setting(s) at the campaign's end",
            restored.to_dict(),
        )
    refused = tuple(
        f"{e.setting}: the kernel refused {e.before!r} ({why}); kept in {restored.journal}, "
        "`benchrun system reset` tries again"
        for e, why in restored.refused
    )
    if restored.restored:
        display.message(f"restored the {len(restored.restored)} tuned setting(s)")
    return dataclasses.replace(outcome, warnings=outcome.warnings + refused)
