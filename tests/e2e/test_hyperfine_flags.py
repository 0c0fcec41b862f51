"""End to end, real processes: hyperfine's flags in the one-line form (issue 32 item 1;
docs/oneline.md, "hyperfine's flags").

The store is read back with sqlite3 (e2e_util.query), not through benchrun's code, and
the exports are compared with it. Durations are never asserted beyond "a sleep lasts at
least its argument": the machine is shared. ``contended=keep`` keeps rounds that waited
for a CPU on a loaded machine (``exclude`` would replace them, which is not what these
tests are about), ``pin=none`` takes no CPU reservation.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from e2e_util import cli, query, run_benchrun

SHARED = ("--set", "pin=none", "--set", "contended=keep", "-q")
KEYS = ["command", "mean", "stddev", "median", "user", "system", "min", "max", "times"]


def only_db(root: Path) -> Path:
    (db,) = sorted(root.glob("*/benchrun.db"))
    return db


def stored_times(db: Path) -> dict[str, list[float]]:
    """The timed rounds' wall times in seconds per workload, in launch order."""
    rows = query(
        db,
        "SELECT w.name, r.wall_ns FROM round r JOIN workload w ON w.id = r.workload_id "
        "WHERE r.status = 'ok' AND r.warmup = 0 ORDER BY r.seq",
    )
    out: dict[str, list[float]] = {}
    for name, wall_ns in rows:
        out.setdefault(name, []).append(wall_ns / 1e9)
    return out


