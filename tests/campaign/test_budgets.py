"""``max_time`` bounds everything a campaign does: fixed rounds, calibration, adaptive passes.

The rounds are the fake executor's; the budget is wall-clock time, so each fake launch
sleeps a known real time and the test checks the campaign stopped where the budget says.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path

from test_fake_campaigns import NullDisplay, experiment, stored

from benchrun.runner.campaign.budget import Budget, spent_before
from benchrun.runner.campaign.calibrate import MAX_STEPS, calibrate
from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.config.schema import MAX_WORK
from benchrun.runner.execute.executor import RoundSpec
from benchrun.runner.execute.fake import FakeExecutor, FakeRound, constant
from benchrun.runner.store.database import SCHEMA_VERSION, Store
from benchrun.runner.store.spans import SpanHeartbeat

SLEEP_S = 0.01  # real seconds each fake launch takes


def _sleepy(spec: RoundSpec, i: int) -> None:
    time.sleep(SLEEP_S)


def test_fixed_mode_stops_at_max_time_with_a_clear_reason(tmp_path: Path) -> None:
    exp = experiment(
        tmp_path, "adaptive: false\nrounds: 100000000\nwarmup_rounds: 0\npin: none\nmax_time: 0.3"
    )
    fake = FakeExecutor({"a": constant(0.001), "b": constant(0.001)}, on_launch=_sleepy)
    display = NullDisplay()
    t0 = time.monotonic()
    out = run_campaign(exp, fake, display)
    wall = time.monotonic() - t0
    # 0.3 s of 10 ms launches: about 30, never the 2e8 asked for
    assert 10 <= len(fake.launched) <= 0.3 / SLEEP_S + 5
    assert wall < 5
    campaign, rounds, _ = stored(exp)
    assert sum(len(r) for r in rounds.values()) == len(fake.launched)
    assert out.exit_code == 0 and "max_time 0.3 s reached" in out.message
    assert "max_time 0.3 s reached" in (campaign.stop_reason or "")
    assert any("raise max_time or lower rounds" in m for m in display.messages)


def test_resume_counts_the_time_already_spent(tmp_path: Path) -> None:
    exp = experiment(
        tmp_path, "adaptive: false\nrounds: 100000000\nwarmup_rounds: 0\npin: none\nmax_time: 0.3"
    )

    def sigint_at_launch_4(spec: RoundSpec, i: int) -> None:
        if i == 4:
            os.kill(os.getpid(), signal.SIGINT)

    # four stored rounds of 0.1 s each: 0.4 s, more than the 0.3 s budget
    first = FakeExecutor({"a": constant(0.1), "b": constant(0.1)}, on_launch=sigint_at_launch_4)
    assert run_campaign(exp, first, NullDisplay()).status == "interrupted"
    again = FakeExecutor({"a": constant(0.1), "b": constant(0.1)})
    out = run_campaign(exp, again, NullDisplay(), resume=True)
    assert again.launched == [] and "max_time" in out.message


def test_calibration_stops_growing_work_when_the_budget_is_spent(tmp_path: Path) -> None:
    text = (
        f"name: cal\noutput: {tmp_path / 'out'}\nsettings: {{pin: none, warmup_rounds: 0, "
        "min_round_time: 1h, max_time: 0.2, timeout: 2h}\n"
        "workloads:\n  - {name: a, command: 'w {work}', work: 1}\n"
    )
    exp = parse_experiment(text, base_dir=tmp_path, check_commands=False)

    def tiny(spec: RoundSpec, k: int, clock: float) -> FakeRound:
        return FakeRound(wall_s=1e-6)  # never reaches the hour: only the budget stops it

    fake = FakeExecutor({"a": tiny}, on_launch=lambda spec, i: time.sleep(0.05))
    out = run_campaign(exp, fake, NullDisplay())
    # 5 launch-overhead rounds are not the fake's: count calibration launches of 'a'
    assert len(fake.launched) <= 0.2 / 0.05 + 2
    assert "max_time" in out.message


def test_budget_counts_prior_time_and_the_clock() -> None:
    now = [50.0]
    budget = Budget(3.0, prior_s=1.0, clock=lambda: now[0])
    assert budget.elapsed_s == 1.0 and not budget.exhausted
    now[0] = 51.5
    assert budget.elapsed_s == 2.5 and not budget.exhausted
    now[0] = 52.0
    assert budget.exhausted and "max_time 3 s reached after 3 s (x)" == budget.note("x")


def test_calibrate_never_passes_max_work_and_stops_when_out_of_time() -> None:
    tried: list[int] = []

    def measure(work: int) -> float:
        tried.append(work)
        return 1e-9  # always far too short

    result = calibrate(measure, MAX_WORK // 100, 1.0)
    assert result is not None and not result.reached
    assert max(tried) == MAX_WORK and tried.count(MAX_WORK) == 1
    assert len(tried) < MAX_STEPS
    tried.clear()
    calls = iter([False, False, True])
    result = calibrate(measure, 1, 1.0, out_of_time=lambda: next(calls))
    assert result is not None and len(tried) == 3  # step 0 always runs; then two checks pass


# ------------------------------------------------------------------ spans (issue 29)


def test_a_schema_3_store_gains_the_span_table_and_its_rounds_stand_in(tmp_path: Path) -> None:
    """A store written before spans (schema 3) opens, is upgraded to schema 4 with an
    empty run_span table, and a resume of its campaign counts the stored rounds' wall
    time (the runs before the upgrade have no span) before its own span adds up."""
    exp = experiment(
        tmp_path, "adaptive: false\nrounds: 100000000\nwarmup_rounds: 0\npin: none\nmax_time: 0.3"
    )

    def sigint_at_launch_2(spec: RoundSpec, i: int) -> None:
        if i == 2:
            os.kill(os.getpid(), signal.SIGINT)

    first = FakeExecutor({"a": constant(0.1), "b": constant(0.1)}, on_launch=sigint_at_launch_2)
    assert run_campaign(exp, first, NullDisplay()).status == "interrupted"
    # back to schema 3, as an older benchrun wrote it: no run_span table
    conn = sqlite3.connect(exp.db_path)
    conn.execute("DROP TABLE run_span")
    conn.execute("DROP TABLE round_metric")  # schema 5's, made after run_span
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with Store.create_or_open(exp.db_path) as store:
        assert store.schema_version() == SCHEMA_VERSION == 6
        assert store.spans(store.campaign().id) == []
    tables = {r[0] for r in sqlite3.connect(exp.db_path).execute("SELECT name FROM sqlite_master")}
    assert "run_span" in tables
    # two stored rounds of 0.1 s (virtual): 0.2 s of the 0.3 s budget; 10 ms real launches
    again = FakeExecutor({"a": constant(0.1), "b": constant(0.1)}, on_launch=_sleepy)
    out = run_campaign(exp, again, NullDisplay(), resume=True)
    assert "max_time 0.3 s reached" in out.message
    # 0.1 s of real time was left: about 10 launches of 10 ms, not the 30 of a full budget
    assert 1 <= len(again.launched) <= 0.1 / SLEEP_S + 5
    spans = sqlite3.connect(exp.db_path).execute("SELECT pid, seconds FROM run_span").fetchall()
    assert [pid for pid, _ in spans] == [os.getpid()]  # the resumed run's own span


def test_the_span_is_stored_while_the_run_goes_on(tmp_path: Path) -> None:
    """The heartbeat thread writes the span through its own connection while the main
    thread holds nothing open: another connection (plain sqlite3) sees it grow before the
    heartbeat is stopped, which is what a SIGKILLed run leaves behind."""
    db = tmp_path / "benchrun.db"
    exp = experiment(tmp_path, "adaptive: false\nrounds: 1\nwarmup_rounds: 0\npin: none")
    run_campaign(exp, FakeExecutor({"a": constant(0.1), "b": constant(0.1)}), NullDisplay())
    os.replace(exp.db_path, db)
    with Store.create_or_open(db) as store:
        campaign_id = store.campaign().id
        span_id = store.start_span(campaign_id, 4242, 1.0)
        beat = SpanHeartbeat(db, span_id, time.monotonic(), every=0.05).start()
        try:
            seen: list[float] = []
            deadline = time.monotonic() + 30
            while len(set(seen)) < 3 and time.monotonic() < deadline:
                with sqlite3.connect(db) as other:
                    ((seconds,),) = other.execute(
                        "SELECT seconds FROM run_span WHERE id = ?", (span_id,)
                    ).fetchall()
                seen.append(seconds)
                time.sleep(0.05)
        finally:
            beat.stop()
        assert len(set(seen)) >= 3 and seen == sorted(seen), seen
        ((pid, started, final),) = [s for s in store.spans(campaign_id) if s[0] == 4242]
        assert (pid, started) == (4242, 1.0) and final >= max(seen)


def test_spent_before_is_the_larger_of_the_spans_and_the_rounds() -> None:
    assert spent_before([(1, 0.0, 2.0), (2, 5.0, 1.5)], rounds_s=1.0) == 3.5
    assert spent_before([], rounds_s=1.25) == 1.25  # a campaign stored before schema 4
    assert spent_before([(1, 0.0, 0.5)], rounds_s=2.0) == 2.0  # earlier runs had no span
    # what benchrun never writes cannot lengthen the budget
    assert spent_before([(1, 0.0, -1e9), (2, 0.0, float("nan")), (3, 0.0, 1.0)], 0.0) == 1.0
