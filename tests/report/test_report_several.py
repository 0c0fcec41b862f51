"""`benchrun report DIR` on a directory of several campaigns does what `show` does with
it: a report for each (issue 32: show printed every campaign, report refused)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.cli import main
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.execute.fake import FakeExecutor, constant


class _Quiet:
    def start(self, *a: object) -> None: ...
    def round_done(self, *a: object) -> None: ...
    def message(self, text: str) -> None: ...
    def show_decision(self, *a: object) -> None: ...
    def stop(self) -> None: ...


def _two(root: Path) -> Path:
    for name in ("first", "second"):
        text = (
            f"name: {name}\noutput: {root / 'results'}\n"
            "settings: {pin: none, adaptive: false, rounds: 6, warmup_rounds: 0}\n"
            "workloads:\n  - {name: a, command: [work]}\n"
        )
        exp = parse_experiment(text, base_dir=root, check_commands=False)
        run_campaign(exp, FakeExecutor({"a": constant(0.01)}), _Quiet())
    return root / "results"


def test_a_directory_of_campaigns_gets_a_report_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _two(tmp_path)
    assert main(["report", str(results), "--no-plots"]) == 0
    assert (results / "first" / "report.html").is_file()
    assert (results / "second" / "report.html").is_file()
    assert main(["report", str(results), "--no-plots", "--format", "md"]) == 0
    assert (results / "second" / "report.md").read_text().count("second") >= 1
    capsys.readouterr()
    # one document to stdout cannot hold two campaigns: one line naming them
    assert main(["report", str(results), "--format", "json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds several campaigns" in err[0] and "first" in err[0]


def test_a_table_heading_does_not_name_a_unit_its_rows_are_not_in(tmp_path: Path) -> None:
    """The group's heading said "wall_time [s]" above rows each shown in their own unit (ms
    for rounds of milliseconds; issue 32). It now says what the metric is measured in, and
    the unit column what each row is shown in."""
    results = _two(tmp_path)
    assert main(["report", str(results / "first"), "--no-plots", "--format", "md"]) == 0
    md = (results / "first" / "report.md").read_text()
    assert "wall_time [s] (lower is better)" not in md
    assert "wall_time, measured in s (lower is better)" in md
