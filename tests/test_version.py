"""benchrun.runner.__version__ is read without importlib.metadata (start-up, issue 18), and
says what importlib.metadata says."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import benchrun.runner as runner


def test_version_is_what_importlib_metadata_finds() -> None:
    assert runner.__version__ == version("benchrun")


def test_the_first_dist_info_on_the_path_wins(tmp_path: Path) -> None:
    for where, v in (("a", "1.2.3"), ("b", "9.9.9")):
        info = tmp_path / where / "benchrun-x.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: benchrun\nVersion: {v}\n\nbody\nVersion: 0\n"
        )
    paths = [str(tmp_path / "missing"), str(tmp_path / "a"), str(tmp_path / "b")]
    assert runner._dist_info_version("benchrun", paths) == "1.2.3"
    assert runner._dist_info_version("benchrun", [str(tmp_path / "missing")]) is None
    assert runner._dist_info_version("other", paths) is None


def test_importing_the_runner_does_not_import_importlib_metadata() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, benchrun.runner; print('importlib.metadata' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "False"
