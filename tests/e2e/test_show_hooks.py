"""End to end, real processes: ``benchrun show`` lists what the setup/prepare/cleanup hooks
did (text and ``--json``), ``benchrun export`` carries them, and the resume command that
``show`` prints for an interrupted campaign continues it as printed, after its experiment
file is gone.

The truth is the ``hook`` table read with plain sqlite3 (e2e_util.query) and the hooks'
commands written here, not benchrun's own reading of the store.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import time
from pathlib import Path

from e2e_util import cli, query, run_benchrun, start_benchrun, write_experiment

WIDE = {"COLUMNS": "160"}

HOOK_COLUMNS = (
    "w.name, h.kind, h.round_index, h.argv_json, h.status, h.reason, h.exit_code, "
    "h.started_at, h.wall_ns, h.stdout_tail, h.stderr_tail"
)


def _hook_rows(db: Path) -> list[dict]:
    rows = query(
        db,
        f"SELECT {HOOK_COLUMNS} FROM hook h JOIN workload w ON w.id = h.workload_id ORDER BY h.id",
    )
    keys = ("workload", "kind", "round_index", "argv", "status", "reason", "exit_code",
            "started_at", "wall_ns", "stdout_tail", "stderr_tail")  # fmt: skip
    out = []
    for row in rows:
        d = dict(zip(keys, row, strict=True))
        d["argv"] = json.loads(d["argv"])
        out.append(d)
    return out


def test_show_lists_each_hook_with_its_status_and_first_output_line(tmp_path: Path) -> None:
    proc = run_benchrun(
        "run", "-c", "true", "-c", "sleep 0.001", "-n", "fast", "-n", "slow",
        "--setup", "echo ready-fast; echo second line", "--setup", "echo ready-slow",
        "--prepare", "echo preparing >&2",
        "--cleanup", "echo tidy", "--cleanup", "echo gone wrong; exit 3",
        "--set", "rounds=3", "--set", "pin=none", "-o", "out", "-q",
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (db,) = (tmp_path / "out").glob("*/benchrun.db")
    rows = _hook_rows(db)
    # 1 warm-up + 3 rounds per workload: a setup, 4 prepares and a cleanup each
    kinds = [(r["workload"], r["kind"]) for r in rows]
    for name in ("fast", "slow"):
        assert kinds.count((name, "setup")) == 1 and kinds.count((name, "cleanup")) == 1
        assert kinds.count((name, "prepare")) == 4
    failed = [r for r in rows if r["status"] != "ok"]
    assert [(r["workload"], r["kind"], r["exit_code"]) for r in failed] == [("slow", "cleanup", 3)]

    shown = cli("show", str(db.parent), env=WIDE)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    start = lines.index("hooks (untimed; --json has every run and its output):")
    hook_lines = lines[start + 1 :]
    hook_lines = hook_lines[: next((i for i, x in enumerate(hook_lines) if not x.startswith("  ")),
                                   len(hook_lines))]  # fmt: skip
    # one line per workload and hook, in the order they first ran
    by_key = {
        tuple(line.split("`")[0].strip().rstrip(":").split(": ")): line for line in hook_lines
    }
    assert set(by_key) == {
        (n, k) for n in ("fast", "slow") for k in ("setup", "prepare", "cleanup")
    }
    assert len(hook_lines) == 6
    # the command as written, the status, the first line of the output (stdout, else stderr)
    assert "`echo ready-fast; echo second line`: ok, " in by_key[("fast", "setup")]
    assert by_key[("fast", "setup")].endswith('; printed "ready-fast"')
    assert "`echo preparing >&2`: 4 runs: 4 ok, median " in by_key[("fast", "prepare")]
    assert by_key[("slow", "prepare")].endswith('; printed "preparing"')
    assert by_key[("fast", "cleanup")].endswith('; printed "tidy"')
    assert "`echo gone wrong; exit 3`: failed (exit code 3), " in by_key[("slow", "cleanup")]
    assert by_key[("slow", "cleanup")].endswith('; printed "gone wrong"')

    # --json: every run, as stored
    doc = json.loads(cli("show", str(db.parent), "--json").stdout)
    assert doc["hooks"] == rows
    # the JSON export carries the same list; --what results (no rounds) leaves it out
    exported = cli("export", str(db.parent))
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout)["hooks"] == rows
    results_only = json.loads(cli("export", str(db.parent), "--what", "results").stdout)
    assert "hooks" not in results_only
    # and the export still reads back (an added key; readers ignore what they do not know)
    (tmp_path / "run.json").write_text(exported.stdout)
    analysed = cli("analyze", "summary", str(tmp_path / "run.json"))
    assert analysed.returncode == 0, analysed.stderr


def test_show_without_hooks_prints_no_hook_section(tmp_path: Path) -> None:
    proc = run_benchrun(
        "run", "-c", "true", "--set", "rounds=2", "--set", "pin=none", "-o", "out", "-q",
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (db,) = (tmp_path / "out").glob("*/benchrun.db")
    shown = cli("show", str(db.parent), env=WIDE)
    assert shown.returncode == 0 and "hooks (untimed" not in shown.stdout, shown.stdout
    assert json.loads(cli("show", str(db.parent), "--json").stdout)["hooks"] == []


SLOW = """\
name: slow
settings: {rounds: 6, warmup_rounds: 0, pin: none}
workloads:
  - name: a
    command: [sleep, "0.1"]
