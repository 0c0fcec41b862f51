"""runner/results/conditions.py: what a campaign's record says, and which differences are
material (docs/conditions.md). The stores are real (fake-executor campaigns with this
machine's metadata); the expected values come from the store (SQL), /proc, or the rules'
thresholds, not from the code under test."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

from test_compare_conditions import campaign

from benchrun.runner.results.baseline import baseline_conditions
from benchrun.runner.results.conditions import (
    CONTENDED_MATERIAL,
    DRIFT_MATERIAL,
    Conditions,
    Fingerprint,
    WorkloadConditions,
    campaign_conditions,
    compare_conditions,
    conditions_of,
    is_contended,
    runs_python,
    unknown_conditions,
)
from benchrun.runner.store.database import Store


def test_a_stored_campaign_states_this_machine(tmp_path: Path) -> None:
    c = campaign(tmp_path / "x", {"a": 0.01, "b": 0.02}, 3)
    with Store.open(c / "benchrun.db") as store:
        cond = campaign_conditions(store, store.campaign())
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = next(
        x.split(":", 1)[1].strip() for x in cpuinfo.splitlines() if x.startswith("model name")
    )
    assert cond.known and cond.fingerprint.cpu_model == model
    assert cond.fingerprint.kernel == Path("/proc/sys/kernel/osrelease").read_text().strip()
    micro = [x.split(":", 1)[1].strip() for x in cpuinfo.splitlines() if x.startswith("microcode")]
    assert cond.fingerprint.microcode == (micro[0] if micro else None)
    conn = sqlite3.connect(c / "benchrun.db")
    measured = conn.execute(
        "SELECT COUNT(*) FROM round WHERE warmup = 0 AND status = 'ok'"
    ).fetchone()[0]
    load = json.loads(conn.execute("SELECT metadata_json FROM campaign").fetchone()[0])
    conn.close()
    assert cond.rounds == measured and cond.contended == 0 and cond.contended_share == 0
    assert cond.load == load["environment"]["load_average"][0]
    assert "0 % of" in cond.line() and "kernel" in cond.line()


def test_flags_and_python_commands() -> None:
    assert is_contended("contended") and is_contended("calibration,contended")
    assert not is_contended("") and not is_contended(None) and not is_contended("uncontended")
    assert runs_python(["python3", "-c", "1"]) and runs_python("/usr/bin/python3.12 x.py")
    assert runs_python(["pypy3"]) and not runs_python(["gzip", "-2"]) and not runs_python([])


def side(**kw: object) -> Conditions:
    base = Conditions(
        label="x",
        known=True,
        fingerprint=Fingerprint("cpu", "0x1", "6.1", "performance", False, 2, "0.1.0", "3.11.7"),
        load=0.1,
        rounds=100,
        workloads=(WorkloadConditions("w", rounds=100), WorkloadConditions("py", python=True)),
    )
    return dataclasses.replace(base, **kw)  # type: ignore[arg-type]


def test_level_shift_concerns_its_workload_only() -> None:
    shift = WorkloadConditions("w", level_shift_at=17, level_shift_change=1.35)
    shifted = side(workloads=(shift, WorkloadConditions("py")))
    cc = compare_conditions(side(), shifted, ["w", "py"])
    assert cc.material and cc.reasons("py") == []
    # index 17 is the 18th steady round, as the collector's note counts it
    assert cc.reasons("w") == ["level shift (w): none vs at round 18 (+135 %)"]


def test_drift_is_material_above_its_threshold() -> None:
    small = WorkloadConditions("w", drift="moved", drift_span=DRIFT_MATERIAL / 2)
    large = WorkloadConditions("w", drift="moved", drift_span=DRIFT_MATERIAL * 2)
    assert not compare_conditions(side(), side(workloads=(small,)), ["w"]).material
    assert compare_conditions(side(), side(workloads=(large,)), ["w"]).reasons("w")


def test_python_minor_version_is_material_for_python_workloads_only() -> None:
    fp = dataclasses.replace(side().fingerprint, python_version="3.12.1")
    cc = compare_conditions(side(), side(fingerprint=fp), ["w", "py"])
    assert cc.reasons("w") == [] and cc.reasons("py") == ["python (py): 3.11.7 vs 3.12.1"]
    patch = dataclasses.replace(side().fingerprint, python_version="3.11.9")
    assert not compare_conditions(side(), side(fingerprint=patch), ["w", "py"]).material


def test_contended_threshold_and_unknown_sides() -> None:
    at = round(CONTENDED_MATERIAL * 100)
    assert not compare_conditions(side(), side(contended=at), ["w"]).material  # not above
    assert compare_conditions(side(), side(contended=at + 1), ["w"]).material
    # data benchrun did not measure: stated unknown, never material
    cc = compare_conditions(side(contended=50), unknown_conditions("f.json"), ["w"])
    assert "unknown" in cc.new.line()
    assert cc.reasons("w") == ["contended rounds: 50 % vs unknown"]  # the measured side's own
    assert not compare_conditions(side(), unknown_conditions("f"), ["w"]).material


def test_level_shift_is_read_from_the_collector_when_it_gives_one(tmp_path: Path) -> None:
    c = campaign(tmp_path / "x", {"a": 0.01}, 3)
    with Store.open(c / "benchrun.db") as store:
        camp = store.campaign()
        cond = conditions_of(camp, store.workloads(camp.id), store.rounds(camp.id),
                             {"a": {"mean": 0.01, "level_shift_at": 12}}, {})  # fmt: skip
        plain = conditions_of(camp, store.workloads(camp.id), store.rounds(camp.id), {"a": {}}, {})
    assert cond.workload("a").level_shift_at == 12  # type: ignore[union-attr]
    assert plain.workload("a").level_shift_at is None  # type: ignore[union-attr]


def test_baseline_conditions_of_a_store_and_of_a_json_summary(tmp_path: Path) -> None:
    old = campaign(tmp_path / "old", {"a": 0.01}, 3)
    new = campaign(tmp_path / "new", {"a": 0.01}, 4)
    conn = sqlite3.connect(old / "benchrun.db")
    meta = json.loads(conn.execute("SELECT metadata_json FROM campaign").fetchone()[0])
    meta["software"]["kernel_release"] = "0.0.1-old"
    with conn:
        conn.execute("UPDATE campaign SET metadata_json = ?", (json.dumps(meta),))
    conn.close()
    cc = baseline_conditions(old, new / "benchrun.db", 1, ["a"])
    assert cc.material and cc.reasons("a")[0].startswith("kernel: 0.0.1-old vs ")
    summary = tmp_path / "base.json"
    summary.write_text(json.dumps({"a": {"mean": 0.01, "variance": 1e-8, "n_q": 10}}))
    cc = baseline_conditions(summary, new / "benchrun.db", 1, ["a"])
    assert not cc.material and not cc.old.known
