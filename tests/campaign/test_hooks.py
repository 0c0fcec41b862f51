"""setup / prepare / cleanup hooks of a workload, through the campaign loops with the fake
executor (runner/execute/fake.py): when each runs, what is stored, what a failure does.

The truth each test checks is written out by hand from the experiment's settings (rounds
per workload, the order of a sequential pass), not derived from the code under test.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.config.experiment import Experiment
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.config.schema import json_schema
from benchrun.runner.errors import UserError
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec
from benchrun.runner.execute.fake import FakeExecutor, FakeRound, constant
from benchrun.runner.store.database import SCHEMA_VERSION, Store


class Display:
    """A Display that keeps its messages and prints nothing."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def start(self, campaign: Any, targets: dict[str, int], done: dict[str, int]) -> None:
        pass

    def round_done(self, workload: str, outcome: RoundOutcome, value: Any, warmup: bool) -> None:
        pass

    def message(self, text: str) -> None:
        self.messages.append(text)

    def show_decision(self, decision: Any, eta_s: float | None) -> None:
        pass

    def stop(self) -> None:
        pass


FIXED = "  adaptive: false\n  rounds: 3\n  warmup_rounds: 1\n  pin: none\n  order: sequential\n"


def experiment(tmp_path: Path, workloads: str, top: str = "", settings: str = FIXED) -> Experiment:
    text = f"name: hooks\noutput: {tmp_path / 'out'}\n{top}settings:\n{settings}workloads:\n{workloads}"
    return parse_experiment(text, base_dir=tmp_path, check_commands=False)


def launches(fake: FakeExecutor) -> list[tuple[str, str, tuple[str, ...]]]:
    """(workload, hook kind or "round", argv) of every launch, in order."""
    return [(s.workload, s.hook or "round", tuple(s.argv)) for s in fake.launched]


def hook_rows(exp: Experiment) -> list[tuple[Any, ...]]:
    """The hook table read with plain sqlite3: (workload, kind, round_index, status, argv)."""
    conn = sqlite3.connect(exp.db_path)
    try:
        return conn.execute(
            "SELECT w.name, h.kind, h.round_index, h.status, h.argv_json FROM hook h "
            "JOIN workload w ON w.id = h.workload_id ORDER BY h.id"
        ).fetchall()
    finally:
        conn.close()


TWO = """\
  - name: a
    command: [work, a]
    setup: "make a"
    prepare: [reset, "{round}"]
    cleanup: "rm a"
  - name: b
    command: [work, b]
"""


def test_setup_prepare_cleanup_run_around_the_rounds_in_order(tmp_path: Path) -> None:
    exp = experiment(tmp_path, TWO)
    fake = FakeExecutor({"a": constant(0.01), "b": constant(0.02)})
    out = run_campaign(exp, fake, Display())
    assert (out.status, out.exit_code, out.warnings) == ("done", 0, ())
    # sequential: each pass runs a then b, one round each; a's 1 warm-up + 3 rounds each
    # follow its prepare, its cleanup follows its last round (before b's last round)
    a_round, b_round = ("a", "round", ("work", "a")), ("b", "round", ("work", "b"))
    expected = [("a", "setup", ("make a",))]
    for i in range(4):
        expected += [("a", "prepare", ("reset", str(i))), a_round]
        if i == 3:
            expected.append(("a", "cleanup", ("rm a",)))
        expected.append(b_round)
    assert launches(fake) == expected
    # a shell hook (one string) runs through /bin/sh -c, a list without a shell
    kinds = {s.hook: s.shell for s in fake.launched if s.hook}
    assert kinds == {"setup": True, "prepare": False, "cleanup": True}
    rows = hook_rows(exp)
    assert rows == (
        [("a", "setup", None, "ok", '["make a"]')]
        + [("a", "prepare", i, "ok", f'["reset", "{i}"]') for i in range(4)]
        + [("a", "cleanup", None, "ok", '["rm a"]')]
    )


def test_hook_time_is_not_in_the_rounds(tmp_path: Path) -> None:
    exp = experiment(tmp_path, TWO)
    fake = FakeExecutor(
        {"a": constant(0.01), "b": constant(0.02)},
        hooks={"setup": constant(5.0), "prepare": constant(0.5), "cleanup": constant(2.0)},
    )
    run_campaign(exp, fake, Display())
    with Store.open(exp.db_path) as store:
        campaign = store.campaign()
        walls = {r.wall_ns for r in store.rounds(campaign.id)}
        hooks = store.hooks(campaign.id)
    assert walls == {10_000_000, 20_000_000}  # the scripted rounds, nothing added
    assert sorted({(h.kind, h.wall_ns) for h in hooks}) == [
        ("cleanup", 2_000_000_000),
        ("prepare", 500_000_000),
        ("setup", 5_000_000_000),
    ]


