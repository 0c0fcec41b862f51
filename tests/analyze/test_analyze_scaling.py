"""``benchrun analyze`` on many groups: the vectorised paths give the per-group answers,
terminal output stays bounded, subnormal data give a one-line error (issue 16).

Not timing tests: the speed is measured by benchmarks/analyze_scaling.py.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from benchrun.runner.cli import main
from benchrun.stats import holm, rank_results
from benchrun.stats.compare import (
    required_sample_size,
    tost_from_summary,
    tost_pvalues,
    welch_from_summary,
    welch_pvalues,
)
from benchrun.stats.multi import anova, kruskal_wallis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from e2e_util import cli  # noqa: E402

GROUPS = 2000


def _write_groups(path: Path, groups: int, rows: int = 10, seed: int = 1) -> Path:
    rng = np.random.default_rng(seed)
    means = 1.0 + 0.001 * np.repeat(np.arange(groups), rows)
    values = rng.normal(means, 0.01 * means)
    names = np.repeat([f"b{g:05d}" for g in range(groups)], rows)
    path.write_text(
        "benchmark,value\n" + "".join(f"{n},{v:.6g}\n" for n, v in zip(names, values, strict=True))
    )
    return path


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write_groups(tmp_path_factory.mktemp("scaling") / "many.csv", GROUPS)


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(["analyze", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_compare_of_many_groups_equals_group_by_group_scipy(
    many: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _json(capsys, "compare", str(many))
    readings: dict[str, list[float]] = {}
    for line in many.read_text().splitlines()[1:]:
        name, value = line.split(",")
        readings.setdefault(name, []).append(float(value))
    summaries = {g["name"]: g["summary"] for g in doc["groups"]}
    rank = doc["ranking"]
    assert len(rank["names"]) + len(doc["excluded"]) == GROUPS
    assert len(rank["pairs"]) == len(rank["names"]) - 1 > 1000
    # each group: its mean, subsession variance and t interval from its own readings
    checked = 0
    for name in rank["names"]:
        s = summaries[name]
        if s["warmup_readings"] or s["subsession_size"] != 1:
            continue
        x = np.asarray(readings[name])
        assert s["mean"] == pytest.approx(float(np.mean(x)), rel=1e-13)
        assert s["subsession_variance"] == pytest.approx(float(np.var(x, ddof=1)), rel=1e-12)
        lo, hi = sps.t.interval(0.95, x.size - 1, loc=np.mean(x), scale=sps.sem(x))
        assert (s["ci_low"], s["ci_high"]) == pytest.approx((lo, hi), rel=1e-12)
        checked += 1
    assert checked > 1000
    # each adjacent pair: Welch with scipy, and bit for bit the scalar Welch and TOST
    welch_ps = []
    for pair in rank["pairs"]:
        a, b = summaries[pair["a"]], summaries[pair["b"]]
        args = (
            a["mean"], a["subsession_variance"], a["n_subsessions"],
            b["mean"], b["subsession_variance"], b["n_subsessions"],
        )  # fmt: skip
        ref = sps.ttest_ind_from_stats(
            args[0], math.sqrt(args[1]), args[2], args[3], math.sqrt(args[4]), args[5],
            equal_var=False,
        )  # fmt: skip
        assert pair["welch_p"] == pytest.approx(float(ref.pvalue), rel=1e-9, abs=1e-15)
        assert pair["welch_p"] == welch_from_summary(*args).p_value
        tost = tost_from_summary(*args, margin=0.01, alpha=0.01)
        assert pair["tost_p"] == tost.p_value
        welch_ps.append(pair["welch_p"])
    assert [p["welch_p_holm"] for p in rank["pairs"]] == list(holm(welch_ps))
    # more than --max-pairs pairs: effect sizes of the ranking's neighbours only
    anova_doc = doc["omnibus"]["anova"]
    k = len(rank["names"])
    assert anova_doc["k"] == k and len(anova_doc["effect_sizes"]) == k - 1
    assert [e["a"] for e in anova_doc["effect_sizes"]] == rank["names"][:-1]
    assert any("--max-pairs" in note for note in doc["notes"])


def test_vectorised_pvalues_equal_the_scalar_ones_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    m = 3000
    ma, mb = rng.normal(10, 1, m), rng.normal(10, 1, m)
    va, vb = rng.exponential(0.5, m), rng.exponential(0.5, m)
    va[:50] = vb[:50] = 0.0  # deterministic pairs
    mb[:10] = ma[:10]
    na, nb = rng.integers(2, 40, m), rng.integers(2, 40, m)
    p = welch_pvalues(ma, va, na, mb, vb, nb)
    tp, teq = tost_pvalues(ma, va, na, mb, vb, nb, margin=0.02, alpha=0.05)
    for i in range(m):
        args = (ma[i], va[i], na[i], mb[i], vb[i], nb[i])
        assert p[i] == welch_from_summary(*args).p_value
        ref = tost_from_summary(*args, margin=0.02, alpha=0.05)
        assert (tp[i], bool(teq[i])) == (ref.p_value, ref.equivalent)


def test_rank_results_unchanged_for_small_inputs() -> None:
    rs = [
        {"name": k, "mean": mu, "variance": v, "n": n, "direction": "lower_is_better"}
        for k, mu, v, n in (("c", 2.10, 4e-4, 30), ("a", 2.0, 4e-4, 30), ("b", 2.005, 1e-4, 12))
    ]
    r = rank_results(rs)
    rows = sorted(rs, key=lambda x: x["mean"])
    for pair, (x, y) in zip(r.pairs, zip(rows, rows[1:], strict=False), strict=True):
        args = (x["mean"], x["variance"], x["n"], y["mean"], y["variance"], y["n"])
        assert pair.welch_p == welch_from_summary(*args).p_value
        assert pair.tost_p == tost_from_summary(*args, margin=0.01, alpha=0.01).p_value


def test_omnibus_effect_sizes_capped_to_neighbours() -> None:
    rng = np.random.default_rng(3)
    groups = {f"g{i}": rng.normal(i, 1.0, 6) for i in range(6)}
    full = anova(groups)
    assert len(full.effect_sizes) == 15 and anova(groups, max_pairs=15) == full
    capped = kruskal_wallis(groups, max_pairs=14)
    assert [(e.a, e.b) for e in capped.effect_sizes] == [(f"g{i}", f"g{i + 1}") for i in range(5)]
    by_pair = {(e.a, e.b): e.e for e in full.effect_sizes}
    assert all(by_pair[(e.a, e.b)] == e.e for e in capped.effect_sizes)
    assert capped.statistic == kruskal_wallis(groups).statistic
    assert any("limit of 14 pairs" in n for n in capped.notes)


def test_terminal_output_of_many_groups_is_bounded(
    many: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in ("summary", "compare"):
        assert main(["analyze", command, str(many)]) == 0
        out = capsys.readouterr().out
        lines = out.splitlines()
        assert len(lines) < 250, (command, len(lines))
        assert "more" in out and "--json prints all of them" in out
        assert "b00000" in out  # the first groups and the last ones are shown
        assert "b01999" in out or "b01998" in out or command == "compare"


#: rows that made ``analyze compare`` raise ZeroDivisionError (required_sample_size of a
#: difference whose square underflows)
SUBNORMAL_ROWS = (
    [("b0", "-1.0")] * 2 + [("b0", "2.0"), *[("b0", "-1.0")] * 5, ("b0", "2.0"), ("b0", "-1.0")]
    + [("b0", "-1.0"), ("b0", "2.0"), ("b0", "2.0"), ("b0", "-1.0"), ("b0", "2.0")]
    + [("b1", v) for v in (
        "5e-324 5e-324 5e-324 1e-310 5e-324 5e-324 1e-310 5e-324 2.5e-323 2.5e-323 1e-310 "
        "2.5e-323 0.0 2.5e-323 5e-324 2.5e-323 5e-324 5e-324 0.0 1e-310 0.0 5e-324 2.5e-323 "
        "1e-310 5e-324 2.5e-323 2.5e-323 5e-324").split()]
    + [("b2", "2.0")] * 10 + [("b3", "5e-324")] * 15
)  # fmt: skip


@pytest.mark.parametrize("command", ["compare", "summary"])
def test_subnormal_data_give_no_traceback(tmp_path: Path, command: str) -> None:
    path = tmp_path / "subnormal.csv"
    path.write_text("benchmark,value\n" + "".join(f"{g},{v}\n" for g, v in SUBNORMAL_ROWS))
    # in process (an exception would fail the test itself), no interpreter start-up
    proc = cli("analyze", command, str(path))
    assert "Traceback" not in proc.stderr
    if command == "summary":
        assert proc.returncode == 0, proc.stderr
    else:
        assert proc.returncode == 2
        assert len(proc.stderr.splitlines()) == 1
        assert proc.stderr.startswith("benchrun: error:") and "underflows" in proc.stderr


def test_required_sample_size_when_the_square_of_the_difference_underflows() -> None:
    # the case of the traceback: a difference of 6e-314 against a variance of 1e-318
    with pytest.raises(ValueError, match="exceeds max_n"):
        required_sample_size(6.0680217524e-314, 0.0, 5e-324, 1.38041e-318)
    # d = 1e-162: d² underflows to 0, (va + vb)/d/d is about 9.9: the answer of the same
    # problem at scale 1
    ratio = (5e-324 + 5e-324) / 1e-162 / 1e-162
    n = required_sample_size(0.0, 5e-324, 1e-162, 5e-324)
    assert n == required_sample_size(0.0, ratio / 2, 1.0, ratio / 2)
    # variances whose squares underflow in the Welch degrees of freedom: scale-free
    assert required_sample_size(0.0, 1e-300, 1e-150, 1e-300) == required_sample_size(
        0.0, 1.0, 1.0, 1.0
    )
