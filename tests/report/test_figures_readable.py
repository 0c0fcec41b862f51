"""The report's figures as a reader sees them (issue 17): text readable at the size the HTML
report shows them, one display unit per workload on every axis, no empty panel, the
compared workloads overlaid, the command lines in the headline.

The campaigns are written through the Store API (tests/report/synthetic.py) with readings
the tests choose, so the expected values (means in ms, counts) come from those readings.
"""

from __future__ import annotations

import base64
import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text
from synthetic import store_campaign
from test_report_chromium import _chromium, _run

from benchrun.runner.report import document, plots
from benchrun.runner.report.document import Report, build_report
from benchrun.runner.report.html import render_html
from benchrun.runner.report.markdown import render_markdown
from benchrun.runner.report.model import load_campaign

#: the smallest text a reader of the HTML report must be given [CSS px]
MIN_TEXT_PX = 10.0
#: the window the HTML report is measured in [CSS px]
WINDOW = (1400, 1000)
MEANS = {"sum-a": 0.037, "sum-b": 0.045}  # seconds: shown in ms
COMMANDS = {"sum-a": ["python3", "-c", "sum(range(100000))"],
            "sum-b": ["python3", "-c", "sum(range(200000))"]}  # fmt: skip


@dataclass
class Drawn:
    """What one figure holds: its PNG, the DPI it was drawn at, the sizes of its visible
    texts [pt] and each axes' labels, limits and title."""

    png: bytes
    #: pixels per inch of the PNG (its width in pixels / the figure's width in inches)
    dpi: float
    font_sizes: list[float]
    axes: list[dict[str, Any]]