def test_top_level_hooks_are_the_default_and_fill_matrix_placeholders(tmp_path: Path) -> None:
    # a top-level prepare that uses {n} multiplies the workloads it applies to; b opts out
    # with prepare: null and is not multiplied
    workloads = """\
  - name: a
    command: [work]
  - name: b
    command: [other]
    prepare: null
"""
    text = (
        f"name: hooks\noutput: {tmp_path / 'out'}\nprepare: 'warm {{n}}'\n"
        f"settings:\n{FIXED}workloads:\n{workloads}matrix:\n  n: [1, 2]\n"
    )
    exp = parse_experiment(text, base_dir=tmp_path, check_commands=False)
    assert exp.names == ("a[n=1]", "a[n=2]", "b")
    prepares = {w.name: w.prepare.command if w.prepare else None for w in exp.workloads}
    assert prepares == {"a[n=1]": ("warm 1",), "a[n=2]": ("warm 2",), "b": None}


def test_a_failing_prepare_fails_that_round_with_its_reason_and_output(tmp_path: Path) -> None:
    exp = experiment(tmp_path, TWO, settings=FIXED + "  max_consecutive_failures: 5\n")

    def prepare(spec: RoundSpec, k: int, clock: float) -> FakeRound:
        if k == 2:  # the prepare of round 2 fails
            return FakeRound(0.1, "failed", exit_code=3, reason="exit code 3", stderr="disk full\n")
        return FakeRound(0.1)

    fake = FakeExecutor({"a": constant(0.01), "b": constant(0.02)}, hooks={"prepare:a": prepare})
    out = run_campaign(exp, fake, Display())
    assert (out.status, out.exit_code) == ("done", 0)
    with Store.open(exp.db_path) as store:
        campaign = store.campaign()
        a = next(w for w in store.workloads(campaign.id) if w.name == "a")
        rounds = store.rounds(campaign.id, a.id)
        hooks = store.hooks(campaign.id, a.id)
    # round 2 did not run: stored failed, with the prepare's reason and output, untimed
    assert [(r.round_index, r.status) for r in rounds] == [
        (0, "ok"), (1, "ok"), (2, "failed"), (3, "ok"), (4, "ok"),
    ]  # fmt: skip
    failed = rounds[2]
    assert failed.reason == "prepare failed: exit code 3 (disk full); the round did not run"
    assert failed.stderr_tail == "disk full\n" and failed.wall_ns == 0
    assert [(h.round_index, h.status, h.exit_code) for h in hooks if h.kind == "prepare"] == [
        (0, "ok", 0), (1, "ok", 0), (2, "failed", 3), (3, "ok", 0), (4, "ok", 0),
    ]  # fmt: skip
    # the workload ran 3 steady ok rounds after all: the failed one was replaced
    assert sum(r.status == "ok" and not r.warmup for r in rounds) == 3
    # the round itself was launched 4 times only (never after the failed prepare)
    assert sum(1 for w, kind, _ in launches(fake) if (w, kind) == ("a", "round")) == 4
    # and its setup had succeeded, so its cleanup ran at the end
    assert launches(fake).count(("a", "cleanup", ("rm a",))) == 1


def test_a_failing_setup_stops_the_workload_and_the_others_finish(tmp_path: Path) -> None:
    exp = experiment(tmp_path, TWO)
    fake = FakeExecutor(
        {"a": constant(0.01), "b": constant(0.02)},
        hooks={
            "setup:a": lambda s, k, c: FakeRound(
                0.2, "failed", exit_code=2, reason="exit code 2", stdout="no make\n"
            )
        },
    )
    display = Display()
    out = run_campaign(exp, fake, display)
    assert (out.status, out.exit_code) == ("done", 1)  # a workload stopped early
    with Store.open(exp.db_path) as store:
        campaign = store.campaign()
        rows = {w.name: w for w in store.workloads(campaign.id)}
        a_rounds = store.rounds(campaign.id, rows["a"].id)
        b_rounds = store.rounds(campaign.id, rows["b"].id)
        events = [e.kind for e in store.events(campaign.id)]
    assert rows["a"].status == "stopped"
    assert rows["a"].status_reason == "setup failed: exit code 2 (no make)"
    assert [(r.status, r.stdout_tail) for r in a_rounds] == [("failed", "no make\n")]
    assert len(b_rounds) == 4 and {r.status for r in b_rounds} == {"ok"}
    assert "hook-failed" in events
    # neither a prepare, a round nor a cleanup of a after its failed setup (a cleanup undoes
    # a setup that succeeded)
    assert [kind for w, kind, _ in launches(fake) if w == "a"] == ["setup"]


