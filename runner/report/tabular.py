"""Machine-readable reports: JSON (the whole report) and CSV (one row per workload)."""

from __future__ import annotations

import csv
import io
import json

from benchrun.runner.format import printable
from benchrun.runner.report.document import Report
from benchrun.stats.results import jsonable


def render_json(report: Report, raw: bool = False) -> str:
    """The report as one JSON document (``format: benchrun-report``, ``version: 1``)."""
    return json.dumps(jsonable(report.to_dict(raw)), indent=2, allow_nan=False, default=str) + "\n"


CSV_COLUMNS = (
    "group",
    "rank",
    "workload",
    "unit",
    "display_unit",
    "display_factor",
    "direction",
    "mean",
    "ci_low",
    "ci_high",
    "rel_half_width",
    "ratio_to_best",
    "ratio_low",
    "ratio_high",
    "verdict_with_next",
    "q",
    "n_q",
    "s2_q",
    "n",
    "warmup_readings",
    "steady_rounds",
    "failed_rounds",
    "median",
    "cov",
    "outliers",
    "normality_p",
    "baseline",
    "baseline_verdict",
    "baseline_ratio",
    "baseline_ratio_low",
    "baseline_ratio_high",
    "baseline_test",
    "baseline_p_holm",
    "baseline_headline",
    "certified",
    "interval_low",
    "interval_high",
    "tau_bound",
    "width_factor",
)


def render_csv(report: Report) -> str:
    """One row per workload: the headline numbers in the base unit (the ``unit`` column;
    ``display_unit`` is the unit the report's tables show, ``display_factor`` one of it in
    the base unit) and its comparison with its baseline, if any; ``group`` is the group it
    is compared within (metric:unit, ``#i`` for a ``compare:`` group), rank empty when it
    is compared with nothing. ``ci_low``/``ci_high`` are the certified CI; ``interval_low``/
    ``interval_high`` the interval shown (the CI when ``certified``, else the uncertified
    one that assumes tau <= ``tau_bound``, docs/methods.md §4.1)."""
    verdicts = report.model.verdicts
    base = {c.b: c for c in verdicts.baselines} if verdicts is not None else {}
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for g in report.groups:
        ranked = {r.name: r for r in g.rows}
        members = set(g.members)
        for w in report.model.workloads:
            if w.name not in members:
                continue
            r = ranked.get(w.name)
            e = w.estimate
            s = w.description
            b = base.get(w.name)
            du = w.display
            row = [
                g.key,
                (r.rank or "") if r else "",
                w.name,
                w.unit,
                du.label,
                du.factor,
                w.direction,
                e.mean if e else "",
                e.ci_low if e else "",
                e.ci_high if e else "",
                e.rel_half_width if e else "",
                r.ratio if r else "",
                r.ratio_low if r else "",
                r.ratio_high if r else "",
                (r.verdict_next or "") if r else "",
                e.q if e else "",
                e.n_q if e else "",
                e.variance if e else "",
                e.n if e else "",
                e.warmup_readings if e else "",
                w.steady_rounds,
                w.failed_rounds,
                "" if s.median is None else s.median,
                "" if s.cov is None else s.cov,
                w.outliers,
                (w.normality or {}).get("p_value", ""),
                *(
                    ("", "", "", "", "", "", "", "")
                    if b is None
                    else (
                        b.a,
                        b.verdict,
                        b.ratio,
                        b.ratio_low,
                        b.ratio_high,
                        b.test,
                        b.p_holm,
                        b.headline,
                    )
                ),
                e.certified if e else "",
                e.interval_low if e else "",
                e.interval_high if e else "",
                e.tau_bound if e else "",
                e.width_factor if e else "",
            ]
            # text cells with unprintable characters escaped (runner/format.py), like every
            # other format; values starting with = + - @ are kept (docs/report.md, CSV)
            writer.writerow(
                ["" if v is None else printable(v) if isinstance(v, str) else v for v in row]
            )
    return buf.getvalue()
