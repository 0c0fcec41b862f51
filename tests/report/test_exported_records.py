"""An export parsed once into typed records (runner/report/exported.py): what compare reads
of a hand-written file, the defaults of missing fields, and one line for a bad one."""

from __future__ import annotations

import pytest

from benchrun.runner.errors import UserError
from benchrun.runner.importers.benchrun_export import FORMAT
from benchrun.runner.report.exported import ExportDocument, ExportedRound


def _doc(*workloads: dict, campaign: object = None) -> dict:
    doc: dict = {"format": FORMAT, "version": 1, "workloads": list(workloads)}
    if campaign is not None:
        doc["campaign"] = campaign
    return doc


def test_result_becomes_the_estimate_with_the_written_values() -> None:
    result = {
        "mean": 2.5, "variance": 0.04, "n_q": 8, "q": 4, "ci_low": 2.4, "ci_high": 2.6,
        "n": 32, "enough": True, "certified": True,
        "level_shift_at": 5, "level_shift_change": 0.5,
    }  # fmt: skip
    doc = ExportDocument.from_json(
        _doc({"name": "w", "unit": "s", "result": result}, campaign={"name": "c", "id": 7}),
        "run.json",
    )
    (w,) = doc.workloads
    e = w.estimate
    assert e is not None
    assert (e.mean, e.variance, e.n_q, e.q) == (2.5, 0.04, 8, 4)
    assert (e.ci_low, e.ci_high, e.n, e.enough, e.certified) == (2.4, 2.6, 32, True, True)
    assert (w.name, w.unit, w.direction) == ("w", "s", "lower_is_better")
    # level_shift_at is 0-based among the steady rounds: the words count from 1
    assert w.level_shift == "level shift at round 6 (+50 %)" and w.level_shift_at == 5
    assert w.readings is None and w.rounds == ()
    assert (doc.campaign_name, doc.campaign_id, doc.metadata) == ("c", 7, None)


def test_missing_fields_take_the_defaults_compare_used() -> None:
    doc = ExportDocument.from_json(
        _doc(
            {"name": "w", "result": {"variance": 1.0}},
            {"name": "v", "direction": "higher_is_better"},
        ),
        "run.json",
    )
    a, b = doc.workloads
    assert a.estimate is None  # a result without a mean is no estimate
    assert a.unit == "" and a.level_shift is None and a.level_shift_at is None
    assert b.direction == "higher_is_better" and b.estimate is None
    # no campaign object: its name prints as before ("None (export)"), no id, no record
    assert (doc.campaign_name, doc.campaign_id, doc.metadata) == ("None", None, None)


def test_rounds_say_their_conditions() -> None:
    rounds = [
        {"readings": [1.0], "status": "ok"},
        {"readings": [1.0], "status": "ok", "warmup": True},
        {"readings": [1.0], "status": "ok", "flags": "contended"},
        {"readings": [], "status": "failed", "flags": "contended"},
        {"readings": [], "status": "failed"},
        {"readings": [1.0]},  # no status: not ok
    ]
    doc = ExportDocument.from_json(
        _doc({"name": "w", "rounds": rounds}, campaign={"metadata": {"hardware": {}}}), "x"
    )
    (w,) = doc.workloads
    assert [(r.ok, r.warmup, r.contended) for r in w.rounds] == [
        (True, False, False),
        (True, True, False),
        (True, False, True),
        (False, False, True),
        (False, False, False),
        (False, False, False),
    ]
    assert [r.counted for r in w.rounds] == [True, False, True, True, False, False]
    assert w.readings is not None and list(w.readings) == [1.0, 1.0, 1.0, 1.0]
    assert doc.metadata == {"hardware": {}}


def test_flags_that_are_not_text_hold_no_flag() -> None:
    assert not ExportedRound.from_json({"status": "ok", "flags": ["contended"]}).contended


def test_a_campaign_id_that_is_not_a_number_is_no_id() -> None:
    for bad in (True, "7", 7.5):
        doc = ExportDocument.from_json(_doc(campaign={"id": bad}), "x")
        assert doc.campaign_id is None


def test_a_result_count_that_is_not_a_number_reads_as_missing() -> None:
    """A hand-edited export's count of another type reads as missing (0 readings), as the
    one reader of estimates does (results/estimate.py ``estimate_from``)."""
    doc = ExportDocument.from_json(_doc({"name": "w", "result": {"mean": 1.0, "n": "many"}}), "x")
    (w,) = doc.workloads
    assert w.estimate is not None and (w.estimate.mean, w.estimate.n) == (1.0, 0)


def test_not_an_export_is_refused_as_the_checker_does() -> None:
    with pytest.raises(UserError, match="not a benchrun export"):
        ExportDocument.from_json({"format": "other"}, "x.json")
    with pytest.raises(UserError, match=r"workloads\[0\].name"):
        ExportDocument.from_json(_doc({"unit": "s"}), "x.json")


def test_a_level_shift_that_is_not_a_number_is_no_level_shift() -> None:
    doc = ExportDocument.from_json(
        _doc({"name": "w", "result": {"mean": 1.0, "level_shift_at": "late"}}), "x"
    )
    (w,) = doc.workloads
    assert w.level_shift is None and w.level_shift_at is None
    # a size that is not a number is left out; the round (3, printed 1-based) is known
    bad = {"level_shift_at": 3, "level_shift_change": "big"}
    doc = ExportDocument.from_json(_doc({"name": "w", "result": {"mean": 1.0, **bad}}), "x")
    (w,) = doc.workloads
    assert w.level_shift == "level shift at round 4"
    assert w.level_shift_at == 3  # the round is a number: the conditions know it
