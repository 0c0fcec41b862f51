"""The estimated time left of an adaptive campaign (the live table, status.json, `benchrun
status`) never exceeds what max_time leaves: the campaign stops there (issue 17: the daemon
said 54 minutes left for a campaign with max_time 30 s)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from benchrun.runner.campaign.adaptive import eta_seconds


def _case() -> tuple[Any, Any]:
    decision = SimpleNamespace(
        active=("a", "b"),
        workloads={
            "a": SimpleNamespace(rounds_needed=10, rounds=4),
            "b": SimpleNamespace(rounds_needed=20, rounds=2),
        },
    )
    # a: 4 rounds in 2 s (0.5 s each); b: 2 rounds in 1 s (0.5 s each)
    states = {
        "a": SimpleNamespace(launched=4, seconds=2.0),
        "b": SimpleNamespace(launched=2, seconds=1.0),
    }
    return decision, states


def test_eta_is_the_rounds_needed_times_their_mean_time() -> None:
    decision, states = _case()
    assert eta_seconds(decision, states) == pytest.approx(10 * 0.5 + 20 * 0.5)


@pytest.mark.parametrize(("left", "expected"), [(5.0, 5.0), (100.0, 15.0), (-3.0, 0.0)])
def test_eta_stops_at_what_max_time_leaves(left: float, expected: float) -> None:
    decision, states = _case()
    assert eta_seconds(decision, states, left) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("cap", "expected"), [(None, 15.0), (10, 6 * 0.5 + 8 * 0.5), (3, 0 * 0.5 + 1 * 0.5)]
)
def test_eta_stops_at_what_max_rounds_leaves(cap: int | None, expected: float) -> None:
    """A workload needing 3 220 more rounds with 40 left of max_rounds stops in 40 (issue 32:
    "~35m14s left" 40 s before the campaign stopped at max_rounds)."""
    decision, states = _case()
    assert eta_seconds(decision, states, None, cap) == pytest.approx(expected)
