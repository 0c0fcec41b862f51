"""The stopping controller's stored verdicts, read once for every output.

An adaptive campaign ends with one "verdicts" event (runner/campaign/adaptive.py): every adjacent
pair the controller compared (``PairStatus`` as a dict) and every baseline or reference
comparison (``BaselineStatus``), each with the test that decided it (``paired``: a
one-sample t on subsession means of the per-pass log ratios, docs/methods.md §13; ``welch``:
Welch on the two workloads' own subsession means, §7), the ratio b/a with its CI at the
campaign's confidence, the p-values of the latest look that tested it, and whether every
condition of the stopping rule was met (``conditions_met``; False on a budget stop).

:func:`read_verdicts` turns that event into :class:`StoredVerdicts`, which ``benchrun
show``, the report (HTML, Markdown, JSON, CSV) and ``benchrun export`` all print as they
are: nothing here recomputes a verdict. A fixed campaign stores none; its comparisons are
computed once when it is read, by the same controller, in the same form
(:func:`runner.results.comparisons.campaign_verdicts`; ``computed`` says how). :func:`runner.results.workloads.drift_line` words a workload's drift check as
``benchrun run`` prints it, and :func:`experiment_of` re-reads the stored experiment text
(for ``compare:`` groups).

Units: ratios and relative differences are unitless (b/a; 0.05 = 5 %); p-values and
alpha are probabilities.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from benchrun.runner.results.comparisons import experiment_of
from benchrun.runner.results.settings import StoredSettings, campaign_settings
from benchrun.runner.results.verdicts import (
    TEST_NAMES,
    StoredComparison,
    StoredVerdicts,
    verdicts_from_dict,
)
from benchrun.runner.results.workloads import drift_line

if TYPE_CHECKING:
    from benchrun.runner.config.experiment import Experiment
    from benchrun.runner.store.database import EventRow

__all__ = [
    "StoredComparison",
    "StoredVerdicts",
    "read_verdicts",
    "verdicts_from_dict",
    "drift_line",
    "experiment_of",
    "is_paired",
    "TEST_NAMES",
]


def read_verdicts(events: Sequence[EventRow]) -> StoredVerdicts | None:
    """The newest stored "verdicts" event as :class:`StoredVerdicts`; None when the
    campaign has none (fixed mode, or an adaptive campaign that did not reach its end)."""
    from benchrun.runner.results.workloads import final_verdicts

    doc = final_verdicts(list(events))
    return None if doc is None else verdicts_from_dict(doc)


def is_paired(
    name: str,
    verdicts: StoredVerdicts | None,
    experiment: Experiment | None,
    settings: StoredSettings,
) -> bool:
    """Are ``name``'s comparisons paired? From the stored verdicts when the campaign has
    them (every comparison of ``name`` paired); else as ``benchrun run`` words its drift
    line: an adaptive campaign with ``comparison: paired`` that compares ``name`` with
    something (``compare:``)."""
    if verdicts is not None:
        return verdicts.all_paired(name)
    s = campaign_settings(settings)
    if experiment is None or not s.adaptive:
        return False
    return s.comparison == "paired" and experiment.comparison_group(name) is not None
