"""benchrun's export format: raw readings with every flag, and results (docs/export-format.md).

``benchrun export`` writes one JSON document::

    {"format": "benchrun-export", "version": 1, "exported_at": "...Z",
     "benchrun_version": "0.1.0",
     "campaign": {id, name, status, stop_reason, created_at, updated_at, settings,
                  config_text, metadata, command_line, benchrun_version},
     "workloads": [{name, metric, unit, display_unit: {label, factor}, direction, status,
                    status_reason, params, per_work, contended_rounds,
                    "result": {mean, variance, n_q, q, ci_low, ci_high, rel_half_width,
                               confidence, n, warmup_readings, enough, certified,
                               interval_low, interval_high, tau_bound, width_factor,
                               interval_note, nodes, level_shift_at, level_shift_change},
                    "collected": {...}, "summary": {...},
                    "rounds": [{seq, pass, round_index, status, reason, exit_code,
                                started_at, wall_ns, user_s, sys_s, max_rss_kib, cpus,
                                work, warmup, flags, facts, wait_ns, wait_source,
                                "readings": [value...], "reading_flags": [flag...]}]}],
     "comparisons": {...} or null,
     "events": [{at, kind, message, data}]}

Units: ``unit`` is the base unit, the one every number of the workload is stored in
(readings, ``result``, ``collected``, ``summary``); ``display_unit`` is the unit every
benchrun output shows them in (``label``, and ``factor`` = one label in the base unit:
shown value = stored value / factor; runner/results/workloads.py ``display_of``).
``started_at`` Unix seconds, ``wall_ns`` nanoseconds, ``user_s``/``sys_s`` CPU seconds,
``max_rss_kib`` KiB, ``wait_ns`` nanoseconds the round's processes were runnable but not
running (null: not measured; ``wait_source`` names the signal, docs/contention.md); a
round whose ``flags`` include ``contended`` waited longer than the campaign's
``settings.contended_threshold`` of its wall time, and ``contended_rounds`` counts them
(ok, not warm-up) per workload. ``result`` holds (mean, s_q², n_q, q) and the CI (docs/methods.md
§3-4): what ``compare`` and a baseline need without the raw data, and the interval every
output prints (``interval_*``: the CI when ``certified``, else the uncertified interval
that assumes tau <= ``tau_bound``, docs/methods.md §4.1); ``summary`` only
descriptive statistics of the per-round values (no second CI). ``comparisons``: the
campaign's comparisons as every output prints them (:meth:`runner.report.verdicts.
StoredVerdicts.to_dict`; runner/results/comparisons.py), null when there are none. A reading's flag is ``""`` (analysed), ``warmup-round``,
``warmup-reading`` (within-round warm-up, MSER-5 or fixed), ``outlier`` (outside Tukey's
fences, kept in the analysis), ``failed`` (round did not succeed), ``contended`` (a
contended round left out of the analysis; with ``contended: keep`` its readings are
analysed and flagged ``""``), plus any flag stored
with the reading. ``--what results`` leaves ``rounds`` out.

Reading an export back (format and version checks, the analysed readings) is
:mod:`runner.importers.benchrun_export`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from benchrun.runner import __version__
from benchrun.runner.importers.benchrun_export import FORMAT, VERSION
from benchrun.runner.report.model import CampaignModel, Estimate, WorkloadView, display_dict
from benchrun.runner.store.database import RoundRow


def _result(e: Estimate | None, confidence: float) -> dict[str, object] | None:
    """A workload's ``result`` object: its estimate (docs/export-format.md), None without one."""
    if e is None:
        return None
    return {
        "mean": e.mean,
        "variance": e.variance,
        "n_q": e.n_q,
        "q": e.q,
        "ci_low": e.ci_low,
        "ci_high": e.ci_high,
        "rel_half_width": e.rel_half_width,
        "confidence": confidence,
        "n": e.n,
        "warmup_readings": e.warmup_readings,
        "enough": e.enough,
        # the interval every output prints: the CI when certified, else the uncertified
        # one with what it assumes (docs/methods.md §4.1)
        "certified": e.certified,
        "interval_low": e.interval_low,
        "interval_high": e.interval_high,
        "tau_bound": e.tau_bound,
        "width_factor": e.width_factor,
        "interval_note": e.interval_note,
        # rounds on 2+ nodes: the node analysis (docs/methods.md §14); when its ci_from is
        # "nodes", mean and CI are the node-level ones, variance/n_q the pooled subsessions'
        "nodes": e.nodes,
        # a level shift (docs/methods.md §2.1): the first round at the new level among the
        # steady rounds (0-based) and its relative size; no CI across it
        "level_shift_at": e.level_shift_at,
        "level_shift_change": e.level_shift_change,
    }


