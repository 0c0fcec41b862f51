"""``benchrun compare`` on files from pyperf, hyperfine and Google Benchmark.

The files in tests/data are real (provenance in tests/data/README.md). Every expected
value is computed here from the JSON with numpy/scipy -- the per-process means, Welch's
test on them (``scipy.stats.ttest_ind(equal_var=False)``), Fieller's interval -- or is a
known truth of a simulation; none is copied from benchrun's output.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from benchrun.runner.cli import main
from benchrun.runner.importers.dataset import Dataset
from benchrun.runner.report.compare import compare_sides, side_from_dataset

DATA = Path(__file__).resolve().parents[1] / "data"
ALPHA = 0.01  # benchrun compare's default level


def process_means(name: str) -> np.ndarray:
    """Mean of each pyperf run that has values (warm-ups and calibration runs left out)."""
    doc = json.loads((DATA / name).read_text())
    runs = doc["benchmarks"][0]["runs"]
    return np.array([np.mean(r["values"]) for r in runs if r.get("values")])


def pooled_values(name: str) -> np.ndarray:
    """Every value of every run, pooled: what a value-level test (pyperf's) looks at."""
    doc = json.loads((DATA / name).read_text())
    return np.array([v for r in doc["benchmarks"][0]["runs"] for v in r.get("values", [])])


def hyperfine_times(name: str) -> np.ndarray:
    return np.array(json.loads((DATA / name).read_text())["results"][0]["times"])


def compare_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict, str]:
    """Run ``benchrun compare ARGS --json`` in-process: (exit code, document, stderr)."""
    code = main(["compare", *args, "--json"])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def tost_p(old: np.ndarray, new: np.ndarray, margin: float = 0.01) -> float:
    """Schuirmann's TOST with Welch's df, written out with scipy's t distribution."""
    d = old.mean() - new.mean()
    delta = margin * abs(old.mean())
    se = math.sqrt(old.var(ddof=1) / old.size + new.var(ddof=1) / new.size)
    df = sps.ttest_ind(old, new, equal_var=False).df
    return max(sps.t.sf((d + delta) / se, df), sps.t.cdf((d - delta) / se, df))


# ---------------------------------------------------------------------------- pyperf
def test_pyperf_30pct_heavier_is_separated_over_process_means(capsys) -> None:
    old, new = process_means("pyperf_30pct_old.json"), process_means("pyperf_30pct_new.json")
    assert old.size == new.size == 10  # 10 processes of 2 values each
    welch = sps.ttest_ind(new, old, equal_var=False)
    assert welch.pvalue < ALPHA  # the data separate them, judged by scipy alone
    code, doc, err = compare_json(
        capsys, str(DATA / "pyperf_30pct_old.json"), str(DATA / "pyperf_30pct_new.json"),
        "--fail-on-regression", "5%",
    )  # fmt: skip
    (w,) = doc["workloads"]
    assert w["verdict"] == "slower" and w["regression"] and code == 1
    assert doc["regressions"] == ["command"] and doc["undecided"] == [] and err == ""
    assert (w["old_n"], w["new_n"], w["old_unit"]) == (10, 10, "process")
    assert w["ratio"] == pytest.approx(new.mean() / old.mean(), rel=1e-12)
    assert w["welch_p"] == pytest.approx(welch.pvalue, rel=1e-9)
    assert w["tost_p"] == pytest.approx(tost_p(old, new), rel=1e-9)
    assert w["old_mean"] == pytest.approx(old.mean(), rel=1e-12)
    ratio = new.mean() / old.mean()
    assert w["headline"] == (
        f"{ratio:.3f}x [{w['ratio_low']:.3f}, {w['ratio_high']:.3f}] slower "
        "(Welch, 10 vs 10 processes)"
    )


