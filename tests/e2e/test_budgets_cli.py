"""The budgets and the settings that broke them (issue 29, items 6 and 7), through the real
``benchrun`` console script: ``max_time`` is the campaign's wall time across resumes (four
SIGKILLs used to give a campaign four fresh budgets), warm-up rounds are bounded by
``max_rounds``, and a confidence or an integer past what the arithmetic can hold is one
line at validation, not a traceback in the middle of a campaign."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from tests.e2e.e2e_util import (
    query,
    rounds_stored,
    run_benchrun,
    start_benchrun,
    write_experiment,
)

#: the probe of issue 29: every round preceded by a 0.2 s prepare hook (time that is no
#: round's wall time), every round a warm-up round, a 4 s budget
PROBE = """\
    name: probe
    output: {out}
    workloads:
      - name: a
        command: ["true"]
        prepare: ["sleep", "0.2"]
      - name: b
        command: ["true"]
        prepare: ["sleep", "0.2"]
    settings:
      max_time: 4
      min_round_time: 0
      warmup_rounds: 100
      max_rounds: 500
"""

#: how long each run is left active (from its first new round on) before it is SIGKILLed:
#: less than max_time, so a run that counts only its own time never stops by itself
ACTIVE_S = 2.5


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    """The single ``benchrun: error: ...`` line a refused command prints (asserted)."""
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith("benchrun: error: "), lines[0]
    return lines[0]


def test_max_time_counts_every_run_of_a_campaign_across_sigkills(tmp_path: Path) -> None:
    """Each run is killed ACTIVE_S after its first new round; the runs' times add up, so
    the second run (or at worst the third) reaches max_time by itself. Before, every run
    started with the stored rounds' wall time only (a few ms of `true`): four SIGKILLs and
    a resume ran 16 s and the resume still said "max_time 4 s reached after 4.18 s"."""
    exp = write_experiment(tmp_path, PROBE.format(out=tmp_path / "out"))
    db = tmp_path / "out" / "probe" / "benchrun.db"
    killed_active: list[float] = []  # seconds each killed run was seen active, by this test
    ended: tuple[int, str, str] | None = None
    for run in range(5):
        before = rounds_stored(db)
        proc = start_benchrun("run", str(exp), "-q", *(["--resume"] if run else []))
        deadline = time.monotonic() + 60
        while proc.poll() is None and rounds_stored(db) <= before:
            assert time.monotonic() < deadline, "no round stored in 60 s"
            time.sleep(0.02)
        active_from = time.monotonic()
        while proc.poll() is None and time.monotonic() - active_from < ACTIVE_S:
            time.sleep(0.02)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed_active.append(time.monotonic() - active_from)
            proc.communicate(timeout=30)
            continue
        out, err = proc.communicate(timeout=30)
        ended = (proc.returncode, out, err)
        break
    assert ended is not None, f"still not out of time after {len(killed_active)} SIGKILLs"
    code, out, err = ended
    assert "Traceback" not in err
    assert "max_time 4 s reached" in out + err, (out + err)[-2000:]
    # the killed runs' time counted: a few runs before the budget was spent (a run that
    # counted only its own time would be killed every time); on a loaded machine the span
    # thread can lag, so allow a third
    assert 1 <= len(killed_active) <= 3, killed_active
    # what the store holds (plain sqlite3): one span per run, the killed ones with at least
    # the time this test saw them active, less what a kill can take (the last 0.5 s, more when the thread is starved)
    spans = [s for (s,) in query(db, "SELECT seconds FROM run_span ORDER BY id")]
    assert len(spans) == len(killed_active) + 1
    for stored, seen in zip(spans[:-1], killed_active, strict=True):
        assert stored >= seen - 2.0, (spans, killed_active)
    # every round of the campaign was a warm-up round: warm-up counts toward max_time
    assert query(db, "SELECT count(*) FROM round WHERE warmup = 0") == [(0,)]
    # and nothing can be resumed any more: the campaign is over
    status = query(db, "SELECT status FROM campaign")
    assert status == [("done",)], status


def test_warmup_rounds_above_max_rounds_is_refused_in_one_line(tmp_path: Path) -> None:
    """warmup_rounds 13 772 with max_rounds 20 used to run 13 772 warm-up rounds; now the
    budget bounds warm-up and the run is refused before anything is created."""
    exp = write_experiment(
        tmp_path,
        f"""\
        name: warm
        output: {tmp_path / "out"}
        workloads:
          - name: a
            command: ["true"]
        settings:
          min_round_time: 0
          max_time: 60
        """,
    )
    proc = run_benchrun(
        "run", str(exp), "--set", "warmup_rounds=13772", "--set", "max_rounds=20", timeout=60
    )
    assert proc.returncode == 2
    line = one_error_line(proc)
    assert "warmup_rounds (13772)" in line and "max_rounds (20)" in line
    assert not (tmp_path / "out").exists()  # refused before the campaign directory was made
    # the same in the file, through validate; equal is allowed
    (tmp_path / "w.yaml").write_text(
        exp.read_text().replace(
            "max_time: 60", "max_time: 60\n  warmup_rounds: 21\n  max_rounds: 20"
        )
    )
    bad = run_benchrun("validate", str(tmp_path / "w.yaml"))
    assert bad.returncode != 0
    assert "warmup_rounds (21)" in one_error_line(bad)
    (tmp_path / "ok.yaml").write_text(
        exp.read_text().replace(
            "max_time: 60", "max_time: 60\n  warmup_rounds: 20\n  max_rounds: 20"
        )
    )
    ok = run_benchrun("validate", str(tmp_path / "ok.yaml"))
    assert ok.returncode == 0, ok.stderr


def _two_workloads(tmp_path: Path, name: str) -> Path:
    return write_experiment(
        tmp_path,
        f"""\
        name: {name}
        output: {tmp_path / "out"}
        workloads:
          - name: a
            command: ["true"]
          - name: b
            command: ["sleep", "0.02"]
        settings:
          min_round_time: 0
          max_time: 20
        """,
        name=f"{name}.yaml",
    )


def test_a_confidence_too_close_to_one_is_refused_naming_the_range(tmp_path: Path) -> None:
    """0.9999999999999999 made the controller's arithmetic overflow mid-campaign, leaving
    the campaign "running"; now validation refuses it and names the largest allowed."""
    exp = _two_workloads(tmp_path, "conf")
    proc = run_benchrun("run", str(exp), "--set", "confidence=0.9999999999999999", timeout=60)
    assert proc.returncode == 2
    line = one_error_line(proc)
    assert "confidence" in line and "<= 0.999999" in line, line
    assert not (tmp_path / "out").exists()
    # in the file: validate says the same
    (tmp_path / "c.yaml").write_text(
        exp.read_text().replace("max_time: 20", "max_time: 20\n  confidence: 0.9999999999999999")
    )
    bad = run_benchrun("validate", str(tmp_path / "c.yaml"))
    assert bad.returncode != 0 and "<= 0.999999" in one_error_line(bad)
    # alpha past the controller's range (0, 0.5) was refused only once the campaign had
    # been created and left "running": now at validation too
    alpha = run_benchrun("run", str(exp), "--set", "alpha=0.6", timeout=60)
    assert alpha.returncode == 2 and "< 0.5" in one_error_line(alpha)
    assert not (tmp_path / "out").exists()


def test_a_stored_campaign_with_such_a_confidence_resumes_with_one_line(tmp_path: Path) -> None:
    """A campaign stored by an older benchrun with confidence 0.9999999999999999, left
    "running": resuming it from its directory is one line (exit 2), not a traceback, and
    the store is left as it was."""
    exp = _two_workloads(tmp_path, "stored")
    db = tmp_path / "out" / "stored" / "benchrun.db"
    proc = start_benchrun("run", str(exp), "-q")
    deadline = time.monotonic() + 60
    while rounds_stored(db) < 2:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    # what an older benchrun stored: the settings as JSON, the campaign still running
    ((settings_json,),) = query(db, "SELECT settings_json FROM campaign")
    settings = json.loads(settings_json)
    settings["confidence"] = 0.9999999999999999
    conn = sqlite3.connect(db)
    conn.execute("UPDATE campaign SET settings_json = ?", (json.dumps(settings),))
    conn.commit()
    conn.close()
    n = rounds_stored(db)
    resumed = run_benchrun("run", str(tmp_path / "out" / "stored"), "--resume", timeout=60)
    assert resumed.returncode == 2
    line = one_error_line(resumed)
    assert "confidence" in line and "0.999999" in line, line
    assert rounds_stored(db) == n
    assert query(db, "SELECT status FROM campaign") == [("running",)]


def test_an_integer_past_pythons_digit_limit_is_one_line(tmp_path: Path) -> None:
    """Python refuses to convert an int of more than 4 300 digits from text (ValueError,
    sys.int_info.default_max_str_digits): in an experiment file or --set it was a
    traceback; now one line naming the limit and, in a file, the line."""
    huge = "9" * 5000
    exp = _two_workloads(tmp_path, "digits")
    proc = run_benchrun("run", str(exp), "--set", f"seed={huge}", timeout=60)
    assert proc.returncode == 2
    line = one_error_line(proc)
    assert line.startswith("benchrun: error: --set seed: ") and "4300 digits" in line, line
    assert len(line) < 300  # the number itself is not echoed
    # a hexadecimal one converts, but could not be printed in a message
    hexa = run_benchrun("run", str(exp), "--set", "seed=0x" + "f" * 4000, timeout=60)
    assert hexa.returncode == 2 and "4300 digits" in one_error_line(hexa)
    # in the file, anywhere (a matrix value here): FILE:LINE
    text = exp.read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        text.replace('command: ["true"]', f'command: ["true"]\n    params: {{n: {huge}}}')
    )
    lineno = next(i for i, s in enumerate(bad.read_text().splitlines(), 1) if huge in s)
    for verb in ("validate", "run"):
        got = run_benchrun(verb, str(bad), timeout=60)
        assert got.returncode == 2, got.stderr[-2000:]
        message = one_error_line(got)
        assert re.search(rf"bad\.yaml:{lineno}: .*4300 digits", message), message