def _rounds(mean: float, n: int, seed: int) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    return [[float(v)] for v in mean * (1 + 0.02 * rng.standard_normal(n))]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two compared workloads in seconds (37 and 45 ms), 41 rounds each, 1 reading a round."""
    db = tmp_path_factory.mktemp("readable") / "c" / "benchrun.db"
    rounds = {n: _rounds(m, 41, i) for i, (n, m) in enumerate(MEANS.items())}
    return store_campaign(db, rounds, commands=COMMANDS)


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Drawn]]:
    """Every figure turned into a PNG while the test runs, recorded right after matplotlib
    drew it (figures are drawn in this process: the worker pool is switched off)."""
    out: list[Drawn] = []
    original = plots._png

    def png(fig: Figure) -> bytes:
        data = original(fig)
        texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
        axes = [
            {"xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(), "xlim": ax.get_xlim(),
             "ylim": ax.get_ylim(), "title": ax.get_title(loc="left") or ax.get_title(),
             "xticks": any(t.get_visible() and t.get_text() for t in ax.get_xticklabels()),
             "yticks": any(t.get_visible() and t.get_text() for t in ax.get_yticklabels())}
            for ax in fig.axes
        ]  # fmt: skip
        width = int.from_bytes(data[16:20], "big")  # the PNG's IHDR: width in pixels
        dpi = width / fig.get_figwidth()  # pixels per inch of the PNG, as drawn
        out.append(Drawn(data, dpi, [float(t.get_fontsize()) for t in texts], axes))
        return data

    monkeypatch.setattr(plots, "_png", png)
    monkeypatch.setattr(document, "PARALLEL_FROM", 10**9)
    yield out


def _report(db: Path) -> Report:
    return build_report(load_campaign(db), resamples=200)


def _measure(html: Path, tmp: Path) -> list[tuple[int, int]]:
    """(natural width, displayed width) of every image of ``html`` in headless Chromium at
    :data:`WINDOW`, read by a script added to a copy of the page (the report has none)."""
    script = (
        '<script>window.addEventListener("load",()=>{const p=document.createElement("pre");'
        'p.id="measured";p.textContent=JSON.stringify([...document.images].map(i=>'
        "[i.naturalWidth,i.clientWidth]));document.body.appendChild(p);});</script>"
    )
    page = tmp / "measured.html"
    page.write_text(html.read_text().replace("</body>", script + "</body>"))
    run = _run(_chromium(), tmp, f"--window-size={WINDOW[0]},{WINDOW[1]}",
               "--virtual-time-budget=5000", "--dump-dom", page.resolve().as_uri())  # fmt: skip
    found = re.search(r'<pre id="measured">([^<]*)</pre>', run.stdout)
    assert found, run.stderr[-2000:]
    return [tuple(x) for x in json.loads(found.group(1))]


def test_no_figure_text_is_below_10_px_in_the_html_report_at_1400_px(
    campaign: Path, drawn: list[Drawn], tmp_path: Path
) -> None:
    """How the smallest displayed text is measured: matplotlib sizes text in points, and a
    figure drawn at ``dpi`` pixels per inch (the PNG's width over the figure's width in
    inches) draws a font of ``s`` pt with an em of ``s * dpi / 72`` image pixels. Chromium
    (at 1400 x 1000 CSS px) reports each image's natural width and the width it is
    displayed at; the image is scaled by displayed / natural, so the smallest text on
    screen is ``min(s) * dpi / 72 * displayed / natural`` CSS px, the unit CSS font sizes
    use. ``min(s)`` is taken over every visible text artist of the figure just after it
    was drawn (tick labels, legends, annotations, titles), and each PNG is matched to its
    image in the page by its bytes. This measures what the
    browser really does with the images (a narrower column or a larger PNG would scale
    them down) without reading glyphs off pixels."""
    report = _report(campaign)
    html = tmp_path / "report.html"
    html.write_text(render_html(report))
    by_png = {d.png: d for d in drawn}
    text = html.read_text()
    pngs = [base64.b64decode(b) for b in re.findall(r'src="data:image/png;base64,([^"]+)"', text)]
    sizes = _measure(html, tmp_path)
    assert len(sizes) == len(pngs) >= 4  # workload figures, overlay, ranking, quantiles
    smallest = {}
    for png, (natural, shown) in zip(pngs, sizes, strict=True):
        d = by_png[png]
        assert shown > 0 and natural > 0
        smallest[len(smallest)] = min(d.font_sizes) * d.dpi / 72 * shown / natural
    assert min(smallest.values()) >= MIN_TEXT_PX, smallest


def _unit_in(label: str) -> str | None:
    found = re.search(r"\[([^\]]*)\]\s*$", label)
    return None if found is None else found.group(1)


def test_every_axis_says_what_it_shows_in_the_workloads_display_unit(
    campaign: Path, drawn: list[Drawn]
) -> None:
    report = _report(campaign)
    steady = {w.name: w.steady for w in report.model.workloads}
    figures = [d for d in drawn if d.axes]
    assert figures
    for d in figures:
        for ax in d.axes:
            # an axis with tick labels has a label; a unit is a real one, never a placeholder
            if ax["xticks"]:
                assert ax["xlabel"].strip(), ax
            if ax["yticks"]:
                assert ax["ylabel"].strip(), ax
            for label in (ax["xlabel"], ax["ylabel"]):
                assert _unit_in(label) not in ("1", "no unit", "", "-", "s"), label
    # the workload figures: values in ms (37 and 45 ms), as the tables show them
    for name, fig in zip(MEANS, figures[: len(MEANS)], strict=True):
        readings = next(ax for ax in fig.axes if "readings over time" in ax["title"])
        assert _unit_in(readings["ylabel"]) == "ms"
        mean_ms = 1000 * float(np.mean(steady[name]))
        lo, hi = readings["ylim"]
        assert lo < mean_ms < hi and hi - lo < 0.5 * mean_ms  # the data drawn in ms
        units = {_unit_in(ax[k]) for ax in fig.axes for k in ("xlabel", "ylabel")}
        assert units - {None} <= {"ms", "1/ms", "%"}
    # the overlaid distributions: one axis in ms holding both means
    (overlay,) = [d for d in figures if any("sum-a vs sum-b" in ax["title"] for ax in d.axes)]
    (ax,) = overlay.axes
    assert _unit_in(ax["xlabel"]) == "ms" and _unit_in(ax["ylabel"]) == "1/ms"
    assert ax["xlim"][0] < 1000 * MEANS["sum-a"] < 1000 * MEANS["sum-b"] < ax["xlim"][1]


def test_a_panel_with_nothing_to_show_is_left_out_and_the_caption_says_why(
    tmp_path: Path, drawn: list[Drawn]
) -> None:
    # 6 rounds: 5 steady readings (5 subsession means of one reading: a Q-Q plot), no CI
    # at any number of rounds, too few for an autocorrelation (the old figure drew six
    # panels, two of them empty or a single dot)
    db = store_campaign(tmp_path / "few" / "benchrun.db", {"few": _rounds(0.02, 6, 3)})
    report = _report(db)
    (view,) = report.model.workloads
    assert view.steady.size == 5 and all(v is None for _, v in view.convergence)
    (plot,) = report.workload_plots.values()
    (fig,) = drawn
    titles = [ax["title"] for ax in fig.axes if ax["title"]]
    assert titles == ["(a) readings over time", "(b) histogram, density and box plot",
                      "(c) Q-Q plot of subsession means"]  # fmt: skip
    assert "Not shown, for lack of data:" in plot.caption
    assert "the autocorrelation (only 5 steady readings (10 needed))" in plot.caption
    assert (
        f"the relative CI half-width over rounds (a CI exists at only 0 of the "
        f"{len(view.convergence)} numbers of rounds checked (3 needed))" in plot.caption
    )
    assert "(d)" not in plot.caption and "Values in ms." in plot.caption


def test_compared_workloads_are_overlaid_and_the_commands_head_the_report(
    campaign: Path, drawn: list[Drawn], tmp_path: Path
) -> None:
    report = _report(campaign)
    (overlay,) = report.distribution_plots
    assert overlay.title == "distributions: sum-a vs sum-b"
    assert "in ms" in overlay.caption
    html = render_html(report)
    start = html.index('<section id="headline">')
    headline = html[start : html.index("</section>", start)]
    assert '<img alt="distributions: sum-a vs sum-b"' in headline
    for name, argv in COMMANDS.items():
        line = "python3 -c &#x27;" + argv[2] + "&#x27;"  # shlex quoting, HTML-escaped
        assert f"<td>{name}</td><td><code>{line}</code></td>" in headline
    md = render_markdown(report, tmp_path / "report_files")
    head = md[md.index("## Headline") : md.index("## Per workload")]
    for name, argv in COMMANDS.items():
        assert f"| {name} | `{shlex.join(argv)}` |" in head
    assert "![distributions: sum-a vs sum-b](report_files/distributions-sum-a-sum-b.png)" in head
    assert (tmp_path / "report_files" / "distributions-sum-a-sum-b.png").is_file()