def fieller(old: np.ndarray, new: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Fieller's interval for mean(new)/mean(old) of two independent samples (Welch df):
    the r with (m_new - r m_old)² <= t² (v_new + r² v_old), v = s²/n."""
    ma, mb = old.mean(), new.mean()
    va, vb = old.var(ddof=1) / old.size, new.var(ddof=1) / new.size
    t = sps.t.ppf(0.5 + confidence / 2, sps.ttest_ind(new, old, equal_var=False).df)
    a, b, c = ma**2 - t**2 * va, -2 * ma * mb, mb**2 - t**2 * vb
    root = math.sqrt(b * b - 4 * a * c)
    return (-b - root) / (2 * a), (-b + root) / (2 * a)


def test_ratio_ci_agrees_with_fieller_on_the_real_files(capsys) -> None:
    old, new = process_means("pyperf_30pct_old.json"), process_means("pyperf_30pct_new.json")
    lo, hi = fieller(old, new)
    _, doc, _ = compare_json(
        capsys, str(DATA / "pyperf_30pct_old.json"), str(DATA / "pyperf_30pct_new.json")
    )
    (w,) = doc["workloads"]
    # the delta method on the log scale and Fieller agree to well under 1 % at this CV
    assert w["ratio_low"] == pytest.approx(lo, rel=5e-3)
    assert w["ratio_high"] == pytest.approx(hi, rel=5e-3)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("pyperf_seq_old.json", "pyperf_seq_same.json"),
        ("pyperf_6pct_old.json", "pyperf_6pct_same.json"),
        ("pyperf_30pct_old.json", "pyperf_30pct_same.json"),
    ],
)
def test_identical_commands_are_not_called_different(old: str, new: str, capsys) -> None:
    a, b = process_means(old), process_means(new)
    welch = sps.ttest_ind(b, a, equal_var=False)
    _, doc, _ = compare_json(capsys, str(DATA / old), str(DATA / new))
    (w,) = doc["workloads"]
    assert w["verdict"] not in ("slower", "faster")
    assert w["welch_p"] == pytest.approx(welch.pvalue, rel=1e-9)
    assert w["old_n"] == a.size and w["new_n"] == b.size


def test_sequential_files_pooled_values_look_different_but_processes_do_not(capsys) -> None:
    # pyperf_seq_*: the recipe run one file after the other on a drifting VM. Pooling the
    # 20 values per file (Student's t, as a value-level comparison does) calls the identical
    # command different; over the 10 process means it is not different at benchrun's alpha.
    old, same = "pyperf_seq_old.json", "pyperf_seq_same.json"
    pooled = sps.ttest_ind(pooled_values(same), pooled_values(old), equal_var=True)
    assert pooled.pvalue < 0.05
    by_process = sps.ttest_ind(process_means(same), process_means(old), equal_var=False)
    assert by_process.pvalue > ALPHA
    _, doc, _ = compare_json(capsys, str(DATA / old), str(DATA / same))
    assert doc["workloads"][0]["verdict"] == "undecided"


def test_warmups_and_calibration_runs_are_not_observations(capsys) -> None:
    doc = json.loads((DATA / "pyperf_seq_old.json").read_text())
    runs = doc["benchmarks"][0]["runs"]
    calibration = [r for r in runs if not r.get("values")]
    assert calibration and all(r.get("warmups") for r in runs)  # the file has both kinds
    with_values = [r for r in runs if r.get("values")]
    expected = np.mean([np.mean(r["values"]) for r in with_values])
    _, out, _ = compare_json(
        capsys, str(DATA / "pyperf_seq_old.json"), str(DATA / "pyperf_seq_old.json")
    )
    (w,) = out["workloads"]
    assert w["old_n"] == len(with_values) == len(runs) - len(calibration)
    assert w["old_mean"] == pytest.approx(expected, rel=1e-12)


def test_undecided_6pct_exits_3_with_one_line_and_allow_undecided_exits_0(capsys) -> None:
    old, new = process_means("pyperf_6pct_old.json"), process_means("pyperf_6pct_new.json")
    p = sps.ttest_ind(new, old, equal_var=False).pvalue
    assert ALPHA < p < 0.1 and tost_p(old, new) > ALPHA  # neither test decides, by scipy
    args = [str(DATA / "pyperf_6pct_old.json"), str(DATA / "pyperf_6pct_new.json")]
    code, doc, err = compare_json(capsys, *args, "--fail-on-regression", "5%")
    assert code == 3
    assert [u["name"] for u in doc["undecided"]] == ["command"]
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("benchrun: undecided: command: ")
    assert "Traceback" not in err
    code, _, err = compare_json(capsys, *args, "--fail-on-regression", "5%", "--allow-undecided")
    assert code == 0 and "undecided: command" in err
    code, _, err = compare_json(capsys, *args)  # no gate: always 0
    assert code == 0 and err == ""


# ------------------------------------------------------------------------- hyperfine
def test_hyperfine_runs_are_processes(capsys) -> None:
    old, new = hyperfine_times("hyperfine_old.json"), hyperfine_times("hyperfine_new.json")
    welch = sps.ttest_ind(new, old, equal_var=False)
    assert welch.pvalue < ALPHA
    code, doc, _ = compare_json(
        capsys, str(DATA / "hyperfine_old.json"), str(DATA / "hyperfine_new.json"),
        "--fail-on-regression", "5%",
    )  # fmt: skip
    (w,) = doc["workloads"]
    assert code == 1 and w["verdict"] == "slower"
    assert (w["old_n"], w["new_n"]) == (old.size, new.size) == (30, 30)
    assert w["ratio"] == pytest.approx(new.mean() / old.mean(), rel=1e-12)
    assert w["welch_p"] == pytest.approx(welch.pvalue, rel=1e-9)
    assert w["headline"].endswith("slower (Welch, 30 vs 30 processes)")


# ------------------------------------------------------------------ Google Benchmark
def test_gbench_repetitions_are_the_unit_and_aggregates_are_not_data(capsys) -> None:
    doc = json.loads((DATA / "gbench_reps.json").read_text())
    scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}  # to ns, the file's finest unit
    reps = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") == "iteration" and not b.get("error_occurred"):
            reps.setdefault(b["run_name"], []).append(b["real_time"] * scale[b["time_unit"]])
    assert any(b.get("run_type") == "aggregate" for b in doc["benchmarks"])
    code, out, _ = compare_json(
        capsys, str(DATA / "gbench_reps.json"), str(DATA / "gbench_reps.json")
    )
    rows = {w["name"]: w for w in out["workloads"]}
    assert sorted(rows) == sorted(reps) and code == 0
    for name, values in reps.items():
        w = rows[name]
        assert w["old_n"] == len(values) == 3 and w["old_unit"] == "repetition"
        assert w["old_mean"] == pytest.approx(np.mean(values), rel=1e-12)
        m, s = np.mean(values), np.std(values, ddof=1)
        half = sps.t.ppf(0.975, len(values) - 1) * s / math.sqrt(len(values))
        assert w["old_ci"] == [pytest.approx(m - half), pytest.approx(m + half)]
        assert w["ratio"] == 1.0 and w["verdict"] != "slower"


# ----------------------------------------------------------- exit codes, in detail
def pyperf_doc(benchmarks: dict[str, list[list[float]]]) -> dict:
    """A pyperf JSON document: benchmark name -> the values of each process."""
    return {
        "version": "1.0",
        "metadata": {"unit": "second"},
        "benchmarks": [
            {
                "metadata": {"name": name},
                "runs": [{"warmups": [[1, p[0] * 1.5]], "values": p} for p in procs],
            }
            for name, procs in benchmarks.items()
        ],
    }


def test_regression_wins_over_undecided_and_the_reason_names_the_processes(
    tmp_path: Path, capsys
) -> None:
    rng = np.random.default_rng(11)
    base = rng.normal(1.0, 0.01, (12, 3))
    old = {"fast": base.tolist(), "few": [[2.0, 2.01]]}
    new = {"fast": (base * 1.2).tolist(), "few": [[2.0, 2.02], [2.01, 2.0]]}
    (tmp_path / "old.json").write_text(json.dumps(pyperf_doc(old)))
    (tmp_path / "new.json").write_text(json.dumps(pyperf_doc(new)))
    args = [str(tmp_path / "old.json"), str(tmp_path / "new.json"), "--fail-on-regression", "5%"]
    code, doc, err = compare_json(capsys, *args)
    assert code == 1  # a regression is reported as such, even with undecided workloads
    assert doc["regressions"] == ["fast"]
    (u,) = doc["undecided"]
    assert (
        u["name"] == "few"
        and u["reason"] == "only 1 process on the old side, at least 2 are needed"
    )
    assert err.count("\n") == 1 and "undecided: few: only 1 process on the old side" in err
    row = next(w for w in doc["workloads"] if w["name"] == "few")
    assert row["headline"] == "undecided: only 1 process on the old side, at least 2 are needed"


def test_units_that_differ_are_undecided_for_the_gate(tmp_path: Path, capsys) -> None:
    (tmp_path / "old.csv").write_text("workload,value,unit\n" + "x,1,ms\n" * 20)
    (tmp_path / "new.csv").write_text("workload,value,unit\n" + "x,1,s\n" * 20)
    code, doc, err = compare_json(
        capsys, str(tmp_path / "old.csv"), str(tmp_path / "new.csv"), "--fail-on-regression", "5%"
    )
    assert code == 3 and doc["workloads"][0]["verdict"] == "not comparable"
    assert "units differ" in err


def test_bad_input_is_exit_2_with_one_line(tmp_path: Path, capsys) -> None:
    code = main(["compare", str(tmp_path / "absent.json"), str(DATA / "hyperfine_old.json")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "no such" in err
    with pytest.raises(SystemExit) as info:  # argparse: usage error
        main(["compare", "a", "b", "--fail-on-regression", "five"])
    assert info.value.code == 2
    assert "not a percentage" in capsys.readouterr().err


def test_help_documents_the_exit_codes(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "exit 3 when none is, but a workload is undecided" in text
    assert "--allow-undecided" in text


# ------------------------------------------------------- the ratio CI, by simulation
def test_ratio_ci_covers_the_true_ratio_at_95_percent() -> None:
    """pyperf-like data with a known truth: 10 processes of 2 values per side, a process
    effect (sd 8 %) and noise within a process (sd 4 %); new = 1.06 x old. The share of
    the 95 % CIs of benchrun compare's ratio that contain 1.06 must be near 0.95."""
    rng = np.random.default_rng(20240611)
    reps, k, v, truth = 1500, 10, 2, 1.06

    def draw(scale: float) -> np.ndarray:  # shape (reps, k, v), vectorised
        process = rng.normal(0.0, 0.08, (reps, k, 1))
        within = rng.normal(0.0, 0.04, (reps, k, v))
        return scale * 0.2 * (1.0 + process + within)

    old, new = draw(1.0), draw(truth)
    hits = 0
    for i in range(reps):
        sides = [
            side_from_dataset(
                Dataset(
                    groups={(None, "w", None): x[i].ravel()},
                    unit="s",
                    source_format="pyperf",
                    processes={(None, "w", None): (v,) * k},
                ),
                label,
            )  # fmt: skip
            for x, label in ((old, "old"), (new, "new"))
        ]
        (row,) = compare_sides(*sides).rows
        assert row.old_n == row.new_n == k
        hits += row.ratio_low < truth < row.ratio_high
    coverage = hits / reps
    # binomial sd at 0.95 and 1500 draws: 0.56 %; allow about 3 sd
    assert 0.933 < coverage < 0.967, coverage
