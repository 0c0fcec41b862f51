"""Issue 29, item 8: a NUL in an ``env`` value (or a command argument, a hook, a variable
set for every workload) is refused when the experiment is read, with one line naming the
workload and the key, by ``benchrun validate`` and ``benchrun run``; on main it passed
``validate`` and failed every round.

What "execve cannot pass" means is asked of the kernel's interface, not of benchrun:
``subprocess`` refuses the same strings when it starts a real process.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from e2e_util import cli

NUL_VALUE = """\
name: nul
settings: {rounds: 2}
workloads:
  - name: with-env
    command: ["true"]
    env: {TOKEN: "abc\\0def"}
"""


def _kernel_refuses(argv: list[str], env: dict[str, str]) -> bool:
    """Whether starting a real process with ``argv`` and ``env`` fails before it runs."""
    try:
        subprocess.run(argv, env=env, check=False, capture_output=True, timeout=60)
    except (ValueError, UnicodeEncodeError):
        return True
    return False


def test_the_strings_refused_are_those_a_process_cannot_be_started_with() -> None:
    assert _kernel_refuses(["true"], {"TOKEN": "abc\0def"})
    assert _kernel_refuses(["echo", "a\0b"], {})
    assert _kernel_refuses(["echo", "\ud800"], {})
    assert not _kernel_refuses(["echo", "a\x1bb\u202e"], {})  # odd but passable: not refused


def test_nul_in_an_env_value_is_refused_by_validate_and_run(tmp_path: Path) -> None:
    (tmp_path / "nul.yaml").write_text(NUL_VALUE, encoding="utf-8")
    for args in (("validate", "nul.yaml"), ("run", "nul.yaml", "-o", "res")):
        r = cli(*args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        lines = r.stderr.splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith("benchrun: error: nul.yaml:6: workloads[0].env.TOKEN: ")
        assert "workload 'with-env'" in lines[0] and "NUL" in lines[0]
    assert not (tmp_path / "res").exists()  # nothing was started or stored


def test_every_place_a_string_reaches_execve(tmp_path: Path) -> None:
    """Command arguments, a shell command, hooks, settings env and a matrix value: one line
    each, naming the workload after the matrix and the key (with its file line)."""
    text = """\
name: many
settings:
  env: {GLOBAL: "x\\0"}
workloads:
  - name: argv
    command: ["echo", "a\\0b"]
    setup: ["echo", "\\0"]
  - name: sh
    command: "echo {v}"
    shell: true
    cleanup: "echo ok"
matrix: {v: ["fine", "bad\\0", "\\ud800"]}
"""
    (tmp_path / "many.yaml").write_text(text, encoding="utf-8")
    r = cli("validate", "many.yaml", cwd=tmp_path)
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert lines[-1] == "benchrun: 5 problems in many.yaml"
    expected = [
        "many.yaml:3: settings.env.GLOBAL: settings (every workload): env GLOBAL",
        "many.yaml:6: workloads[0].command[1]: workload 'argv': command argument 1",
        "many.yaml:7: workloads[0].setup[1]: workload 'argv': setup argument 1",
        "many.yaml:9: workloads[1].command: workload 'sh[v=bad\\x00]': the command",
        "many.yaml:9: workloads[1].command: workload 'sh[v=\\ud800]': the command",
    ]
    for line, start in zip(lines[:-1], expected, strict=True):
        assert line.startswith(f"benchrun: error: {start}"), line
    assert "lone surrogate" in lines[4]


def test_env_names_with_nul_stay_refused(tmp_path: Path) -> None:
    (tmp_path / "n.yaml").write_text(
        'name: n\nworkloads:\n  - name: w\n    command: ["true"]\n    env: {"A\\0": "1"}\n',
        encoding="utf-8",
    )
    r = cli("validate", "n.yaml", cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1


@pytest.mark.parametrize("value", ["plain", "with space", "ünïcödé", "a\x1bb"])
def test_passable_values_still_validate(tmp_path: Path, value: str) -> None:
    text = f'name: ok\nworkloads:\n  - name: w\n    command: ["true"]\n    env: {{V: {json.dumps(value)}}}\n'
    (tmp_path / "ok.yaml").write_text(text, encoding="utf-8")
    r = cli("validate", "ok.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
