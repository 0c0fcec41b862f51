"""Two daemons of one user (separate XDG directories, e.g. tests running side by side)
never kill each other's workloads when one recovers from a crash: the mark a workload
carries names its queue as well as its entry (runner/daemon/child.py ``entry_mark``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from benchrun.runner.daemon.child import ENTRY_ENV, entry_mark, kill_leftovers


def _marked_sleep(mark: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, **{ENTRY_ENV: mark})
    return subprocess.Popen(["sleep", "30"], env=env, start_new_session=True)


def test_recovery_kills_only_its_own_queues_workloads(tmp_path: Path) -> None:
    mine, other = tmp_path / "a" / "queue.db", tmp_path / "b" / "queue.db"
    theirs = _marked_sleep(entry_mark(1, other))
    ours = _marked_sleep(entry_mark(1, mine))
    try:
        killed = kill_leftovers({1}, mine)
        assert killed == [ours.pid]
        assert ours.wait(timeout=10) == -9
        assert theirs.poll() is None  # the other daemon's entry 1 runs on
    finally:
        for p in (theirs, ours):
            p.kill()
            p.wait()


def test_the_mark_names_the_entry_and_the_queue(tmp_path: Path) -> None:
    q = tmp_path / "x" / ".." / "queue.db"
    assert entry_mark(7, q) == f"7:{(tmp_path / 'queue.db').resolve()}"
    assert entry_mark(7, None) == "7"
