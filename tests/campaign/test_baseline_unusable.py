"""A baseline without a usable result for any workload is refused before any round, in
one line that says what a usable result is and how to take an earlier campaign."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.errors import UserError
from benchrun.runner.execute.fake import FakeExecutor, constant


class _Quiet:
    def start(self, *a: object) -> None: ...
    def round_done(self, *a: object) -> None: ...
    def message(self, text: str) -> None: ...
    def show_decision(self, *a: object) -> None: ...
    def stop(self) -> None: ...


def test_a_baseline_with_one_subsession_mean_is_refused_with_the_way_out(tmp_path: Path) -> None:
    base = tmp_path / "old.json"
    base.write_text(json.dumps({"w": {"mean": 0.1, "variance": 1e-6, "n_q": 1}}))
    text = (
        f"name: x\noutput: {tmp_path / 'out'}\nsettings: {{baseline: {base}, seed: 1}}\n"
        "workloads:\n  - {name: w, command: [work]}\n"
    )
    exp = parse_experiment(text, base_dir=tmp_path, check_commands=False)
    fake = FakeExecutor({"w": constant(0.1)})
    with pytest.raises(UserError) as err:
        run_campaign(exp, fake, _Quiet())
    msg = err.value.message
    assert "no usable result" in msg and "at least 2 subsession means" in msg
    assert "benchrun export DIR --campaign ID -o old.json" in msg
    assert "\n" not in msg
    assert fake.launched == []  # refused before any round
