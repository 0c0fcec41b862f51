"""What the loops read back from stored events (runner/campaign/adaptive.py,
runner/campaign/revisions.py): the shape they wrote is read, anything else is skipped."""

from __future__ import annotations

from typing import Any

from benchrun.runner.campaign.adaptive import calibrated_works
from benchrun.runner.campaign.revisions import revision_of
from benchrun.runner.store.records import CampaignRow, EventRow


def _event(i: int, kind: str, data: object) -> EventRow:
    return EventRow(i, float(i), kind, "m", data)  # type: ignore[arg-type]  # hostile data


def test_calibrated_work_is_the_newest_event_of_each_workload() -> None:
    events = [
        _event(1, "calibrated", {"workload": "a", "work": 10, "target_s": 0.1}),
        _event(2, "calibrated", {"workload": "b", "work": 7}),
        _event(3, "calibrated", {"workload": "a", "work": 40}),
        _event(4, "launch-overhead", {"workload": "c", "work": 3}),
        _event(5, "calibrated", {"workload": "c", "work": "many"}),
        _event(6, "calibrated", {"work": 5}),
        _event(7, "calibrated", None),
        _event(8, "calibrated", ["a", 1]),
    ]
    assert calibrated_works(events) == {"a": 40, "b": 7}


def _campaign(metadata: dict[str, Any] | None) -> CampaignRow:
    return CampaignRow(1, "e", "done", 0.0, 0.0, None, "", "fp", {}, metadata, "0", None, None)


def test_a_campaign_without_a_revision_record_has_none() -> None:
    revision = revision_of(_campaign({"revision": {"label": "v1", "commit": "abc"}}))
    assert revision is not None and (revision.label, revision.commit) == ("v1", "abc")
    assert revision_of(_campaign(None)) is None
    assert revision_of(_campaign({"revision": "v1"})) is None
    assert revision_of(_campaign({"machine": {}})) is None
