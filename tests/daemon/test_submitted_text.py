"""The daemon runs the experiment text that was submitted, not the file as it is at launch
(issue 16): an edit between submit and launch changes neither what runs nor where the
results go, and a deleted file still runs."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from daemon_util import Env, det_experiment, expected_reading, rounds_of


def _submit_for_later(xdg: Env, tmp_path: Path, rounds: int) -> tuple[Path, int]:
    """Start the daemon and submit a ``rounds``-round experiment that launches in 3 s."""
    xdg.start_daemon()
    exp = det_experiment(tmp_path, tmp_path / "out", rounds)
    later = (dt.datetime.now() + dt.timedelta(seconds=3)).isoformat(timespec="seconds")
    sub = xdg.cli("submit", str(exp), "--not-before", later)
    assert sub.returncode == 0, sub.stderr
    return exp, int(sub.stdout)


def test_an_edit_after_submit_changes_nothing_that_runs(xdg: Env, tmp_path: Path) -> None:
    exp, entry_id = _submit_for_later(xdg, tmp_path, 3)
    listing = xdg.cli("queue")
    assert "run the experiment text as submitted" in listing.stdout
    # before the launch: another name (another results directory) and more rounds
    exp.write_text(exp.read_text().replace("name: det", "name: renamed").replace("3", "5"))
    final = xdg.wait_state(entry_id, ("done", "failed"), 60)
    assert final["state"] == "done", final
    got = rounds_of(tmp_path / "out" / "det" / "benchrun.db")
    assert [(i, v) for _, i, _, v in got] == [(i, (expected_reading(i),)) for i in range(3)]
    assert not (tmp_path / "out" / "renamed").exists()


def test_a_deleted_file_still_runs_as_submitted(xdg: Env, tmp_path: Path) -> None:
    exp, entry_id = _submit_for_later(xdg, tmp_path, 2)
    exp.unlink()
    final = xdg.wait_state(entry_id, ("done", "failed"), 60)
    assert final["state"] == "done", final
    assert len(rounds_of(tmp_path / "out" / "det" / "benchrun.db")) == 2