def test_the_issue_s_acceptance_line(tmp_path: Path) -> None:
    proc = run_benchrun(
        "run", "-c", "sleep 0.01", "-c", "sleep 0.02", "--runs", "10", "--warmup", "1",
        "--export-json", "h.json", "--export-markdown", "m.md", "-o", str(tmp_path / "r"),
        *SHARED, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    db = only_db(tmp_path / "r")
    stored = stored_times(db)
    # fixed mode: exactly 10 timed rounds and 1 warm-up round per command
    assert {k: len(v) for k, v in stored.items()} == {"sleep 0.01": 10, "sleep 0.02": 10}
    warmups = query(db, "SELECT COUNT(*) FROM round WHERE warmup = 1")[0][0]
    assert warmups == 2
    doc = json.loads((tmp_path / "h.json").read_text())
    assert [r["command"] for r in doc["results"]] == ["sleep 0.01", "sleep 0.02"]
    for result, floor in zip(doc["results"], (0.010, 0.020), strict=True):
        assert all(k in result for k in KEYS), result.keys()
        assert "parameters" not in result  # hyperfine writes it only for scans
        times = stored[result["command"]]
        assert result["times"] == pytest.approx(times, abs=1e-9)  # seconds, not ms
        assert result["mean"] == pytest.approx(sum(times) / 10, abs=1e-9)
        assert result["min"] == pytest.approx(min(times)) and result["max"] == pytest.approx(
            max(times)
        )
        assert result["exit_codes"] == [0] * 10
        assert result["min"] >= floor  # a sleep lasts at least its argument: seconds
        assert result["stddev"] > 0 and result["user"] >= 0 and result["system"] >= 0
    md = (tmp_path / "m.md").read_text().splitlines()
    assert md[0] == "| Command | Mean [ms] | Min [ms] | Max [ms] | Relative |"
    assert md[1] == "|:---|---:|---:|---:|---:|"
    assert md[2].startswith("| `sleep 0.01` | ") and md[3].startswith("| `sleep 0.02` | ")
    assert len(md) == 4


def test_ignore_failure_lets_a_failing_command_run_its_rounds(tmp_path: Path) -> None:
    # today's behaviour without -i: the workload stops after 3 failures in a row
    plain = cli(
        "run", "-c", "false", "-c", "true", "--runs", "5", "-o", str(tmp_path / "plain"),
        *SHARED, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert plain.returncode != 0
    failed = query(only_db(tmp_path / "plain"), "SELECT COUNT(*) FROM round WHERE status='failed'")
    assert failed[0][0] == 3
    assert "3 rounds exited non-zero; -i (--ignore-failure) times and keeps" in plain.stderr
    ignored = cli(
        "run", "-c", "false", "-c", "true", "--runs", "5", "-i", "--export-json", "f.json",
        "-o", str(tmp_path / "i"), *SHARED, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert ignored.returncode == 0, ignored.stderr
    db = only_db(tmp_path / "i")
    rows = query(
        db,
        "SELECT w.name, r.status, r.exit_code, r.warmup FROM round r JOIN workload w "
        "ON w.id = r.workload_id",
    )
    timed = [(name, status, code) for name, status, code, warmup in rows if not warmup]
    assert sorted(timed) == [("false", "ok", 1)] * 5 + [("true", "ok", 0)] * 5
    # the failures are counted and said, once, on stderr
    assert "false: 5 of 5 timed rounds exited non-zero (exit code 1)" in ignored.stderr
    doc = json.loads((tmp_path / "f.json").read_text())
    by_command = {r["command"]: r for r in doc["results"]}
    assert by_command["false"]["exit_codes"] == [1] * 5  # timed anyway, as hyperfine does
    assert len(by_command["false"]["times"]) == 5
    assert by_command["true"]["exit_codes"] == [0] * 5
    # the campaign directory alone runs its experiment again with -i: it is recorded with
    # the campaign (its description), not only on the first command line
    again = cli("run", str(db.parent), "--set", "rounds=2", "-q", cwd=tmp_path, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "false: 2 of 2 timed rounds exited non-zero" in again.stderr
    second = query(
        db,
        "SELECT r.status, r.exit_code FROM round r JOIN workload w ON w.id = r.workload_id "
        "WHERE w.name = 'false' AND r.warmup = 0 AND r.campaign_id = (SELECT MAX(id) FROM "
        "campaign)",
    )
    assert second == [("ok", 1)] * 2


def test_parameter_scan_makes_the_commands_and_exports_the_values(tmp_path: Path) -> None:
    proc = cli(
        "run", "-c", "sleep {t}", "--parameter-scan", "t", "0", "0.02", "-D", "0.01",
        "--runs", "2", "--warmup", "0", "--export-json", "p.json", "--export-csv", "p.csv",
        "-o", str(tmp_path / "r"), *SHARED, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    argvs = {a for (a,) in query(only_db(tmp_path / "r"), "SELECT DISTINCT argv_json FROM round")}
    assert {json.loads(a)[-1] for a in argvs} == {"sleep 0", "sleep 0.01", "sleep 0.02"}
    doc = json.loads((tmp_path / "p.json").read_text())
    got = {r["command"]: r["parameters"] for r in doc["results"]}
    assert got == {
        "sleep 0": {"t": "0"},
        "sleep 0.01": {"t": "0.01"},
        "sleep 0.02": {"t": "0.02"},
    }
    lines = (tmp_path / "p.csv").read_text().splitlines()
    assert lines[0] == "command,mean,stddev,median,user,system,min,max,parameter_t"
    assert [line.split(",")[0] for line in lines[1:]] == ["sleep 0", "sleep 0.01", "sleep 0.02"]
    assert all(line.endswith(("0", "0.01", "0.02")) for line in lines[1:])


def test_input_conclude_show_output_and_shell(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("from-the-input-file\n")
    log = tmp_path / "conclude.log"
    proc = cli(
        "run", "-c", "cat; echo $BASH_VERSION >&2", "--input", "in.txt", "--show-output",
        "--conclude", f"echo done >> {log}", "--shell", "bash", "--runs", "2",
        "--warmup", "1", "-o", str(tmp_path / "r"), *SHARED, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # every round (the warm-up too) read the file and its output was shown
    assert proc.stdout.count("from-the-input-file") == 3
    # bash ran the command: $BASH_VERSION is set, so stderr shows a version number each round
    assert sum(1 for line in proc.stderr.splitlines() if line[:1].isdigit()) == 3
    # the conclude ran after each of the 3 rounds
    assert log.read_text().splitlines() == ["done"] * 3
    (argv,) = query(only_db(tmp_path / "r"), "SELECT DISTINCT argv_json FROM round")[0]
    assert json.loads(argv) == ["bash", "-c", "cat; echo $BASH_VERSION >&2"]


def test_a_failing_conclude_fails_the_round_it_followed(tmp_path: Path) -> None:
    proc = cli(
        "run", "-c", "true", "--conclude", "echo broken >&2; exit 3", "--runs", "2",
        "-o", str(tmp_path / "r"), *SHARED, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert proc.returncode != 0
    reasons = query(only_db(tmp_path / "r"), "SELECT DISTINCT reason FROM round")
    assert reasons == [("conclude failed: exit code 3 (broken); the round ran and was timed",)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--runs", "3", "--min-runs", "2"), "--runs and --min-runs contradict each other"),
        (("--runs", "3", "--max-runs", "9"), "--runs and --max-runs contradict each other"),
        (("--runs", "3", "--set", "rounds=4"), "--runs and --set rounds both set rounds"),
        (("--min-runs", "9", "--max-runs", "2"), "--min-runs 9 is above --max-runs 2"),
        (("--runs", "0"), "--runs 0: must be at least 1"),
        (("-N", "--shell", "bash"), "-N and --shell bash contradict each other"),
        (
            (
                "-D",
                "0.1",
            ),
            "-D/--parameter-step-size needs --parameter-scan",
        ),
        (("-P", "t", "3", "1"), "--parameter-scan t 3 1: the minimum is above the maximum"),
        (("-P", "t", "1", "2", "-D", "0"), "the step must be above zero"),
        (("--input", "no-such-file"), "--input no-such-file: not a readable file"),
        (("--export-json", "no/such/dir/h.json"), "--export-json no/such/dir/h.json: its "),
        (("--reference-name", "x"), "--reference-name needs --reference CMD"),
        (("--warmup", "x"), "expected a whole number"),
    ],
)
def test_flag_conflicts_are_one_line_and_exit_2(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    proc = cli("run", "-c", "sleep {t}", *args, "--print-config", cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert message in lines[-1], proc.stderr
    if not args[0].startswith("--warmup"):  # argparse's own errors print the usage first
        assert len(lines) == 1, proc.stderr
    assert not (tmp_path / "results").exists()


def test_hyperfine_flags_need_the_one_line_form(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text("name: x\nworkloads:\n  - {name: a, command: [true]}\n")
    proc = cli("run", "x.yaml", "--runs", "3", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "benchrun: error: --runs is an option of the one-line form; give the commands with "
        "-c CMD (in an experiment file, write it in the file: docs/oneline.md)"
    )


def test_reference_is_measured_first_and_compared_with(tmp_path: Path) -> None:
    proc = cli(
        "run", "-c", "sleep 0.02", "--reference", "sleep 0.01", "--runs", "3",
        "--export-markdown", "m.md", "-o", str(tmp_path / "r"), *SHARED, cwd=tmp_path,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    db = only_db(tmp_path / "r")
    names = [n for (n,) in query(db, "SELECT name FROM workload ORDER BY position")]
    assert names == ["sleep 0.01", "sleep 0.02"]
    (settings,) = query(db, "SELECT settings_json FROM campaign")[0]
    assert json.loads(settings)["reference"] == "sleep 0.01"
    rows = (tmp_path / "m.md").read_text().splitlines()[2:]
    assert rows[0].endswith("| 1.00 |")  # the reference, whatever the times
    ratio = float(rows[1].split("|")[-2].split("±")[0])
    stored = stored_times(db)
    expected = (sum(stored["sleep 0.02"]) / 3) / (sum(stored["sleep 0.01"]) / 3)
    assert math.isclose(ratio, expected, abs_tol=0.006)
