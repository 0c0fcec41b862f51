"""CommonMark (with GitHub tables) for wikis and READMEs; figures are PNG files written
beside the document in ``<stem>_files/`` and linked relatively."""

from __future__ import annotations

import re
from pathlib import Path

from benchrun.runner.files import atomic_write_bytes
from benchrun.runner.format import printable
from benchrun.runner.report import fleet_tables, tables
from benchrun.runner.report.analysis import Suite
from benchrun.runner.report.document import Report
from benchrun.runner.report.methods import METHODS_REFERENCES
from benchrun.runner.report.plots import Plot
from benchrun.runner.safefs import PUBLIC_DIR_MODE, PUBLIC_FILE_MODE

#: where CommonMark starts raw HTML (a tag, a closing tag, a comment, a declaration, a
#: processing instruction) or an autolink: ``<`` before a letter, ``/``, ``!`` or ``?``
_HTML_START = re.compile(r"<(?=[A-Za-z/!?])")


class _Markdown(str):
    """Text that is Markdown already (a code span made by :func:`_code`): :func:`_cell`
    leaves it as it is."""


def _cell(text: str) -> str:
    """``text`` (a name, a sentence) as inert Markdown on one line: unprintable characters
    escaped (``\\x1b``, runner/format.py), backslashes and ``|`` (table cells) escaped, and
    every ``<`` that could open raw HTML or an autolink written ``&lt;``, so a workload named
    ``<img src=x onerror=alert(1)>`` shows as that text; ``tau <= 1`` stays as it is."""
    if isinstance(text, _Markdown):
        return text
    text = printable(text.replace("\n", " "))
    return _HTML_START.sub("&lt;", text.replace("\\", "\\\\").replace("|", "\\|"))


def _fence(text: str, least: int = 1) -> str:
    """A run of backticks longer than any in ``text`` (and at least ``least``): a code
    span or fenced block that ``text`` cannot close early."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    return "`" * max(least, longest + 1)


def _code(text: str) -> _Markdown:
    """``text`` as an inline code span (a command line): shown verbatim, nothing in it is
    Markdown or HTML; unprintable characters escaped, ``|`` escaped for a table cell."""
    text = printable(text)
    fence = _fence(text)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return _Markdown(f"{fence}{pad}{text.replace('|', chr(92) + '|')}{pad}{fence}")


def _table(t: tables.Table) -> list[str]:
    out = [
        f"**{_cell(t.title)}**",
        "",
        "| " + " | ".join(_cell(h) for h in t.headers) + " |",
        "|" + "|".join(" --- " for _ in t.headers) + "|",
    ]
    out += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in t.rows]
    if t.caption:
        out += ["", f"*{_cell(t.caption)}*"]
    return out + [""]


class _Figures:
    """Writes each figure once into the figure directory and returns its Markdown."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    def __call__(self, p: Plot | None) -> list[str]:
        if p is None or self.directory is None:
            return []
        path = self.directory / f"{p.name}.png"
        # a report's figures are handed around with it: 0644 in a 0755 directory by choice
        # (docs/security.md), replaced whole, never written through a planted symlink
        atomic_write_bytes(path, p.png, PUBLIC_FILE_MODE, dir_mode=PUBLIC_DIR_MODE)
        rel = f"{self.directory.name}/{path.name}"
        alt = _cell(p.title).replace("[", "\\[").replace("]", "\\]")
        return [f"![{alt}]({rel})", "", f"*{_cell(p.caption)}*", ""]


def _comparisons(report: Report, fig: _Figures) -> list[str]:
    """The comparisons section (as in runner/report/html.py)."""
    out: list[str] = ["## Comparisons", ""]
    v = report.model.verdicts
    if v is not None:
        stop = v.stop_sentence()
        if stop:
            out += [f"**{_cell(stop)}**", ""]
        if v.comparisons:
            out += _table(tables.stored_comparisons(v, report.model.confidence))
    computed = [g for g in report.groups if g.pairs and g.source != "controller"]
    for g in computed:
        out += _table(tables.pairs(g))
        out += [f"{_cell(n)}" for n in g.notes] + ([""] if g.notes else [])
    why = report.no_comparison()
    if why is not None:
        out += [_cell(why), ""]
    for p in report.quantile_plots:
        out += fig(p)
    if report.suite is not None and report.hardware_suite is None:
        s = report.suite
        title = f"Suite: {len(s.systems)} systems ({s.factor}) x {len(s.benchmarks)} benchmarks"
        out += _suite(report, s, title, fig)
    return out


def _suite(report: Report, s: Suite, title: str, fig: _Figures) -> list[str]:
    """A suite's tables (HPT, r-speedup, Speedup-Test, ratio of geometric means), its
    biplot and notes under the heading ``title``."""
    out = [f"### {_cell(title)}", ""]
    for t in tables.suite_tables(s):
        out += _table(t)
    out += fig(report.biplot)
    return out + [_cell(n) for n in s.notes] + ([""] if s.notes else [])


