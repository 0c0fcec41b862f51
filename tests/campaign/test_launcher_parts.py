"""The parts of the round launcher (issue 30): the group commit of rounds
(runner/campaign/groupcommit.py), the failure rules (runner/campaign/failures.py), the
contention marking (runner/campaign/contended.py) and the text of a failed hook
(runner/campaign/hooks.py), each on its own, on a real SQLite store.

What is committed is read through a second SQLite connection (what another process, or a
crash, would see); the expected messages and counts are written out by hand from the
settings of each test's experiment.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from benchrun.runner.campaign.contended import mark_contended
from benchrun.runner.campaign.failures import FailureRules
from benchrun.runner.campaign.groupcommit import GroupCommit
from benchrun.runner.campaign.hooks import failed_round, what_failed
from benchrun.runner.campaign.session import start_campaign
from benchrun.runner.campaign.workload_state import WorkloadState
from benchrun.runner.config.experiment import Experiment
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.execute.executor import RoundOutcome
from benchrun.runner.store.database import NewRound, Store

WORKLOADS = "  - name: a\n    command: 'true'\n  - name: b\n    command: 'true'\n"


class Display:
    """A Display that keeps what it was told."""

    def __init__(self) -> None:
        self.rounds: list[str] = []
        self.messages: list[str] = []

    def start(self, campaign: Any, targets: dict[str, int], done: dict[str, int]) -> None:
        pass

    def round_done(self, workload: str, outcome: RoundOutcome, value: Any, warmup: bool) -> None:
        self.rounds.append(workload)

    def message(self, text: str) -> None:
        self.messages.append(text)

    def show_decision(self, decision: Any, eta_s: float | None) -> None:
        pass

    def stop(self) -> None:
        pass


def experiment(tmp_path: Path, settings: str = "") -> Experiment:
    text = (
        f"name: parts\noutput: {tmp_path / 'out'}\nsettings:\n  adaptive: false\n"
        f"  rounds: 3\n  pin: none\n{settings}workloads:\n{WORKLOADS}"
    )
    return parse_experiment(text, base_dir=tmp_path, check_commands=False)


def outcome(status: str = "ok", wall_ns: int = 1_000_000, **kw: Any) -> RoundOutcome:
    reason = None if status == "ok" else "exit status 1"
    return RoundOutcome(
        status=status,  # type: ignore[arg-type]
        wall_ns=wall_ns,
        user_s=0.0,
        sys_s=0.0,
        max_rss_kib=0,
        exit_code=0 if status == "ok" else 1,
        started_at=1.0,
        reason=reason,
        **kw,
    )


def add_round(store: Store, campaign_id: int, st: WorkloadState, seq: int, group: bool) -> None:
    store.add_round(
        NewRound(
            campaign_id=campaign_id,
            workload_id=st.workload_id,
            seq=seq,
            pass_=1,
            round_index=seq,
            status="ok",
            reason=None,
            exit_code=0,
            started_at=1.0,
            wall_ns=1_000_000,
            user_s=0.0,
            sys_s=0.0,
            max_rss_kib=0,
            cpus=None,
            argv=("true",),
            work=None,
            warmup=False,
            readings=(0.001,),
            stdout_tail=None,
            stderr_tail=None,
            facts=None,
            flags="",
            hooks=[],
        ),
        group=group,
    )


def committed_rounds(db: Path) -> int:
    """Rounds another connection sees: those committed."""
    with sqlite3.connect(db) as conn:
        (n,) = conn.execute("SELECT count(*) FROM round").fetchone()
    return int(n)


def test_a_group_is_reported_only_once_committed(tmp_path: Path) -> None:
    ex = experiment(tmp_path)
    display = Display()
    with Store.create_or_open(ex.db_path) as store:
        campaign, states = start_campaign(store, ex, False, False, None)
        group = GroupCommit(store, display, window_s=10.0)
        for seq, name in enumerate(["a", "b", "a"]):
            assert group.grouped(True)
            add_round(store, campaign.id, states[name], seq, group=True)
            group.report_later(name, outcome(), 0.001, False)
        assert committed_rounds(ex.db_path) == 0
        assert display.rounds == []
        group.commit()
        assert committed_rounds(ex.db_path) == 3
        assert display.rounds == ["a", "b", "a"]


def test_a_group_older_than_its_window_is_committed_at_the_next_round(tmp_path: Path) -> None:
    ex = experiment(tmp_path)
    display = Display()
    with Store.create_or_open(ex.db_path) as store:
        campaign, states = start_campaign(store, ex, False, False, None)
        group = GroupCommit(store, display, window_s=0.01)
        add_round(store, campaign.id, states["a"], 0, group=True)
        time.sleep(0.05)  # the group's first round is now older than the 10 ms window
        group.report_later("a", outcome(), 0.001, False)
        assert committed_rounds(ex.db_path) == 1
        assert display.rounds == ["a"]


def test_failed_rounds_and_a_window_of_zero_are_not_grouped(tmp_path: Path) -> None:
    ex = experiment(tmp_path)
    with Store.create_or_open(ex.db_path) as store:
        assert not GroupCommit(store, Display(), window_s=0.05).grouped(False)
        assert not GroupCommit(store, Display(), window_s=0.0).grouped(True)


def test_the_group_is_committed_before_a_round_that_may_be_long(tmp_path: Path) -> None:
    ex = experiment(tmp_path)
    with Store.create_or_open(ex.db_path) as store:
        campaign, states = start_campaign(store, ex, False, False, None)
        group = GroupCommit(store, Display(), window_s=1.0)
        group.stored("a", 2_000_000)  # a's last round: 2 ms, well within the 1 s window
        add_round(store, campaign.id, states["a"], 0, group=True)
        group.before_launch("a")
        assert committed_rounds(ex.db_path) == 0
        group.before_launch("b")  # b's first round in this run: its length is unknown
        assert committed_rounds(ex.db_path) == 1
        group.stored("a", 3_000_000_000)  # a's last round took 3 s: longer than the window
        add_round(store, campaign.id, states["a"], 1, group=True)
        group.before_launch("a")
        assert committed_rounds(ex.db_path) == 2


def workload_status(db: Path, name: str) -> tuple[str, str | None]:
    with sqlite3.connect(db) as conn:
        row = conn.execute(
            "SELECT status, status_reason FROM workload WHERE name = ?", (name,)
        ).fetchone()
    return row[0], row[1]


def events(db: Path, kind: str) -> list[str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT message FROM event WHERE kind = ?", (kind,)).fetchall()
    return [r[0] for r in rows]


def fail(rules: FailureRules, st: WorkloadState, round_index: int) -> None:
    """Account for a failed round of ``st`` as the launcher does, then apply the rules."""
    st.record(False, False, 1, (), None, "", 1_000_000)
    rules.round_failed(st.workload.name, round_index, outcome("failed"))


def test_max_consecutive_failures_stops_the_workload_for_good(tmp_path: Path) -> None:
    ex = experiment(tmp_path, "  max_consecutive_failures: 3\n")
    display = Display()
    commits: list[int] = []
    with Store.create_or_open(ex.db_path) as store:
        campaign, states = start_campaign(store, ex, False, False, None)
        rules = FailureRules(
            store,
            campaign.id,
            ex.settings,
            states,
            display,
            ex.campaign_dir,
            commit=lambda: commits.append(1),
        )
        fail(rules, states["a"], 0)
        fail(rules, states["a"], 1)
        assert states["a"].stopped is None
        assert workload_status(ex.db_path, "a")[0] != "stopped"
        fail(rules, states["a"], 2)
        reason = "3 failures in a row, last: exit status 1"
        assert states["a"].stopped == reason
        assert workload_status(ex.db_path, "a") == ("stopped", reason)
        assert events(ex.db_path, "workload-stopped") == [f"a: {reason}"]
        assert commits == [1]  # the open group is committed before the workload stops
        assert rules.failure_stop is None  # the campaign goes on with b
        assert display.messages == [
            "a: round 0 failed: exit status 1",
            "a: round 1 failed: exit status 1",
            "a: round 2 failed: exit status 1",
            f"a: stopped after {reason}; see `benchrun show {ex.campaign_dir}` for its output",
        ]
        assert states["b"].stopped is None


def test_a_success_resets_the_failures_in_a_row(tmp_path: Path) -> None:
    ex = experiment(tmp_path, "  max_consecutive_failures: 2\n")
    with Store.create_or_open(ex.db_path) as store:
        campaign, states = start_campaign(store, ex, False, False, None)
        rules = FailureRules(
            store, campaign.id, ex.settings, states, Display(), ex.campaign_dir, lambda: None
        )
        fail(rules, states["a"], 0)
        states["a"].record(True, False, 1, (0.001,), None, "", 1_000_000)
        fail(rules, states["a"], 2)
        assert states["a"].stopped is None


def test_fail_fast_stops_the_campaign_at_the_first_failure(tmp_path: Path) -> None:
    ex = experiment(tmp_path, "  fail_fast: true\n")
    with Store.create_or_open(ex.db_path) as store:
        campaign, states = start_campaign(store, ex, False, False, None)
        rules = FailureRules(
            store, campaign.id, ex.settings, states, Display(), ex.campaign_dir, lambda: None
        )
        fail(rules, states["b"], 4)
        assert rules.failure_stop == "b round 4 failed (exit status 1) and fail_fast is set"
        assert states["b"].stopped is None


def test_the_first_reason_to_stop_the_campaign_is_kept(tmp_path: Path) -> None:
    ex = experiment(tmp_path)
    with Store.create_or_open(ex.db_path) as store:
        campaign, states = start_campaign(store, ex, False, False, None)
        rules = FailureRules(
            store, campaign.id, ex.settings, states, Display(), ex.campaign_dir, lambda: None
        )
        rules.stop_campaign(None)
        assert rules.failure_stop is None
        rules.stop_campaign("first")
        rules.stop_campaign("second")
        assert rules.failure_stop == "first"


def test_a_failed_setup_stops_its_workload_unless_the_campaign_stops(tmp_path: Path) -> None:
    ex = experiment(tmp_path)
    display = Display()
    with Store.create_or_open(ex.db_path) as store:
        campaign, states = start_campaign(store, ex, False, False, None)
        rules = FailureRules(
            store, campaign.id, ex.settings, states, display, ex.campaign_dir, lambda: None
        )
        rules.setup_failed("a", "exit status 3 (no such file)")
        assert workload_status(ex.db_path, "a") == (
            "stopped",
            "setup failed: exit status 3 (no such file)",
        )
        assert display.messages == [
            f"a: stopped: its setup failed; see `benchrun show {ex.campaign_dir} --failures` "
            "for its output"
        ]
        rules.failure_stop = "fail_fast"
        rules.setup_failed("b", "exit status 3")
        assert states["b"].stopped is None
        assert workload_status(ex.db_path, "b")[0] != "stopped"


def test_a_failed_hook_is_its_reason_and_last_line_of_output() -> None:
    base = outcome("failed")
    assert what_failed(base) == "exit status 1"
    on_stdout = outcome("failed", stdout_tail="first\nsaid on stdout\n\n")
    assert what_failed(on_stdout) == "exit status 1 (said on stdout)"
    both = outcome("failed", stdout_tail="out\n", stderr_tail="warn\n  no such file  \n")
    assert what_failed(both) == "exit status 1 (no such file)"
    long = outcome("failed", stderr_tail="x" * 300)
    assert what_failed(long) == "exit status 1 (" + "x" * 200 + ")"


def test_the_round_a_failed_prepare_kept_from_running() -> None:
    done = outcome("failed", wall_ns=5_000_000, stderr_tail="boom\n", stdout_tail="ok so far\n")
    failed = failed_round("prepare", done)
    assert failed.status == "failed"
    assert failed.reason == "prepare failed: exit status 1 (boom); the round did not run"
    assert (failed.wall_ns, failed.exit_code, failed.started_at) == (0, None, 1.0)
    assert (failed.stdout_tail, failed.stderr_tail) == ("ok so far\n", "boom\n")


@pytest.mark.parametrize(
    ("policy", "warmup", "stops"),
    [("fail", False, True), ("fail", True, False), ("exclude", False, False)],
)
def test_a_round_that_waited_a_fifth_of_its_time_is_contended(
    tmp_path: Path, policy: str, warmup: bool, stops: bool
) -> None:
    ex = experiment(tmp_path, f"  contended: {policy}\n  contended_threshold: 0.1\n")
    waited = outcome(wall_ns=1_000_000_000, wait_ns=200_000_000, wait_source="schedstat")
    flags, marked, stop = mark_contended("a", 4, waited, "x", warmup, ex.settings)
    assert flags == "x,contended"
    assert marked.extra == {"contended": True}
    assert marked.wall_ns == waited.wall_ns
    if stops:
        assert stop is not None
        assert stop.startswith("a round 4 was contended: it waited ")
        assert stop.endswith(
            "and contended: fail is set; quiet the machine or set contended: exclude"
        )
    else:
        assert stop is None


def test_a_round_that_waited_less_than_the_threshold_is_not_contended(tmp_path: Path) -> None:
    ex = experiment(tmp_path, "  contended: fail\n  contended_threshold: 0.1\n")
    waited = outcome(wall_ns=1_000_000_000, wait_ns=50_000_000, wait_source="schedstat")
    assert mark_contended("a", 4, waited, "", False, ex.settings) == ("", waited, None)
    failed = outcome("failed", wall_ns=1_000_000_000, wait_ns=900_000_000)
    assert mark_contended("a", 5, failed, "", False, ex.settings) == ("", failed, None)
