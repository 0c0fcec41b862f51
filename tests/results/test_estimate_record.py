"""runner/results/estimate.py: the collector's dict read back as the typed Estimate.

Expected values: the collector's own record (runner/control/collector.py ``WorkloadStats``,
computed on readings drawn here), whose dict is what the store and the exports hold; and,
for a dict written before the interval fields existed, the rule of docs/methods.md §4.1
(the certified CI was the interval then).
"""

from __future__ import annotations

import json

import numpy as np

from benchrun.runner.control.collector import collect
from benchrun.runner.results.estimate import estimate_from


def test_every_field_is_the_collectors_after_a_json_round_trip() -> None:
    rng = np.random.default_rng(3)
    stats = collect([(float(v),) for v in rng.normal(10.0, 0.2, 120)], confidence=0.95)
    e = estimate_from(json.loads(json.dumps(stats.to_dict())))
    assert e is not None
    assert e.mean == stats.mean and e.variance == stats.s2_q
    assert (e.q, e.n_q, e.n, e.rounds) == (stats.q, stats.n_q, stats.n, stats.rounds)
    assert (e.ci_low, e.ci_high) == (stats.ci_low, stats.ci_high)
    assert (e.interval_low, e.interval_high) == (stats.interval_low, stats.interval_high)
    assert e.certified is stats.certified and e.enough is stats.enough
    assert e.notes == tuple(stats.notes) and e.confidence == 0.95
    assert e.readings_needed == stats.readings_needed
    # the report JSON's estimate object keeps its 20 keys, in their order
    assert list(e.to_dict())[-1] == "interval_note" and len(e.to_dict()) == 20


def test_a_dict_from_before_the_interval_fields_uses_the_ci() -> None:
    old = {"mean": 2.0, "s2_q": 0.01, "n_q": 10, "q": 3, "ci_low": 1.9, "ci_high": 2.1,
           "enough": True, "n": 30}  # fmt: skip
    e = estimate_from(old)
    assert e is not None
    assert (e.interval_low, e.interval_high) == (1.9, 2.1)
    assert e.certified is True and e.usable
    assert e.series == "rounds" and e.warmup_readings == 0 and e.notes == ()
    not_enough = estimate_from({**old, "enough": False, "ci_low": None, "ci_high": None})
    assert not_enough is not None and not not_enough.certified
    assert not_enough.interval_low is None


def test_no_mean_no_estimate() -> None:
    assert estimate_from(None) is None
    assert estimate_from({"mean": None, "n": 0}) is None


def test_description_of_the_stored_summary() -> None:
    from benchrun.runner.results.estimate import Description, description_from
    from benchrun.runner.results.workloads import describe_rounds

    values = np.array([3.0, 1.0, 2.0, 5.0, 4.0, 2.5, 3.5, 1.5, 4.5, 2.0])
    for intervals in (True, False):
        d = description_from(describe_rounds(values, 0.95, intervals=intervals))
        assert d is not None
        assert d.rounds == 10 and d.confidence == 0.95
        assert d.median == float(np.median(values))
        assert (d.min, d.max) == (1.0, 5.0)
        assert d.deterministic is False
        # the median's CI only when computed with intervals (benchrun show leaves it out)
        assert (d.median_ci_low is None) is (not intervals)
    assert description_from(None) is None
    assert description_from({}) is None and Description().median is None


def test_drift_read_back_is_the_drift_check() -> None:
    from benchrun.runner.results.workloads import drift_from, drift_line, drift_of
    from benchrun.stats import drift_check

    rng = np.random.default_rng(5)
    stepped = np.concatenate([rng.normal(10.0, 0.05, 30), rng.normal(11.0, 0.05, 30)])
    check = drift_check(stepped)
    assert check.drifted  # a 10 % step over 0.5 % noise
    assert drift_from(drift_of(stepped)) == check
    line = drift_line("w", drift_of(stepped), paired=False)
    assert line is not None and check.describe() in line
    flat = rng.normal(10.0, 0.05, 60)
    assert drift_line("w", drift_of(flat), paired=False) is None
    assert drift_from(None) is None
