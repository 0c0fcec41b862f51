"""Near-deterministic values (issue 33): identical counts in every round, zero variance,
through the controller, the statistics, show's summary and every report format.

Instruction counts of a deterministic program repeat to the last digit; the paired
signed-rank test, Welch, TOST and the CI-width stop must take a zero standard deviation
without dividing by it. The fake executor scripts constant rounds (the truth: ratio
exactly 1.017, or exactly 1), with warnings raised as errors so a 0/0 cannot pass
silently as NaN.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from test_fake_campaigns import ADAPTIVE, NullDisplay, experiment, stored

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.commands.show import read_summary
from benchrun.runner.execute.fake import FakeExecutor, constant
from benchrun.runner.report.render import write_report
from benchrun.runner.results.workloads import final_verdicts


@pytest.mark.parametrize("comparison", ["paired", "independent"])
@pytest.mark.parametrize(("b", "verdict"), [(0.1017, "separated"), (0.1, "equivalent")])
def test_identical_rounds_end_with_the_exact_ratio(
    tmp_path: Path, comparison: str, b: float, verdict: str
) -> None:
    exp = experiment(
        tmp_path, ADAPTIVE + f"comparison: {comparison}\nmargin: 0.01", top="compare: [[a, b]]"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a division by a zero sd would warn
        out = run_campaign(exp, FakeExecutor({"a": constant(0.1), "b": constant(b)}), NullDisplay())
        assert out.exit_code == 0 and out.status == "done"
        _, rounds, events = stored(exp)
        verdicts = final_verdicts(events)
        assert verdicts is not None and verdicts["conditions_met"]
        (pair,) = verdicts["pairs"]
        assert pair["verdict"] == verdict
        # zero variance: the CI is the point itself, the true ratio b / a
        assert pair["ratio_low"] == pytest.approx(b / 0.1, rel=1e-12)
        assert pair["ratio_high"] == pytest.approx(b / 0.1, rel=1e-12)
        # the stop came from the rules (min rounds, passes), not from a budget
        assert max(len(r) for r in rounds.values()) < 50
        summary = read_summary(exp.db_path)
        assert [r.name for r in summary.results] == ["a", "b"]
        for fmt in ("md", "html", "json", "csv"):
            path, size = write_report(
                exp.campaign_dir, fmt, out=tmp_path / f"r.{fmt}", with_plots=fmt == "html"
            )
            assert path is not None and size > 0
