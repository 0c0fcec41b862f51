"""The comparisons table of run/show lists baseline verdicts before pair verdicts (as the
report's headline and the exports do), and a baseline decided without a ratio CI still
reads as a ratio of the two means instead of "no ratio yet" (issue 17)."""

from __future__ import annotations

from benchrun.runner.results.headline import pair_headline
from benchrun.runner.ui.tables import verdicts_table

PAIR = {"a": "x", "b": "y", "verdict": "slower", "ratio": 1.5, "ratio_low": 1.4,
        "ratio_high": 1.6, "test": "paired", "passes": 20}  # fmt: skip
BASE = {"name": "y", "baseline": "stored baseline", "verdict": "slower", "ratio": None,
        "mean": 0.11, "baseline_mean": 0.10, "test": "welch"}  # fmt: skip


def test_a_baseline_without_a_ratio_ci_reads_as_the_ratio_of_its_means() -> None:
    line = pair_headline(BASE, {"y": "s"})
    assert line == f"y is {0.11 / 0.10:.3f}x slower than stored baseline (Welch)"
    # no mean of the baseline (NaN when the store has none): nothing to divide
    assert pair_headline({**BASE, "baseline_mean": float("nan")}) == (
        "y vs stored baseline: no ratio yet"
    )


def test_baselines_come_first_in_the_comparisons_table() -> None:
    table = verdicts_table({"pairs": [PAIR], "baselines": [BASE], "units": {"x": "s", "y": "s"}})
    assert table is not None
    assert [c.headline for c in table.items] == [
        pair_headline(BASE, {"y": "s"}),
        pair_headline(PAIR, {"x": "s", "y": "s"}),
    ]
    assert table.items[0].headline.endswith("than stored baseline (Welch)")
