"""One self-contained HTML file: inline CSS, figures as base64 PNG data URIs, no script,
no network access, so it opens offline and can be mailed or attached as it is."""

from __future__ import annotations

import base64
import html

from benchrun.runner.format import printable
from benchrun.runner.report import fleet_tables, tables
from benchrun.runner.report.analysis import Suite
from benchrun.runner.report.document import Report
from benchrun.runner.report.history import SeriesView
from benchrun.runner.report.plots import Plot

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;
max-width:1200px;padding:0 1rem;color:#222;line-height:1.45}
h1{font-size:1.6rem}h2{border-bottom:2px solid #ddd;padding-bottom:.2rem;margin-top:2.5rem}
table{border-collapse:collapse;margin:.6rem 0 1rem;font-size:.88rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}caption{caption-side:bottom;text-align:left;font-size:.8rem;color:#555;
padding-top:.3rem}figure{margin:1rem 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.82rem;color:#444}.met{color:#1a7f37}.missing{color:#b35900}
.na{color:#777}.separated,.faster{color:#1a7f37}.slower{color:#b91c1c}.equivalent{color:#0369a1}
.undecided{color:#b35900}.note{background:#fff8e6;border-left:4px solid #e0a800;
padding:.3rem .8rem}.methods{background:#f8f8f8;border-left:4px solid #999;padding:.6rem 1rem}
nav a{margin-right:1rem}
"""


def escape(text: str) -> str:
    """``text`` as HTML text or attribute value: ``&<>"'`` as entities, and unprintable
    characters escaped (``\\x1b``, runner/format.py), newlines kept (the experiment file)."""
    return html.escape(printable(text, "\n"))


def _table(t: tables.Table, classes: dict[int, bool] | None = None) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in t.headers)
    body = []
    for row in t.rows:
        cells = []
        for i, v in enumerate(row):
            cls = ""
            if classes and classes.get(i):
                cls = f' class="{escape(v.split()[0] if v else "")}"'
            cells.append(f"<td{cls}>{escape(v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    cap = f"<caption>{escape(t.caption)}</caption>" if t.caption else ""
    return f"<h4>{escape(t.title)}</h4><table>{cap}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _commands(t: tables.Table) -> str:
    """The commands table, command lines as code (they are copied into a shell)."""
    rows = "".join(
        f"<tr><td>{escape(name)}</td><td><code>{escape(cmd)}</code></td></tr>"
        for name, cmd in t.rows
    )
    head = "".join(f"<th>{escape(h)}</th>" for h in t.headers)
    return (
        f"<h4>{escape(t.title)}</h4><table><caption>{escape(t.caption)}</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    )


def _figure(p: Plot | None) -> str:
    if p is None:
        return ""
    data = base64.b64encode(p.png).decode("ascii")
    return (
        f'<figure><img alt="{escape(p.title)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{escape(p.caption)}</figcaption></figure>"
    )


def _comparisons(report: Report) -> list[str]:
    """The comparisons section: the campaign's comparisons with their ratio headlines
    first, then neighbour verdicts computed here (a campaign whose experiment no longer
    parses), or why nothing is compared (:meth:`Report.no_comparison`, the sentence the
    Markdown and the JSON's ``no_comparison`` hold); quantile plots, suite."""
    out: list[str] = ['<section id="comparisons"><h2>Comparisons</h2>']
    v = report.model.verdicts
    if v is not None:
        stop = v.stop_sentence()
        if stop:
            cls = "undecided" if v.budget_stop else "met"
            out.append(f'<p class="{cls}"><strong>{escape(stop)}</strong></p>')
        if v.comparisons:
            out.append(_table(tables.stored_comparisons(v, report.model.confidence), {2: True}))
    computed = [g for g in report.groups if g.pairs and g.source != "controller"]
    for g in computed:
        out.append(_table(tables.pairs(g), {2: True}))
        out.extend(f"<p>{escape(n)}</p>" for n in g.notes)
    why = report.no_comparison()
    if why is not None:
        out.append(f'<p class="no-comparison">{escape(why)}</p>')
    for p in report.quantile_plots:
        out.append(_figure(p))
    if report.suite is not None and report.hardware_suite is None:
        s = report.suite
        title = f"Suite: {len(s.systems)} systems ({s.factor}) x {len(s.benchmarks)} benchmarks"
        out += _suite(report, s, title)
    out.append("</section>")
    return out


def _suite(report: Report, s: Suite, title: str) -> list[str]:
    """A suite's tables (HPT, r-speedup, Speedup-Test, ratio of geometric means), its
    biplot and notes under the heading ``title`` (plain text, escaped here)."""
    out = [f"<h3>{escape(title)}</h3>"]
    out += [_table(t) for t in tables.suite_tables(s)]
    out.append(_figure(report.biplot))
    return out + [f"<p>{escape(n)}</p>" for n in s.notes]


def _fleet(report: Report) -> list[str]:
    """The Fleet section: each benchmark's verdicts between node types, the hardware
    comparison across the suite (HPT with its confidence, r-speedup, Speedup-Test), and
    the node types' metadata side by side (runner/report/fleet.py)."""
    f = report.fleet
    assert f is not None
    out = [
        '<section id="fleet"><h2>Fleet: the hardware comparison</h2>',
        f"<p>{len(f.benchmarks)} benchmark(s) on {len(f.node_types)} node types: "
        + escape(", ".join(f"{t} ({', '.join(f.nodes[t]) or 'no node'})" for t in f.node_types))
        + ".</p>",
    ]
    if f.verdicts:
        out.append(_table(fleet_tables.verdicts_table(f, report.model.confidence), {2: True}))
    s = report.hardware_suite
    if s is not None:
        title = (
            f"Hardware comparison: {' vs '.join(s.systems)} across {len(s.benchmarks)} benchmarks"
        )
        out += _suite(report, s, title)
    out.append(_table(fleet_tables.metadata_table(f)))
    for kind, lines in f.within.items():
        out.append(
            f'<p class="note">Nodes of {escape(kind)} differ: {escape("; ".join(lines))}; '
            "their rounds differ for reasons of their own.</p>"
        )
    out.extend(f'<p class="note">{escape(n)}</p>' for n in f.notes)
    out.append("</section>")
    return out


def render_html(report: Report) -> str:
    """The whole report as one HTML document (module docstring), its sections in
    :attr:`Report.sections` order."""
    from benchrun.runner.report.methods import METHODS_REFERENCES

    m = report.model
    c = m.campaign
    out: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(report.title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{escape(report.title)}</h1>",
        "<nav>" + "".join(f'<a href="#{i}">{escape(t)}</a>' for i, t in report.sections) + "</nav>",
    ]
    desc = report.description()
    if desc:
        out.append(f"<p><em>{escape(desc)}</em></p>")
    out.append(
        f"<p>Database <code>{escape(str(m.database))}</code>; "
        f"{'adaptive' if m.adaptive else 'fixed'} campaign; generated {report.generated}.</p>"
    )
    parts: dict[str, list[str]] = {}
    # headline
    head = ['<section id="headline"><h2>Headline</h2>']
    if report.headlines:
        head.append('<ul class="headlines">')
        head.extend(
            f'<li class="{escape(line.split(":", 1)[0])}"><strong>{escape(line)}</strong></li>'
            for line in report.headlines
        )
        head.append("</ul>")
    head.append(f"<p><strong>How the campaign stopped:</strong> {escape(report.stop_text)}</p>")
    for g in report.groups:
        head.append(_table(tables.headline(g, m.confidence), {6: True}))
        if g.source == "controller":
            head.extend(f"<p>{escape(n)}</p>" for n in g.notes)
    metric_table = tables.metrics(m)
    if metric_table is not None:
        head.append(_table(metric_table))
    cmds = tables.commands(m)
    if cmds is not None:
        head.append(_commands(cmds))
    for p in [*report.distribution_plots, *report.ranking_plots]:
        head.append(_figure(p))
    head.append("</section>")
    parts["headline"] = head
    # per workload
    per = ['<section id="workloads"><h2>Per workload</h2>']
    for w in m.workloads:
        per.append(f"<h3>{escape(w.name)}</h3>")
        per.extend(f'<p class="note">{escape(n)}</p>' for n in report.notes.get(w.name, []))
        per.append(_table(tables.workload_stats(w)))
        per.append(_figure(report.workload_plots.get(w.name)))
    per.append("</section>")
    parts["workloads"] = per
    parts["comparisons"] = _comparisons(report)
    if report.fleet is not None:
        parts["fleet"] = _fleet(report)
    # machine
    mach = ['<section id="machine"><h2>The machine</h2>']
    if report.machine:
        mach.append(_table(tables.machine(report)))
    else:
        mach.append("<p>No machine record was stored with this campaign.</p>")
    nodes = tables.compute_nodes(report)
    if nodes is not None:
        mach.append("<h3>Compute nodes</h3>" + _table(nodes))
    if report.warnings or report.unchecked:
        mach.append(_table(tables.warnings(report)))
    else:
        mach.append("<p>No setting that adds noise was found.</p>")
    mach.append("<h3>Experiment file</h3><pre>" + escape(c.config_text) + "</pre>")
    mach.append("</section>")
    parts["machine"] = mach
    if report.history:
        parts["history"] = history_section(report.history)
    # methods
    meth = ['<section id="methods"><h2>Methods</h2>']
    meth.append(f'<p class="methods">{escape(report.methods)}</p><ul>')
    meth.extend(f"<li>{escape(r)}</li>" for r in METHODS_REFERENCES)
    meth.append("</ul></section>")
    parts["methods"] = meth
    # rules
    rules_html = ['<section id="rules"><h2>Hoefler &amp; Belli\'s twelve rules</h2>']
    rules = tables.rules(report)
    rules_html.append(_table(rules, {1: True}).replace('class="not"', 'class="na"'))
    rules_html.append("</section>")
    parts["rules"] = rules_html
    for sid, _ in report.sections:
        out.extend(parts[sid])
    out.append("</body></html>")
    return "\n".join(out)


def history_section(views: list[SeriesView]) -> list[str]:
    """The History section (the history page's body and the report's section of that
    name): per series (runner/report/history.py) a heading, the sentence on its
    analysis, its figure and its tables (ids ``series-1``, ...)."""
    out: list[str] = ['<section id="history"><h2>History</h2>']
    for i, v in enumerate(views, 1):
        out.append(f'<section id="series-{i}" class="series"><h3>{escape(v.title)}</h3>')
        out.append(f"<p>{escape(v.summary)}</p>")
        out.append(_figure(v.plot))
        if v.changes is not None:
            out.append(_table(v.changes))
        out.append(_table(v.points, {8: True}))
        out.append("</section>")
    return [*out, "</section>"]


def render_history(views: list[SeriesView], title: str, generated: str) -> str:
    """The history page (``benchrun history DIR --html FILE``) as one self-contained HTML
    document, like the report (module docstring): a link to each series, then each
    series' figure and tables."""
    nav = "".join(
        f'<li><a href="#series-{i}">{escape(v.title)}</a></li>' for i, v in enumerate(views, 1)
    )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
            f"<h1>{escape(title)}</h1>",
            f"<p>{len(views)} series (one workload of one experiment on one machine each); "
            f"generated {escape(generated)}.</p>",
            f"<nav><ul>{nav}</ul></nav>",
            *history_section(views),
            "</body></html>",
        ]
    )