"""


def _rounds(db: Path) -> int:
    try:
        return int(query(db, "SELECT COUNT(*) FROM round")[0][0])
    except Exception:  # the store is still being created
        return 0


def test_show_prints_a_resume_command_that_works_without_the_file(tmp_path: Path) -> None:
    """An interrupted campaign: ``show`` prints ``benchrun run <campaign dir> --resume``
    (shell-quoted: the output directory has a space), and that command, run as printed in
    a shell after the experiment file was deleted, finishes the campaign. Before, show
    printed the experiment file's path, which no longer existed."""
    exp = write_experiment(tmp_path, SLOW)
    proc = start_benchrun("run", "exp.yaml", "-o", "my results", cwd=tmp_path)
    db = tmp_path / "my results" / "slow" / "benchrun.db"
    deadline = time.monotonic() + 60
    while _rounds(db) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGINT, err
    exp.unlink()

    shown = cli("show", "my results/slow", cwd=tmp_path, env=WIDE)
    assert shown.returncode == 0, shown.stderr
    (hint,) = [x for x in shown.stdout.splitlines() if x.startswith("resume with: ")]
    command = hint.removeprefix("resume with: ")
    assert shlex.split(command) == ["benchrun", "run", "my results/slow", "--resume"]
    assert command == "benchrun run 'my results/slow' --resume"
    done = subprocess.run(
        command, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert query(db, "SELECT status FROM campaign") == [("done",)]
    assert query(db, "SELECT COUNT(*), COUNT(DISTINCT round_index) FROM round") == [(6, 6)]
    after = cli("show", "my results/slow", cwd=tmp_path, env=WIDE)
    assert "resume with" not in after.stdout

    # from elsewhere, the campaign directory is printed as an absolute path
    (tmp_path / "sub").mkdir()
    proc = start_benchrun("run", str(db.parent), "--new", cwd=tmp_path / "sub")
    while _rounds(db) < 8 and time.monotonic() < deadline + 60 and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGINT, err
    shown = cli("show", str(db.parent), cwd=tmp_path / "sub", env=WIDE)
    assert f"resume with: {shlex.join(['benchrun', 'run', str(db.parent), '--resume'])}" in (
        shown.stdout
    )
    # the first campaign, now followed by a newer one, is done: no hint
    first = cli("show", str(db.parent), "--campaign", "1", env=WIDE)
    assert first.returncode == 0 and "resume with" not in first.stdout
