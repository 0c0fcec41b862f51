"""The fast loop's durability at its worst moments (docs/loop.md "Durability", issue 18).

The store commits short ok rounds in groups, each COMMIT with ``synchronous=NORMAL``: when
COMMIT returns the rounds are in the operating system's cache, not yet on the disk. Two
worst moments, each checked with a runner killed by SIGKILL:

- right after a COMMIT returned (the worst moment for ``NORMAL``): it must lose nothing,
  since the cache outlives the process. It is also the worst moment for the runner staying
  in its rounds' cgroup between rounds and for the in-flight record moved aside after each
  round: the dead runner is then inside its cgroup, and its record waits as
  ``inflight.json.next``. The next run must clean both up and continue with every round
  exactly once.
- right before the COMMIT of a group of several rounds (the worst moment for the group
  commit): the whole group is lost, nothing else; none of its rounds had been reported
  (the display was told of committed rounds only), and the resume runs them again, each
  exactly once.
"""

from __future__ import annotations

import functools
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchrun.runner.execute.containment import Containment

ROUNDS = 12
KILL_AFTER = 5  # the runner kills itself right after a commit once this many rounds are in

#: what both runner scripts import
_HEAD = """
import os, signal, sys
from benchrun.runner.campaign import session
from benchrun.runner.store import database
from benchrun.runner.ui import display
from benchrun.runner.cli import main
"""

#: the display wrapper both use: every reported round's workload, appended to argv[3]
_LOGGED = """
def round_done_logged(self, workload, *args, **kwargs):
    reported.write(workload + "\\n")
    return round_done(self, workload, *args, **kwargs)
display.RichDisplay.round_done = round_done_logged
"""

# The runner: `benchrun run` in this process. Every COMMIT of the store is watched
# (Store._committed runs right after one returned): once KILL_AFTER rounds are committed,
# the process prints how many and gets SIGKILL. Every round the display is told of is
# appended to REPORTED (argv[3]) first, so the test sees what was reported. The group
# window is 2 ms, so that groups of a few rounds are committed well before the campaign's
# end (with 50 ms, 24 rounds of `true` may all wait for the last commit, and the resume
# would then launch nothing).
_RUNNER = (
    _HEAD
    + """

session.GROUP_COMMIT_S = 0.002

kill_after = int(sys.argv[2])
reported = open(sys.argv[3], "a", buffering=1)
committed = database.Store._committed
round_done = display.RichDisplay.round_done

def committed_and_die(self):
    committed(self)
    (n,) = self.conn.execute("SELECT count(*) FROM round").fetchone()
    if n >= kill_after:
        print(f"committed {n}", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

database.Store._committed = committed_and_die
"""
    + _LOGGED
    + """
sys.exit(main(["run", sys.argv[1], "-q"]))
"""
)

# The runner killed right before the COMMIT of a group of at least KILL_GROUP rounds (the
# window is widened to 10 s so that the group holds most of the campaign's rounds).
KILL_GROUP = 3
_GROUP_RUNNER = (
    _HEAD
    + """

session.GROUP_COMMIT_S = 10.0
kill_group = int(sys.argv[2])
reported = open(sys.argv[3], "a", buffering=1)
commit_group = database.Store.commit_group
round_done = display.RichDisplay.round_done

def die_before_commit(self):
    if self.group_rounds >= kill_group:
        print(f"group {self.group_rounds}", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    return commit_group(self)

database.Store.commit_group = die_before_commit
"""
    + _LOGGED
    + """
sys.exit(main(["run", sys.argv[1], "-q"]))
"""
)


def _experiment(tmp_path: Path, mode: str) -> Path:
    settings = (
        f"{{adaptive: false, rounds: {ROUNDS}, warmup_rounds: 0, seed: 3, pin: auto}}"
        if mode == "fixed"
        else f"{{ci_rel_width: 0.000001, max_rounds: {ROUNDS}, warmup_rounds: 0, "
        "min_round_time: 0s, seed: 3, pin: auto}"
    )
    path = tmp_path / "exp.yaml"
    path.write_text(
        f"name: dur\noutput: {tmp_path / 'out'}\nsettings: {settings}\nworkloads:\n"
        '  - {name: a, command: ["true"]}\n'
        "  - {name: b, command: [sh, -c, 'exit 0']}\n"
    )
    return path


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchrun.runner.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def _rounds(db: Path) -> list[tuple[str, int, int, str]]:
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return conn.execute(
            "SELECT workload.name, round.round_index, round.seq, round.status FROM round "
            "JOIN workload ON workload.id = round.workload_id ORDER BY round.seq"
        ).fetchall()


