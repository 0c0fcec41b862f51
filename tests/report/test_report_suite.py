"""Suites (systems x benchmarks from a matrix): HPT, Speedup-Test, bootstrap, biplot, and the
methods paragraph and rules, on a campaign written through the Store API (no processes)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from benchrun.runner import __version__
from benchrun.runner.cli import main
from benchrun.runner.report.document import build_report
from benchrun.runner.report.model import load_campaign
from benchrun.runner.report.plots import biplot_figure
from benchrun.runner.store.database import Store

BENCHMARKS = {"x": 10.0, "y": 20.0, "z": 40.0}
SPEEDUP = 0.8  # "new" takes 80 % of the time of "old" on every benchmark


@pytest.fixture(scope="module")
def suite_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(7)
    db = tmp_path_factory.mktemp("suite") / "suite" / "benchrun.db"
    cells = [(s, b) for s in ("old", "new") for b in BENCHMARKS]
    names = [f"run[system={s},case={b}]" for s, b in cells]
    with Store.create_or_open(db) as store:
        cid = store.create_campaign(
            name="suite", config_path=None, config_text="name: suite\n", fingerprint="x",
            settings={"adaptive": False, "rounds": 12, "warmup_rounds": 1, "confidence": 0.95,
                      "alpha": 0.01, "margin": 0.01},
            workloads=[{"name": n, "metric": "readings", "unit": "ms",
                        "direction": "lower_is_better",
                        "spec": {"params": {"system": s, "case": b}, "base_name": "run"}}
                       for n, (s, b) in zip(names, cells, strict=True)],
            benchrun_version=__version__, command_line=None,
        )  # fmt: skip
        ids = {w.name: w.id for w in store.workloads(cid)}
        seq = 0
        for rnd in range(13):
            for n, (s, b) in zip(names, cells, strict=True):
                mean = BENCHMARKS[b] * (SPEEDUP if s == "new" else 1.0)
                store.add_round(
                    campaign_id=cid, workload_id=ids[n], seq=seq, pass_=rnd, round_index=rnd,
                    status="ok", reason=None, exit_code=0, started_at=float(seq), wall_ns=1,
                    user_s=0, sys_s=0, max_rss_kib=0, cpus=None, argv=["x"], work=None,
                    warmup=rnd == 0, readings=rng.normal(mean, 0.01 * mean, 20).tolist(),
                )  # fmt: skip
                seq += 1
        store.set_status(cid, "done", "12 rounds of every workload")
    return db


def test_suite_tables_against_closed_forms(suite_db: Path, capsys) -> None:
    assert main(["report", str(suite_db), "--format", "json", "--raw"]) == 0
    doc = json.loads(capsys.readouterr().out)
    suite = doc["suite"]
    assert suite["factor"] == "system" and suite["systems"] == ["old", "new"]
    assert suite["benchmarks"] == ["run[case=x]", "run[case=y]", "run[case=z]"]
    (cmp,) = suite["comparisons"]
    assert (cmp["a"], cmp["b"]) == ("new", "old")
    # HPT with 3 benchmarks all won by "new": exact one-sided signed-rank p = 1/2^3
    assert cmp["hpt"]["confidence"] == pytest.approx(1 - 1 / 8)
    # ratio of geometric means of the per-benchmark means: closed form from the data
    series = {w["name"]: np.array(w["steady_series"]) for w in doc["workloads"]}
    logs = [
        math.log(series[f"run[system=new,case={b}]"].mean())
        - math.log(series[f"run[system=old,case={b}]"].mean())
        for b in BENCHMARKS
    ]
    gm = cmp["gmean_ratio"]
    assert gm["estimate"] == pytest.approx(math.exp(np.mean(logs)), rel=1e-12)
    assert gm["low"] < SPEEDUP < gm["high"]
    sp = cmp["speedup_test"]
    assert sp["overall_speedup_mean"] == pytest.approx(1 / SPEEDUP, rel=0.01)
    assert sum(suite["biplot"]["explained"]) == pytest.approx(1.0)
    assert "Hierarchical Performance Testing" in doc["methods"]
    assert "12 steady rounds" in doc["methods"]
    rules = {r["rule"]: r["status"] for r in doc["rules"]}
    assert rules[1] == "met" and rules[3] == "met" and rules[11] == "missing"


def test_suite_html_has_the_suite_tables_and_biplot(suite_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.html"
    assert main(["report", str(suite_db), "--out", str(out), "--no-plots"]) == 0
    html = out.read_text()
    for text in ("HPT: new vs old", "Speedup-Test: old (initial)", "ratio of geometric means"):
        assert text in html
    report = build_report(load_campaign(suite_db), with_plots=False)
    assert report.suite is not None
    fig = biplot_figure(report.suite)
    assert fig is not None and fig.png.startswith(b"\x89PNG") and "PCA" in fig.caption
