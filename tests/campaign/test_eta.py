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


def test_the_shown_time_left_is_the_median_of_the_latest_estimates() -> None:
    """Raw estimates that jump between 2 and 35 minutes now and then (issue 32) are shown
    as the median of the latest five finishing times, counted down to now; no estimate
    clears the window."""
    from benchrun.runner.campaign.adaptive import ETA_WINDOW, steady_eta

    history: list[float] = []
    raws = [120.0, 2100.0, 130.0, 125.0, 2000.0, 118.0, 122.0, 119.0, 2050.0, 116.0]
    shown = [steady_eta(history, r, elapsed=float(i)) for i, r in enumerate(raws)]
    ends = [r + i for i, r in enumerate(raws)]
    for i, got in enumerate(shown):
        window = sorted(ends[max(0, i + 1 - ETA_WINDOW) : i + 1])
        k = len(window)
        mid = window[k // 2] if k % 2 else (window[k // 2 - 1] + window[k // 2]) / 2
        assert got == pytest.approx(max(0.0, mid - i))
    assert max(shown[2:]) < 200  # a spike now and then no longer shows
    assert steady_eta(history, None, elapsed=9.0) is None and history == []
