"""The history page (issue 31 item 4): ``benchrun history DIR --json --html FILE`` on 30
campaigns tagged r01..r30 measured on the fake executor, workload ``a`` 5 % slower from
r18 on, workload ``b`` flat but for one outlying campaign (r08, 4 % slower). The page is checked against the ``--json`` document printed
by the same call (its numbers are not computed again here), and opened in headless
Chromium like the report (tests/report/test_report_chromium.py).
"""

from __future__ import annotations

import base64
import io
import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from e2e_util import cli
from matplotlib.figure import Figure
from matplotlib.image import imread
from matplotlib.text import Text
from synthetic import METADATA, store_campaign
from test_history_cli import _Quiet, _rounds
from test_report_chromium import _chromium, _run

from benchrun.runner.campaign.run import run_campaign
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.execute.fake import FakeExecutor
from benchrun.runner.machine.revision import Revision
from benchrun.runner.report import plots
from benchrun.runner.report.history import series_view
from benchrun.runner.report.html import render_history
from benchrun.runner.results.history import HistoryPoint, HistorySeries

ROUNDS = 24


def _two_workloads(root: Path) -> Path:
    """30 campaigns r01..r30 in one store, as tests/e2e/test_history_cli.py builds them
    (level 0.1 s, each campaign's own level off by N(0, 0.5 %), rounds with 1 % noise), of
    two workloads: ``a`` x 1.05 from r18 on, ``b`` (0.2 s) without a step but with one
    outlying campaign, r08 (x 1.04)."""
    rng = np.random.default_rng(1)
    text = (
        f"name: hist\noutput: {root / 'out'}\n"
        f"settings: {{pin: none, seed: 3, adaptive: false, rounds: {ROUNDS}, warmup_rounds: 0}}\n"
        "workloads:\n  - {name: a, command: [work]}\n  - {name: b, command: [work2]}\n"
    )
    exp = parse_experiment(text, base_dir=root, check_commands=False)
    for r in range(1, 31):
        a = 0.1 * (1 + 0.005 * rng.standard_normal()) * (1.05 if r >= 18 else 1.0)
        b = 0.2 * (1 + 0.005 * rng.standard_normal()) * (1.04 if r == 8 else 1.0)
        tag = Revision(f"r{r:02d}", source="flag").to_dict()
        run_campaign(
            exp,
            FakeExecutor({"a": _rounds(a, rng), "b": _rounds(b, rng)}),
            _Quiet(),
            metadata_fn=lambda tag=tag: {"revision": tag},
        )
    return root / "out" / "hist"


