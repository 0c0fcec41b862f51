"""Unit tests of the report's own statistics and of stored controller verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from benchrun.runner import __version__
from benchrun.runner.cli import main
from benchrun.runner.store.database import Store


def test_the_controllers_stored_verdict_is_shown(tmp_path: Path, capsys) -> None:
    rng = np.random.default_rng(2)
    db = tmp_path / "a" / "benchrun.db"
    with Store.create_or_open(db) as st:
        cid = st.create_campaign(
            name="a", config_path=None, config_text="name: a\n", fingerprint="x",
            settings={"adaptive": True, "alpha": 0.01, "margin": 0.01}, command_line=None,
            benchrun_version=__version__,
            workloads=[{"name": n, "metric": "wall_time", "unit": "s",
                        "direction": "lower_is_better", "spec": {}} for n in ("p", "q")],
        )  # fmt: skip
        ids = {w.name: w.id for w in st.workloads(cid)}
        for i in range(41):
            for j, (n, m) in enumerate((("p", 1.0), ("q", 2.0))):
                st.add_round(campaign_id=cid, workload_id=ids[n], seq=2 * i + j, pass_=i,
                             round_index=i, status="ok", reason=None, exit_code=0,
                             started_at=0.0, wall_ns=1, user_s=0, sys_s=0, max_rss_kib=0,
                             cpus=None, argv=["x"], work=None, warmup=i == 0,
                             readings=[float(rng.normal(m, 0.01))])  # fmt: skip
        # what the controller decided (here deliberately not what a recomputation says)
        st.add_event(cid, "verdicts", "stopped", {"pairs": [
            {"a": "p", "b": "q", "verdict": "equivalent", "relative_difference": 1.0}]})  # fmt: skip
        st.set_status(cid, "done", "all conditions met")
    assert main(["report", str(db), "--format", "json"]) == 0
    (group,) = json.loads(capsys.readouterr().out)["headline"]
    (pair,) = group["pairs"]
    assert group["verdict_source"] == "controller"
    # the stored verdict alone: no second (recomputed) verdict beside it (issue 17)
    assert pair["verdict"] == "equivalent" and "computed_verdict" not in pair