def _rounds(
    view: WorkloadView, rounds: list[RoundRow], stored: Mapping[tuple[int, int], str]
) -> list[dict[str, object]]:
    """The ``rounds`` of a workload: each stored round with its readings and each reading's
    flags (the analysis' flag, then any stored with the reading, comma-separated)."""
    out = []
    pos = 0
    for r in rounds:
        flags = view.all_flags[pos : pos + len(r.readings)]
        pos += len(r.readings)
        flags = [
            ",".join(x for x in (f, stored.get((r.id, i), "")) if x) for i, f in enumerate(flags)
        ]
        out.append(
            {
                "seq": r.seq,
                "pass": r.pass_,
                "round_index": r.round_index,
                "status": r.status,
                "reason": r.reason,
                "exit_code": r.exit_code,
                "started_at": r.started_at,
                "wall_ns": r.wall_ns,
                "user_s": r.user_s,
                "sys_s": r.sys_s,
                "max_rss_kib": r.max_rss_kib,
                "cpus": r.cpus,
                "argv": r.argv,
                "work": r.work,
                "warmup": r.warmup,
                "flags": r.flags,
                "facts": r.facts,
                "wait_ns": r.wait_ns,
                "wait_source": r.wait_source,
                "readings": list(r.readings),
                "reading_flags": flags,
            }
        )
    return out


def export_document(model: CampaignModel, with_rounds: bool = True) -> dict[str, Any]:
    """The export document of ``model`` (module docstring)."""
    c = model.campaign
    workloads = []
    # the rounds and reading flags of the model's own snapshot (report/model.py): the
    # readings' flags computed there belong to exactly these rounds
    rounds_by: dict[str, list[RoundRow]] = {}
    for r in model.rounds:
        rounds_by.setdefault(model.names[r.workload_id], []).append(r)
    stored = model.reading_flags
    for w in model.workloads:
        doc: dict[str, object] = {
            "name": w.name,
            "metric": w.metric,
            "unit": w.unit,
            "display_unit": display_dict(w.display),
            "direction": w.direction,
            "status": w.status,
            "status_reason": w.status_reason,
            "params": w.params,
            "per_work": w.per_work,
            "contended_rounds": w.contended_rounds,
            "result": _result(w.estimate, model.confidence),
            "collected": w.collected,
            "summary": w.summary,
        }
        if with_rounds:
            # all_flags follow the rounds with readings in launch order (seq)
            doc["rounds"] = _rounds(w, rounds_by.get(w.name, []), stored)
        workloads.append(doc)
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "benchrun_version": __version__,
        "campaign": {
            "id": c.id,
            "name": c.name,
            "status": c.status,
            "stop_reason": c.stop_reason,
            "created_at": c.created_at,
            "updated_at": c.updated_at,
            "settings": c.settings,
            "config_text": c.config_text,
            "metadata": c.metadata,
            "command_line": c.command_line,
            "benchrun_version": c.benchrun_version,
            # the measurement fingerprint (the same commands and settings): `history` puts
            # only campaigns of one experiment in one series
            "fingerprint": c.fingerprint,
        },
        "workloads": workloads,
        "comparisons": None if model.verdicts is None else model.verdicts.to_dict(),
        "events": [
            {"at": e.at, "kind": e.kind, "message": e.message, "data": e.data} for e in model.events
        ],
    }
