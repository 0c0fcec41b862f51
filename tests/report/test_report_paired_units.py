"""The report follows the stored verdicts and the experiment's compare: (campaigns built
through the Store API, so the stored verdicts can say what a test needs them to say)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from benchrun.runner import __version__
from benchrun.runner.cli import main
from benchrun.runner.report.analysis import _chain
from benchrun.runner.report.verdicts import StoredComparison, verdicts_from_dict
from benchrun.runner.store.database import Store

CONFIG = """\
name: u
workloads:
  - name: p
    command: ["true"]
  - name: q
    command: ["true"]
  - name: r
    command: ["true"]
compare:
  - [p, q]
"""


def _campaign(tmp_path: Path, config: str, verdicts: dict | None, means: dict[str, float]) -> Path:
    """An adaptive campaign of wall-time workloads with 200 steady rounds each (1 % noise)."""
    rng = np.random.default_rng(5)
    db = tmp_path / "u" / "benchrun.db"
    with Store.create_or_open(db) as st:
        cid = st.create_campaign(
            name="u", config_path=None, config_text=config, fingerprint="x",
            settings={"adaptive": True, "alpha": 0.01, "margin": 0.01, "ci_rel_width": 0.05},
            command_line=None, benchrun_version=__version__,
            workloads=[{"name": n, "metric": "wall_time", "unit": "s",
                        "direction": "lower_is_better", "spec": {}} for n in means],
        )  # fmt: skip
        ids = {w.name: w.id for w in st.workloads(cid)}
        seq = 0
        for i in range(201):
            for n, m in means.items():
                st.add_round(campaign_id=cid, workload_id=ids[n], seq=seq, pass_=i,
                             round_index=i, status="ok", reason=None, exit_code=0,
                             started_at=0.0, wall_ns=1, user_s=0, sys_s=0, max_rss_kib=0,
                             cpus=None, argv=["x"], work=None, warmup=i == 0,
                             readings=[float(rng.normal(m, 0.01 * m))])  # fmt: skip
                seq += 1
        if verdicts is not None:
            st.add_event(cid, "verdicts", "stopped", verdicts)
        st.set_status(cid, "done", "all conditions met")
    return db


def _pair(a: str, b: str, ratio: float, **extra: object) -> dict:
    return {"a": a, "b": b, "verdict": "separated", "test": "paired", "ratio": ratio,
            "ratio_low": ratio * 0.98, "ratio_high": ratio * 1.02, "passes": 80,
            "welch_p": 1e-6, "welch_p_holm": 1e-6, "tost_p": 1.0, "look": 2, "alpha": 0.004,
            "relative_difference": ratio - 1, "rounds_needed": None, **extra}  # fmt: skip


def _json(db: Path, capsys) -> dict:
    assert main(["report", str(db), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_groups_follow_compare_and_the_controllers_order(tmp_path: Path, capsys) -> None:
    # the means say p (1.0) before q (1.1); the controller's paired series said q first
    # (a drift the means could not see): the report shows the controller's order, verdict,
    # test and ratio, and no recomputed verdict beside it
    stored = {"pairs": [_pair("q", "p", 1.05)], "baselines": [], "conditions_met": True,
              "reason": "all conditions met", "units": {"p": "s", "q": "s", "r": "s"},
              "directions": {}, "margin": 0.01, "alpha": 0.01, "confidence": 0.95}  # fmt: skip
    db = _campaign(tmp_path, CONFIG, stored, {"p": 1.0, "q": 1.1, "r": 3.0})
    doc = _json(db, capsys)
    pq, r = doc["headline"]
    assert pq["group"] == "wall_time:s#1" and pq["label"] == "wall_time [s], compare: group 1"
    assert [row["name"] for row in pq["rows"]] == ["q", "p"]
    assert (pq["rows"][1]["ratio"], pq["rows"][1]["ratio_low"]) == (1.05, 1.05 * 0.98)
    (pair,) = pq["pairs"]
    assert (pair["verdict"], pair["test"], pair["controller"]) == ("separated", "paired", True)
    assert "computed_verdict" not in pair  # one verdict per pair: the controller's
    assert pair["effect_size"] is None  # Cohen's d of the own means: not of a paired test
    assert pair["headline"] == "p is 1.050x [1.029, 1.071] slower than q (paired, 80 passes)"
    assert not r["compared"] and [row["name"] for row in r["rows"]] == ["r"]
    assert r["label"] == "wall_time [s], compared with nothing (compare:)"


def test_baselines_are_listed_with_their_headline(tmp_path: Path, capsys) -> None:
    base = {"name": "p", "baseline": "stored baseline", "verdict": "slower", "look": 1,
            "alpha": 0.005, "mean": 1.0, "baseline_mean": 0.9, "relative_change": 0.111,
            "welch_p": 1e-4, "welch_p_holm": 2e-4, "tost_p": 0.9, "rounds_needed": None,
            "notes": [], "test": "welch", "ratio": 1.111, "ratio_low": 1.08,
            "ratio_high": 1.14, "passes": None}  # fmt: skip
    stored = {"pairs": [_pair("p", "q", 1.1)], "baselines": [base], "conditions_met": True,
              "reason": "all conditions met", "units": {"p": "s", "q": "s", "r": "s"},
              "directions": {}, "margin": 0.01, "alpha": 0.01, "confidence": 0.95}  # fmt: skip
    db = _campaign(tmp_path, CONFIG, stored, {"p": 1.0, "q": 1.1, "r": 3.0})
    out = tmp_path / "r.md"
    assert main(["report", str(db), "--format", "md", "--out", str(out)]) == 0
    text = out.read_text()
    line = "p is 1.111x [1.080, 1.140] slower than stored baseline (Welch)"
    assert line in text.split("## Headline")[0]  # in the comparisons, before the headline
    assert "In 1 of the 2 comparisons, the two workloads were measured in the same passes" in text
    assert "The other comparison was made with Welch's t-test" in text


def test_old_verdicts_without_ratio_or_test(tmp_path: Path, capsys) -> None:
    # a campaign stored before paired comparisons: no test, no ratio, no conditions_met
    stored = {"pairs": [{"a": "p", "b": "q", "verdict": "equivalent", "relative_difference": 0.0}]}
    db = _campaign(tmp_path, "name: u\n", stored, {"p": 1.0, "q": 1.0})
    doc = _json(db, capsys)
    (c,) = doc["comparisons"]["comparisons"]
    assert c["headline"] == "q vs p: no ratio yet" and c["test"] is None
    assert doc["comparisons"]["conditions_met"] is None
    (group,) = doc["headline"]  # the stored text does not parse: metric and unit only
    assert group["group"] == "wall_time:s" and group["pairs"][0]["verdict"] == "equivalent"
    # the ratio to the best falls back to the delta method of the two estimates
    assert group["rows"][1]["ratio_low"] is not None


def test_interrupted_adaptive_campaign_has_no_stored_comparisons(tmp_path: Path, capsys) -> None:
    db = _campaign(tmp_path, CONFIG, None, {"p": 1.0, "q": 1.2, "r": 3.0})
    doc = _json(db, capsys)
    assert doc["comparisons"] is None
    assert doc["sections"][0] == "headline"  # no stored verdicts: the usual order
    (pq, _) = doc["headline"]
    assert pq["verdict_source"] == "computed" and pq["pairs"][0]["verdict"] == "separated"


def _c(a: str, b: str) -> StoredComparison:
    return verdicts_from_dict({"pairs": [{"a": a, "b": b, "verdict": "separated"}]}).pairs[0]


def test_chain_of_adjacent_pairs() -> None:
    assert _chain([_c("x", "y")]) == ["x", "y"]
    assert _chain([_c("x", "y"), _c("y", "z"), _c("z", "w")]) == ["x", "y", "z", "w"]
    # a pair stored the other way round (a revised verdict) keeps its place in the chain
    assert _chain([_c("x", "y"), _c("z", "y")]) == ["x", "y", "z"]
    assert _chain([_c("x", "y"), _c("z", "w")]) is None
    assert _chain([]) is None


def test_a_reference_group_is_not_ranked_by_neighbours(tmp_path: Path, capsys) -> None:
    # settings.reference: the controller compares each workload with the reference (stored
    # as baseline comparisons) and no neighbour with the next; the report does not invent
    # neighbour verdicts, and the ratio to the best is the stored paired one
    ref = {"name": "q", "baseline": "p", "verdict": "separated", "look": 1, "alpha": 0.005,
           "mean": 1.1, "baseline_mean": 1.0, "relative_change": 0.1, "welch_p": 1e-8,
           "welch_p_holm": 1e-8, "tost_p": 1.0, "rounds_needed": None, "notes": [],
           "test": "paired", "ratio": 1.1, "ratio_low": 1.09, "ratio_high": 1.11,
           "passes": 200}  # fmt: skip
    stored = {"pairs": [], "baselines": [ref], "conditions_met": True,
              "reason": "all conditions met", "units": {"p": "s", "q": "s"}, "directions": {},
              "margin": 0.01, "alpha": 0.01, "confidence": 0.95}  # fmt: skip
    config = CONFIG.replace('  - name: r\n    command: ["true"]\n', "")
    db = _campaign(tmp_path, config, stored, {"p": 1.0, "q": 1.1})
    doc = _json(db, capsys)
    (group,) = doc["headline"]
    assert group["verdict_source"] == "controller" and group["pairs"] == []
    assert [r["name"] for r in group["rows"]] == ["p", "q"]
    assert [r["verdict_next"] for r in group["rows"]] == [None, None]
    assert (group["rows"][1]["ratio_low"], group["rows"][1]["ratio_high"]) == (1.09, 1.11)
    assert group["notes"] == [
        "Each workload is compared with the reference p (see the comparisons), not with its "
        "neighbour."
    ]
    (c,) = doc["comparisons"]["comparisons"]
    assert c["kind"] == "baseline"
    assert c["headline"] == "q is 1.100x [1.090, 1.110] slower than p (paired, 200 passes)"
