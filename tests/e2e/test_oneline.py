"""End to end, real processes: the one-line form (``benchrun run -c CMD ...``), hooks run by
real shells, and the resume command printed on Ctrl-C, executed as printed.

The database is read back with sqlite3 (e2e_util.query), not through benchrun's code.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest
from e2e_util import benchrun_argv, cli, query, run_benchrun, start_benchrun, write_experiment

FAST = ("--set", "rounds=3", "--set", "pin=none")


def campaign_dirs(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.glob("*/benchrun.db"))


def test_oneline_runs_an_ordinary_campaign_that_show_report_and_compare_read(
    tmp_path: Path,
) -> None:
    proc = run_benchrun(  # the console script; the rest of the file calls it in process
        "run", "-c", "sleep 0.01", "-c", "sleep 0.03", "-n", "short", "-o", str(tmp_path),
        "-q", *FAST, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (directory,) = campaign_dirs(tmp_path)
    # the name: the commands as a slug and 8 hex digits of a hash
    assert re.fullmatch(r"sleep-0\.01-vs-sleep-0\.03-[0-9a-f]{8}", directory.name), directory
    db = directory / "benchrun.db"
    # -n names the first command; the second is named after itself
    assert [n for (n,) in query(db, "SELECT name FROM workload ORDER BY position")] == [
        "short",
        "sleep 0.03",
    ]
    rows = query(
        db,
        "SELECT w.name, COUNT(*), AVG(r.wall_ns) FROM round r JOIN workload w "
        "ON w.id = r.workload_id WHERE r.status = 'ok' AND r.warmup = 0 GROUP BY w.name",
    )
    means = {name: mean / 1e9 for name, count, mean in rows if count == 3}
    assert set(means) == {"short", "sleep 0.03"}
    # the shell really ran sleep: rounds of at least 10 ms and 30 ms, in that order
    assert 0.010 <= means["short"] < means["sleep 0.03"] and means["sleep 0.03"] >= 0.030, means
    # the stored text is an experiment file: the one --print-config prints
    (text,) = query(db, "SELECT config_text FROM campaign")[0]
    printed = cli(
        "run", "-c", "sleep 0.01", "-c", "sleep 0.03", "-n", "short", "-o", str(tmp_path),
        *FAST, "--print-config", cwd=tmp_path,
    )  # fmt: skip
    assert printed.returncode == 0 and printed.stdout == text
    show = cli("show", str(directory), "--json", cwd=tmp_path)
    assert show.returncode == 0, show.stderr
    assert json.loads(show.stdout)["status"] == "done"
    report = cli(
        "report", str(directory), "--format", "md", "-o", str(tmp_path / "r.md"), cwd=tmp_path
    )
    assert report.returncode == 0, report.stderr
    assert "sleep 0.03" in (tmp_path / "r.md").read_text()
    compare = cli("compare", str(directory), str(directory), cwd=tmp_path)
    assert compare.returncode == 0, compare.stderr


def test_print_config_is_a_file_that_runs_the_same_experiment(tmp_path: Path) -> None:
    args = ("-c", "echo {n} >/dev/null", "-L", "n", "1,2", "--prepare", "true", *FAST)
    printed = cli("run", *args, "--print-config", cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    assert not (tmp_path / "results").exists()  # nothing ran
    (tmp_path / "x.yaml").write_text(printed.stdout)
    valid = cli("validate", "x.yaml", cwd=tmp_path)
    assert valid.returncode == 0, valid.stderr
    one = cli("run", *args, "-o", "one", "-q", cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    two = cli("run", "x.yaml", "-o", "two", "-q", cwd=tmp_path)
    assert two.returncode == 0, two.stderr
    (db_one,) = [d / "benchrun.db" for d in campaign_dirs(tmp_path / "one")]
    (db_two,) = [d / "benchrun.db" for d in campaign_dirs(tmp_path / "two")]
    sql = "SELECT fingerprint, settings_json FROM campaign"
    assert query(db_one, sql) == query(db_two, sql)
    argv = "SELECT w.name, r.argv_json FROM round r JOIN workload w ON w.id = r.workload_id ORDER BY r.seq"
    assert query(db_one, argv) == query(db_two, argv)
    assert {a for _, a in query(db_one, argv)} == {'["echo 1 >/dev/null"]', '["echo 2 >/dev/null"]'}
    hooks = "SELECT kind, argv_json, status FROM hook ORDER BY id"
    assert query(db_one, hooks) == query(db_two, hooks) == [("prepare", '["true"]', "ok")] * 8


def _rounds(db: Path) -> int:
    try:
        return query(db, "SELECT COUNT(*) FROM round")[0][0]
    except Exception:
        return 0


def _wait_rounds(db_glob: tuple[Path, str], count: int, proc: subprocess.Popen) -> Path:
    """Wait until a store matching ``db_glob`` holds ``count`` rounds; return its path."""
    root, pattern = db_glob
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = sorted(root.glob(pattern))
        if found and _rounds(found[0]) >= count:
            return found[0]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    raise AssertionError("the campaign did not reach the rounds")


def _hint(stderr: str) -> tuple[str, str]:
    """The two commands of the interruption message: ``continue with: A (or: B)``."""
    m = re.search(r"continue with: (.+) \(or: (.+)\)\s*$", stderr, re.M)
    assert m, stderr
    return m.group(1), m.group(2)


def _sh(command: str, cwd: Path) -> subprocess.Popen:
    """Start ``command`` as a user would paste it into a shell (parsed by /bin/sh, which
    then execs it, so that a signal reaches benchrun), ``benchrun`` being the one under
    test."""
    assert command.startswith("benchrun ")
    exe = shlex.join(benchrun_argv())
    return subprocess.Popen(
        ["/bin/sh", "-c", f"exec {exe} {command.removeprefix('benchrun ')}"],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )


SLOW = """\
name: slow
settings: {rounds: 4, warmup_rounds: 0, pin: none}
workloads:
  - name: a
    command: [sleep, "0.15"]
  - name: b
    command: [sleep, "0.1"]