def _fleet(report: Report, fig: _Figures) -> list[str]:
    """The Fleet section (as in runner/report/html.py)."""
    f = report.fleet
    assert f is not None
    where = ", ".join(f"{t} ({', '.join(f.nodes[t]) or 'no node'})" for t in f.node_types)
    out = [
        "## Fleet: the hardware comparison",
        "",
        _cell(f"{len(f.benchmarks)} benchmark(s) on {len(f.node_types)} node types: {where}."),
        "",
    ]
    if f.verdicts:
        out += _table(fleet_tables.verdicts_table(f, report.model.confidence))
    s = report.hardware_suite
    if s is not None:
        title = (
            f"Hardware comparison: {' vs '.join(s.systems)} across {len(s.benchmarks)} benchmarks"
        )
        out += _suite(report, s, title, fig)
    out += _table(fleet_tables.metadata_table(f))
    for kind, lines in f.within.items():
        out += [
            _cell(
                f"> Nodes of {kind} differ: {'; '.join(lines)}; their rounds differ for reasons "
                "of their own."
            ),
            "",
        ]
    out += [f"> {_cell(n)}\n" for n in f.notes]
    return out


def _history(report: Report, fig: _Figures) -> list[str]:
    """The History section (as in runner/report/html.py): per series its analysis in a
    sentence, its figure and its tables."""
    out = ["## History", ""]
    for v in report.history:
        out += [f"### {_cell(v.title)}", "", _cell(v.summary), ""]
        out += fig(v.plot)
        if v.changes is not None:
            out += _table(v.changes)
        out += _table(v.points)
    return out


def render_markdown(report: Report, figure_dir: Path | None) -> str:
    """The report as CommonMark, its sections in :attr:`Report.sections` order; figures
    go to ``figure_dir`` (None: no figures)."""
    fig = _Figures(figure_dir)
    m = report.model
    out: list[str] = [f"# {_cell(report.title)}", ""]
    desc = report.description()
    if desc:
        out += [f"*{_cell(desc)}*", ""]
    out += [
        f"Database {_code(str(m.database))}; {'adaptive' if m.adaptive else 'fixed'} campaign; "
        f"generated {report.generated}.",
        "",
    ]
    parts: dict[str, list[str]] = {}
    head = ["## Headline", ""]
    head += [f"- **{_cell(line)}**" for line in report.headlines]
    head += [""] if report.headlines else []
    head += [f"**How the campaign stopped:** {_cell(report.stop_text)}", ""]
    for g in report.groups:
        head += _table(tables.headline(g, m.confidence))
        if g.source == "controller" and g.notes:
            head += [_cell(n) for n in g.notes] + [""]
    metric_table = tables.metrics(m)
    if metric_table is not None:
        head += _table(metric_table)
    cmds = tables.commands(m)
    if cmds is not None:
        head += _table(
            tables.Table(
                cmds.title, cmds.headers, [(n, _code(c)) for n, c in cmds.rows], cmds.caption
            )
        )
    for p in [*report.distribution_plots, *report.ranking_plots]:
        head += fig(p)
    parts["headline"] = head
    per = ["## Per workload", ""]
    for w in m.workloads:
        per += [f"### {_cell(w.name)}", ""]
        per += [f"> {_cell(n)}\n" for n in report.notes.get(w.name, [])]
        per += _table(tables.workload_stats(w))
        per += fig(report.workload_plots.get(w.name))
    parts["workloads"] = per
    parts["comparisons"] = _comparisons(report, fig)
    if report.fleet is not None:
        parts["fleet"] = _fleet(report, fig)
    mach = ["## The machine", ""]
    mach += _table(tables.machine(report)) if report.machine else ["No machine record.", ""]
    nodes = tables.compute_nodes(report)
    if nodes is not None:
        mach += ["### Compute nodes", ""] + _table(nodes)
    if report.warnings or report.unchecked:
        mach += _table(tables.warnings(report))
    else:
        mach += ["No setting that adds noise was found.", ""]
    # the file verbatim in a fence longer than any run of backticks in it: a line of ```
    # in the file cannot end the block and turn the rest into Markdown (or HTML)
    config = printable(m.campaign.config_text.rstrip(), "\n\t")
    fence = _fence(config, least=3)
    mach += ["### Experiment file", "", f"{fence}yaml", config, fence, ""]
    parts["machine"] = mach
    if report.history:
        parts["history"] = _history(report, fig)
    meth = ["## Methods", "", _cell(report.methods), ""]
    meth += [f"- {r}" for r in METHODS_REFERENCES] + [""]
    parts["methods"] = meth
    parts["rules"] = ["## Hoefler & Belli's twelve rules", ""] + _table(tables.rules(report))
    for sid, _ in report.sections:
        out += parts[sid]
    return "\n".join(out)
