"""Soak test of the daemon: tiny rounds through ``benchrun submit`` for N minutes.

Starts a daemon (``benchrun daemon start``) with private XDG directories, keeps two
campaigns in its queue (each: one workload running ``true``, ``--rounds`` rounds, fixed
mode, all in one results DB that keeps growing), polls the daemon over its socket once a
second like a user watching ``benchrun status`` would, and at the end reports:

- rounds per second: rounds committed / wall-clock seconds of the soak;
- the daemon's RSS (MiB) right after start and at the end (growth in %; aim < 10 %);
- runner overhead per round (ms): the gap between consecutive rounds of a campaign that
  is not spent in the workload, ``started_at[i+1] - started_at[i] - wall[i]``, median
  over the first and over the last minute of the soak (and over the first and last
  campaign).

Usage: python benchmarks/daemon_soak.py [--minutes 10] [--rounds 2000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from benchrun.runner.daemon.paths import DaemonPaths
from benchrun.runner.daemon.protocol import request


def benchrun() -> list[str]:
    exe = shutil.which("benchrun")
    return [exe] if exe else [sys.executable, "-m", "benchrun.runner.cli"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="soak duration (minutes)")
    ap.add_argument("--rounds", type=int, default=2000, help="rounds per campaign")
    ap.add_argument("--json", help="write the figures to this file")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()

    root = Path(tempfile.mkdtemp(prefix="brsoak"))
    env = dict(os.environ)
    env.update(
        XDG_DATA_HOME=str(root / "data"),
        XDG_STATE_HOME=str(root / "state"),
        XDG_RUNTIME_DIR=str(root / "run"),
    )
    os.environ.update(env)  # for request() in this process
    paths = DaemonPaths.from_env()
    exp = root / "soak.yaml"
    exp.write_text(
        f"name: soak\noutput: {root / 'out'}\n"
        f"settings: {{adaptive: false, rounds: {args.rounds}, warmup_rounds: 0}}\n"
        'workloads:\n  - name: nop\n    command: ["true"]\n'
    )
    subprocess.run([*benchrun(), "daemon", "start"], check=True, env=env)
    pid = int(request("ping", paths)["pid"])
    daemon = psutil.Process(pid)
    time.sleep(1.0)
    rss_start = daemon.memory_info().rss / 2**20
    t0 = time.time()
    end = t0 + args.minutes * 60
    submitted: list[int] = []
    requests = 0
    try:
        while time.time() < end:
            entries = request("queue", paths)["entries"]
            requests += 1
            waiting = [e for e in entries if e["state"] in ("queued", "running")]
            bad = [e for e in entries if e["state"] in ("failed", "paused", "interrupted")]
            if bad:
                raise SystemExit(f"a soak campaign ended badly: {bad[0]}")
            while len(waiting) < 2:
                out = subprocess.run(
                    [*benchrun(), "submit", str(exp)],
                    check=True,
                    env=env,
                    capture_output=True,
                    text=True,
                )
                submitted.append(int(out.stdout))
                waiting.append({})
            if request("current", paths)["entry"] is not None:
                requests += 1
            time.sleep(1.0)
        rss_end = daemon.memory_info().rss / 2**20
        queued = [e for e in request("queue", paths)["entries"] if e["state"] == "queued"]
        for e in queued:  # first the waiting ones, so that nothing new starts
            subprocess.run([*benchrun(), "cancel", str(e["id"])], check=True, env=env)
        running = request("current", paths)["entry"]
        if running is not None:  # may finish on its own meanwhile
            subprocess.run([*benchrun(), "cancel", str(running["id"])], check=False, env=env)
        t1 = time.time()
        deadline = time.time() + 60
        while request("current", paths)["entry"] is not None and time.time() < deadline:
            time.sleep(0.2)
    finally:
        subprocess.run([*benchrun(), "daemon", "stop"], env=env, check=False)

    db = root / "out" / "soak" / "benchrun.db"
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT campaign_id, started_at, wall_ns FROM round WHERE started_at <= ?"
        " ORDER BY campaign_id, seq",
        (t1,),
    ).fetchall()
    integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
    conn.close()
    gaps: list[tuple[int, float, float]] = []  # (campaign, at, gap s)
    for a, b in zip(rows, rows[1:], strict=False):
        if a[0] == b[0]:
            gaps.append((a[0], a[1], b[1] - a[1] - a[2] / 1e9))
    first_min = [g for _, at, g in gaps if at < t0 + 60]
    last_min = [g for _, at, g in gaps if at >= t1 - 60]
    campaigns = sorted({c for c, _, _ in gaps})
    first_c = [g for c, _, g in gaps if c == campaigns[0]]
    last_c = [g for c, _, g in gaps if c == campaigns[-1]]
    soak_s = t1 - t0
    figures = {
        "minutes": soak_s / 60,
        "rounds": len(rows),
        "campaigns": len(campaigns),
        "rounds_per_s": len(rows) / soak_s,
        "daemon_requests": requests,
        "daemon_rss_start_mib": rss_start,
        "daemon_rss_end_mib": rss_end,
        "daemon_rss_growth_pct": 100 * (rss_end - rss_start) / rss_start,
        "overhead_ms_first_minute": 1e3 * statistics.median(first_min),
        "overhead_ms_last_minute": 1e3 * statistics.median(last_min),
        "overhead_ms_first_campaign": 1e3 * statistics.median(first_c),
        "overhead_ms_last_campaign": 1e3 * statistics.median(last_c),
        "integrity_check": integrity,
    }
    for k, v in figures.items():
        print(f"{k:30s} {v:.3f}" if isinstance(v, float) else f"{k:30s} {v}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
