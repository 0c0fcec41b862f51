"""Issue 17: ``benchrun run ... | cat`` in a CI log says what is happening while it runs.

A real campaign of about 6 s (24 rounds of ``sleep 0.25``) with stdout and stderr both
pipes: stderr gets a plain progress line every 5 s (no cursor movement, no live table),
stdout only the results. The unit test with a fake clock is
tests/ui/test_progress_lines.py; this one checks the real process and its pipes.
"""

from __future__ import annotations

import re
from pathlib import Path

from e2e_util import run_benchrun, write_experiment


def test_piped_run_prints_progress_lines_on_stderr(tmp_path: Path) -> None:
    exp = write_experiment(
        tmp_path,
        f"""
        name: piped
        output: {tmp_path}
        settings: {{rounds: 24, warmup_rounds: 0, pin: none, seed: 1}}
        workloads:
          - name: nap
            command: ["sleep", "0.25"]
        """,
    )
    proc = run_benchrun("run", str(exp), env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    progress = [line for line in proc.stderr.splitlines() if line.startswith("progress ")]
    # 24 rounds of >= 0.25 s: at least 6 s, so at least one line at >= 5 s
    assert progress, proc.stderr
    for line in progress:
        m = re.fullmatch(
            # a loaded machine may flag a round contended: "(1 contended, 5.3 % of rounds)"
            r"progress 0:(\d\d): (\d+) of 24 rounds stored"
            r"(?: \(\d+ contended, [\d.]+ % of rounds\))?; still to run: nap (\d+); "
            r"~\d+s left \(estimate\)",
            line,
        )
        assert m is not None, line
        assert int(m[1]) >= 5 and int(m[2]) + int(m[3]) == 24
        assert int(m[2]) <= 4 * int(m[1]) + 4  # no more than a round per 0.25 s
    assert "\x1b[" not in proc.stderr  # plain lines, not a live display
    assert "progress" not in proc.stdout
    # the results go to stdout, the table fitted to COLUMNS=80 (sentences such as a drift
    # line stay one line each in a pipe)
    assert "nap" in proc.stdout and "mean ± 95 % CI" in proc.stdout
    table = [line for line in proc.stdout.splitlines() if line[:1] in "┏┃┡│└"]
    assert table and max(len(line) for line in table) <= 80


def test_a_long_path_on_piped_stderr_stays_on_one_line(tmp_path: Path) -> None:
    """stderr in a pipe used to be wrapped at 80 columns, splitting "stored in .../b" /
    "enchrun.db" (issue 32): the path must be pasteable whole."""
    out = tmp_path / ("a-rather-long-directory-name-" * 5) / "results"
    exp = write_experiment(
        tmp_path,
        f"""
        name: paths
        output: {out}
        settings: {{rounds: 2, warmup_rounds: 0, pin: none, seed: 1}}
        workloads:
          - name: t
            command: ["true"]
        """,
    )
    proc = run_benchrun("run", str(exp), env={"COLUMNS": ""})
    assert proc.returncode == 0, proc.stderr
    db = out / "paths" / "benchrun.db"
    assert db.exists()
    stored = [line for line in proc.stderr.splitlines() if line.startswith("stored in")]
    assert stored == [f"stored in {db}"], proc.stderr
