"""The readings panel's legend counts as the tables do (issue 32): Tukey outliers are
steady readings, marked; "steady (35) + Tukey outlier (1)" read as 36 nowhere."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from benchrun.runner.format import DisplayUnit  # noqa: E402
from benchrun.runner.report.plots import _readings_panel  # noqa: E402


def test_the_steady_count_includes_the_marked_outliers() -> None:
    flags = ["warmup-round"] * 2 + [""] * 35 + ["outlier"]
    view = SimpleNamespace(
        all_values=np.linspace(1.0, 2.0, len(flags)),
        all_flags=flags,
        estimate=None,
        metric="wall_time",
    )
    fig, ax = plt.subplots()
    try:
        _readings_panel(ax, view, DisplayUnit("s", "s", 1.0))  # type: ignore[arg-type]
        labels = ax.get_legend_handles_labels()[1]
    finally:
        plt.close(fig)
    assert "steady (36 analysed)" in labels
    assert "of which Tukey outliers (1)" in labels
    assert "warm-up round (2)" in labels
