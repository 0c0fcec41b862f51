"""Issue 29, item 5: export and show read one consistent snapshot while a campaign writes.

A real ``benchrun run`` (a child process, shell workloads of 3 and 2 readings a round,
more rounds than the test waits for, stopped with SIGINT at its end) commits rounds
while this test exports the campaign as JSON and as
CSV and runs ``show --json`` in a loop. Before the store's reads were one transaction,
the CSV export failed most times (``zip()`` of a round's readings and its flags of
different lengths: the rounds were read after the flags were computed) and the JSON
export held rounds with readings but no reading flags, which benchrun's own importer
refused. Each export must now be a state the campaign really passed through: its rounds
are exactly the rounds of the final store (read with plain sqlite3 after the run) up to
its last one, with the same readings, and the importer reads every export file back.
"""

from __future__ import annotations

import csv
import io
import json
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from e2e_util import benchrun_argv, cli

from benchrun.runner.importers.detect import load

EXPERIMENT = """\
name: live
output: {out}
settings: {{adaptive: false, rounds: 100000, warmup_rounds: 2, pin: none, min_round_time: 0}}
workloads:
  - name: three
    command: [sh, -c, 'echo t=1.5; echo t=1.25; echo t=1.75']
    readings: {{pattern: 't=([0-9.]+)', unit: ms}}
  - name: two
    command: [sh, -c, 'echo t=2.5; echo t=2.75']
    readings: {{pattern: 't=([0-9.]+)', unit: ms}}
"""

#: readings of each workload's rounds (what its command prints)
PRINTED = {"three": [1.5, 1.25, 1.75], "two": [2.5, 2.75]}
#: export loops to run while the campaign writes
LOOPS = 8


def stored_rounds(db: Path) -> dict[int, tuple[str, list[float]]]:
    """seq -> (workload name, readings) of every committed round, read with plain sqlite3."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute(
            "SELECT round.seq, workload.name, round.id FROM round JOIN workload"
            " ON workload.id = round.workload_id"
        ).fetchall()
        values: dict[int, list[float]] = {}
        for rid, value in conn.execute(
            "SELECT round_id, value FROM reading ORDER BY round_id, idx"
        ):
            values.setdefault(rid, []).append(value)
    finally:
        conn.close()
    return {seq: (name, values.get(rid, [])) for seq, name, rid in rows}


def count_rounds(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return int(conn.execute("SELECT count(*) FROM round").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def json_rounds(doc: dict) -> dict[int, tuple[str, list[float]]]:
    out = {}
    for w in doc["workloads"]:
        for r in w["rounds"]:
            # the flags belong to the readings: one each (what the importer checks too)
            assert len(r["reading_flags"]) == len(r["readings"]), (w["name"], r["seq"])
            out[r["seq"]] = (w["name"], r["readings"])
    return out


def csv_rounds(text: str) -> dict[int, tuple[str, list[float]]]:
    out: dict[int, tuple[str, list[float]]] = {}
    for row in csv.DictReader(io.StringIO(text)):
        seq = int(row["seq"])
        name, values = out.setdefault(seq, (row["workload"], []))
        assert name == row["workload"]
        assert int(row["reading_index"]) == len(values)
        values.append(float(row["value"]))
    return out


def test_exports_and_show_during_a_live_run_are_consistent_snapshots(tmp_path: Path) -> None:
    exp = tmp_path / "live.yaml"
    exp.write_text(EXPERIMENT.format(out=tmp_path / "out"))
    db = tmp_path / "out" / "live" / "benchrun.db"
    log = (tmp_path / "run.log").open("w")
    run = subprocess.Popen(
        [*benchrun_argv(), "run", str(exp)],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    snapshots: list[tuple[str, dict[int, tuple[str, list[float]]]]] = []
    shown: list[dict[str, int]] = []
    try:
        deadline = time.monotonic() + 120
        while count_rounds(db) < 20:
            assert run.poll() is None, (tmp_path / "run.log").read_text()
            assert time.monotonic() < deadline, "the campaign stored no 20 rounds in 120 s"
            time.sleep(0.1)
        for i in range(LOOPS):
            assert run.poll() is None, "the campaign ended before the exports did"
            out = tmp_path / f"export{i}.json"
            r = cli("export", str(db.parent), "--out", str(out))
            assert r.returncode == 0, r.stderr
            doc = json.loads(out.read_text())
            snapshots.append((f"json {i}", json_rounds(doc)))
            # benchrun's own importer reads the export back, every time
            assert len(load(out).groups) == 2
            out = tmp_path / f"export{i}.csv"
            r = cli("export", str(db.parent), "--format", "csv", "--out", str(out))
            assert r.returncode == 0, r.stderr
            snapshots.append((f"csv {i}", csv_rounds(out.read_text())))
            assert len(load(out).groups) == 2
            r = cli("show", str(db.parent), "--json")
            assert r.returncode == 0, r.stderr
            shown.append({w["name"]: w["rounds"] for w in json.loads(r.stdout)["workloads"]})
    finally:
        if run.poll() is None:
            run.send_signal(signal.SIGINT)
            try:
                run.wait(timeout=60)
            except subprocess.TimeoutExpired:
                run.kill()
                run.wait()
        log.close()
    final = stored_rounds(db)
    sizes = set()
    for label, seen in snapshots:
        assert seen, f"{label}: no round"
        last = max(seen)
        expected = {seq: v for seq, v in final.items() if seq <= last}
        # a state the store passed through: every round up to its last one, and no other
        assert seen == expected, f"{label}: not a prefix of the stored rounds"
        for name, values in seen.values():
            assert values == PRINTED[name]
        sizes.add(len(seen))
    for counts in shown:
        total = sum(counts.values())
        prefix = [name for seq, (name, _) in sorted(final.items())][:total]
        assert counts == {n: prefix.count(n) for n in PRINTED}, counts
    # the campaign wrote between the reads: they saw several states of it
    assert len(sizes) >= 3, sizes
