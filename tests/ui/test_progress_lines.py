"""Issue 17: with stderr not a terminal (a pipe, a CI log), ``benchrun run`` prints a plain
progress line every 5 s: elapsed time, rounds stored, what is still unmet, time left.

The campaigns run with the fake executor, and the display reads the executor's virtual
clock, so "every 5 s" is checked exactly in a fraction of a second; the expected lines are
worked out from the scripted round times.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.execute.fake import FakeExecutor, constant, lognormal
from benchrun.runner.ui.display import PLAIN_EVERY_S, RichDisplay

FIXED = """\
name: piped
output: {out}
settings: {{adaptive: false, rounds: 20, warmup_rounds: 0, pin: none, seed: 4, order: sequential}}
workloads:
  - {{name: a, command: [work, a]}}
  - {{name: b, command: [work, b]}}
"""


def _run(tmp_path: Path, text: str, fake: FakeExecutor) -> list[str]:
    exp = parse_experiment(
        text.format(out=tmp_path / "out"), base_dir=tmp_path, check_commands=False
    )
    console = Console(file=io.StringIO(), width=300, color_system=None)
    assert not console.is_terminal
    display = RichDisplay({"a": "s", "b": "s"}, console=console, clock=lambda: fake.clock)
    run_campaign(exp, fake, display)
    return str(console.file.getvalue()).splitlines()  # type: ignore[attr-defined]


def test_a_line_every_five_seconds_with_rounds_and_what_is_left(tmp_path: Path) -> None:
    # 40 rounds of 1 s, each pass a then b (order: sequential): a line after rounds 5, 10, ... 40
    lines = _run(tmp_path, FIXED, FakeExecutor({"a": constant(1.0), "b": constant(1.0)}))
    progress = [line for line in lines if line.startswith("progress ")]
    assert PLAIN_EVERY_S == 5.0
    assert len(progress) == 8
    for k, line in enumerate(progress, start=1):
        done = 5 * k
        left = {"a": 20 - (done + 1) // 2, "b": 20 - done // 2}
        still = ", ".join(f"{n} {v}" for n, v in left.items() if v)
        still = f"still to run: {still}; " if still else ""
        # 1 s per round so far: the rounds left take as many seconds
        assert line == (
            f"progress 0:{done:02d}: {done} of 40 rounds stored; {still}"
            f"~{40 - done}s left (estimate)"
        ), line
    assert not any("\x1b[" in line for line in lines)  # plain text, no cursor movement


def test_quiet_prints_no_progress(tmp_path: Path) -> None:
    exp = parse_experiment(
        FIXED.format(out=tmp_path / "out"), base_dir=tmp_path, check_commands=False
    )
    fake = FakeExecutor({"a": constant(1.0), "b": constant(1.0)})
    console = Console(file=io.StringIO(), width=300, color_system=None)
    display = RichDisplay(
        {"a": "s", "b": "s"}, console=console, quiet=True, clock=lambda: fake.clock
    )
    run_campaign(exp, fake, display)
    assert console.file.getvalue() == ""  # type: ignore[attr-defined]


ADAPTIVE = """\
name: piped-adaptive
output: {out}
settings: {{pin: none, seed: 4, ci_rel_width: 0.02, max_rounds: 60, warmup_rounds: 0}}
workloads:
  - {{name: a, command: [work, a]}}
  - {{name: b, command: [work, b]}}
"""


def test_adaptive_lines_say_what_is_unmet(tmp_path: Path) -> None:
    # 0.5 s rounds, 10 % apart, CoV 5 %: undecided for a while, so lines come every 5 s
    fake = FakeExecutor({"a": lognormal(0.5, 0.05, seed=1), "b": lognormal(0.55, 0.05, seed=2)})
    lines = _run(tmp_path, ADAPTIVE, fake)
    progress = [line for line in lines if line.startswith("progress ")]
    assert len(progress) >= 2
    seconds = []
    for line in progress:
        m = re.match(r"progress (\d+):(\d\d): (\d+) rounds stored; (.*)$", line)
        assert m is not None, line
        seconds.append(60 * int(m[1]) + int(m[2]))
        assert m[4].startswith("unmet: ")  # the controller's list of what it waits for
    # at least 5 s apart (virtual time), and the rounds only grow
    assert all(b - a >= 5 for a, b in zip(seconds, seconds[1:], strict=False))
    counts = [int(re.search(r": (\d+) rounds", line)[1]) for line in progress]  # type: ignore[index]
    assert counts == sorted(counts) and counts[0] >= 9  # 5 s of 0.5 s rounds
