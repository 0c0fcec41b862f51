"""What benchrun creates gets its own mode whatever the umask (issue 29, item 4): directories
0700, the store, lock and records 0600 (they hold the experiment's ``env:`` values), reports
0644 by choice (runner/safefs.py, docs/security.md). A real ``benchrun run`` and ``benchrun
report`` under ``umask 000``; the modes are the kernel's, read with ``os.stat``."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from e2e_util import benchrun_argv, write_experiment


def _under_umask(umask: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*benchrun_argv(), *args],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: os.umask(umask),  # noqa: PLW1509 - the umask is what is tested
    )


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_umask_000_gives_private_directories_and_files_and_a_0644_report(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b"
    exp = write_experiment(
        tmp_path,
        f"""
        name: modes
        output: {out}
        settings: {{rounds: 2, warmup_rounds: 0, pin: none, env: {{API_TOKEN: s3cret}}}}
        workloads:
          - name: t
            command: ["true"]
        """,
    )
    done = _under_umask(0, "run", str(exp), "-q")
    assert done.returncode == 0, done.stderr
    campaign = out / "modes"
    for d in (tmp_path / "a", out, campaign):
        assert _mode(d) == 0o700, d
    for f in (campaign / "benchrun.db", campaign / ".benchrun.lock"):
        assert _mode(f) == 0o600, f
    before = set(campaign.iterdir())
    made = _under_umask(0, "report", str(campaign), "--format", "md")
    assert made.returncode == 0, made.stderr
    assert _mode(campaign / "report.md") == 0o644
    figures = [p for p in set(campaign.iterdir()) - before if p.is_dir()]
    assert len(figures) == 1 and _mode(figures[0]) == 0o755  # the report's own, by choice
    pngs = list(figures[0].iterdir())
    assert pngs and all(_mode(png) == 0o644 for png in pngs)
    # nothing else in the campaign directory is left readable or writable by others
    for entry in before:
        assert _mode(entry) & 0o077 == 0, entry


def test_an_existing_directory_keeps_its_mode(tmp_path: Path) -> None:
    out = tmp_path / "shared-results"
    out.mkdir()
    out.chmod(0o755)
    exp = write_experiment(
        tmp_path,
        f"""
        name: keep
        output: {out}
        settings: {{rounds: 1, warmup_rounds: 0, pin: none}}
        workloads:
          - name: t
            command: ["true"]
        """,
    )
    done = _under_umask(0o022, "run", str(exp), "-q")
    assert done.returncode == 0, done.stderr
    assert _mode(out) == 0o755 and _mode(out / "keep") == 0o700
