"""Campaigns written through the Store API with readings the test chooses (no processes),
for the report's figure and checklist tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchrun.runner import __version__
from benchrun.runner.store.database import Store

#: a machine record with every section the checklist looks for (rule 9, rule 10)
METADATA: dict[str, Any] = {
    "hardware": {"cpu_model": "test CPU", "logical_cpus": 2},
    "software": {"python": "3.11", "os": "Linux"},
    "timer": {"clock": "time.perf_counter_ns", "implementation": "clock_gettime"},
    "environment": {"PYTHONHASHSEED": "0"},
}


def store_campaign(
    db: Path,
    rounds: Mapping[str, Sequence[Sequence[float]]],
    *,
    unit: str = "s",
    metric: str = "wall_time",
    direction: str = "lower_is_better",
    commands: Mapping[str, Sequence[str]] | None = None,
    settings: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = METADATA,
    config_text: str = "name: synthetic\n",
) -> Path:
    """A finished fixed-mode campaign at ``db``: ``rounds[name]`` are the readings of each
    round of the workload (the first round is its warm-up), run in passes (one round of
    every workload per pass). Returns ``db``."""
    names = list(rounds)
    with Store.create_or_open(db) as st:
        cid = st.create_campaign(
            name="synthetic", config_path=None, config_text=config_text, fingerprint="x",
            settings={"adaptive": False, "warmup_rounds": 1, "confidence": 0.95,
                      "alpha": 0.01, "margin": 0.01, **(settings or {})},
            command_line=None, benchrun_version=__version__,
            workloads=[{"name": n, "metric": metric, "unit": unit, "direction": direction,
                        "spec": {"command": list((commands or {}).get(n, ["true"]))}}
                       for n in names],
        )  # fmt: skip
        if metadata is not None:
            st.set_metadata(cid, metadata)
        ids = {w.name: w.id for w in st.workloads(cid)}
        seq = 0
        for i in range(max(len(r) for r in rounds.values())):
            for n in names:
                if i >= len(rounds[n]):
                    continue
                st.add_round(campaign_id=cid, workload_id=ids[n], seq=seq, pass_=i,
                             round_index=i, status="ok", reason=None, exit_code=0,
                             started_at=float(seq), wall_ns=1, user_s=0, sys_s=0,
                             max_rss_kib=0, cpus=None, argv=["x"], work=None, warmup=i == 0,
                             readings=[float(v) for v in rounds[n][i]])  # fmt: skip
                seq += 1
        st.set_status(cid, "done", "every round run")
    return db