@functools.cache
def _cgroup_home() -> Path | None:
    """Where runners make their cgroups (None without usable cgroup v2); made once, as
    making one sweeps the cgroups of dead runners."""
    probe = Containment.create()
    home = probe.home
    probe.close()
    return home


def _own_cgroups() -> set[str]:
    """Names of the runner cgroups there now (empty without cgroup v2)."""
    home = _cgroup_home()
    return set() if home is None else {p.name for p in home.glob("benchrun-*")}


@pytest.mark.parametrize("mode", ["fixed", "adaptive"])
def test_sigkill_right_after_a_commit_loses_nothing_and_resume_cleans_up(
    tmp_path: Path, mode: str
) -> None:
    exp = _experiment(tmp_path, mode)
    db = tmp_path / "out" / "dur" / "benchrun.db"
    campaign_dir = db.parent
    reported = tmp_path / "reported"
    killed = subprocess.Popen(
        [sys.executable, "-c", _RUNNER, str(exp), str(KILL_AFTER), str(reported)],
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    _, err = killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL, err
    n_committed = int(err.rsplit("committed ", 1)[1].split()[0])
    assert n_committed >= KILL_AFTER
    # every committed round is there: the commit was in the OS cache when the process died
    stored = _rounds(db)
    assert len(stored) == n_committed
    assert [seq for _, _, seq, _ in stored] == list(range(n_committed))
    assert all(status == "ok" for *_, status in stored)
    # nothing was reported that is not stored (and the display was told of some rounds)
    assert 1 <= len(reported.read_text().split()) <= n_committed
    # the dead runner was between rounds: no round in flight, its record moved aside
    assert not (campaign_dir / "inflight.json").exists()
    assert (campaign_dir / "inflight.json.next").exists()
    # (the dead runner's cgroup, if any, is swept by the next runner made on this machine:
    # possibly another test's, so only its absence at the end is checked)
    dead = f"benchrun-{killed.pid}-"

    first = stored
    _resume_and_check(exp, db, first, mode, dead)


def _resume_and_check(
    exp: Path, db: Path, first: list[tuple[str, int, int, str]], mode: str, dead: str
) -> None:
    """``--resume`` completes the campaign: the killed run's stored rounds as they were,
    each round exactly once, nothing of the killed run left behind."""
    campaign_dir = db.parent
    tmp_path = exp.parent
    resumed = _cli("run", str(exp), "-q", "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    stored = _rounds(db)
    assert stored[: len(first)] == first  # the killed run's rounds, as they were
    per = {(name, index) for name, index, _, _ in stored}
    assert len(per) == len(stored)  # each round exactly once
    for name in ("a", "b"):  # round indexes without a gap
        indexes = sorted(i for n, i in per if n == name)
        assert indexes == list(range(len(indexes)))
    assert [seq for _, _, seq, _ in stored] == list(range(len(stored)))
    if mode == "fixed":
        assert len(stored) == 2 * ROUNDS
    else:  # max_rounds for each (the pass cut by the kill leaves b one round behind)
        assert ROUNDS * 2 - 1 <= len(stored) <= ROUNDS * 2
    with sqlite3.connect(db) as conn:
        (status,) = conn.execute("SELECT status FROM campaign").fetchone()
    assert status == "done"
    # nothing of the killed run is left: no record, no spare record, no cgroup
    assert not (campaign_dir / "inflight.json").exists()
    assert not (campaign_dir / "inflight.json.next").exists()
    assert not any(n.startswith(dead) for n in _own_cgroups())


@pytest.mark.parametrize("mode", ["fixed", "adaptive"])
def test_sigkill_right_before_a_group_commit_loses_that_group_only(
    tmp_path: Path, mode: str
) -> None:
    """The worst moment for the group commit: SIGKILL when a group of several ok rounds is
    about to be committed. Exactly the rounds committed before are stored (a prefix of the
    launch order), the group is lost, none of its rounds was reported, and the resume runs
    them again, each once."""
    exp = _experiment(tmp_path, mode)
    db = tmp_path / "out" / "dur" / "benchrun.db"
    reported = tmp_path / "reported"
    killed = subprocess.Popen(
        [sys.executable, "-c", _GROUP_RUNNER, str(exp), str(KILL_GROUP), str(reported)],
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    _, err = killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL, err
    lost = int(err.rsplit("group ", 1)[1].split()[0])
    assert lost >= KILL_GROUP
    stored = _rounds(db)
    # the first round of each workload in a run is committed on its own (it may be long),
    # then the rest joined the open group, lost with the runner
    assert [seq for _, _, seq, _ in stored] == list(range(len(stored)))
    assert 1 <= len(stored) <= 2
    reported_rounds = reported.read_text().split()
    assert 1 <= len(reported_rounds) <= len(stored)  # reported only once committed
    assert not (db.parent / "inflight.json").exists()  # killed between rounds
    _resume_and_check(exp, db, stored, mode, f"benchrun-{killed.pid}-")


def test_sigkill_mid_round_ends_the_round_from_its_record_and_redoes_it(tmp_path: Path) -> None:
    """The round in flight when the runner dies (a child still running, the runner inside
    its cgroup) is the only thing lost: it is not stored, the next run ends its processes
    and runs it again."""
    mark = f"{os.getpid()}.{id(tmp_path) % 100000}"
    exp = tmp_path / "exp.yaml"
    exp.write_text(
        f"name: mid\noutput: {tmp_path / 'out'}\n"
        "settings: {adaptive: false, rounds: 4, warmup_rounds: 0, seed: 3, pin: auto}\n"
        "workloads:\n"
        f"  - {{name: a, command: 'test -f {tmp_path}/slow && exec sleep 3{mark} || true',"
        " shell: true}\n"
    )
    (tmp_path / "slow").touch()
    db = tmp_path / "out" / "mid" / "benchrun.db"
    runner = subprocess.Popen(
        [sys.executable, "-m", "benchrun.runner.cli", "run", str(exp), "-q"], cwd=tmp_path
    )
    try:
        record = db.parent / "inflight.json"
        end = time.monotonic() + 60.0
        while time.monotonic() < end and not record.exists():
            time.sleep(0.01)
        assert record.exists()
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=10)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert _rounds(db) == []  # the round in flight was not stored
    (tmp_path / "slow").unlink()
    resumed = _cli("run", str(exp), "-q", "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    stored = _rounds(db)
    assert [(name, index) for name, index, _, _ in stored] == [("a", i) for i in range(4)]
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert f"sleep 3{mark}" not in ps  # the killed run's round was ended
    assert not (db.parent / "inflight.json").exists()
    assert not (db.parent / "inflight.json.next").exists()


class _CountingDisplay:
    """A Display that counts the rounds it was told of and prints nothing."""

    def __init__(self) -> None:
        self.rounds = 0

    def start(self, campaign: object, targets: dict[str, int], done: dict[str, int]) -> None:
        pass

    def round_done(self, workload: str, outcome: object, value: object, warmup: bool) -> None:
        self.rounds += 1

    def message(self, text: str) -> None:
        pass

    def show_decision(self, decision: object, eta_s: float | None) -> None:
        pass

    def stop(self) -> None:
        pass


@pytest.mark.parametrize("wall_s", [0.001, 0.1])
def test_each_launch_sees_what_is_committed_and_reported(tmp_path: Path, wall_s: float) -> None:
    """At every launch (fake executor, real store read by a second connection): the display
    was never told of a round that is not committed; rounds of 50 ms or more are all
    committed before the next launch (no group stays open while a long round runs), and
    short rounds are grouped (some launch starts with rounds not committed yet)."""
    from benchrun.runner.campaign.run import run_campaign
    from benchrun.runner.config.loader import parse_experiment
    from benchrun.runner.execute.fake import FakeExecutor, constant

    rounds = 20
    exp = parse_experiment(
        f"name: g\noutput: {tmp_path / 'out'}\nsettings: {{adaptive: false, rounds: {rounds},"
        " warmup_rounds: 0, pin: none, seed: 1}\nworkloads:\n"
        "  - {name: a, command: [work, a]}\n  - {name: b, command: [work, b]}\n",
        base_dir=tmp_path,
        check_commands=False,
    )
    display = _CountingDisplay()
    seen: list[tuple[int, int, int]] = []  # (launch index, committed rounds, reported)

    def at_launch(spec: object, index: int) -> None:
        with sqlite3.connect(exp.db_path, timeout=5) as other:
            (committed,) = other.execute("SELECT count(*) FROM round").fetchone()
        seen.append((index, committed, display.rounds))

    fake = FakeExecutor({"a": constant(wall_s), "b": constant(wall_s)}, on_launch=at_launch)
    out = run_campaign(exp, fake, display)
    assert out.status == "done"
    assert len(seen) == 2 * rounds
    assert all(reported <= committed <= index for index, committed, reported in seen)
    if wall_s >= 0.05:
        assert all(committed == index for index, committed, _ in seen)
    else:
        assert any(committed < index for index, committed, _ in seen)
    assert display.rounds == 2 * rounds  # every round reported in the end
    assert len(_rounds(exp.db_path)) == 2 * rounds
