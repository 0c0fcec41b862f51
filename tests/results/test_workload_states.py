"""benchrun.runner.results.workloads.workload_states: the state ``show`` reports per workload, from the store's
eligibility flag, the campaign's status and mode, and the controller's events (docs/controller.md)."""

from __future__ import annotations

import pytest

from benchrun.runner.results.workloads import WorkloadResult, workload_states
from benchrun.runner.store.database import CampaignRow, EventRow


def _result(name: str, status: str = "active") -> WorkloadResult:
    return WorkloadResult(name, "s", "lower_is_better", 10, 10, 0, 0, status, None, None, None)


def _campaign(status: str, adaptive: bool) -> CampaignRow:
    return CampaignRow(
        1, "c", status, 0.0, 0.0, None, "", "", {"adaptive": adaptive}, None, "0", None, None
    )


DONE_A = [EventRow(1, 0.0, "workload-done", "a done", {"workload": "a", "rounds": 40})]


@pytest.mark.parametrize(
    ("campaign", "adaptive", "events", "expected"),
    [
        ("done", True, DONE_A, {"a": "done", "b": "unmet", "c": "stopped"}),
        ("running", True, DONE_A, {"a": "done", "b": "active", "c": "stopped"}),
        ("interrupted", True, [], {"a": "active", "b": "active", "c": "stopped"}),
        ("failed", True, DONE_A, {"a": "done", "b": "unmet", "c": "stopped"}),
        ("done", False, [], {"a": "done", "b": "done", "c": "stopped"}),
    ],
)
def test_states(campaign: str, adaptive: bool, events: list[EventRow], expected: dict) -> None:
    results = [_result("a"), _result("b"), _result("c", "stopped")]
    assert workload_states(results, _campaign(campaign, adaptive), events) == expected
