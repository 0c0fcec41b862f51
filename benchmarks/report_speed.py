"""Time to write the HTML report of 20 workloads x 10 000 readings, and its size (issue 5).

    python benchmarks/report_speed.py [--workloads 20] [--readings 10000] [--repeat 3]

Builds a campaign directly through the Store API (no processes: the figure is about the
report, not the measuring): each workload has one warm-up round and 20 steady rounds of
``readings / 20`` readings, AR(1) noise (phi 0.5, 1 % of the mean) around means 1..20 ms
with a short transient at the start of every round, and the real machine record of this
machine. Then runs ``benchrun report --format html`` (the real console script, start-up
included) ``--repeat`` times and prints every time, the median and the file size.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchrun.runner import __version__
from benchrun.runner.machine.metadata import collect_metadata
from benchrun.runner.store.database import Store

ROUNDS = 20


def build_store(db: Path, workloads: int, readings: int, seed: int = 1) -> None:
    """A finished fixed-mode campaign with ``workloads`` x ``readings`` steady readings."""
    rng = np.random.default_rng(seed)
    per_round = readings // ROUNDS
    store = Store.create_or_open(db)
    names = [f"w{i:02d}" for i in range(workloads)]
    cid = store.create_campaign(
        name="speed",
        config_path=None,
        config_text="name: speed\n# synthetic campaign of benchmarks/report_speed.py\n",
        fingerprint="synthetic",
        settings={
            "adaptive": False,
            "rounds": ROUNDS,
            "warmup_rounds": 1,
            "confidence": 0.95,
            "alpha": 0.01,
            "margin": 0.01,
            "ci_rel_width": 0.05,
            "seed": 1,
            "order": "interleaved",
        },  # fmt: skip
        workloads=[
            {
                "name": n,
                "metric": "readings",
                "unit": "ms",
                "direction": "lower_is_better",
                "spec": {"name": n, "params": {}, "per_work": False},
            }  # fmt: skip
            for n in names
        ],
        benchrun_version=__version__,
        command_line="benchmarks/report_speed.py",
    )
    store.set_metadata(cid, collect_metadata(workload_cpus=[1]))
    ids = {w.name: w.id for w in store.workloads(cid)}
    seq = 0
    t0 = time.time()
    for rnd in range(ROUNDS + 1):
        for i, name in enumerate(names):
            mean = 1.0 + i
            e = rng.normal(0, 0.01 * mean, per_round)
            x = np.empty(per_round)
            prev = 0.0
            for k in range(per_round):  # AR(1), phi = 0.5
                prev = 0.5 * prev + e[k]
                x[k] = prev
            x += mean * (1 + 0.05 * np.exp(-np.arange(per_round) / 5.0))
            store.add_round(
                campaign_id=cid, workload_id=ids[name], seq=seq, pass_=rnd, round_index=rnd,
                status="ok", reason=None, exit_code=0, started_at=t0 + seq,
                wall_ns=int(x.sum() * 1e6), user_s=0.0, sys_s=0.0, max_rss_kib=0, cpus="1",
                argv=["synthetic"], work=None, warmup=rnd == 0, readings=x.tolist(),
            )  # fmt: skip
            seq += 1
    store.set_status(cid, "done", f"{ROUNDS} rounds of every workload")
    store.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", type=int, default=20)
    ap.add_argument("--readings", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    exe = shutil.which("benchrun")
    argv = [exe] if exe else [sys.executable, "-m", "benchrun.runner.cli"]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "speed" / "benchrun.db"
        t = time.perf_counter()
        build_store(db, args.workloads, args.readings)
        print(f"store built in {time.perf_counter() - t:.1f} s: {db}")
        out = Path(tmp) / "report.html"
        times, cpus = [], []
        for _ in range(args.repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run([*argv, "report", str(db.parent), "--out", str(out)], check=True)
            times.append(time.perf_counter() - t)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        size = out.stat().st_size
    print("wall times [s]: " + ", ".join(f"{x:.2f}" for x in times))
    print("CPU times (user + sys, all processes) [s]: " + ", ".join(f"{x:.2f}" for x in cpus))
    print(f"load average before the last run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(
        f"{args.workloads} workloads x {args.readings} readings: median {statistics.median(times):.2f} s, "
        f"report {size / 1024 / 1024:.2f} MiB ({size} bytes)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
