"""Conditions travel with the verdict (issue 27): ``benchrun compare`` and the gate on
stores whose truth is known.

Campaigns run with the fake executor (real SQLite, the real collector; scripted times), so
each side's true mean is known; the conditions are then changed the way they change on a
real machine, in the stored metadata and round flags (SQL). The expected exit codes follow
from the truth and the rules of docs/conditions.md: 0 (equivalent), 1 (a regression), 3
(not comparable), never 1 across a material difference.
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.cli import main
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.execute.executor import RoundOutcome
from benchrun.runner.execute.fake import FakeExecutor, lognormal
from benchrun.runner.machine.metadata import collect_metadata
from benchrun.runner.results.workloads import workload_results
from benchrun.runner.store.database import Store

ROUNDS = 80


class Quiet:
    """A display that prints nothing."""

    def start(self, *a: Any) -> None: ...
    def round_done(self, w: str, o: RoundOutcome, v: float | None, warm: bool) -> None: ...
    def message(self, text: str) -> None: ...
    def show_decision(self, *a: Any) -> None: ...
    def stop(self) -> None: ...


def campaign(
    where: Path, means: dict[str, float], seed: int, speed: float = 1.0, control: str = ""
) -> Path:
    """A fixed campaign of ``ROUNDS`` rounds per workload, CoV 0.5 %, every workload's mean
    multiplied by ``speed`` (the machine's speed in this campaign), its noise drawn from
    ``seed`` (the experiment is the same whatever the seed); the metadata of this
    machine stored with it. Returns the campaign directory (a new campaign in it if it
    exists)."""
    names = "\n".join(f"  - name: {n}\n    command: [work, {n}]" for n in means)
    text = (
        f"name: c\noutput: {where}\nsettings:\n  adaptive: false\n  rounds: {ROUNDS}\n"
        "  warmup_rounds: 1\n  pin: none\n  seed: 1\n"
        + (f"  control: {control}\n" if control else "")
        + f"workloads:\n{names}\n"
    )
    exp = parse_experiment(text, base_dir=where, check_commands=False)
    fake = FakeExecutor(
        {n: lognormal(m * speed, 0.005, seed=seed + i) for i, (n, m) in enumerate(means.items())}
    )
    run_campaign(exp, fake, Quiet(), metadata_fn=lambda: collect_metadata())
    return where / "c"


def sql(directory: Path, statement: str, *params: Any) -> None:
    conn = sqlite3.connect(directory / "benchrun.db")
    with conn:
        conn.execute(statement, params)
    conn.close()


def set_fact(directory: Path, section: str, key: str, value: Any) -> None:
    """Change one fact of the newest campaign's stored metadata record."""
    conn = sqlite3.connect(directory / "benchrun.db")
    cid, meta = conn.execute("SELECT id, metadata_json FROM campaign ORDER BY id DESC").fetchone()
    doc = json.loads(meta)
    doc[section][key] = value
    with conn:
        conn.execute("UPDATE campaign SET metadata_json = ? WHERE id = ?", (json.dumps(doc), cid))
    conn.close()


def flag_contended(directory: Path, share: float) -> int:
    """Flag the first ``share`` of the measured rounds ``contended``; returns how many."""
    conn = sqlite3.connect(directory / "benchrun.db")
    ids = [r[0] for r in conn.execute("SELECT id FROM round WHERE warmup = 0 ORDER BY seq")]
    chosen = ids[: round(share * len(ids))]
    with conn:
        conn.executemany(
            "UPDATE round SET flags = CASE WHEN flags = '' THEN 'contended' "
            "ELSE flags || ',contended' END WHERE id = ?",
            [(i,) for i in chosen],
        )
    conn.close()
    return len(chosen)


def gate(old: Path, new: Path, capsys: Any, *extra: str) -> tuple[int, dict[str, Any]]:
    rc = main(["compare", str(old), str(new), "--fail-on-regression", "5%", "--json", *extra])
    return rc, json.loads(capsys.readouterr().out)


@pytest.fixture()
def pair(tmp_path: Path) -> tuple[Path, Path, Path]:
    """old (a 100 ms, b 200 ms), an equal twin, and new where b is 10 % slower."""
    old = campaign(tmp_path / "old", {"a": 0.100, "b": 0.200}, 1)
    same = campaign(tmp_path / "same", {"a": 0.100, "b": 0.200}, 101)
    new = campaign(tmp_path / "new", {"a": 0.100, "b": 0.220}, 201)
    return old, same, new


def test_same_conditions_the_gate_follows_the_truth(pair: tuple[Path, Path, Path], capsys) -> None:
    old, same, new = pair
    rc, doc = gate(old, same, capsys)
    assert rc == 0 and {w["verdict"] for w in doc["workloads"]} == {"equivalent"}
    assert doc["conditions"]["material"] is False and doc["not_comparable"] == []
    # the record's facts, as this machine gives them, are stated on both sides
    kernel = Path("/proc/sys/kernel/osrelease").read_text().strip()
    assert doc["conditions"]["old"]["fingerprint"]["kernel"] == kernel
    assert doc["conditions"]["new"]["contended_share"] == 0
    assert "no campaign-to-campaign variation assumed" in doc["campaign_assumption"]
    rc, doc = gate(old, new, capsys)
    assert rc == 1 and doc["regressions"] == ["b"]


@pytest.mark.parametrize(
    ("section", "key", "value", "label"),
    [
        ("software", "kernel_release", "0.0.1-other", "kernel"),
        ("hardware", "cpu_model", "Some Other CPU", "cpu model"),
        ("hardware", "microcode", "0xdead", "microcode"),
        ("hardware", "smt_active", True, "smt"),
        ("software", "benchrun_version", "9.9.0", "benchrun"),
    ],
)
def test_a_material_difference_is_not_comparable_and_exits_3(
    pair: tuple[Path, Path, Path], capsys, section: str, key: str, value: Any, label: str
) -> None:
    old, _, new = pair
    set_fact(new, section, key, value)
    rc, doc = gate(old, new, capsys)
    assert rc == 3  # a true 10 % regression, but across another machine: no verdict
    assert doc["regressions"] == []
    assert {w["verdict"] for w in doc["workloads"]} == {"not comparable"}
    reason = doc["not_comparable"][0]["reason"]
    assert reason.startswith("not comparable:") and label in reason
    # the ratio is still shown, with the reason in the headline
    b = next(w for w in doc["workloads"] if w["name"] == "b")
    assert b["ratio_low"] < 1.10 < b["ratio_high"] and "not comparable" in b["headline"]
    # the flag keeps the verdicts and still states the difference
    rc, doc = gate(old, new, capsys, "--allow-different-conditions")
    assert rc == 1 and doc["regressions"] == ["b"]
    assert doc["conditions"]["material"] is True


def test_noted_differences_do_not_block(pair: tuple[Path, Path, Path], capsys) -> None:
    old, _, new = pair
    set_fact(new, "software", "benchrun_version", "0.1.99")  # a patch release
    # both loads set: the old campaign's own, recorded on a busy machine, could be 3.5 too
    set_fact(old, "environment", "load_average", [0.1, 0.1, 0.1])
    set_fact(new, "environment", "load_average", [3.5, 3.0, 2.0])
    rc, doc = gate(old, new, capsys)
    assert rc == 1 and doc["conditions"]["material"] is False
    noted = {d["what"] for d in doc["conditions"]["differences"]}
    assert {"benchrun", "load at the start"} <= noted


def test_contended_share_above_the_threshold_is_material(
    pair: tuple[Path, Path, Path], capsys
) -> None:
    old, same, new = pair
    flagged = flag_contended(same, 0.25)
    rc, doc = gate(old, same, capsys)
    assert rc == 3
    measured = doc["conditions"]["new"]["rounds"]
    assert measured == 2 * ROUNDS  # warm-up rounds are not counted
    assert doc["conditions"]["new"]["contended_share"] == pytest.approx(flagged / measured)
    # a few contended rounds (5 %) are noted, not material: the truth decides
    flag_contended(new, 0.05)
    rc, doc = gate(old, new, capsys)
    assert rc == 1 and doc["conditions"]["material"] is False


def test_the_text_output_states_both_sides(pair: tuple[Path, Path, Path], capsys) -> None:
    old, _, new = pair
    set_fact(new, "software", "kernel_release", "0.0.1-other")
    assert main(["compare", str(old), str(new), "--fail-on-regression", "5%"]) == 3
    captured = capsys.readouterr()
    out = " ".join(captured.out.split())
    assert "conditions old:" in out and "conditions new:" in out
    assert "0.0.1-other" in out and "differ (material): kernel" in out
    assert "not comparable: kernel" in captured.err.replace("\n", " ")


def test_imported_data_has_unknown_conditions_and_is_compared(
    pair: tuple[Path, Path, Path], tmp_path: Path, capsys
) -> None:
    old, _, _ = pair
    rng = np.random.default_rng(5)
    csv = tmp_path / "new.csv"
    csv.write_text(
        "workload,value,unit\n"
        + "".join(f"b,{float(v)!r},s\n" for v in rng.normal(0.2, 0.001, 400))
    )
    rc = main(["compare", str(old), str(csv), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["conditions"]["new"]["known"] is False
    assert doc["not_comparable"] == [] and doc["workloads"][0]["verdict"] != "not comparable"


def test_a_control_cancels_a_common_speed_factor(tmp_path: Path, capsys) -> None:
    # the new campaign ran on a machine 20 % slower for every workload; no code changed
    means = {"ctl": 0.050, "w": 0.100}
    old = campaign(tmp_path / "old", means, 1, control="ctl")
    new = campaign(tmp_path / "new", means, 51, speed=1.2, control="ctl")
    rc, doc = gate(old, new, capsys)
    assert rc == 1  # the plain ratio sees the machine: 1.2x slower
    w = next(r for r in doc["workloads"] if r["name"] == "w")
    assert w["ratio_low"] < 1.2 < w["ratio_high"]
    n = w["normalised"]
    assert n["control"] == "ctl" and n["low"] < 1.0 < n["high"]
    rc, doc = gate(old, new, capsys, "--normalise-by-control")
    w = next(r for r in doc["workloads"] if r["name"] == "w")
    assert rc == 0 and w["verdict"] == "equivalent"
    assert "control ctl" in w["headline"]


def test_normalise_without_a_control_is_one_line(pair: tuple[Path, Path, Path], capsys) -> None:
    old, _, new = pair
    rc = main(["compare", str(old), str(new), "--normalise-by-control"])
    assert rc == 2
    assert "--normalise-by-control: no control workload" in capsys.readouterr().err


def campaign_estimates(directory: Path, name: str) -> list[float]:
    """The collector's mean of ``name`` in every campaign of the store, oldest first."""
    with Store.open(directory / "benchrun.db") as store:
        out = []
        for c in store.campaigns():
            res = {r.name: r for r in workload_results(store, c, 0.95)}
            out.append(float(res[name].collected["mean"]))  # type: ignore[index]
    return out


def test_campaign_level_verdict_is_welch_on_campaign_log_means(tmp_path: Path, capsys) -> None:
    # four campaigns per side, each on a machine whose speed differs by a few per cent:
    # the campaign-to-campaign variation dominates the within-campaign one
    speeds_old, speeds_new = (1.0, 1.04, 0.97, 1.02), (1.03, 0.98, 1.05, 1.0)
    for i, s in enumerate(speeds_old):
        campaign(tmp_path / "old", {"b": 0.200}, 10 + i, speed=s)
    for i, s in enumerate(speeds_new):
        campaign(tmp_path / "new", {"b": 0.200}, 20 + i, speed=s)
    old, new = tmp_path / "old" / "c", tmp_path / "new" / "c"
    # one campaign per side: the within-campaign CI is far too narrow, and it says what it assumes
    rc, doc = gate(old, new, capsys)
    variation = {(v["side"], v["campaigns"]) for v in doc["campaign_variation"]}
    assert variation == {("old", 4), ("new", 4)}
    sd_old = next(v["sd"] for v in doc["campaign_variation"] if v["side"] == "old")
    a, b = campaign_estimates(old, "b"), campaign_estimates(new, "b")
    assert sd_old == pytest.approx(float(np.std(np.log(a), ddof=1)), rel=1e-9)
    rc, doc = gate(old, new, capsys, "--campaign-level")
    row = doc["workloads"][0]
    t = sps.ttest_ind(np.log(b), np.log(a), equal_var=False)
    assert row["welch_p"] == pytest.approx(float(t.pvalue), rel=1e-9)
    ci = t.confidence_interval(0.95)
    assert row["ratio_low"] == pytest.approx(math.exp(ci.low), rel=1e-9)
    assert row["ratio_high"] == pytest.approx(math.exp(ci.high), rel=1e-9)
    assert row["old_n"] == row["new_n"] == 4 and "4 vs 4 campaigns" in row["headline"]
    assert row["verdict"] != "slower" and rc != 1  # the truth: the same code
    # one campaign on a side: undecided, saying why
    rc, doc = gate(tmp_path / "old" / "c", campaign(tmp_path / "one", {"b": 0.2}, 99), capsys,
                   "--campaign-level")  # fmt: skip
    assert rc == 3 and "at least 2 per side" in doc["workloads"][0]["reason"]


def test_an_export_carries_its_conditions(
    pair: tuple[Path, Path, Path], tmp_path: Path, capsys
) -> None:
    old, same, _ = pair
    flagged = flag_contended(same, 0.25)
    set_fact(same, "software", "kernel_release", "0.0.2-exported")
    out = tmp_path / "same.json"
    assert main(["export", str(same), "-o", str(out)]) == 0
    capsys.readouterr()
    rc, doc = gate(old, out, capsys)
    new = doc["conditions"]["new"]
    assert new["known"] and new["fingerprint"]["kernel"] == "0.0.2-exported"
    assert new["contended"] == flagged and new["rounds"] == 2 * ROUNDS
    assert rc == 3 and doc["conditions"]["material"] is True