def test_a_failing_cleanup_is_a_warning_and_loses_nothing(tmp_path: Path) -> None:
    exp = experiment(tmp_path, TWO)
    fake = FakeExecutor(
        {"a": constant(0.01), "b": constant(0.02)},
        hooks={
            "cleanup": lambda s, k, c: FakeRound(
                0.1, "failed", exit_code=1, reason="exit code 1", stderr="busy\n"
            )
        },
    )
    out = run_campaign(exp, fake, Display())
    assert (out.status, out.exit_code) == ("done", 0)
    assert out.warnings == (
        "a: cleanup failed: exit code 1 (busy); every round is stored, nothing is lost",
    )
    with Store.open(exp.db_path) as store:
        campaign = store.campaign()
        assert len(store.rounds(campaign.id)) == 8
        assert [(h.kind, h.status) for h in store.hooks(campaign.id)][-1] == ("cleanup", "failed")


def test_sigint_still_runs_the_cleanup_and_resume_sets_up_again(tmp_path: Path) -> None:
    exp = experiment(tmp_path, TWO)

    def sigint_at_round_2(spec: RoundSpec, i: int) -> None:
        if i == 8:  # launch 8 is a's round 2 (the list below)
            os.kill(os.getpid(), signal.SIGINT)

    first = FakeExecutor({"a": constant(0.01), "b": constant(0.02)}, on_launch=sigint_at_round_2)
    out = run_campaign(exp, first, Display())
    assert out.status == "interrupted"
    # a's setup, then passes of (a's prepare, a's round, b's round); a's round 2 is killed
    # and a's cleanup still runs
    assert [(w, kind) for w, kind, _ in launches(first)] == [
        ("a", "setup"), ("a", "prepare"), ("a", "round"), ("b", "round"),
        ("a", "prepare"), ("a", "round"), ("b", "round"),
        ("a", "prepare"), ("a", "round"), ("a", "cleanup"),
    ]  # fmt: skip
    second = FakeExecutor({"a": constant(0.01), "b": constant(0.02)})
    out = run_campaign(exp, second, Display(), resume=True)
    assert (out.status, out.exit_code) == ("done", 0)
    # the resumed run sets a up again before its next round (2, redone) and cleans up
    a_kinds = [(kind, argv) for w, kind, argv in launches(second) if w == "a"]
    assert a_kinds[:2] == [("setup", ("make a",)), ("prepare", ("reset", "2"))]
    assert a_kinds[-1] == ("cleanup", ("rm a",))
    with Store.open(exp.db_path) as store:
        campaign = store.campaign()
        a = next(w for w in store.workloads(campaign.id) if w.name == "a")
        assert [r.round_index for r in store.rounds(campaign.id, a.id)] == [0, 1, 2, 3]


def test_adaptive_mode_cleans_up_when_the_campaign_stops(tmp_path: Path) -> None:
    settings = "  pin: none\n  max_rounds: 6\n  min_rounds: 5\n  max_time: 1h\n"
    exp = experiment(tmp_path, TWO, settings=settings)
    fake = FakeExecutor({"a": constant(0.01), "b": constant(0.02)})
    run_campaign(exp, fake, Display())
    kinds = [(w, kind) for w, kind, _ in launches(fake) if kind != "round"]
    assert kinds[0] == ("a", "setup") and kinds[-1] == ("a", "cleanup")
    assert kinds.count(("a", "setup")) == 1 and kinds.count(("a", "cleanup")) == 1
    rounds_of_a = sum(1 for w, kind, _ in launches(fake) if (w, kind) == ("a", "round"))
    assert kinds.count(("a", "prepare")) == rounds_of_a


