"""The read side's parse boundaries (issue 30): a stored or exported estimate, drift check,
pair and an export's campaign are read once into typed records, and a value of another type
(a hand-edited export) reads as missing instead of a traceback.

Expected values are the ones written in the documents here (a standard error worked out by
hand from s2_q and n_q, or from an interval's half-width over the normal quantile 1.95996).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchrun.runner.errors import UserError
from benchrun.runner.format import display_unit
from benchrun.runner.results.baseline import load_baseline
from benchrun.runner.results.duet import duet_checks, duet_lines, duet_summary
from benchrun.runner.results.estimate import description_from, estimate_from
from benchrun.runner.results.headline import PairFigures
from benchrun.runner.results.history import load_history
from benchrun.runner.results.workloads import drift_from, node_line
from benchrun.runner.store.records import EventRow

META = {"hardware": {"cpu_model": "X", "cores_logical": 4, "smt_active": False}}


def test_estimate_fields_of_another_type_read_as_missing() -> None:
    e = estimate_from(
        {
            "mean": 2,
            "n": "x",
            "s2_q": "0.1",
            "n_q": 3.0,
            "q": 2.5,
            "notes": "abc",
            "nodes": [],
            "enough": 1,
            "ci_low": None,
            "confidence": True,
        }  # fmt: skip
    )
    assert e is not None
    assert (e.mean, e.n, e.variance, e.n_q, e.q) == (2.0, 0, None, 3, None)
    assert e.notes == () and e.nodes is None and e.enough is True and e.confidence is None
    # without a mean that is a number there is no estimate
    assert estimate_from({"mean": "fast"}) is None


def test_description_and_drift_fields_of_another_type_read_as_missing() -> None:
    d = description_from({"rounds": "9", "median": 1.5, "outliers": 2.0, "notes": ["n"]})
    assert d is not None
    assert (d.rounds, d.median, d.outliers, d.notes, d.std) == (0, 1.5, None, ("n",), None)
    check = drift_from({"n": "x", "drifted": 1, "alpha": None, "level_low": "a", "blocks": 5})
    assert check is not None
    assert (check.n, check.drifted, check.alpha, check.level_low, check.blocks) == (
        0, True, 0.0, None, 5)  # fmt: skip


def test_pair_figures_of_a_baseline_and_the_ratio_of_its_means() -> None:
    f = PairFigures.from_stored(
        {
            "baseline": "old",
            "name": "new",
            "ratio": None,
            "mean": 3,
            "baseline_mean": 2.0,
            "passes": "20",
            "test": "welch",
        }  # fmt: skip
    )
    assert (f.a, f.b, f.ratio, f.mean, f.baseline_mean, f.passes) == (
        "old", "new", None, 3.0, 2.0, None)  # fmt: skip
    assert f.headline({"new": "s"}) == "new is 1.500x slower than old (Welch)"


def _export(collected: dict[str, object], **campaign: object) -> dict[str, object]:
    return {
        "campaign": {"status": "done", "name": "e", "metadata": META, **campaign},
        "workloads": [
            {"name": "a", "unit": "s", "collected": collected},
            {"name": "b", "collected": {"mean": "fast"}},
            "junk",
        ],
    }


def test_an_exported_campaign_gives_one_point_per_workload_with_an_estimate() -> None:
    col = {"mean": 0.1, "ci_low": 0.09, "ci_high": 0.11, "s2_q": 0.0004, "n_q": 4,
           "enough": True, "confidence": 0.95}  # fmt: skip
    (series,) = load_history([], [("x.json", _export(col, id="7", created_at="noon"))])
    assert (series.experiment, series.machine, series.workload, series.unit) == (
        "e", "X, 4 CPUs, SMT off", "a", "s")  # fmt: skip
    assert series.direction == "lower_is_better" and series.ordered_by == "start time"
    (p,) = series.points
    # an id or a start that is no number reads as 0
    assert (p.store, p.campaign, p.started, p.mean) == ("x.json", 0, 0.0, 0.1)
    assert p.se == pytest.approx(0.01)  # sqrt(0.0004 / 4)
    assert (p.ci_low, p.ci_high, p.certified) == (0.09, 0.11, True)


def test_exported_names_units_and_directions_of_another_type_read_as_missing() -> None:
    doc = _export({"mean": 0.1}, name=7, status="done", created_at=True)
    doc["workloads"] = [{"unit": 3, "direction": ["up"], "collected": {"mean": 0.1}}]
    (series,) = load_history([], [("x.json", doc)])
    # no experiment name, no workload name: "?"; no text unit: none; no direction: lower
    assert (series.experiment, series.workload, series.unit, series.direction) == (
        "?", "?", "", "lower_is_better")  # fmt: skip
    assert series.points[0].started == 0.0  # true is no start time


def test_an_uncertified_interval_gives_the_standard_error_of_its_half_width() -> None:
    col = {"mean": 1.0, "ci_low": None, "interval_low": 0.9, "interval_high": 1.1,
           "certified": False, "confidence": 0.95}  # fmt: skip
    (series,) = load_history([], [("x.json", _export(col, id=3, created_at=5.0))])
    (p,) = series.points
    assert (p.campaign, p.started, p.certified) == (3, 5.0, False)
    assert (p.ci_low, p.ci_high) == (0.9, 1.1)
    assert p.se == pytest.approx(0.1 / 1.959964, rel=1e-6)


def test_a_non_finite_mean_gives_no_point() -> None:
    with pytest.raises(UserError, match="no finished campaign"):
        load_history([], [("x.json", _export({"mean": math.inf}))])


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "x.json: not a benchrun export (no campaign object)"),
        ({"campaign": "c", "workloads": []}, "x.json: not a benchrun export (no campaign object)"),
        ({"campaign": {}, "workloads": {}}, "x.json: not a benchrun export (no workloads list)"),
    ],
)
def test_a_document_that_is_no_export_is_one_line(doc: object, message: str) -> None:
    with pytest.raises(UserError) as err:
        load_history([], [("x.json", doc)])
    assert str(err.value) == message


def test_a_campaign_that_did_not_finish_gives_no_series() -> None:
    with pytest.raises(UserError, match="no finished campaign"):
        load_history([], [("x.json", _export({"mean": 1.0}, status="interrupted"))])


NODES = {"nodes": ["n1", "n2"], "means": [0.1, 0.2], "counts": [3, 1],
         "text": "CI from 2 node means: nodes differ", "ci_from": "nodes", "icc": 0.5,
         "between_variance": 0.0004, "within_variance": 0.0001, "optimal_per_node": 2}  # fmt: skip


def test_the_node_line_reads_the_node_analysis_record() -> None:
    unit = display_unit("s", 0.1)
    line = node_line("a", {"mean": 0.1, "nodes": NODES}, unit)
    assert line == (
        "nodes: a: CI from 2 node means: nodes differ; n1 100 ms (3 means), n2 200 ms (1 mean); "
        "between-node sd 20 ms, within 10 ms, ICC 0.50; about 2 mean(s) per node is the "
        "cheapest precision, more nodes narrow the CI"
    )
    # the CI not from the nodes, no ICC, variances that are no numbers: read as missing
    plain = {**NODES, "ci_from": "rounds", "icc": None, "between_variance": "x"}
    assert node_line("a", {"mean": 0.1, "nodes": plain}, unit) == (
        "nodes: a: CI from 2 node means: nodes differ; n1 100 ms (3 means), n2 200 ms (1 mean); "
        "between-node sd 0 ms, within 10 ms"
    )
    assert node_line("a", {"mean": 0.1, "nodes": None}, unit) is None
    assert node_line("a", None, unit) is None


def test_duet_checks_read_from_events_and_from_their_json_form() -> None:
    data = {"pair": ["a", "b"], "computed": True, "flagged": True, "verdict_valid": False,
            "solo_ratio": 1.25, "solo_low": 1.2, "solo_high": 1.3, "n_solo": 8}  # fmt: skip
    events = [
        EventRow(1, 0.0, "duet-multi-cpu", "duet: b used 2 CPUs", {"side": "b"}),
        EventRow(2, 1.0, "duet-asymmetry", "duet: asymmetric", data),
    ]
    checks = duet_checks(events)
    assert checks is not None and checks.bad
    expected = [
        "duet: b used 2 CPUs (the campaign stopped here)",
        "duet: asymmetric",
        "duet verdict INVALID (duet asymmetry: refuse): the pair interferes asymmetrically; "
        "alone, in the solo passes, b/a = 1.25 [1.2, 1.3] (8 passes)",
    ]
    assert checks.lines() == expected
    summary = duet_summary(events)
    assert summary == {
        "asymmetry": {**data, "message": "duet: asymmetric"},
        "multi_cpu": [{"side": "b", "message": "duet: b used 2 CPUs"}],
    }
    assert duet_lines(summary) == expected
    # a check without solo passes: no verdict said, nothing refused
    quiet = [EventRow(3, 2.0, "duet-asymmetry", "duet: no check", {"pair": ["a", "b"]})]
    assert duet_lines(duet_summary(quiet)) == ["duet: no check"]
    assert duet_summary([]) is None and duet_lines(None) == []


def test_a_json_baseline_entry_is_read_under_its_field_names_or_the_collectors(
    tmp_path: Path,
) -> None:
    doc = {"workloads": [
        {"name": "a", "collected": {"mean": 2.0, "s2_q": 0.5, "n_q": 4}},
        # a variance written as null is no variance (s2_q is the name of a missing one)
        {"name": "b", "mean": 1.0, "variance": None, "s2_q": 0.1, "n_q": 4},
        {"name": "c", "mean": 1.0, "variance": 0.1, "n_q": 1},
        {"name": "d", "mean": "1.5", "variance": 0.1, "n_q": 3, "q": 2},
    ]}  # fmt: skip
    path = tmp_path / "base.json"
    path.write_text(json.dumps(doc))
    got = load_baseline(path)
    assert {k: v.as_tuple() for k, v in got.items()} == {
        "a": (2.0, 0.5, 4, 1),
        "d": (1.5, 0.1, 3, 2),
    }
