"""Repeated campaigns of one experiment in a store: one mean per campaign and workload
(issue 27, item 7; docs/conditions.md "Several campaigns per side").

A campaign directory's ``benchrun.db`` holds every campaign its experiment ran (``benchrun
show`` lists them). The campaigns that measured the same experiment as a given one (the
same measurement fingerprint) and finished (status ``done``) are its repetitions; each
gives one estimate per workload (the collector's mean, as ``benchrun show`` prints it).
Their spread is the campaign-to-campaign variation on that machine
(:func:`benchrun.stats.campaigns.between_campaign_sd`), which one campaign per side
cannot estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchrun.runner.results.settings import campaign_settings
from benchrun.runner.store.database import CampaignRow, Store

#: campaign status of a repetition that counts
DONE = "done"


@dataclass(frozen=True)
class CampaignMeans:
    """One workload's mean in each repeated campaign of a store, oldest first.

    ``campaigns`` are the campaign ids, ``means`` the estimates (the workload's unit).
    """

    workload: str
    campaigns: tuple[int, ...]
    means: tuple[float, ...]

    @property
    def k(self) -> int:
        """The number of campaigns."""
        return len(self.means)


def repeated_campaigns(store: Store, campaign: CampaignRow) -> list[CampaignRow]:
    """The finished campaigns of ``store`` with ``campaign``'s measurement fingerprint
    (``campaign`` itself included when it finished), oldest first."""
    return [
        c
        for c in store.campaigns()
        if c.fingerprint == campaign.fingerprint and (c.status == DONE or c.id == campaign.id)
    ]


def campaign_means(store: Store, campaign: CampaignRow) -> dict[str, CampaignMeans]:
    """Per workload name, its mean in each of :func:`repeated_campaigns` that has one.

    Costs one :func:`runner.results.workloads.workload_results` per campaign (the
    collector over its rounds); a store with one campaign costs nothing beyond it.
    """
    from benchrun.runner.results.workloads import workload_results

    ids: dict[str, list[int]] = {}
    means: dict[str, list[float]] = {}
    for c in repeated_campaigns(store, campaign):
        confidence = float(campaign_settings(c.settings).confidence)
        for r in workload_results(store, c, confidence):
            mean = None if r.estimate is None else r.estimate.mean
            if mean is None or not mean > 0:
                continue
            ids.setdefault(r.name, []).append(c.id)
            means.setdefault(r.name, []).append(float(mean))
    return {n: CampaignMeans(n, tuple(ids[n]), tuple(means[n])) for n in means}
