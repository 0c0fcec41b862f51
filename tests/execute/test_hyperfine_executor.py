"""The executor of hyperfine's round options (runner/execute/hyperfine_local.py), with
real child processes: --input as stdin, --conclude after the round (untimed, failing
the round when it fails, interrupted with it), -i, --show-output, and hooks untouched."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchrun.runner.config.hyperfine import RoundOptions
from benchrun.runner.execute.executor import RoundSpec
from benchrun.runner.execute.hyperfine_local import IGNORED_EXIT, HyperfineLocalExecutor

ENV = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}


def spec(command: str, hook: str | None = None) -> RoundSpec:
    return RoundSpec(workload="w", argv=(command,), shell=True, env=ENV, timeout=60.0, hook=hook)


@pytest.fixture
def make() -> Iterator:
    made: list[HyperfineLocalExecutor] = []

    def build(options: RoundOptions, **kw: object) -> HyperfineLocalExecutor:
        ex = HyperfineLocalExecutor(options, use_cgroup=False, **kw)  # type: ignore[arg-type]
        made.append(ex)
        return ex

    yield build
    for ex in made:
        ex.close()


def test_input_is_the_round_s_stdin_and_not_the_hook_s(make, tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("line one\nline two\n")
    ex = make(RoundOptions(input=str(tmp_path / "in.txt")))
    assert ex.launch(spec("wc -l")).stdout_tail.strip() == "2"
    assert ex.launch(spec("wc -l")).stdout_tail.strip() == "2"  # opened afresh each round
    assert ex.launch(spec("wc -l", hook="prepare")).stdout_tail.strip() == "0"  # /dev/null
    (tmp_path / "in.txt").unlink()
    gone = ex.launch(spec("wc -l"))
    assert gone.status == "failed" and "cannot open" in (gone.reason or "")


def test_conclude_runs_after_the_round_untimed(make, tmp_path: Path) -> None:
    log = tmp_path / "log"
    ex = make(RoundOptions(conclude={"w": (f"echo concluded >> {log}; exit 0",)}))
    out = ex.launch(spec(f"echo round >> {log}; exit 7"))
    # the outcome is the round's own (its exit code), the conclude ran after it was reaped
    assert (out.status, out.exit_code) == ("failed", 7)
    assert log.read_text().splitlines() == ["round", "concluded"]
    # hooks are not followed by the conclude
    ex.launch(spec("true", hook="setup"))
    assert log.read_text().splitlines() == ["round", "concluded"]


def test_a_failing_conclude_fails_the_round(make) -> None:
    ex = make(RoundOptions(conclude={"w": ("echo nope >&2; exit 5",)}))
    out = ex.launch(spec("true"))
    assert out.status == "failed"
    assert out.reason == "conclude failed: exit code 5 (nope); the round ran and was timed"
    assert out.exit_code == 0  # the round's own exit code


def test_an_interrupt_before_the_conclude_leaves_the_round_interrupted(make) -> None:
    ex = make(RoundOptions(conclude={"w": ("true",)}))
    original = ex._timed

    def timed_then_interrupted(s: RoundSpec):  # Ctrl-C right after the round
        out = original(s)
        ex.interrupt()
        return out

    ex._timed = timed_then_interrupted  # type: ignore[method-assign]
    out = ex.launch(spec("true"))
    assert out.status == "interrupted" and (out.reason or "").startswith("--conclude ")


def test_ignore_failure_and_show_output(make) -> None:
    shown: list[tuple[str, str, str]] = []
    ex = make(
        RoundOptions(ignore_failure=True, show_output=True),
        on_output=lambda *a: shown.append(a),
    )
    out = ex.launch(spec("echo out; echo err >&2; exit 3"))
    assert (out.status, out.exit_code, out.reason) == ("ok", 3, None)
    assert out.extra[IGNORED_EXIT] == 3
    assert shown == [("w", "out\n", "err\n")]
    killed = ex.launch(spec("kill -9 $$"))
    assert killed.status == "failed"  # a signal is not an exit code
    hook = ex.launch(spec("exit 3", hook="prepare"))
    assert hook.status == "failed" and len(shown) == 2  # hooks: not shown, not ignored
