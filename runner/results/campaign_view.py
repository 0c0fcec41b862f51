"""One stored campaign, read once: the read model of ``benchrun show``, the report and
``export`` (issue 30, item 1).

:func:`read_campaign` reads a campaign of an open store in one snapshot (a campaign being
written is read as one state of it) into a :class:`CampaignView`: the campaign's row, its
typed settings, its experiment as parsed when it started (stored, not re-parsed:
runner/config/stored.py), its workloads, rounds, events and hook runs, each workload's
results (runner/results/workloads.py: the estimate, the descriptive summary, drift), the
comparisons every output prints (runner/results/comparisons.py), the metrics of
``metric:`` lists and each compute node's metadata record. ``show``
(runner/commands/show.py ``CampaignSummary``) and the report (runner/report/model.py
``CampaignModel``) are built from it, so the store is read, the experiment decoded and the
metadata pulled in one place.

The statistics are computed from the stored rows; then, unless ``include_secrets``, every
row the view holds has the campaign's secret ``env:`` values hidden
(runner/store/redact.py). Nothing here imports the controller or ``scipy.stats`` for a
campaign whose comparisons are stored (an adaptive one that ended).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from benchrun.runner.config.experiment import Experiment, Settings
from benchrun.runner.errors import UserError
from benchrun.runner.format import DisplayUnit
from benchrun.runner.results.comparisons import campaign_verdicts, stored_experiment
from benchrun.runner.results.settings import campaign_settings
from benchrun.runner.results.verdicts import StoredVerdicts, verdicts_from_dict
from benchrun.runner.store.database import (
    CampaignRow,
    EventRow,
    HookRow,
    RoundRow,
    Store,
    WorkloadRow,
)

if TYPE_CHECKING:
    from benchrun.runner.results.metrics import MetricSummary
    from benchrun.runner.results.workloads import WorkloadResult

__all__ = [
    "CampaignView",
    "DisplayUnitJson",
    "check_magnitudes",
    "display_dict",
    "node_records",
    "read_campaign",
]


class DisplayUnitJson(TypedDict):
    """A display unit in the JSON documents (:func:`display_dict`)."""

    label: str
    factor: float


def display_dict(du: DisplayUnit) -> DisplayUnitJson:
    """A display unit in the JSON documents (``show --json``, the report's, ``export``):
    ``label`` (what tables print, e.g. "ms") and ``factor`` (one ``label`` in the base
    unit: shown value = stored value / factor)."""
    return {"label": du.label, "factor": du.factor}


@dataclass(frozen=True)
class CampaignView:
    """A stored campaign as every output reads it (module docstring).

    ``results`` are in ``workloads``' order (file order); ``rounds`` in launch order.
    ``verdicts`` is the comparisons' stored form (a "verdicts" event's data, or a fixed
    campaign's computed when read; ``show --json`` prints it as it is), ``comparisons``
    the same as typed records; both None when there are none. ``experiment``: None when
    the store knows none or it no longer matches the stored workloads. ``nodes``: each
    Slurm node's metadata record (its ``node-metadata`` event) by node name.
    ``reading_flags``: the readings' stored flags by (round id, index), read only when
    asked (:func:`read_campaign`).
    """

    db: Path
    campaign: CampaignRow
    settings: Settings
    experiment: Experiment | None
    workloads: list[WorkloadRow]
    rounds: list[RoundRow]
    events: list[EventRow]
    hooks: list[HookRow]
    results: list[WorkloadResult]
    verdicts: Mapping[str, object] | None
    comparisons: StoredVerdicts | None
    metrics: list[MetricSummary]
    nodes: dict[str, Mapping[str, object]]
    #: how many campaigns the store holds, and whether this is the newest
    n_campaigns: int = 1
    latest: bool = True
    reading_flags: dict[tuple[int, int], str] = field(default_factory=dict)

    @property
    def names(self) -> dict[int, str]:
        """Workload id -> name (the ids rounds and hooks name)."""
        return {w.id: w.name for w in self.workloads}

    @property
    def confidence(self) -> float:
        """The campaign's confidence level (a probability)."""
        return float(self.settings.confidence)

    def rounds_by_workload(self) -> dict[int, list[RoundRow]]:
        """Workload id -> its rounds in launch order."""
        out: dict[int, list[RoundRow]] = {w.id: [] for w in self.workloads}
        for r in self.rounds:
            out.setdefault(r.workload_id, []).append(r)
        return out


def node_records(events: list[EventRow]) -> dict[str, Mapping[str, object]]:
    """Each compute node's metadata record by node name, from the campaign's
    ``node-metadata`` events (``{"node": NAME, "record": {...}}``, one per node; a later
    one of the same node replaces an earlier one). Events of another shape are left out."""
    out: dict[str, Mapping[str, object]] = {}
    for e in events:
        if e.kind != "node-metadata":
            continue
        match e.data:
            case {"node": node, "record": Mapping() as record} if node:
                out[str(node)] = dict(record)
            case {"node": node} if node:
                out[str(node)] = {}
    return out


def check_magnitudes(
    db: Path, workloads: list[WorkloadRow], rounds: list[RoundRow], limit: float
) -> None:
    """Raise a UserError when a stored reading is beyond ``limit`` (the callers':
    runner/importers/dataset.py ``MAX_MAGNITUDE``, where powers of a reading overflow).

    Powers of such readings overflow to infinity, so the variance, the CI, the plots'
    density estimates and the tests would be infinite or NaN; the error says which workload
    and which value instead of reporting them.
    """
    units = {w.id: (w.name, w.unit) for w in workloads}
    for r in rounds:
        for v in r.readings:
            if not abs(v) <= limit:  # also catches an infinity
                name, unit = units.get(r.workload_id, ("?", ""))
                raise UserError(
                    f"{db}: workload {name!r} has a reading of {v:.4g} {unit} (round "
                    f"{r.round_index}), beyond ±{limit:g}, where the statistics "
                    "overflow; have the workload print its readings in a larger unit"
                )


def read_campaign(
    store: Store,
    campaign_id: int | None = None,
    *,
    max_magnitude: float,
    include_secrets: bool = False,
    intervals: bool = True,
    reading_flags: bool = False,
) -> CampaignView:
    """Read campaign ``campaign_id`` (default: the newest) of ``store`` into a
    :class:`CampaignView`, in one snapshot of the store.

    ``intervals=False``: each workload's ``summary`` without the median CI
    (:func:`runner.results.workloads.describe_rounds`; ``show``'s tables do not print it).
    ``reading_flags``: read the readings' stored flags too (the report and ``export``).
    Secret ``env:`` values are hidden in every row unless ``include_secrets``. Raises
    :class:`UserError` for a reading beyond ``max_magnitude`` (:func:`check_magnitudes`,
    before any statistic is computed) and for a damaged stored experiment.
    """
    # the collector (numpy, scipy.special) only when a campaign is read
    from benchrun.runner.results.metrics import metric_summaries
    from benchrun.runner.results.workloads import workload_results

    with store.snapshot():
        campaign = store.campaign(campaign_id)
        settings = campaign_settings(campaign.settings)
        rounds = store.rounds(campaign.id)
        workloads = store.workloads(campaign.id)
        check_magnitudes(store.path, workloads, rounds, max_magnitude)
        results = workload_results(store, campaign, float(settings.confidence), intervals=intervals)
        campaigns = store.campaigns()
        events = store.events(campaign.id)
        hooks = store.hooks(campaign.id)
        experiment = stored_experiment(campaign, [w.name for w in workloads])
        verdicts = campaign_verdicts(store, campaign, events, experiment, workloads, rounds)
        flags = store.reading_flags(campaign.id) if reading_flags else {}
        metrics = metric_summaries(workloads, rounds, store.round_metrics(campaign.id), settings)
    if not include_secrets:
        from benchrun.runner.store.redact import (
            campaign_secrets,
            redact_campaign,
            redact_events,
            redact_hooks,
            redact_rounds,
            redact_workloads,
        )

        secrets = campaign_secrets(campaign, workloads)
        campaign = redact_campaign(campaign, secrets)
        workloads = redact_workloads(workloads, secrets)
        events = redact_events(events, secrets)
        hooks = redact_hooks(hooks, secrets)
        rounds = redact_rounds(rounds, secrets)
    return CampaignView(
        db=store.path,
        campaign=campaign,
        settings=settings,
        experiment=experiment,
        workloads=workloads,
        rounds=rounds,
        events=events,
        hooks=hooks,
        results=results,
        verdicts=verdicts,
        comparisons=None if verdicts is None else verdicts_from_dict(verdicts),
        metrics=metrics,
        nodes=node_records(events),
        n_campaigns=len(campaigns),
        latest=not campaigns or campaigns[-1].id == campaign.id,
        reading_flags=flags,
    )
