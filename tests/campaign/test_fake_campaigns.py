"""The campaign loops (fixed, adaptive, resume, interrupts) with the fake executor.

The store is real SQLite and the controller the real one; only the processes are scripted
(runner/execute/fake.py), so each campaign takes a fraction of a second and its truth is
known: the scripted means, the scripted failures, the launch at which SIGINT arrives.
"""

from __future__ import annotations

import math
import os
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.campaign.scheduler import pass_order
from benchrun.runner.config.experiment import Experiment
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec
from benchrun.runner.execute.fake import (
    FakeExecutor,
    FakeRound,
    constant,
    failing_every,
    lognormal,
)
from benchrun.runner.results.workloads import final_verdicts
from benchrun.runner.store.database import Store


class NullDisplay:
    """A Display that remembers what it was told and prints nothing."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.rounds = 0

    def start(self, campaign: Any, targets: dict[str, int], done: dict[str, int]) -> None:
        pass

    def round_done(
        self, workload: str, outcome: RoundOutcome, value: float | None, warmup: bool
    ) -> None:
        self.rounds += 1

    def message(self, text: str) -> None:
        self.messages.append(text)

    def show_decision(self, decision: Any, eta_s: float | None) -> None:
        pass

    def stop(self) -> None:
        pass


def experiment(
    tmp_path: Path, settings: str, names: tuple[str, ...] = ("a", "b"), top: str = ""
) -> Experiment:
    workloads = "\n".join(f"  - name: {n}\n    command: [work, {n}]" for n in names)
    text = (
        f"name: fake\noutput: {tmp_path / 'out'}\n{top}\nsettings:\n"
        + "".join(f"  {line}\n" for line in settings.strip().splitlines())
        + f"workloads:\n{workloads}\n"
    )
    return parse_experiment(text, base_dir=tmp_path, check_commands=False)


def stored(exp: Experiment) -> tuple[Any, dict[str, list[Any]], list[Any]]:
    with Store.open(exp.db_path) as store:
        campaign = store.campaign()
        rounds = {w.name: store.rounds(campaign.id, w.id) for w in store.workloads(campaign.id)}
        return campaign, rounds, store.events(campaign.id)


FIXED = "adaptive: false\nrounds: 6\nwarmup_rounds: 2\npin: none\nseed: 7"


def test_fixed_mode_stores_warmup_plus_rounds_in_the_scheduled_order(tmp_path: Path) -> None:
    exp = experiment(tmp_path, FIXED, ("a", "b", "c"))
    fake = FakeExecutor({n: constant(0.01) for n in ("a", "b", "c")})
    out = run_campaign(exp, fake, NullDisplay())
    assert (out.status, out.exit_code) == ("done", 0)
    campaign, rounds, _ = stored(exp)
    assert {n: len(r) for n, r in rounds.items()} == {"a": 8, "b": 8, "c": 8}
    assert [sum(r.warmup for r in rs) for rs in rounds.values()] == [2, 2, 2]
    # the launch order is the scheduler's seeded permutation of every pass
    expected = [n for p in range(8) for n in pass_order(["a", "b", "c"], p, "interleaved", 7)]
    assert [s.workload for s in fake.launched] == expected


def test_a_campaign_stores_its_parsed_experiment(tmp_path: Path) -> None:
    """The session writes the parsed experiment (schema 6), so readers need not parse
    the YAML again: what it stored reads back as the experiment that ran."""
    from benchrun.runner.results.comparisons import stored_experiment

    exp = experiment(tmp_path, FIXED)
    run_campaign(exp, FakeExecutor({"a": constant(0.25), "b": constant(0.5)}), NullDisplay())
    campaign, _, _ = stored(exp)
    assert campaign.experiment_json not in (None, "null")
    back = stored_experiment(campaign, ("a", "b"))
    assert back is not None and back.workloads == exp.workloads and back.name == "fake"


def test_fixed_mode_wall_times_are_the_scripted_ones(tmp_path: Path) -> None:
    exp = experiment(tmp_path, FIXED)
    fake = FakeExecutor({"a": constant(0.25), "b": constant(0.5)})
    run_campaign(exp, fake, NullDisplay())
    _, rounds, _ = stored(exp)
    assert {r.wall_ns for r in rounds["a"]} == {250_000_000}
    assert {r.wall_ns for r in rounds["b"]} == {500_000_000}


def test_a_workload_failing_every_round_is_stopped_and_the_other_finishes(
    tmp_path: Path,
) -> None:
    exp = experiment(tmp_path, FIXED + "\nmax_consecutive_failures: 3")
    fake = FakeExecutor({"a": constant(0.01), "b": failing_every(1, constant(0.01))})
    display = NullDisplay()
    out = run_campaign(exp, fake, display)
    assert out.exit_code == 1
    _, rounds, _ = stored(exp)
    assert sum(r.status == "ok" for r in rounds["a"]) == 8
    assert [r.status for r in rounds["b"]] == ["failed"] * 3
    assert any("b" in m and "stopped" in m for m in display.messages)


def test_timeouts_are_stored_as_such(tmp_path: Path) -> None:
    exp = experiment(tmp_path, FIXED + "\ntimeout: 1s\nmax_consecutive_failures: 2")
    fake = FakeExecutor({"a": constant(0.01), "b": constant(5.0)})
    run_campaign(exp, fake, NullDisplay())
    _, rounds, _ = stored(exp)
    assert {r.status for r in rounds["b"]} == {"timeout"}
    assert {r.wall_ns for r in rounds["b"]} == {1_000_000_000}


def test_sigint_at_a_chosen_launch_interrupts_and_resume_completes_without_duplicates(
    tmp_path: Path,
) -> None:
    exp = experiment(tmp_path, FIXED)

    def sigint_at_launch_5(spec: RoundSpec, i: int) -> None:
        if i == 5:
            os.kill(os.getpid(), signal.SIGINT)

    first = FakeExecutor({"a": constant(0.01), "b": constant(0.02)}, on_launch=sigint_at_launch_5)
    out = run_campaign(exp, first, NullDisplay())
    assert out.status == "interrupted" and out.exit_code == 128 + signal.SIGINT
    assert first.interrupts == 1
    _, rounds, _ = stored(exp)
    assert sum(len(r) for r in rounds.values()) == 5  # launches 0..4; the 6th was killed

    second = FakeExecutor({"a": constant(0.01), "b": constant(0.02)})
    out = run_campaign(exp, second, NullDisplay(), resume=True)
    assert (out.status, out.exit_code) == ("done", 0)
    _, rounds, _ = stored(exp)
    for rs in rounds.values():
        assert len(rs) == 8
        assert len({r.round_index for r in rs}) == 8  # no round stored twice
    # resume continues the uninterrupted schedule: together the two runs launched it
    expected = [n for p in range(8) for n in pass_order(["a", "b"], p, "interleaved", 7)]
    assert [s.workload for s in first.launched[:5] + second.launched] == expected


ADAPTIVE = """
pin: none
seed: 3
max_rounds: 400
max_time: 10min
ci_rel_width: 0.02
"""


def test_adaptive_separates_a_ten_percent_pair_in_the_right_order(tmp_path: Path) -> None:
    exp = experiment(tmp_path, ADAPTIVE, top="compare: [[a, b]]")
    fake = FakeExecutor({"a": lognormal(0.10, 0.03, seed=1), "b": lognormal(0.11, 0.03, seed=2)})
    out = run_campaign(exp, fake, NullDisplay())
    assert out.exit_code == 0
    _, rounds, events = stored(exp)
    verdicts = final_verdicts(events)
    assert verdicts is not None and verdicts["conditions_met"]
    (pair,) = verdicts["pairs"]
    assert pair["verdict"] == "separated"
    assert (pair["a"], pair["b"]) == ("a", "b")  # a is the faster
    # the stored ratio CI holds the true ratio 1.1
    assert pair["ratio_low"] <= 1.1 <= pair["ratio_high"]
    assert max(len(r) for r in rounds.values()) < 400


def test_adaptive_ends_equivalent_for_identical_twins(tmp_path: Path) -> None:
    exp = experiment(tmp_path, ADAPTIVE + "margin: 0.05", top="compare: [[a, b]]")
    fake = FakeExecutor({"a": lognormal(0.1, 0.03, seed=5), "b": lognormal(0.1, 0.03, seed=6)})
    run_campaign(exp, fake, NullDisplay())
    _, _, events = stored(exp)
    verdicts = final_verdicts(events)
    assert verdicts is not None
    assert [p["verdict"] for p in verdicts["pairs"]] == ["equivalent"]


def test_paired_comparison_cancels_a_shared_drift(tmp_path: Path) -> None:
    """A 3 % pair on a machine whose speed swings by +-20 % over the campaign: the paired
    ratio CI covers the truth 1.03 (the drift is shared by both sides of each pass)."""
    exp = experiment(tmp_path, ADAPTIVE, top="compare: [[a, b]]")

    def swing(clock: float) -> float:
        return 1.0 + 0.2 * math.sin(clock)

    fake = FakeExecutor(
        {
            "a": lognormal(0.10, 0.01, seed=11, drift=swing),
            "b": lognormal(0.103, 0.01, seed=12, drift=swing),
        }
    )
    run_campaign(exp, fake, NullDisplay())
    _, rounds, events = stored(exp)
    verdicts = final_verdicts(events)
    assert verdicts is not None
    (pair,) = verdicts["pairs"]
    assert pair["test"] == "paired"
    assert pair["ratio_low"] <= 1.03 <= pair["ratio_high"]
    # the drift is real: the per-round times of a alone vary far more than its 1 % noise
    a = np.array([r.wall_ns for r in rounds["a"] if not r.warmup], dtype=float)
    assert np.std(a) / np.mean(a) > 0.03


def test_budget_stop_is_stored_with_its_reason(tmp_path: Path) -> None:
    exp = experiment(
        tmp_path, "pin: none\nseed: 3\nmax_rounds: 12\nci_rel_width: 0.001", top="compare: [[a, b]]"
    )
    fake = FakeExecutor({"a": lognormal(0.1, 0.2, seed=1), "b": lognormal(0.1, 0.2, seed=2)})
    run_campaign(exp, fake, NullDisplay())
    campaign, rounds, events = stored(exp)
    assert max(sum(not x.warmup for x in r) for r in rounds.values()) <= 12
    verdicts = final_verdicts(events)
    assert verdicts is not None and not verdicts["conditions_met"]
    assert "max_rounds" in (campaign.stop_reason or "")


def test_readings_metric_gets_the_scripted_readings(tmp_path: Path) -> None:
    text = (
        f"name: fake\noutput: {tmp_path / 'out'}\nsettings:\n  adaptive: false\n  rounds: 4\n"
        "  warmup_rounds: 0\n  pin: none\nworkloads:\n  - name: r\n    command: [work]\n"
        "    metric: readings\n    readings: {pattern: 'v=(\\S+)'}\n"
    )
    exp = parse_experiment(text, base_dir=tmp_path, check_commands=False)
    values = (1.0, 2.0, 3.0)
    fake = FakeExecutor({"r": lambda spec, k, clock: FakeRound(0.01, readings=values)})
    run_campaign(exp, fake, NullDisplay())
    _, rounds, _ = stored(exp)
    assert len(rounds["r"]) == 4
    assert all(r.readings == pytest.approx(values) for r in rounds["r"])


def test_lognormal_script_has_the_asked_mean_and_cv() -> None:
    """The script's own truth, checked against the lognormal's closed form by simulation."""
    script = lognormal(0.2, 0.1, seed=4)
    spec = RoundSpec(workload="x", argv=("x",), env={}, timeout=60.0)
    walls = np.array([script(spec, k, 0.0).wall_s for k in range(20000)])
    ci = sps.t.interval(0.999, walls.size - 1, loc=walls.mean(), scale=sps.sem(walls))
    assert ci[0] < 0.2 < ci[1]
    assert walls.std(ddof=1) / walls.mean() == pytest.approx(0.1, rel=0.05)