@dataclass
class Page:
    """One call's outputs: the ``--json`` document, the page's path and text, and the
    visible texts of each figure drawn for it (recorded when matplotlib drew them)."""

    doc: dict[str, Any]
    path: Path
    html: str
    figure_texts: list[list[str]]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Page:
    root = tmp_path_factory.mktemp("histpage")
    store = _two_workloads(root)
    out = root / "history.html"
    texts: list[list[str]] = []
    original = plots._png

    def png(fig: Figure) -> bytes:
        data = original(fig)
        texts.append([t.get_text() for t in fig.findobj(Text) if t.get_visible()])
        return data

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plots, "_png", png)
        proc = cli("history", str(store), "--json", "--html", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stderr
    return Page(json.loads(proc.stdout), out, out.read_text(), texts)


class _Tables(HTMLParser):
    """Every table of a page as (title of the h4 before it, header cells, rows of cells),
    grouped by the series section (``<section id="series-N">``) that holds it."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: dict[str, list[tuple[str, list[str], list[list[str]]]]] = {}
        self._section = ""
        self._title = ""
        self._text: list[str] | None = None
        self._row: list[str] | None = None
        self._head: list[str] = []
        self._rows: list[list[str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        sid = dict(attrs).get("id") or ""
        if tag == "section" and sid.startswith("series-"):
            self._section = sid
            self.sections[sid] = []
        elif tag in ("h4", "td", "th"):
            self._text = []
        elif tag == "tr":
            self._row = []
        elif tag == "table":
            self._head, self._rows = [], []

    def handle_endtag(self, tag: str) -> None:
        if tag == "h4" and self._text is not None:
            self._title, self._text = "".join(self._text), None
        elif tag in ("td", "th") and self._text is not None and self._row is not None:
            self._row.append("".join(self._text))
            self._text = None
        elif tag == "tr" and self._row is not None:
            if self._head:
                self._rows.append(self._row)
            else:
                self._head = self._row
            self._row = None
        elif tag == "table":
            self.sections[self._section].append((self._title, self._head, self._rows))

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)


@dataclass
class _Series:
    campaigns: list[dict[str, str]] = field(default_factory=list)
    changes: list[dict[str, str]] = field(default_factory=list)


def _tables(text: str) -> list[_Series]:
    parser = _Tables()
    parser.feed(text)
    out = []
    for sid in sorted(parser.sections, key=lambda s: int(s.split("-")[1])):
        s = _Series()
        for title, head, rows in parser.sections[sid]:
            dicts = [dict(zip(head, row, strict=True)) for row in rows]
            if title == "Campaigns":
                s.campaigns = dicts
            elif title == "Change points":
                s.changes = dicts
        out.append(s)
    return out


def _in_unit(cells: dict[str, str], column: str) -> float:
    """The cell of ``column`` (named ``column [ms]``) in seconds, from the unit its header
    names."""
    (key,) = [k for k in cells if k.startswith(column + " [")]
    unit = key[len(column) + 2 : -1]
    return float(cells[key]) * {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}[unit]


def test_one_figure_per_series_and_the_change_at_r18_labelled_with_the_ratio_of_json(
    page: Page,
) -> None:
    series = page.doc["series"]
    assert sorted(s["workload"] for s in series) == ["a", "b"]
    images = re.findall(r'<img alt="history of [^"]*" src="data:image/png;base64,', page.html)
    assert len(images) == len(series) == len(page.figure_texts)
    by_name = {s["workload"]: s for s in series}
    (change,) = by_name["a"]["changes"]
    assert change["revision"] == "r18" and by_name["b"]["changes"] == []
    label = f"r18: {change['ratio']:.4f}x [{change['ratio_low']:.4f}, {change['ratio_high']:.4f}] slower"
    # on the figure of a (drawn in JSON's order), in its caption, and on no other figure
    order = [s["workload"] for s in series]
    assert label in page.figure_texts[order.index("a")]
    assert not any("r18:" in t for t in page.figure_texts[order.index("b")])
    assert html_text(page.html).count(label) >= 1
    # the x axis names the revisions, and the date (one for all campaigns here)
    drawn = page.figure_texts[order.index("a")]
    first = by_name["a"]["points"][0]
    assert {p["date"] for p in by_name["a"]["points"]} == {first["date"]}
    assert f"revision (start time; every campaign dated {first['date']})" in drawn
    assert "r01" in drawn and "r18" in drawn and "r30" in drawn
    # b's outlying campaign is circled (and is not a change)
    assert by_name["b"]["outliers"] == ["r08"]
    assert "outlying campaign (not a level)" in page.figure_texts[order.index("b")]
    assert "outlying campaign (not a level)" not in drawn


def html_text(text: str) -> str:
    import html

    return html.unescape(re.sub(r"<[^>]+>", " ", text))


def test_the_tables_hold_the_numbers_of_json(page: Page) -> None:
    tables = _tables(page.html)
    assert len(tables) == len(page.doc["series"])
    for s, t in zip(page.doc["series"], tables, strict=True):
        assert [row["revision"] for row in t.campaigns] == [p["revision"] for p in s["points"]]
        starts = {c["revision"] for c in s["changes"]}
        outliers = set(s["outliers"])
        for row, p in zip(t.campaigns, s["points"], strict=True):
            assert row["date"] == p["date"]
            assert row["campaign"] == str(p["campaign"])
            # 6 significant digits in the display unit
            assert _in_unit(row, "estimate") == pytest.approx(p["mean"], rel=1e-5)
            assert _in_unit(row, "CI low") == pytest.approx(p["ci_low"], rel=1e-5)
            assert _in_unit(row, "CI high") == pytest.approx(p["ci_high"], rel=1e-5)
            assert row["CI"] == ("certified" if p["certified"] else "not certified")
            assert row["mark"].startswith("new level") == (p["revision"] in starts)
            assert row["mark"].startswith("outlying") == (p["revision"] in outliers)
        assert len(t.changes) == len(s["changes"])
        for row, c in zip(t.changes, s["changes"], strict=True):
            assert row["first revision of the new level"] == c["revision"]
            assert float(row["ratio new/old"]) == pytest.approx(c["ratio"], abs=5e-5)
            assert float(row["95 % CI low"]) == pytest.approx(c["ratio_low"], abs=5e-5)
            assert float(row["95 % CI high"]) == pytest.approx(c["ratio_high"], abs=5e-5)
            assert float(row["p"]) == pytest.approx(c["p_value"], rel=0.05)
            assert _in_unit(row, "level before") == pytest.approx(c["level_before"], rel=1e-5)
            assert _in_unit(row, "level after") == pytest.approx(c["level_after"], rel=1e-5)


def _open(path: Path, tmp_path: Path) -> str:
    """``path`` opened offline in headless Chromium: its screenshot is not blank, the
    console has no error; returns the DOM as Chromium built it."""
    exe = _chromium()
    text = path.read_text()
    # self-contained: no external resource, no script
    assert not re.search(r"""(src|href)=["'](https?:|//)""", text)
    assert "<script" not in text
    url = path.resolve().as_uri()
    shot = tmp_path / "shot.png"
    run = _run(exe, tmp_path, "--enable-logging=stderr", "--v=0", f"--screenshot={shot}",
               "--window-size=1280,1400", url)  # fmt: skip
    assert shot.is_file(), run.stderr[-2000:]
    errors = [
        line
        for line in run.stderr.splitlines()
        if "Uncaught" in line or ("CONSOLE" in line and "error" in line.lower())
    ]
    assert not errors, errors
    pixels = imread(shot)[..., :3]
    assert float(pixels.std()) > 0.05  # not a blank page
    assert float((pixels.mean(axis=2) < 0.9).mean()) > 0.02  # text and a figure drawn
    dom = _run(exe, tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    return str(dom.stdout)


def test_the_page_opens_offline_in_headless_chromium(page: Page, tmp_path: Path) -> None:
    dom = _open(page.path, tmp_path)
    for i in range(1, len(page.doc["series"]) + 1):
        assert f'id="series-{i}"' in dom
    images = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", dom)
    assert len(images) == len(page.doc["series"])
    for b64 in images:
        img = imread(io.BytesIO(base64.b64decode(b64)), format="png")
        assert img.shape[1] > 1000 and float(np.std(img)) > 0.01


def _series(workload: str, n: int) -> HistorySeries:
    """``n`` campaigns of ``workload`` without CIs, named with markup and an escape
    sequence (names come from files: a matrix value, ``--revision``)."""
    pts = tuple(
        HistoryPoint(
            store="s.db",
            campaign=i + 1,
            revision=Revision(f"<b>r{i}</b>\x1b[31m"),
            started=1.8e9 + 86400 * i,
            mean=0.1,
            se=None,
            ci_low=None,
            ci_high=None,
            certified=False,
        )
        for i in range(n)
    )
    return HistorySeries("exp<script>", "cpu", workload, "s", "lower_is_better", pts, "start time")


def test_names_are_escaped_and_a_short_history_says_it_was_not_analysed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Names come from files (a matrix value, --revision): shown as text, never markup,
    on the figure too (an escape sequence as its escaped text, ``$`` not mathematics);
    two campaigns without CIs are drawn, and the page says why nothing was analysed."""
    drawn: list[str] = []
    original = plots._png

    def png(fig: Figure) -> bytes:
        drawn.extend(t.get_text() for t in fig.findobj(Text))
        return original(fig)

    monkeypatch.setattr(plots, "_png", png)
    s = _series('<img src=x onerror="alert(1)"> $x^2$', 2)
    text = render_history([series_view(s, None)], "t", "now")
    assert any(t.startswith("<b>r0</b>\\x1b[31m") for t in drawn), drawn
    assert any(r"\$x^2\$" in t for t in drawn), drawn
    # campaigns of different days: each revision's date beside its label
    for p in s.points:
        assert any(t.endswith(f"  {p.date}") for t in drawn), (p.date, drawn)
    assert "<img src=x" not in text and "<script>" not in text and "<b>" not in text
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in text
    assert "\x1b" not in text and "\\x1b[31m" in text
    assert "not analysed: change points need 3 or more campaigns" in text
    assert len(re.findall(r"<img alt=", text)) == 1


def test_an_unwritable_page_is_one_line(page: Page, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    proc = cli("history", str(page.doc["series"][0]["points"][0]["store"]),
               "--html", str(tmp_path / "file" / "h.html"))  # fmt: skip
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "cannot write" in line


def test_the_report_of_the_store_has_a_history_section_with_the_numbers_of_history_json(
    page: Page, tmp_path: Path
) -> None:
    """``benchrun report`` of a store whose campaigns measured several revisions: a History
    section (before the machine) with one figure per series; its JSON holds what
    ``benchrun history --json`` printed, number for number."""
    store = Path(page.doc["series"][0]["points"][0]["store"])
    proc = cli("report", str(store), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["history"] == page.doc["series"]
    assert doc["sections"].index("history") == doc["sections"].index("machine") - 1
    out = tmp_path / "report.html"
    proc = cli("report", str(store), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert '<section id="history">' in text and '<a href="#history">History</a>' in text
    images = re.findall(r'<img alt="history of [^"]*" src="data:image/png;base64,', text)
    assert len(images) == len(page.doc["series"])
    (change,) = [c for s in page.doc["series"] for c in s["changes"]]
    assert f"r18: {change['ratio']:.4f}x" in html_text(text)
    assert _tables(text[text.index('<section id="history">') :])[0].campaigns
    dom = _open(out, tmp_path)
    assert '<section id="history">' in dom and 'id="series-2"' in dom


def test_a_store_of_one_revision_has_no_history_section(tmp_path: Path) -> None:
    """Campaigns of one revision are repeats, not a history: no section; a second
    revision brings it."""
    db = tmp_path / "c" / "benchrun.db"
    rng = np.random.default_rng(5)

    def campaign(label: str) -> None:
        rev = Revision(label, source="flag").to_dict()
        rounds = [[float(v)] for v in 0.05 * (1 + 0.01 * rng.standard_normal(30))]
        store_campaign(db, {"w": rounds}, metadata={**METADATA, "revision": rev})

    campaign("v1")
    campaign("v1")
    doc = json.loads(cli("report", str(db), "--format", "json", "--no-plots").stdout)
    assert "history" not in doc["sections"] and doc["history"] is None
    campaign("v2")
    doc = json.loads(cli("report", str(db), "--format", "json", "--no-plots").stdout)
    assert "history" in doc["sections"]
    (series,) = doc["history"]
    assert [p["revision"] for p in series["points"]] == ["v1", "v1", "v2"]
