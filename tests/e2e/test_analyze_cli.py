"""``benchrun analyze`` end to end, through the installed console script.

Data are generated here with seeded numpy where the truth is known (system ``fast`` is
10 % faster than ``base`` on every benchmark; two workloads drawn from one distribution),
and every number checked is recomputed in the test with numpy/scipy or a closed form.
"""

from __future__ import annotations

import csv
import json
import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from e2e_util import cli
from scipy import stats as sps

DATA = Path(__file__).resolve().parent.parent / "data"
BENCHMARKS = ("fft", "sort", "lu", "bfs", "mm", "spmv")
BASE_TIMES = (1.0, 2.0, 0.5, 1.5, 3.0, 0.8)
RUNS = 41  # odd: sample quantiles at 0.25/0.5/0.75 are unique order statistics


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``benchrun analyze ARGS`` with captured output, in process (e2e_util.cli: the
    console script's function without its start-up; one test below runs the script)."""
    return cli("analyze", *map(str, args))


def run_script(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``benchrun analyze ARGS`` through the installed console script."""
    exe = shutil.which("benchrun")
    assert exe is not None, "the benchrun console script is not installed (pip install -e .)"
    return subprocess.run(
        [exe, "analyze", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def run_json(*args: str | Path) -> dict[str, Any]:
    proc = run(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def assert_user_error(proc: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert fragment in lines[0]


def write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path


# -------------------------------------------------------------------------- data
@pytest.fixture(scope="module")
def suite(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[tuple[str, str], np.ndarray]]:
    """6 benchmarks x 2 systems x 41 runs; ``fast`` = 0.9 x ``base``, 5 % normal noise."""
    rng = np.random.default_rng(20240502)
    truth: dict[tuple[str, str], np.ndarray] = {}
    rows: list[list[Any]] = []
    for bench, t in zip(BENCHMARKS, BASE_TIMES, strict=True):
        for system, factor in (("base", 1.0), ("fast", 0.9)):
            values = t * factor * (1.0 + 0.05 * rng.standard_normal(RUNS))
            truth[(system, bench)] = values
            rows += [[system, bench, repr(float(v)), "s"] for v in values]
    path = write_csv(tmp_path_factory.mktemp("suite") / "suite.csv",
                     ["system", "benchmark", "value", "unit"], rows)  # fmt: skip
    return path, truth


@pytest.fixture(scope="module")
def groups(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    """Workloads same1/same2 from one distribution, slow 20 % slower; 200 readings each."""
    rng = np.random.default_rng(7)
    truth = {
        "same1": 1.0 + 0.02 * rng.standard_normal(200),
        "same2": 1.0 + 0.02 * rng.standard_normal(200),
        "slow": 1.2 + 0.02 * rng.standard_normal(200),
    }
    rows = [[name, repr(float(v)), "ms"] for name, values in truth.items() for v in values]
    path = write_csv(tmp_path_factory.mktemp("groups") / "groups.csv",
                     ["workload", "value", "unit"], rows)  # fmt: skip
    return path, truth


def subsession_means(values: np.ndarray, warmup: int, q: int) -> np.ndarray:
    steady = values[warmup:]
    h = steady.size // q
    return steady[: h * q].reshape(h, q).mean(axis=1)


# ------------------------------------------------------------------------ summary
def test_summary_numbers_agree_with_numpy_and_scipy(groups: tuple[Path, dict]) -> None:
    path, truth = groups
    doc = run_json("summary", path, "--warmup", "none")
    assert doc["unit"] == "ms" and doc["direction"] == "lower_is_better"
    rows = {row["name"]: row["summary"] for row in doc["groups"]}
    assert list(rows) == ["same1", "same2", "slow"]
    for name, values in truth.items():
        s = rows[name]
        assert s["n"] == values.size and s["warmup_readings"] == 0
        assert s["mean"] == pytest.approx(values.mean(), rel=1e-12)
        assert s["std"] == pytest.approx(values.std(ddof=1), rel=1e-10)
        assert s["median"] == pytest.approx(np.median(values), rel=1e-12)
        assert (s["min"], s["max"]) == (values.min(), values.max())
        means = subsession_means(values, 0, s["subsession_size"])
        assert s["n_subsessions"] == means.size
        low, high = sps.t.interval(0.95, means.size - 1, means.mean(), sps.sem(means))
        assert (s["ci_low"], s["ci_high"]) == (pytest.approx(low), pytest.approx(high))


def test_summary_of_each_import_format_counts_the_readings() -> None:
    # two files in one unit: each becomes a system named after its file
    doc = run_json(
        "summary", DATA / "hyperfine_two.json", DATA / "pyperf_suite.json", "--warmup", "none"
    )
    assert doc["format"] == "hyperfine+pyperf"
    assert {row["name"]: row["summary"]["n"] for row in doc["groups"]} == {
        "hyperfine_two/true": 5,
        "hyperfine_two/sleep 0.002": 5,
        "pyperf_suite/json_dumps": 6,
        "pyperf_suite/regex_compile": 6,
    }
    proc = run("summary", DATA / "gbench_reps.json", "--warmup", "none")
    assert proc.returncode == 0, proc.stderr
    assert "BM_VectorPush/1024" in proc.stdout and "BM_MapInsert/64" in proc.stdout
    assert "5 aggregate entries" in proc.stdout
    # the repetition is the unit (docs/imported-data.md): the CI is scipy's t interval
    # over the 3 repetitions' real times, read from the file here
    raw = json.loads((DATA / "gbench_reps.json").read_text())["benchmarks"]
    reps = [b["real_time"] for b in raw if b["run_name"] == "BM_VectorPush/1024"
            and b.get("run_type") == "iteration"]  # fmt: skip
    assert len(reps) == 3
    low, high = sps.t.interval(0.95, 2, loc=np.mean(reps), scale=sps.sem(reps))
    doc = run_json("summary", DATA / "gbench_reps.json", "--warmup", "none")
    s = next(g["summary"] for g in doc["groups"] if g["name"].endswith("BM_VectorPush/1024"))
    assert (s["n"], s["ci_low"], s["ci_high"]) == (3, pytest.approx(low), pytest.approx(high))


# ------------------------------------------------------------------------ compare
def test_compare_ranks_and_tests_agree_with_scipy(groups: tuple[Path, dict]) -> None:
    path, truth = groups
    doc = run_json("compare", path, "--warmup", "none", "--alpha", "0.01", "--margin", "0.01")
    rank = doc["ranking"]
    assert rank["names"][2] == "slow"
    summaries = {row["name"]: row["summary"] for row in doc["groups"]}
    means = {
        name: subsession_means(truth[name], 0, summaries[name]["subsession_size"]) for name in truth
    }
    raw_p = []
    for pair in rank["pairs"]:
        expected = sps.ttest_ind(means[pair["a"]], means[pair["b"]], equal_var=False).pvalue
        assert pair["welch_p"] == pytest.approx(expected, rel=1e-8)
        raw_p.append(pair["welch_p"])
    # Holm with two tests: smaller p doubled, larger p kept, monotone
    small, large = sorted(raw_p)
    holm = {small: min(1.0, 2 * small), large: max(min(1.0, 2 * small), large)}
    assert [p["welch_p_holm"] for p in rank["pairs"]] == [pytest.approx(holm[p]) for p in raw_p]
    same, slow = rank["pairs"]
    assert same["verdict"] != "separated"  # one distribution: never told apart
    assert slow["verdict"] == "separated"
    groups_ = [means[name] for name in rank["names"]]
    omnibus = doc["omnibus"]
    anova = sps.f_oneway(*[means[n] for n in truth])
    assert omnibus["anova"]["p_value"] == pytest.approx(anova.pvalue, rel=1e-6, abs=1e-300)
    assert omnibus["anova"]["statistic"] == pytest.approx(anova.statistic, rel=1e-10)
    kw = sps.kruskal(*groups_)
    assert omnibus["kruskal_wallis"]["statistic"] == pytest.approx(kw.statistic, rel=1e-10)


def test_compare_two_identical_distributions_not_separated(groups: tuple[Path, dict]) -> None:
    proc = run("compare", groups[0])
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if "same1" in line and "same2" in line]
    assert lines and all("separated" not in line for line in lines)
    assert "separated" in proc.stdout  # the slow workload is told apart


# ------------------------------------------------------------------------ speedup
def test_speedup_finds_the_ten_percent(suite: tuple[Path, dict]) -> None:
    path, truth = suite
    doc = run_json("speedup", path, "--baseline", "base", "--candidate", "fast")
    res = doc["result"]
    base_means = [truth[("base", b)].mean() for b in BENCHMARKS]
    fast_means = [truth[("fast", b)].mean() for b in BENCHMARKS]
    assert res["overall_speedup_mean"] == pytest.approx(sum(base_means) / sum(fast_means))
    assert res["gain_mean"] == pytest.approx(1 - sum(fast_means) / sum(base_means))
    checked = 0
    for bench in BENCHMARKS:
        r = res["benchmarks"][bench]
        assert r["mean_verdict"] == "speedup"
        assert r["median_verdict"] == "speedup"
        x, y = truth[("base", bench)], truth[("fast", bench)]
        if r["normal_x"] and r["normal_y"]:  # TOUATI's flow: Student or Welch, one-sided
            expected = sps.ttest_ind(x, y, equal_var=r["equal_variances"], alternative="greater")
            assert r["mean_p"] == pytest.approx(expected.pvalue, rel=1e-6)
            checked += 1
        p_mw = sps.mannwhitneyu(x, y, alternative="greater").pvalue
        assert r["median_p"] == pytest.approx(p_mw, rel=1e-6)
    assert checked >= 3
    share = res["share_mean"]
    assert (share["a"], share["b"]) == (6, 6)
    ci = sps.binomtest(6, 6).proportion_ci(0.95, method="wilsoncc")  # R prop.test at x = n
    assert share["ci_low"] == pytest.approx(ci.low, rel=1e-9)
    assert share["ci_high"] == pytest.approx(ci.high, rel=1e-9)


def test_speedup_weights_file(suite: tuple[Path, dict], tmp_path: Path) -> None:
    path, truth = suite
    weights = {b: float(i + 1) for i, b in enumerate(BENCHMARKS)}
    wfile = write_csv(tmp_path / "w.csv", ["benchmark", "weight"], list(weights.items()))
    doc = run_json("speedup", path, "--baseline", "base", "--candidate", "fast", "--weights", wfile)
    num = sum(weights[b] * truth[("base", b)].mean() for b in BENCHMARKS)
    den = sum(weights[b] * truth[("fast", b)].mean() for b in BENCHMARKS)
    assert doc["result"]["overall_speedup_mean"] == pytest.approx(num / den)
    bad = write_csv(tmp_path / "bad.csv", ["benchmark", "weight"], [["fft", 1.0]])
    assert_user_error(
        run("speedup", path, "--baseline", "base", "--candidate", "fast", "--weights", bad),
        "missing: ",
    )


# ---------------------------------------------------------------------------- HPT
def test_hpt_confidence_is_one_minus_two_to_the_minus_six(suite: tuple[Path, dict]) -> None:
    path, truth = suite
    # the console script: in a process that has imported the module benchrun.stats.hpt (any
    # test of it), the package attribute `stats.hpt` is that module, not the function, and
    # `analyze hpt` fails with "'module' object is not callable" (stats/__init__.py's lazy
    # __getattr__ is never asked; runner/analyze/support.py's stats_function gets the module)
    proc = run_script("hpt", path, "--a", "fast", "--b", "base", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    res, rs = doc["hpt"], doc["r_speedup"]
    # all 6 benchmarks won by fast: exact signed-rank p = 2^-6
    assert res["confidence"] == pytest.approx(1 - 2.0**-6, abs=1e-12)
    assert res["wins_a"] == 6
    for row in res["benchmarks"]:
        x, y = truth[("fast", row["benchmark"])], truth[("base", row["benchmark"])]
        # rank tests are invariant under the decreasing map t -> c/t: A better = A's times less
        p = sps.mannwhitneyu(
            x, y, alternative="less", method="asymptotic", use_continuity=False
        ).pvalue
        assert row["p_value"] == pytest.approx(p, rel=1e-9)
    # true speedup 1/0.9 = 1.111: the guaranteed one is positive and not above the truth
    assert 1.0 < rs["gamma_grid"] <= 1.12
    ratios = [np.median(truth[("base", b)]) / np.median(truth[("fast", b)]) for b in BENCHMARKS]
    assert rs["gmean_speedup"] == pytest.approx(sps.gmean(ratios), rel=1e-9)


# ----------------------------------------------------------------------- resample
def test_resample_ratio_ci_and_randomization(suite: tuple[Path, dict]) -> None:
    path, truth = suite
    doc = run_json("resample", path, "--a", "fast", "--b", "base", "--ci-width", "0.05",
                   "--resamples", "2000")  # fmt: skip
    logs = [np.log(truth[("fast", b)].mean() / truth[("base", b)].mean()) for b in BENCHMARKS]
    ci = doc["gmean_ratio_ci"]
    assert ci["estimate"] == pytest.approx(math.exp(np.mean(logs)), rel=1e-12)
    assert ci["low"] < 0.9 < ci["high"]  # the truth
    assert doc["randomization"]["p_value"] <= 1 / 2001 * 1.0001  # nothing as extreme
    size = doc["runs_for_ci_width"]
    assert size["m"] is not None and 3 <= size["m"] <= RUNS


# ---------------------------------------------------------------------- quantiles
def test_quantiles_shift_is_a_difference_of_order_statistics(suite: tuple[Path, dict]) -> None:
    path, truth = suite
    doc = run_json("quantiles", path, "--a", "base", "--b", "fast", "--quantiles", "0.25,0.5,0.75")
    for item in doc["benchmarks"]:
        r = item["result"]
        a, b = (
            np.sort(truth[("base", item["benchmark"])]),
            np.sort(truth[("fast", item["benchmark"])]),
        )
        # n = 41: the tau-quantile is the unique order statistic x_(ceil(41 tau))
        for tau, effect, low, high in zip(
            r["quantiles"], r["effect"], r["ci_low"], r["ci_high"], strict=True
        ):
            k = math.ceil(RUNS * tau) - 1
            assert effect == pytest.approx(b[k] - a[k], rel=1e-9, abs=1e-12)
            assert high < 0  # fast is faster at every quartile
            assert low <= effect <= high


# --------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("workload,value\na,1\na,slow\n", "row 3: value 'slow' is not a number"),
        ("workload,value\na,1\na,NaN\n", "row 3: value 'NaN' is not finite"),
        ("workload,value\na,1\n,2\n", "row 3: empty 'workload' cell"),
        ('{"foo": 1, "bar": 2}', "not a CSV, hyperfine, pyperf or Google Benchmark export "
         "(top-level keys: foo, bar)"),
    ],
)  # fmt: skip
def test_bad_files_exit_2_with_one_line(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / ("bad.json" if text.startswith("{") else "bad.csv")
    path.write_text(text)
    assert_user_error(run("summary", path), fragment)


def test_unknown_group_lists_the_available_ones(suite: tuple[Path, dict]) -> None:
    assert_user_error(
        run_script("hpt", suite[0], "--a", "fast", "--b", "icc"),  # the console script
        "no system 'icc'; systems in the data: base, fast",
    )


def test_one_reading_all_equal_and_negative_times(tmp_path: Path) -> None:
    one = write_csv(tmp_path / "one.csv", ["value"], [[1.5]])
    doc = run_json("summary", one)
    s = doc["groups"][0]["summary"]
    assert s["n"] == 1 and s["mean"] == 1.5 and s["ci_low"] is None
    assert any("one reading" in note for note in s["notes"])
    assert_user_error(run("compare", one), "compare needs at least two groups")

    equal = write_csv(tmp_path / "eq.csv", ["workload", "value"],
                      [[w, 5.0] for w in ("a", "b") for _ in range(10)])  # fmt: skip
    doc = run_json("summary", equal)
    assert all(row["summary"]["deterministic"] for row in doc["groups"])
    assert all(row["summary"]["std"] == 0.0 for row in doc["groups"])

    negative = write_csv(tmp_path / "neg.csv", ["value", "unit"], [[-0.5, "s"], [1.0, "s"]])
    doc = run_json("summary", negative)
    assert any("times <= 0" in note for note in doc["notes"])
    proc = run("speedup", tmp_path / "neg.csv", "--baseline", "x", "--candidate", "y")
    assert_user_error(proc, "no group 'x'")


def test_argument_errors_are_one_line(suite: tuple[Path, dict]) -> None:
    proc = run("quantiles", suite[0], "--a", "base", "--b", "fast", "--quantiles", "0,1")
    assert_user_error(proc, "quantiles must be strictly between 0 and 1")


def test_the_diagnostics_say_what_the_summary_marks(tmp_path: Path) -> None:
    """A group whose CI is shown uncertified (marked *) is not called "CI valid" in the
    Diagnostics (issue 32): AR(1) phi 0.9 over 40 readings cannot be certified, 400 iid
    readings can."""
    rng = np.random.default_rng(7)
    ar = np.empty(40)
    ar[0] = 0.0
    for i in range(1, 40):
        ar[i] = 0.9 * ar[i - 1] + rng.normal(0, 0.1)
    path = tmp_path / "g.csv"
    rows = [("iid", 10 + rng.normal(0, 0.1)) for _ in range(400)] + [("slow", 10 + x) for x in ar]
    path.write_text("workload,value\n" + "".join(f"{g},{float(v)!r}\n" for g, v in rows))
    r = cli("analyze", "summary", str(path), env={"COLUMNS": "250"})
    assert r.returncode == 0, r.stderr
    assert "CI valid" not in r.stdout
    diag = r.stdout[r.stdout.index("Diagnostics") :]
    line = {w: next(ln for ln in diag.splitlines() if f" {w} " in ln) for w in ("iid", "slow")}
    assert "certified" in line["iid"] and "not certified" not in line["iid"]
    summary = r.stdout[: r.stdout.index("Diagnostics")]
    slow_row = next(ln for ln in summary.splitlines() if " slow " in ln)
    assert ("*" in slow_row) == ("not certified (*)" in line["slow"])
    assert "not certified (*)" in line["slow"] or "none: too few readings" in line["slow"]
