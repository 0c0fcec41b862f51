"""The CI gate between campaigns on this machine, with and without a CPU hog (issue 27).

Each *pair* is two campaigns of the same experiment (``gzip -2 -c`` of a ~10 MB tar, as in
the issue's reproduction), run one after the other through ``benchrun run``, then
``benchrun compare OLD NEW --fail-on-regression 5%``. The code is identical on both sides,
so every exit 1 is a false regression.

- ``--pairs N``: A/A pairs with no deliberate load. The gate should exit 1 in at most
  alpha of them.
- ``--hog-pairs N``: pairs where a CPU hog (``python3 -c "while True: pass"``, pinned with
  ``taskset`` to the workload's CPU) runs during the middle of the second campaign. The
  gate should exit 1 in none: its rounds are flagged contended and left out, or the
  comparison says "not comparable" (exit 3).

Prints, per kind, the exit codes, the ratio the gate saw, and the contended rounds of the
second campaign; ``--json FILE`` keeps every pair. Example::

    python benchmarks/campaign_gate.py --pairs 20 --hog-pairs 10
    python benchmarks/campaign_gate.py --pairs 2 --hog-pairs 2 --max-time 8s   # a smoke run

The figures describe this machine on this day (2 noisy cores); docs/conditions.md keeps
the last ones.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

EXPERIMENT = """\
name: {name}
output: results
settings:
  max_time: {max_time}
  ci_rel_width: 0.02
  pin: [{cpu}]
  warmup_rounds: 1
workloads:
  - name: gzip
    command: ["gzip", "-2", "-c", "{tar}"]
"""


def _make_tar(tmp: Path) -> Path:
    """A ~10 MB tar of the Python standard library (compressible text, like the issue's)."""
    tar = tmp / "input.tar"
    lib = Path(os.__file__).parent
    subprocess.run(
        ["tar", "-cf", str(tar), "--exclude=__pycache__", "-C", str(lib.parent), lib.name],
        check=True,
        stderr=subprocess.DEVNULL,
    )
    size = tar.stat().st_size
    if size > 10_000_000:
        with open(tar, "r+b") as f:
            f.truncate(10_000_000)
    return tar


def _run(exp: Path, out: Path, *, hog_cpu: int | None, hog_from: float, hog_for: float) -> int:
    """Run one campaign; with ``hog_cpu``, a CPU hog on that CPU from ``hog_from`` s for
    ``hog_for`` s of the campaign's wall time. Returns benchrun's exit status."""
    hog: subprocess.Popen[bytes] | None = None
    stop = threading.Event()

    def _hog() -> None:
        nonlocal hog
        if stop.wait(hog_from):
            return
        hog = subprocess.Popen(
            ["taskset", "-c", str(hog_cpu), sys.executable, "-c", "while True: pass"]
        )
        stop.wait(hog_for)
        hog.kill()
        hog.wait()

    t = threading.Thread(target=_hog) if hog_cpu is not None else None
    if t is not None:
        t.start()
    try:
        proc = subprocess.run(
            ["benchrun", "run", str(exp), "-o", str(out), "-q", "--new"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        stop.set()
        if t is not None:
            t.join()
    if proc.returncode not in (0, 3):
        print(proc.stderr.strip().splitlines()[-1:], file=sys.stderr)
    return proc.returncode


def _round_counts(db: Path) -> tuple[int, int]:
    """(rounds, rounds whose flags contain 'contended') of the newest campaign in ``db``."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        cid = conn.execute("SELECT max(id) FROM campaign").fetchone()[0]
        rows = conn.execute("SELECT flags FROM round WHERE campaign_id = ?", (cid,)).fetchall()
    return len(rows), sum("contended" in (f or "") for (f,) in rows)


def _pair(tmp: Path, tar: Path, i: int, kind: str, args: argparse.Namespace) -> dict[str, object]:
    out: dict[str, object] = {"pair": i, "kind": kind}
    dirs = []
    for side in ("old", "new"):
        name = f"{kind}-{i}-{side}"
        exp = tmp / f"{name}.yaml"
        exp.write_text(EXPERIMENT.format(name=name, max_time=args.max_time, cpu=args.cpu, tar=tar))
        hog = args.cpu if (kind == "hog" and side == "new") else None
        t0 = time.monotonic()
        out[f"{side}_exit"] = _run(
            exp, tmp / "results", hog_cpu=hog, hog_from=args.hog_from, hog_for=args.hog_for
        )
        out[f"{side}_seconds"] = round(time.monotonic() - t0, 1)
        dirs.append(tmp / "results" / name)
        out[f"{side}_rounds"], out[f"{side}_contended"] = _round_counts(dirs[-1] / "benchrun.db")
    gate = subprocess.run(
        ["benchrun", "compare", str(dirs[0]), str(dirs[1]), "--fail-on-regression", "5%"],
        capture_output=True,
        text=True,
    )
    out["gate_exit"] = gate.returncode
    out["gate_output"] = gate.stdout.strip()[-600:] + gate.stderr.strip()[-300:]
    js = subprocess.run(
        ["benchrun", "compare", str(dirs[0]), str(dirs[1]), "--json"],
        capture_output=True,
        text=True,
    )
    try:
        out["compare_json"] = json.loads(js.stdout)
    except json.JSONDecodeError:
        out["compare_json"] = None
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, default=20, help="A/A pairs without load")
    p.add_argument("--hog-pairs", type=int, default=10, help="pairs with a hog in the new one")
    p.add_argument("--max-time", default="15s", help="each campaign's max_time")
    p.add_argument("--cpu", type=int, default=1, help="the workload's CPU (and the hog's)")
    p.add_argument("--hog-from", type=float, default=4.0, help="s into the campaign")
    p.add_argument("--hog-for", type=float, default=6.0, help="s the hog runs")
    p.add_argument("--json", type=Path, help="write every pair here")
    args = p.parse_args()
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="benchrun-gate-") as d:
        tmp = Path(d)
        tar = _make_tar(tmp)
        kinds = ["aa"] * args.pairs + ["hog"] * args.hog_pairs
        for i, kind in enumerate(kinds):
            row = _pair(tmp, tar, i, kind, args)
            rows.append(row)
            print(
                f"{kind:>3} {i:2d}: gate exit {row['gate_exit']}, new campaign "
                f"{row['new_contended']}/{row['new_rounds']} contended, "
                f"{row['old_seconds']} s + {row['new_seconds']} s",
                flush=True,
            )
    for kind in ("aa", "hog"):
        codes = collections.Counter(int(r["gate_exit"]) for r in rows if r["kind"] == kind)  # type: ignore[call-overload]
        n = sum(codes.values())
        if n:
            print(f"{kind}: {n} pairs, gate exit codes {dict(sorted(codes.items()))}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
