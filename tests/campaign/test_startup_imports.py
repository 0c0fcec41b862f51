"""scipy is not imported before a campaign's first round (issue 18: startup under 0.5 s;
docs/loop.md, Startup): a fresh interpreter imports what ``benchrun run`` imports, runs a
campaign through the fake executor, and looks at ``sys.modules`` at the first launch.
Importing scipy.stats costs 0.3-0.6 s on the 2-CPU VM; a module-level import anywhere on
the run path (it happened with the duet asymmetry check) puts it back into startup."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CODE = r"""
import sys
from pathlib import Path
from benchrun.runner.commands import run as _run_command  # noqa: F401  (the CLI's path)
from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.execute.fake import FakeExecutor, constant

seen = []

def first(spec, count):
    if count == 0:
        seen.append(sorted(m for m in ("scipy", "scipy.stats") if m in sys.modules))

class Quiet:
    def start(self, *a): pass
    def round_done(self, *a): pass
    def message(self, text): pass
    def show_decision(self, *a): pass
    def stop(self): pass

where = Path(sys.argv[1])
text = (
    f"name: s\noutput: {where / 'out'}\nsettings:\n  adaptive: false\n  rounds: 2\n"
    f"  warmup_rounds: 0\n  {sys.argv[2]}\n"
    "workloads:\n  - {name: a, command: [work, a]}\n  - {name: b, command: [work, b]}\n"
)
exp = parse_experiment(text, base_dir=where, check_commands=False)
fake = FakeExecutor({"a": constant(0.01), "b": constant(0.01)}, on_launch=first)
run_campaign(exp, fake, Quiet())
print(seen[0])
"""


@pytest.mark.parametrize("setting", ["seed: 1", "duet: true"])
def test_scipy_is_not_loaded_before_the_first_round(tmp_path: Path, setting: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CODE, str(tmp_path), setting],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"{setting}: loaded at the first round: {done.stdout}"
