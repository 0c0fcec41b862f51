"""Does a control workload cancel campaign-to-campaign shifts on this machine? (issue 27)

Runs CAMPAIGNS short fixed-mode campaigns of one experiment (``benchrun run``, real
processes, pinned as usual) into one store, each with a control ``C`` (a fixed CPU loop,
``python3 -c "sum(range(N))"``) and a workload ``W`` (zlib compression, C code touching
memory, a different kind of work from the control). Per campaign it takes each workload's
estimate (the mean of ``benchrun show``) and reports, over the campaigns:

- the between-campaign sd of ``ln mean(W)`` (plain) and of ``ln mean(W) - ln mean(C)``
  (normalised by the control), with the correlation of ``ln mean(W)`` and ``ln mean(C)``
  across campaigns: the normalisation cancels a shift only when that correlation is
  positive and large (``var(W - C) = var(W) + var(C) - 2 cov``);
- the spread (sd and the largest |.|) of the ratio new/old between consecutive campaign
  pairs (an A/A comparison: the truth is 1), plain and double ratio;
- the typical within-campaign standard error of ``ln mean(W)`` (from the CI, else the
  i.i.d. one of the rounds), to set the between-campaign
  sd against what one campaign's CI claims.

    python benchmarks/control_workload.py [--campaigns 10] [--rounds 20] [--keep DIR]

The machine is shared while this runs (other helpers' tests): the figures are noisy, say so.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchrun.runner.results.workloads import workload_results  # noqa: E402
from benchrun.runner.store.database import Store  # noqa: E402

#: the control (a fixed CPU loop) and a workload, as both control benchmarks run them
WORKLOADS = """\
  control: control
workloads:
  - name: control
    command: ["python3", "-c", "sum(range(3000000))"]
  - name: zlib
    command: ["python3", "-c", "import zlib; zlib.compress(bytes(range(256)) * 60000, 6)"]
"""

EXPERIMENT = (
    """\
name: control
settings:
  rounds: {rounds}
  warmup_rounds: 2
"""
    + WORKLOADS
)


def campaign_means(db: Path) -> list[dict[str, tuple[float, float]]]:
    """Per stored campaign, workload name -> (mean in s, standard error of ln mean)."""
    out = []
    with Store.open(db) as store:
        for c in store.campaigns():
            row = {}
            for r in workload_results(store, c, 0.95):
                col = r.collected or {}
                mean, var, n_q = col.get("mean"), col.get("s2_q"), col.get("n_q")
                if mean is None:
                    continue
                if var and n_q:
                    se = math.sqrt(float(var) / float(n_q)) / float(mean)
                else:  # no certified CI (few rounds): the i.i.d. standard error of the rounds
                    sd = float((r.summary or {}).get("std") or math.nan)
                    se = sd / math.sqrt(max(r.steady, 1)) / float(mean)
                row[r.name] = (float(mean), se)
            out.append(row)
    return out


def report(rows: list[dict[str, tuple[float, float]]]) -> None:
    """Print the figures of the module docstring for the campaigns in ``rows``."""
    rows = [r for r in rows if "control" in r and "zlib" in r]
    k = len(rows)
    w = np.log([r["zlib"][0] for r in rows])
    c = np.log([r["control"][0] for r in rows])
    se_w = float(np.nanmedian([r["zlib"][1] for r in rows]))
    norm = w - c
    plain_pairs, norm_pairs = np.diff(w), np.diff(norm)
    corr = float(np.corrcoef(w, c)[0, 1]) if k > 2 else math.nan
    print(f"campaigns: {k}")
    print("| quantity | plain ln W | normalised ln W - ln C |")
    print("|---|---|---|")
    print(
        f"| between-campaign sd of the log mean | {100 * np.std(w, ddof=1):.2f} % | "
        f"{100 * np.std(norm, ddof=1):.2f} % |"
    )
    print(
        f"| sd of ln(new/old), consecutive pairs | {100 * np.std(plain_pairs, ddof=1):.2f} % | "
        f"{100 * np.std(norm_pairs, ddof=1):.2f} % |"
    )
    print(
        f"| largest abs ln(new/old) | {100 * np.max(np.abs(plain_pairs)):.2f} % | "
        f"{100 * np.max(np.abs(norm_pairs)):.2f} % |"
    )
    print(f"between-campaign sd of ln C: {100 * np.std(c, ddof=1):.2f} %")
    print(f"correlation of ln W and ln C across campaigns: {corr:.2f}")
    se_c = float(np.nanmedian([r["control"][1] for r in rows]))
    print(f"median within-campaign se of ln W: {100 * se_w:.2f} %, of ln C: {100 * se_c:.2f} %")
    print(
        "sd of ln W - ln C expected from the within-campaign se alone: "
        f"{100 * math.hypot(se_w, se_c):.2f} %"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--campaigns", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--keep", help="directory for the store (default: a temporary one)")
    ap.add_argument("--only-report", action="store_true", help="read --keep, run nothing")
    args = ap.parse_args()
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="control-"))
    base.mkdir(parents=True, exist_ok=True)
    exp = base / "control.yaml"
    exp.write_text(EXPERIMENT.format(rounds=args.rounds))
    benchrun = Path(sys.executable).with_name("benchrun")
    start = time.perf_counter()
    if not args.only_report:
        for i in range(args.campaigns):
            subprocess.run(
                [str(benchrun), "run", str(exp), "-o", str(base / "results"), "-q"],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            print(f"campaign {i + 1}/{args.campaigns} done", file=sys.stderr)
    report(campaign_means(base / "results" / "control" / "benchrun.db"))
    print(f"({time.perf_counter() - start:.0f} s, store {base / 'results' / 'control'})")


if __name__ == "__main__":
    main()
