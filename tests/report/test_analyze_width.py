"""``benchrun analyze summary`` fits the output width like run/show: columns left out by
priority and named, group names whole (two long names that differ at the end stay
distinguishable), never a cell cut with an ellipsis (issue 17)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchrun.runner.cli import main

NAMES = ("sum-range[n=1000000]", "sum-range[n=1000001]")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    rng = np.random.default_rng(1)
    path = tmp_path / "long.csv"
    lines = ["benchmark,value,unit"]
    for name in NAMES:
        lines += [f"{name},{float(v)!r},s" for v in rng.normal(1.0, 0.01, 40)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("columns", [80, 100, 200])
def test_summary_fits_the_width_with_whole_names(
    data: Path, columns: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["analyze", "summary", str(data)]) == 0
    out = capsys.readouterr().out
    table = [ln for ln in out.splitlines() if ln[:1] in "┏┃┡│└"]
    assert table and max(len(ln) for ln in table) <= columns
    assert "…" not in out
    for name in NAMES:  # each on one line of both tables, whole
        assert sum(f"│ {name} " in ln for ln in table) == 2
    header = " ".join(ln for ln in table if ln.startswith("┃"))
    if columns == 200:
        assert "p99" in header and "deterministic" in header
    else:
        assert "(" in out and "not shown at" in out and "--json shows them" in out
        # the columns kept at any width: the estimate, its unit, and what the CI is
        assert "mean" in header and "unit" in header and "┃ CI " in header
