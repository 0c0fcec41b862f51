"""The fast loop's durability at its worst moments (docs/loop.md "Durability", issue 18).

The store commits each round with ``synchronous=NORMAL``: when COMMIT returns the round is
in the operating system's cache, not yet on the disk. The worst moment for that scheme is
a SIGKILL right after a commit returns; it must lose nothing, since the cache outlives the
process. It is also the worst moment for the runner staying in its rounds' cgroup between
rounds and for the in-flight record moved aside after each round: the dead runner is then
inside its cgroup, and its record waits as ``inflight.json.next``. The next run must clean
both up and continue with every round exactly once.
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
KILL_AFTER = 5  # the runner kills itself right after the commit of this many rounds

# The runner: `benchrun run` in this process, with the store's add_round wrapped so that
# the process gets SIGKILL the moment the KILL_AFTER-th round's COMMIT has returned.
_RUNNER = """
import os, signal, sys
from benchrun.runner.store import database
from benchrun.runner.cli import main

kill_after = int(sys.argv[2])
add_round = database.Store.add_round
committed = []

def add_and_die(self, *args, **kwargs):
    round_id = add_round(self, *args, **kwargs)
    committed.append(round_id)
    if len(committed) == kill_after:
        os.kill(os.getpid(), signal.SIGKILL)
    return round_id

database.Store.add_round = add_and_die
sys.exit(main(["run", sys.argv[1], "-q"]))
"""


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
    killed = subprocess.Popen(
        [sys.executable, "-c", _RUNNER, str(exp), str(KILL_AFTER)],
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    _, err = killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL, err
    # every committed round is there: the commit was in the OS cache when the process died
    stored = _rounds(db)
    assert len(stored) == KILL_AFTER
    assert [seq for _, _, seq, _ in stored] == list(range(KILL_AFTER))
    assert all(status == "ok" for *_, status in stored)
    # the dead runner was between rounds: no round in flight, its record moved aside
    assert not (campaign_dir / "inflight.json").exists()
    assert (campaign_dir / "inflight.json.next").exists()
    # (the dead runner's cgroup, if any, is swept by the next runner made on this machine:
    # possibly another test's, so only its absence at the end is checked)
    dead = f"benchrun-{killed.pid}-"

    first = stored
    resumed = _cli("run", str(exp), "-q", "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    stored = _rounds(db)
    assert stored[:KILL_AFTER] == first  # the killed run's rounds, as they were
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
