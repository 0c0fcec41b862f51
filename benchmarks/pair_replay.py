"""Replay recorded real campaigns through the paired and the independent rule.

For every campaign database given, the steady ok rounds are fed pass by pass (in the
recorded order) to two controllers with the campaign's settings, one with
``comparison: paired`` and one with ``comparison: independent``. Every recorded round is
given to both (the controllers' allocation is not followed: a replay cannot make rounds
that were not recorded), so the two rules see identical data, and what differs is the
rule, not the machine. Printed per pair: the pass at which each rule first declared a
verdict, the verdict, and the paired ratio with its CI at that point; ``-`` when a rule
never decided within the recorded passes.

Record long interleaved campaigns in fixed mode, e.g.::

    benchrun run configs/demo.yaml -o /tmp/rec --set rounds=300 -q
    python benchmarks/pair_replay.py /tmp/rec/demo/benchrun.db
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchrun.runner.config.experiment import parse_experiment  # noqa: E402
from benchrun.runner.control.controller import Controller, ControllerParams  # noqa: E402
from benchrun.runner.control.pairing import PassSeries, round_values_by_pass  # noqa: E402
from benchrun.runner.results.workloads import collect_workload  # noqa: E402
from benchrun.runner.store.database import Store  # noqa: E402


def replay(db: Path) -> list[dict[str, object]]:
    """Per pair of the campaign: the first pass at which each rule declared a verdict."""
    with Store.open(db) as store:
        campaign = store.campaigns()[-1]
        experiment = parse_experiment(campaign.config_text, display=str(db), check_commands=False)
        workloads = {w.id: w for w in store.workloads(campaign.id)}
        rounds = [r for r in store.rounds(campaign.id) if r.status == "ok" and not r.warmup]
    spec = {w.name: w for w in experiment.workloads}
    names = [workloads[r.workload_id].name for r in rounds]
    passes = sorted({r.pass_ for r in rounds})
    settings = experiment.settings
    out: dict[tuple[str, str], dict[str, object]] = {}
    for mode in ("paired", "independent"):
        params = ControllerParams.from_settings(
            settings, comparison=mode, max_time=None, max_rounds=10**6
        )
        ctrl = Controller(
            params,
            [
                (w.name, w.direction, experiment.comparison_group(w.name) or f"alone:{w.name}")
                for w in experiment.workloads
            ],
        )
        src = PassSeries({}, confidence=settings.confidence)
        readings: dict[str, list[tuple[float, ...]]] = {n: [] for n in spec}
        works: dict[str, list[int | None]] = {n: [] for n in spec}
        at: dict[str, list[int]] = {n: [] for n in spec}
        i = 0
        for p in passes:
            while i < len(rounds) and rounds[i].pass_ == p:
                n = names[i]
                readings[n].append(rounds[i].readings)
                works[n].append(rounds[i].work)
                at[n].append(p)
                i += 1
            stats = {
                n: collect_workload(
                    readings[n], works[n], per_work=spec[n].per_work,
                    confidence=settings.confidence, min_subsessions=settings.min_subsessions,
                )
                for n in spec
            }  # fmt: skip
            for n in spec:
                s = stats[n]
                skip = s.warmup_readings // s.rounds if s is not None and s.rounds else 0
                src.update(
                    n, round_values_by_pass(readings[n], works[n], at[n], spec[n].per_work, skip)
                )
            d = ctrl.decide(stats, {n: len(readings[n]) for n in spec}, 0.0, pairs=src)
            for pair in d.pairs:
                key = tuple(sorted((pair.a, pair.b)))
                row = out.setdefault(key, {"pair": " ~ ".join(key)})  # type: ignore[arg-type]
                if pair.verdict != "undecided" and f"{mode} pass" not in row:
                    row[f"{mode} pass"] = p - passes[0] + 1
                    row[f"{mode} verdict"] = f"{pair.verdict} ({pair.test})"
                    if mode == "paired" and pair.ratio is not None:
                        row["ratio"] = (
                            f"{pair.ratio:.4f} [{pair.ratio_low or float('nan'):.4f}, "
                            f"{pair.ratio_high or float('nan'):.4f}]"
                        )
        for row in out.values():
            row.setdefault(f"{mode} pass", "-")
    for row in out.values():
        row["passes recorded"] = len(passes)
    return list(out.values())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dbs", nargs="+", type=Path, help="campaign databases (benchrun.db)")
    args = ap.parse_args(argv)
    cols = ["pair", "paired pass", "paired verdict", "ratio", "independent pass",
            "independent verdict", "passes recorded"]  # fmt: skip
    print("| db | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for db in args.dbs:
        for row in replay(db):
            print(f"| {db.parent.name} | " + " | ".join(str(row.get(c, "-")) for c in cols) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