def test_hooks_change_the_fingerprint_only_when_present(tmp_path: Path) -> None:
    plain = experiment(tmp_path, "  - name: a\n    command: [work]\n")
    # without hooks the fingerprint is the one benchrun computed before hooks existed (the
    # document of docs/design.md written out here), so older campaigns still resume
    w = plain.workloads[0]
    doc = {
        "workloads": [
            {
                "name": "a", "command": ["work"], "shell": False, "work": None,
                "metric": "wall_time", "readings": None, "env": {}, "cwd": w.cwd,
                "per_work": False,
            }
        ],
        "pin": "none", "env": {}, "warmup_rounds": 1, "order": "sequential", "seed": 1,
    }  # fmt: skip
    blob = json.dumps(doc, sort_keys=True, default=str).encode()
    assert plain.measurement_fingerprint() == hashlib.sha256(blob).hexdigest()
    with_prepare = experiment(tmp_path, "  - name: a\n    command: [work]\n    prepare: sync\n")
    assert with_prepare.measurement_fingerprint() != plain.measurement_fingerprint()


@pytest.mark.parametrize(
    ("hook", "fragment"),
    [
        ('setup: "echo {round}"', "not in setup"),
        ("cleanup: []", "empty cleanup command"),
        ("prepare: {a: 1}", "expected a command"),
        ('prepare: "x {nope}"', "unknown placeholder {nope}"),
        ('prepare: "x {work}"', "add work: N"),
    ],
)
def test_bad_hooks_are_one_line_errors_naming_the_key(
    tmp_path: Path, hook: str, fragment: str
) -> None:
    text = f"name: x\nworkloads:\n  - name: a\n    command: [work]\n    {hook}\n"
    with pytest.raises(UserError) as info:
        parse_experiment(text, display="x.yaml", base_dir=tmp_path, check_commands=False)
    message = str(info.value)
    assert message.startswith("x.yaml:5: workloads[0].") and fragment in message, message


def _types(fragment: dict[str, Any]) -> set[str]:
    """Every JSON type a schema fragment admits, through nested anyOf."""
    found = {fragment["type"]} if isinstance(fragment.get("type"), str) else set()
    for variant in fragment.get("anyOf", []):
        found |= _types(variant)
    return found


def test_schema_describes_the_hooks() -> None:
    schema = json_schema()
    workload = schema["properties"]["workloads"]["items"]["properties"]
    for kind in ("setup", "prepare", "cleanup"):
        assert _types(workload[kind]) == {"string", "array", "null"}
        assert _types(schema["properties"][kind]) == {"string", "array", "null"}
    assert "hook_timeout" in schema["properties"]["settings"]["properties"]


def test_hook_timeout_bounds_a_hook_and_counts_as_its_failure(tmp_path: Path) -> None:
    exp = experiment(tmp_path, TWO, settings=FIXED + "  hook_timeout: 2s\n")
    fake = FakeExecutor({"a": constant(0.01), "b": constant(0.02)}, hooks={"setup": constant(9.0)})
    run_campaign(exp, fake, Display())
    with Store.open(exp.db_path) as store:
        campaign = store.campaign()
        (setup,) = [h for h in store.hooks(campaign.id) if h.kind == "setup"]
    assert (setup.status, setup.wall_ns) == ("timeout", 2_000_000_000)


def test_a_schema_1_store_gains_the_hook_table_and_keeps_its_campaign(tmp_path: Path) -> None:
    """A store written before hooks existed (schema 1) opens, is migrated to the current
    schema with an empty hook table, and its campaign is read as before."""
    db = tmp_path / "benchrun.db"
    exp = experiment(tmp_path, "  - name: a\n    command: [work]\n")
    run_campaign(exp, FakeExecutor({"a": constant(0.01)}), Display())
    # turn the new store back into a schema 1 one, as an old benchrun wrote it
    conn = sqlite3.connect(exp.db_path)
    conn.execute("DROP TABLE hook")
    conn.execute("DROP TABLE run_span")  # schema 4's table
    conn.execute("DROP TABLE round_metric")  # schema 5's table
    conn.execute("ALTER TABLE round DROP COLUMN wait_ns")  # schema 3's columns
    conn.execute("ALTER TABLE round DROP COLUMN wait_source")
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    os.replace(exp.db_path, db)
    with Store.open(db) as store:
        assert store.schema_version() == SCHEMA_VERSION == 6
        campaign = store.campaign()
        assert len(store.rounds(campaign.id)) == 4
        assert store.hooks(campaign.id) == []
