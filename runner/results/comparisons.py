"""The comparisons of a stored campaign: one computation, read by every output.

An adaptive campaign ends with one "verdicts" event (runner/campaign/adaptive.py): every
pair the stopping controller compared and every baseline (or reference) comparison, each
with its verdict, test, ratio b/a with its CI, passes and p-values.
:func:`campaign_verdicts` returns that event's data as it was stored; nothing recomputes
it. ``benchrun show``, the report (HTML, Markdown, JSON, CSV) and ``benchrun export`` all
read their comparisons from here, so they print the same numbers.

A fixed campaign (``rounds:``) stores no verdicts. Its comparisons are computed here, when
the campaign is read, by the same controller (runner/control/controller.py) on the stored
rounds, one comparison group at a time, at a single look that spends the whole ``alpha``
(a fixed number of rounds has no sequential stopping to pay for): the neighbours of each
group in the controller's order, decided on the per-pass log ratios of their rounds when
they ran in the same passes (docs/paired.md; ``comparison: paired``, the default: the
signed-rank test, or the t test with ``paired_test: t``, at alpha over the pairs the group
can form), else by Welch on their own subsession means (Holm over the pairs of a group);
TOST within ``margin``; with ``settings.reference``, each workload of its group against the
reference. A pair the data cannot decide is ``undecided`` with the reason (for instance
too few passes for the log-ratio series' correlation time) and the rounds it would need.
The result has the shape of the stored event plus ``computed``, a sentence saying how.

Units: ratios are b/a (unitless); p-values and alpha are probabilities.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from benchrun.runner.config.experiment import Settings
from benchrun.runner.results.settings import campaign_settings
from benchrun.runner.results.workloads import analysed_rounds, collect_stored, final_verdicts
from benchrun.runner.store.database import CampaignRow, EventRow, RoundRow, Store, WorkloadRow

if TYPE_CHECKING:
    from benchrun.runner.config.experiment import Experiment
    from benchrun.runner.control.collector import WorkloadStats
    from benchrun.runner.control.controller import Decision

__all__ = [
    "campaign_verdicts",
    "fixed_verdicts",
    "experiment_of",
    "stored_experiment",
    "FIXED_HOW",
]

#: the ``computed`` sentence of a fixed campaign's comparisons
FIXED_HOW = (
    "fixed campaign: compared when read, by the stopping controller's tests at one look "
    "over every stored round (alpha {alpha:g} over the pairs of a group, TOST within "
    "±{margin:g} %)"
)


def experiment_of(config_text: str, names: Iterable[str]) -> Experiment | None:
    """The experiment stored with a campaign, re-read from its text (no check of this
    machine's files); None when it no longer parses or names other workloads than
    ``names`` (then ``compare:`` groups are not known)."""
    from benchrun.runner.config.loader import parse_experiment
    from benchrun.runner.errors import UserError

    try:
        experiment = parse_experiment(
            config_text, display="stored experiment", check_commands=False
        )
    except (UserError, ValueError, TypeError, KeyError):
        return None
    if set(experiment.names) != set(names):
        return None
    return experiment


def stored_experiment(campaign: CampaignRow, names: Iterable[str]) -> Experiment | None:
    """The experiment of ``campaign`` as parsed when it started (``experiment_json``, schema
    6: runner/config/stored.py), with the campaign's stored settings; None when the store
    knows none (the text did not parse when the store was migrated) or it names other
    workloads than ``names``. A campaign stored without it (NULL: a writer that did not
    pass it) is parsed from its text (:func:`experiment_of`). A damaged column raises
    :class:`UserError` (one line)."""
    if campaign.experiment_json is None:
        return experiment_of(campaign.config_text, names)
    if campaign.experiment_json == "null":
        return None
    from benchrun.runner.config.stored import experiment_from_json

    experiment = experiment_from_json(
        campaign.experiment_json,
        settings=campaign_settings(campaign.settings),
        source_text=campaign.config_text,
        display=f"campaign {campaign.id} ({campaign.name})",
    )
    return experiment if set(experiment.names) == set(names) else None


def _steady(rounds: Sequence[RoundRow], settings: Settings) -> list[RoundRow]:
    return analysed_rounds(list(rounds), settings)


def _group_of(w: WorkloadRow, experiment: Experiment | None) -> str | None:
    """The comparison group of ``w`` (as the adaptive loop groups workloads); None when the
    experiment's ``compare:`` compares it with nothing."""
    if experiment is None:
        return f"{w.metric}:{w.unit}"
    return experiment.comparison_group(w.name)


def _decide(
    settings: Settings,
    key: str,
    members: Sequence[WorkloadRow],
    stats: Mapping[str, WorkloadStats | None],
    used: Mapping[str, int],
    values: Mapping[str, Mapping[int, float]],
    clock: int,
) -> Decision:
    """The controller's decision on one group of a fixed campaign after all its rounds: a
    single look at the whole alpha (the schedule's first and last look is ``clock``)."""
    # imported here: an adaptive campaign's stored verdicts need no controller (nor the
    # scipy.stats of its tests), so `benchrun show` of one does not import it
    from benchrun.runner.control.controller import Controller, ControllerParams
    from benchrun.runner.control.pairing import PassSeries

    params = ControllerParams.from_settings(
        settings,
        max_rounds=clock,
        min_rounds=max(1, min(int(settings.min_rounds or 1), clock)),
        max_time=None,
    )
    names = [w.name for w in members]
    reference = settings.reference
    controller = Controller(
        params,
        [(w.name, w.direction, key) for w in members],
        reference=reference if reference in names else None,
    )
    return controller.decide(
        {n: stats[n] for n in names},
        {n: used[n] for n in names},
        retired={w.name: w.status_reason or w.status for w in members if w.status != "active"},
        pairs=PassSeries(
            {n: values[n] for n in names},
            confidence=float(settings.confidence),
            min_subsessions=settings.min_subsessions,
        ),
    )


def fixed_verdicts(
    campaign: CampaignRow,
    workloads: Sequence[WorkloadRow],
    rounds: Mapping[int, Sequence[RoundRow]],
    experiment: Experiment | None,
) -> dict[str, object] | None:
    """The comparisons of a fixed campaign, in the form of a stored "verdicts" event
    (module docstring); None when no group has two workloads with steady rounds.

    Parameters
    ----------
    campaign : CampaignRow
        The campaign (its stored settings give alpha, margin, confidence, comparison,
        min_subsessions, reference).
    workloads : sequence of WorkloadRow
        Its workloads, in file order.
    rounds : mapping
        Workload id -> its stored rounds in launch order.
    experiment : Experiment or None
        The stored experiment (:func:`experiment_of`), for its ``compare:`` groups; None:
        every metric and unit is one group.

    Returns
    -------
    dict or None
        ``pairs`` and ``baselines`` (``PairStatus``/``BaselineStatus`` as dicts),
        ``reason``, ``conditions_met`` (None: a fixed campaign has no stopping rule),
        ``units``, ``directions``, ``margin``, ``alpha``, ``confidence`` and ``computed``.
    """
    from benchrun.runner.control.pairing import round_values_by_pass

    settings = campaign_settings(campaign.settings)
    confidence = float(settings.confidence)
    groups: dict[str, list[WorkloadRow]] = {}
    for w in workloads:
        key = _group_of(w, experiment)
        if key is not None:
            groups.setdefault(key, []).append(w)
    pairs: list[object] = []
    baselines: list[object] = []
    reasons: list[str] = []
    for key, members in groups.items():
        if len(members) < 2:
            continue
        stats = {}
        used = {}
        values = {}
        for w in members:
            steady = _steady(rounds.get(w.id, ()), settings)
            s = collect_stored(w, list(rounds.get(w.id, ())), settings)
            stats[w.name] = s
            used[w.name] = len(steady)
            skip = s.warmup_readings // s.rounds if s is not None and s.rounds else 0
            values[w.name] = round_values_by_pass(
                [r.readings for r in steady],
                [r.work for r in steady],
                [r.pass_ for r in steady],
                w.typed_spec.per_work,
                skip,
            )
        clock = max(used.values())
        if clock == 0:
            continue
        decision = _decide(settings, key, members, stats, used, values, clock)
        if decision.look is None and settings.comparison == "paired":
            # the per-pass log ratios are too few to test (a short fixed campaign): each
            # workload's own series may still decide the pair by Welch
            welch = _decide(
                replace(settings, comparison="independent"),
                key,
                members,
                stats,
                used,
                values,
                clock,
            )
            if welch.look is not None:
                decision = welch
                reasons.append(
                    f"{', '.join(w.name for w in members)}: {min(used.values())} passes are "
                    "too few to test their per-pass log ratios; compared by Welch on each "
                    "workload's own subsession means"
                )
        doc = decision.to_dict()
        pairs.extend(doc["pairs"])
        baselines.extend(doc["baselines"])
        _, unmet, rest = decision.reason.partition("unmet: ")
        if unmet:  # why a comparison is undecided (the budget part does not apply here)
            reasons.append(rest)
    if not pairs and not baselines:
        return None
    alpha, margin = float(settings.alpha), float(settings.margin)
    how = FIXED_HOW.format(alpha=alpha, margin=100 * margin)
    return {
        "pairs": pairs,
        "baselines": baselines,
        "reason": "; ".join([how, *reasons]),
        "conditions_met": None,
        "units": {w.name: w.unit for w in workloads},
        "directions": {w.name: w.direction for w in workloads},
        "margin": margin,
        "alpha": alpha,
        "confidence": confidence,
        "computed": how,
    }


def campaign_verdicts(
    store: Store,
    campaign: CampaignRow,
    events: Sequence[EventRow] | None = None,
    experiment: Experiment | None = None,
    workloads: Sequence[WorkloadRow] | None = None,
    rounds: Sequence[RoundRow] | None = None,
) -> dict[str, Any] | None:
    """The comparisons of ``campaign`` as every output prints them (module docstring).

    Parameters
    ----------
    store : Store
        The open store of the campaign.
    campaign : CampaignRow
        The campaign.
    events : sequence of EventRow, optional
        Its events when the caller has read them already.
    experiment : Experiment, optional
        The stored experiment when the caller has read it (else :func:`stored_experiment`).
    workloads, rounds : sequence, optional
        The campaign's workloads and rounds when the caller has read them already.

    Returns
    -------
    dict or None
        The newest stored "verdicts" event's data; for a fixed campaign without one,
        :func:`fixed_verdicts`; None for an adaptive campaign that did not reach its end
        and for a campaign that compares nothing.
    """
    stored = final_verdicts(list(store.events(campaign.id) if events is None else events))
    if stored is not None:
        return stored
    if campaign_settings(campaign.settings).adaptive:
        return None
    if workloads is None:
        workloads = store.workloads(campaign.id)
    by_id: dict[int, list[RoundRow]] = {}
    for r in store.rounds(campaign.id) if rounds is None else rounds:
        by_id.setdefault(r.workload_id, []).append(r)
    if experiment is None:
        experiment = stored_experiment(campaign, [w.name for w in workloads])
    return fixed_verdicts(campaign, workloads, by_id, experiment)
