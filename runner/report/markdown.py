"""CommonMark (with GitHub tables) for wikis and READMEs; figures are PNG files written
beside the document in ``<stem>_files/`` and linked relatively."""

from __future__ import annotations

from pathlib import Path

from runner.report import tables
from runner.report.document import Report
from runner.report.methods import METHODS_REFERENCES
from runner.report.plots import Plot


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


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
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{p.name}.png"
        path.write_bytes(p.png)
        rel = f"{self.directory.name}/{path.name}"
        return [f"![{p.title}]({rel})", "", f"*{_cell(p.caption)}*", ""]


def render_markdown(report: Report, figure_dir: Path | None) -> str:
    """The report as CommonMark; figures go to ``figure_dir`` (None: no figures)."""
    fig = _Figures(figure_dir)
    m = report.model
    out: list[str] = [f"# {report.title}", ""]
    desc = report.description()
    if desc:
        out += [f"*{_cell(desc)}*", ""]
    out += [
        f"Database `{m.database}`; {'adaptive' if m.adaptive else 'fixed'} campaign; "
        f"generated {report.generated}.",
        "",
        "## Headline",
        "",
        f"**How the campaign stopped:** {_cell(report.stop_text)}",
        "",
    ]
    for g in report.groups:
        out += _table(tables.headline(g, m.confidence))
    for p in report.ranking_plots:
        out += fig(p)
    out += ["## Per workload", ""]
    for w in m.workloads:
        out += [f"### {_cell(w.name)}", ""]
        out += _table(tables.workload_stats(w))
        out += fig(report.workload_plots.get(w.name))
    out += ["## Comparisons", ""]
    pairs = [g for g in report.groups if g.pairs]
    for g in pairs:
        out += _table(tables.pairs(g))
        out += [f"{_cell(n)}" for n in g.notes] + ([""] if g.notes else [])
    if not pairs:
        out += ["Only one workload per metric: no pair to compare.", ""]
    for p in report.quantile_plots:
        out += fig(p)
    if report.suite is not None:
        s = report.suite
        out += [
            f"### Suite: {len(s.systems)} systems ({s.factor}) x {len(s.benchmarks)} benchmarks",
            "",
        ]
        for t in tables.suite_tables(s):
            out += _table(t)
        out += fig(report.biplot)
        out += [_cell(n) for n in s.notes] + ([""] if s.notes else [])
    out += ["## The machine", ""]
    out += _table(tables.machine(report)) if report.machine else ["No machine record.", ""]
    if report.warnings or report.unchecked:
        out += _table(tables.warnings(report))
    else:
        out += ["No setting that adds noise was found.", ""]
    out += ["### Experiment file", "", "```yaml", m.campaign.config_text.rstrip(), "```", ""]
    out += ["## Methods", "", report.methods, ""]
    out += [f"- {r}" for r in METHODS_REFERENCES] + [""]
    out += ["## Hoefler & Belli's twelve rules", ""]
    out += _table(tables.rules(report))
    return "\n".join(out)