"""


def test_the_printed_resume_commands_resume_after_sigint(tmp_path: Path) -> None:
    """`benchrun run exp.yaml -o DIR`, SIGINT during a round: both printed commands
    continue the campaign (the one with the file names -o DIR; before, it did not and
    answered "nothing to resume"); run as printed, in a shell, from the same directory."""
    write_experiment(tmp_path, SLOW)
    out = tmp_path / "elsewhere"
    proc = start_benchrun("run", "exp.yaml", "-o", "elsewhere", cwd=tmp_path)
    db = _wait_rounds((out, "slow/benchrun.db"), 2, proc)
    time.sleep(0.05)  # inside a round (each lasts 100-150 ms)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGINT, err
    primary, alternative = _hint(err)
    assert primary == "benchrun run elsewhere/slow --resume"
    assert alternative == "benchrun run exp.yaml -o elsewhere --resume"
    stored = _rounds(db)
    # the alternative, interrupted again
    again = _sh(alternative, tmp_path)
    deadline = time.monotonic() + 60
    while _rounds(db) < stored + 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    again.send_signal(signal.SIGINT)
    _, err2 = again.communicate(timeout=30)
    assert again.returncode == 128 + signal.SIGINT, err2
    assert _hint(err2)[0] == primary
    # the campaign directory alone
    final = _sh(primary, tmp_path)
    _, err3 = final.communicate(timeout=60)
    assert final.returncode == 0, err3
    (status,) = query(db, "SELECT status FROM campaign")[0]
    assert status == "done" and len(query(db, "SELECT id FROM campaign")) == 1
    counts = query(
        db,
        "SELECT workload_id, COUNT(*), COUNT(DISTINCT round_index) FROM round GROUP BY workload_id",
    )
    assert [(n, d) for _, n, d in counts] == [(4, 4), (4, 4)]
    kinds = [k for (k,) in query(db, "SELECT kind FROM event ORDER BY id")]
    assert kinds.count("resume") == 2


def test_oneline_resume_by_its_hint_and_by_the_same_arguments(tmp_path: Path) -> None:
    args = ("-c", "sleep 0.12", "-c", "sleep 0.08", "--set", "rounds=4", "--set", "pin=none")
    proc = start_benchrun("run", *args, cwd=tmp_path)
    db = _wait_rounds((tmp_path / "results", "*/benchrun.db"), 2, proc)
    time.sleep(0.04)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGINT, err
    primary, alternative = _hint(err)
    assert primary == f"benchrun run results/{db.parent.name} --resume"
    assert shlex.split(alternative) == ["benchrun", "run", *args, "--resume"]
    # the same arguments with --resume find the same campaign
    again = start_benchrun("run", *args, "--resume", cwd=tmp_path)
    _wait_rounds((tmp_path / "results", "*/benchrun.db"), _rounds(db) + 1, again)
    again.send_signal(signal.SIGKILL)  # even a hard kill loses at most the round in flight
    again.wait(timeout=30)
    final = _sh(primary, tmp_path)
    _, err3 = final.communicate(timeout=60)
    assert final.returncode == 0, err3
    assert len(list((tmp_path / "results").iterdir())) == 1
    counts = query(
        db, "SELECT COUNT(*), COUNT(DISTINCT round_index) FROM round GROUP BY workload_id"
    )
    assert counts == [(5, 5), (5, 5)]  # 1 warm-up + 4 rounds, none twice


def test_hooks_in_a_file_run_in_real_shells_and_their_output_is_stored(tmp_path: Path) -> None:
    write_experiment(
        tmp_path,
        """\
        name: hooked
        settings: {rounds: 2, warmup_rounds: 0, pin: none}
        workloads:
          - name: reads-state
            command: [grep, -q, ready, state.txt]
            setup: echo ready > state.txt && echo set up
            prepare: [sh, -c, "echo prepared {round}; echo round {round} >> log.txt"]
            cleanup: rm state.txt
        """,
    )
    proc = cli("run", "exp.yaml", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "state.txt").exists()  # the cleanup ran
    assert (tmp_path / "log.txt").read_text() == "round 0\nround 1\n"
    db = tmp_path / "results" / "hooked" / "benchrun.db"
    hooks = query(
        db, "SELECT kind, round_index, status, exit_code, stdout_tail FROM hook ORDER BY id"
    )
    assert hooks == [
        ("setup", None, "ok", 0, "set up\n"),
        ("prepare", 0, "ok", 0, "prepared 0\n"),
        ("prepare", 1, "ok", 0, "prepared 1\n"),
        ("cleanup", None, "ok", 0, ""),
    ]
    assert {s for (s,) in query(db, "SELECT status FROM round")} == {"ok"}


def test_a_failing_prepare_fails_its_rounds_with_the_reason(tmp_path: Path) -> None:
    proc = cli(
        "run", "-c", "true", "--prepare", "echo no space left >&2; exit 3", "-q", *FAST,
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    (directory,) = campaign_dirs(tmp_path / "results")
    db = directory / "benchrun.db"
    rounds = query(db, "SELECT status, reason, stderr_tail, wall_ns FROM round ORDER BY seq")
    assert (
        rounds
        == [
            (
                "failed",
                "prepare failed: exit code 3 (no space left); the round did not run",
                "no space left\n",
                0,
            )
        ]
        * 3
    )  # max_consecutive_failures: 3 stops the workload
    (reason,) = query(db, "SELECT status_reason FROM workload")[0]
    assert reason.startswith("3 failures in a row, last: prepare failed: exit code 3")


def test_a_failing_cleanup_warns_and_exits_0(tmp_path: Path) -> None:
    proc = cli("run", "-c", "true", "--cleanup", "echo busy; exit 1", "-q", *FAST, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "benchrun: warning: true: cleanup failed: exit code 1 (busy); every round is stored" in (
        proc.stderr
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give an experiment file (benchrun init writes one), or the commands"),
        (("x.yaml", "-c", "true"), "give an experiment file (x.yaml) or commands with -c, not both"),
        (("-c", "true", "-L", "n", "1,,2"), "-L n 1,,2: an empty value"),
        (("-c", "true {n}", "-L", "n", "1,1"), "-L n 1,1: value '1' given twice"),
        (("-c", "true", "-L", "n", "1,2"), "-L n: no workload uses {n}"),
        (("-c", "true", "-L", "n-x", "1"), "-L n-x: matrix name 'n-x' cannot be a placeholder"),
        (("-c", "true", "-n", "a", "-n", "b"), "-n: 2 names for 1 command (-c)"),
        (("-c", "a", "-c", "b", "-c", "c", "--prepare", "x", "--prepare", "y"), "--prepare given 2 times for 3 commands"),
        (("-n", "a"), "-n is an option of the one-line form"),
        (("x.yaml", "--print-config"), "--print-config is an option of the one-line form"),
        (("-c", "no-such-prog-xyz", "-N"), "-c 'no-such-prog-xyz': executable 'no-such-prog-xyz' not found"),
        (("-c", "true", "--set", "rouns=2"), "--set rouns: unknown key 'rouns'"),
        (("-c", "true", "--experiment-name", "a/b"), "--experiment-name a/b: bad experiment name"),
    ],
)  # fmt: skip
def test_bad_one_line_input_is_one_line_and_exit_2(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    (tmp_path / "x.yaml").write_text("name: x\nworkloads:\n  - {name: a, command: [python3]}\n")
    proc = cli("run", *args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"benchrun: error: {message}"), proc.stderr
    assert not (tmp_path / "results").exists()


def test_a_malformed_parameter_list_is_refused_by_the_parser(tmp_path: Path) -> None:
    proc = cli("run", "-c", "true", "-L", "n", cwd=tmp_path)
    assert proc.returncode == 2
    assert "-L/--parameter-list: expected 2 arguments" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_campaign_directory_is_not_a_place_for_o(tmp_path: Path) -> None:
    done = cli("run", "-c", "true", "-q", *FAST, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (directory,) = campaign_dirs(tmp_path / "results")
    proc = cli("run", str(directory), "-o", "other", "--resume", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith("is a campaign directory and stays where it is; drop -o")
    nothing = cli("run", str(directory), "--resume", cwd=tmp_path)
    assert nothing.returncode == 2 and "nothing to resume" in nothing.stderr
    assert os.listdir(tmp_path / "results") == [directory.name]


def test_ten_rounds_of_sleep_10_ms_and_12_ms_are_separated_in_order(tmp_path: Path) -> None:
    """hyperfine answers this from 10 runs; so does benchrun (issue 28): the fixed
    campaign's one look spends all of alpha on the exact signed-rank test, and 10 passes
    where the 12 ms sleep is the slower give p 2/2^10 (or 2 of one sign away from it)."""
    proc = cli(
        "run", "-c", "sleep 0.01", "-c", "sleep 0.012", "--set", "rounds=10",
        "-o", str(tmp_path), "--json", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (directory,) = campaign_dirs(tmp_path)
    db = directory / "benchrun.db"
    rows = query(
        db,
        "SELECT w.name, r.pass, r.wall_ns FROM round r JOIN workload w ON w.id = r.workload_id "
        "WHERE r.status = 'ok' AND r.warmup = 0",
    )
    by_pass: dict[int, dict[str, int]] = {}
    for name, p, wall in rows:
        by_pass.setdefault(p, {})[name] = wall
    slower = sum(v["sleep 0.012"] > v["sleep 0.01"] for v in by_pass.values() if len(v) == 2)
    shown = json.loads(cli("show", str(directory), "--json", cwd=tmp_path).stdout)
    (pair,) = shown["comparisons"]["comparisons"]
    if slower == len(by_pass) == 10:  # every pass in order: the exact p is 2/2^10
        assert (pair["a"], pair["b"], pair["verdict"]) == ("sleep 0.01", "sleep 0.012", "separated")
        assert pair["p"] == pytest.approx(2 / 2**10)
    assert len(by_pass) == 10 and pair["passes"] == 10
    assert "(paired, median per-pass ratio, 10 passes)" in pair["headline"]
