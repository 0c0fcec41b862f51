"""Hostile input to the real ``benchrun`` CLI ends with one clear line, never a traceback
(issue 16): impossible output directories, contradicting options, damaged or malicious
export and hyperfine files, and campaigns whose readings are too large for the statistics.

Each case runs the console script in a subprocess and checks the exit code, that stderr
is exactly one line naming the problem, and that nothing was written where it should not.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_util import run_benchrun, write_experiment


def _one_line(stderr: str, *words: str) -> str:
    """The single ``benchrun: error:`` line of ``stderr``, which holds every word."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    (line,) = lines
    assert line.startswith("benchrun: error: "), line
    for word in words:
        assert word in line, line
    return line


def _tiny(directory: Path, output: Path | str, name: str = "tiny") -> Path:
    return write_experiment(
        directory,
        f"""
        name: {name}
        output: {output}
        settings: {{adaptive: false, rounds: 2, warmup_rounds: 0, pin: none}}
        workloads:
          - name: a
            command: ["true"]
        """,
        name=f"{name}.yaml",
    )


# -- benchrun run: where the results go, and options that contradict -----------------------


@pytest.mark.parametrize(
    ("output", "words"),
    [
        ("/proc/nonexist", ("-o /proc/nonexist", "cannot create /proc/nonexist/tiny")),
        ("{tmp}/afile", ("afile is a file, not a directory",)),
        ("{tmp}/afile/sub", ("afile is a file, not a directory",)),
    ],
    ids=["proc", "file", "below-a-file"],
)
def test_run_refuses_an_output_it_cannot_create(
    tmp_path: Path, output: str, words: tuple[str, ...]
) -> None:
    (tmp_path / "afile").write_text("not a directory\n")
    exp = _tiny(tmp_path, tmp_path / "results")
    proc = run_benchrun("run", str(exp), "-q", "-o", output.format(tmp=tmp_path))
    assert proc.returncode == 2
    _one_line(proc.stderr, *words)
    assert (tmp_path / "afile").read_text() == "not a directory\n"
    assert not (tmp_path / "results").exists()


def test_run_refuses_an_output_key_naming_a_file(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    exp = _tiny(tmp_path, tmp_path / "afile")
    proc = run_benchrun("run", str(exp), "-q")
    assert proc.returncode == 2
    _one_line(proc.stderr, "output: ", "afile is a file")


def test_resume_and_new_together_are_refused(tmp_path: Path) -> None:
    exp = _tiny(tmp_path, tmp_path / "results")
    proc = run_benchrun("run", str(exp), "-q", "--resume", "--new")
    assert proc.returncode == 2
    _one_line(proc.stderr, "--resume and --new contradict")
    assert not (tmp_path / "results").exists()  # refused before anything is created
