"""The controller's verdict records (runner/control/verdictbook.py): the stored JSON keys
are the store's event format (docs/export-format.md), written here by hand; a record of
another shape is refused with BadRecord, not taken."""

from __future__ import annotations

import json

import pytest

from benchrun.runner.control.controller import Controller, ControllerParams
from benchrun.runner.control.verdictbook import (
    BadRecord,
    BaselineRecord,
    OwnLook,
    PairRecord,
    as_declared,
)

#: a campaign-look pair verdict as the store holds it (keys in this order)
PAIR_JSON = (
    '{"a": "x", "b": "y", "verdict": "separated", "look": 3, "alpha": 0.005, '
    '"welch_p_holm": 0.001, "tost_p": 0.9, "relative_difference": 0.25, "test": "welch"}'
)
#: an own-look baseline verdict as the store holds it
BASE_JSON = (
    '{"name": "y", "baseline": "x", "verdict": "faster", "look": 2, "alpha": 0.002, '
    '"relative_change": -0.1, "welch_p_holm": 0.0001, "tost_p": 1.0, "test": "paired", '
    '"paired_test": "rank", "estimand": "median per-pass ratio", "passes": 40, "units": 40, '
    '"q": 1, "certified": false}'
)


def test_a_pair_record_writes_the_stored_keys_in_order() -> None:
    rec = PairRecord("x", "y", "separated", 3, 0.005, 0.001, 0.9, 0.25, "welch")
    assert json.dumps(rec.to_json()) == PAIR_JSON
    assert PairRecord.from_json(json.loads(PAIR_JSON)) == rec
    assert rec.key == frozenset({"x", "y"})


def test_an_own_look_baseline_record_round_trips() -> None:
    own = OwnLook("rank", "median per-pass ratio", 40, 40, 1, False)
    rec = BaselineRecord("y", "x", "faster", 2, 0.002, -0.1, 0.0001, 1.0, "paired", own)
    assert json.dumps(rec.to_json()) == BASE_JSON
    assert BaselineRecord.from_json(json.loads(BASE_JSON)) == rec


def test_an_own_look_record_without_certified_is_not_certified() -> None:
    d = json.loads(BASE_JSON)
    del d["certified"]
    own = BaselineRecord.from_json(d).own
    assert own is not None and own.certified is False and own.passes == 40


def test_an_old_record_without_test_reads_as_welch() -> None:
    d = json.loads(PAIR_JSON)
    del d["test"]
    assert PairRecord.from_json(d).test == "welch"


@pytest.mark.parametrize(
    ("change", "said"),
    [
        # an undecided comparison has no record
        (
            {"verdict": "undecided"},
            "field 'verdict' is 'undecided', not one of separated, equivalent",
        ),
        ({"verdict": 1}, "field 'verdict' is 1, not one of separated, equivalent"),
        ({"look": "3"}, "field 'look' is '3', not an integer"),
        ({"look": True}, "field 'look' is True, not an integer"),
        ({"alpha": float("nan")}, "field 'alpha' is nan, not a finite number"),
        ({"alpha": None}, "field 'alpha' is missing"),
        ({"relative_difference": float("inf")}, "field 'relative_difference' is inf, not a finite"),
        ({"a": None}, "field 'a' is missing"),
        ({"test": "anova"}, "field 'test' is 'anova', not one of "),
        ({"passes": 4}, "field 'paired_test' is missing"),  # own-look keys come together
    ],
)
def test_a_record_of_another_shape_is_refused(change: dict[str, object], said: str) -> None:
    d = {**json.loads(PAIR_JSON), **change}
    with pytest.raises(BadRecord) as refused:
        PairRecord.from_json(d)
    assert str(refused.value).startswith("verdict record: " + said)


def test_not_an_object_is_refused() -> None:
    with pytest.raises(BadRecord, match="^verdict record: not a JSON object$"):
        PairRecord.from_json([1, 2])
    with pytest.raises(BadRecord, match="^baseline verdict record: not a JSON object$"):
        BaselineRecord.from_json("faster")
    with pytest.raises(ValueError):
        as_declared("undecided")


def test_a_restored_controller_keeps_the_stored_verdicts() -> None:
    params = ControllerParams(max_rounds=100)
    state = {"verdicts": [json.loads(PAIR_JSON)], "baseline_verdicts": []}
    c = Controller(params, [("x", "lower_is_better"), ("y", "lower_is_better")], state=state)
    assert c.state()["verdicts"] == [json.loads(PAIR_JSON)]
