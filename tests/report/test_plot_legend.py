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


def test_the_density_curve_follows_the_bulk_of_heavy_tailed_readings() -> None:
    """95 % N(0, 1) readings and 5 % far ones at 60: the bulk's density peaks at 0.95 phi(0)
    = 0.379 (closed form). Scott's bandwidth (scipy's default, from the sd, here about 13)
    flattened the curve to a fraction of that beside a histogram bar near 0.38 (issue 32)."""
    from scipy import stats as sps

    from benchrun.runner.report.plots import robust_kde

    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(0, 1, 1900), rng.normal(60, 1, 100)])
    grid = np.linspace(-5, 5, 401)
    peak = float(robust_kde(x, grid).max())
    truth = 0.95 * sps.norm.pdf(0)
    assert abs(peak - truth) < 0.1 * truth
    assert float(sps.gaussian_kde(x)(grid).max()) < 0.6 * truth  # the default's flattening
