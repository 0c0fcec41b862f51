"""status.json as one record (runner/campaign/livestatus.py): written in the historical
key order, read back defensively (the file lies in a campaign directory)."""

from __future__ import annotations

import json
import math

from benchrun.runner.campaign.livestatus import LiveStatus, LiveWorkload


def test_status_json_keeps_its_keys_order_and_values() -> None:
    status = LiveStatus(
        campaign_id=3,
        name="demo",
        updated_at=1.7e9,
        elapsed_s=12.5,
        eta_s=None,
        stop=False,
        reason="CI too wide",
        workloads={
            "a": LiveWorkload(
                rounds=9, steady=7, failed=1, contended=0, mean=0.5, ci_low=math.nan,
                ci_high=0.6, q=3, n_q=2, rel_half_width=0.1, target=0.02, done=False,
                active=True, rounds_needed=40, unmet=("width",), waiting_for=(), stopped=None,
            )
        },
        undecided=("a~b",),
    )  # fmt: skip
    text = status.to_json()
    doc = json.loads(text)
    assert list(doc) == [
        "version", "campaign_id", "name", "updated_at", "elapsed_s", "eta_s", "stop",
        "reason", "workloads", "undecided", "pairs", "baselines",
    ]  # fmt: skip
    assert doc["version"] == 1 and doc["pairs"] == [] and doc["undecided"] == ["a~b"]
    assert doc["workloads"]["a"] == {
        "rounds": 9, "steady": 7, "failed": 1, "contended": 0, "mean": 0.5, "ci_low": None,
        "ci_high": 0.6, "q": 3, "n_q": 2, "rel_half_width": 0.1, "target": 0.02,
        "done": False, "active": True, "rounds_needed": 40, "unmet": ["width"],
        "waiting_for": [], "stopped": None,
    }  # fmt: skip
    assert text.startswith('{\n "version": 1,\n "campaign_id": 3,')  # indent=1, as before
    back = LiveStatus.from_json(text)
    assert back is not None
    assert back.workloads["a"].ci_low is None and back.workloads["a"].unmet == ("width",)
    assert (back.campaign_id, back.reason, back.eta_s, back.undecided) == (
        3, "CI too wide", None, ("a~b",)
    )  # fmt: skip


def test_a_hostile_status_json_reads_as_unknowns() -> None:
    doc = {
        "campaign_id": 2,
        "eta_s": True,
        "elapsed_s": "long",
        "reason": ["x"],
        "undecided": "a~b",
        "workloads": {
            "a": {"rounds": 1.5, "done": 1, "rel_half_width": 0.25, "unmet": [1, "w"]},
            "ghost": "nonsense",
            "b": {"rounds_needed": False, "stopped": "failures"},
        },
    }
    status = LiveStatus.from_json(json.dumps(doc))
    assert status is not None
    assert (status.eta_s, status.elapsed_s, status.reason, status.undecided) == (
        None, None, None, ()
    )  # fmt: skip
    assert list(status.workloads) == ["a", "b"]
    a, b = status.workloads["a"], status.workloads["b"]
    assert (a.rounds, a.done, a.rel_half_width, a.unmet) == (None, None, 0.25, ("1", "w"))
    assert (b.rounds_needed, b.stopped) == (None, "failures")


def test_status_json_that_is_no_object_or_names_no_campaign_number_is_none() -> None:
    assert LiveStatus.from_json("{truncated") is None
    assert LiveStatus.from_json("[1, 2]") is None
    assert LiveStatus.from_json('{"campaign_id": "2"}') is None
    assert LiveStatus.from_json("{}") == LiveStatus(campaign_id=None)
