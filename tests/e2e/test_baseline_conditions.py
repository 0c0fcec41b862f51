"""``benchrun run --baseline`` states both campaigns' conditions (issue 27).

Real campaigns whose workloads print seeded readings (so the baseline verdicts are known:
the same code, "equivalent"); the baseline's stored kernel is then changed (SQL), as
after a kernel update. Expected: the conditions lines, "baseline verdicts not comparable"
and exit 3 with --fail-on-unmet; with --allow-different-conditions the verdict stands.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from e2e_util import cli
from test_adaptive import SETTINGS, _experiment, _noise_workloads


def test_run_baseline_across_a_kernel_update_is_not_comparable(tmp_path: Path, py: str) -> None:
    # the readings are seeded, not timed: contention under the suite's load changes
    # nothing, so no round is flagged (contended_threshold: 1) and only the kernel differs
    quiet = SETTINGS + "  contended_threshold: 1\n"
    old = _experiment(
        tmp_path, "old", quiet + "  ci_rel_width: 0.002\n",
        _noise_workloads(py, [("parse", 100.0, 2.0, 1)]),
    )  # fmt: skip
    assert cli("run", str(old), "-q").returncode == 0
    new = _experiment(
        tmp_path, "new", quiet, _noise_workloads(py, [("parse", 100.0, 2.0, 3)])
    )  # fmt: skip
    base = tmp_path / "out" / "old"
    # same machine, same state: the conditions are stated, the verdict stands, exit 0
    proc = cli("run", str(new), "-q", "--baseline", str(base), "--fail-on-unmet")
    assert proc.returncode == 0, proc.stderr
    assert "baseline conditions old:" in proc.stdout and "not comparable" not in proc.stderr
    conn = sqlite3.connect(base / "benchrun.db")
    meta = json.loads(conn.execute("SELECT metadata_json FROM campaign").fetchone()[0])
    meta["software"]["kernel_release"] = "0.0.1-before-the-update"
    with conn:
        conn.execute("UPDATE campaign SET metadata_json = ?", (json.dumps(meta),))
    conn.close()
    proc = cli("run", str(new), "-q", "--baseline", str(base), "--fail-on-unmet")
    assert proc.returncode == 3
    err = " ".join(proc.stderr.split())
    assert "baseline verdicts not comparable: kernel: 0.0.1-before-the-update vs" in err
    proc = cli("run", str(new), "-q", "--baseline", str(base), "--fail-on-unmet", "--json",
               "--allow-different-conditions")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["baseline_conditions"]["material"] is True
    assert doc["baseline_conditions"]["allow_different_conditions"] is True
