"""Issue 29, item 8: names from files reach no terminal and no report raw.

The probes, each through the real ``benchrun`` console script:

- an imported hyperfine (and a long-form CSV) file whose benchmark is named
  ``"bench\\x1b]0;pwned\\x07"`` (OSC 0: retitle the terminal), with a C1 CSI (``\\x9b``),
  DEL and a bidi override (``\\u202e``): ``analyze summary``, ``analyze compare`` and
  ``compare`` (text and ``--json``) write none of those characters, and show the name
  escaped;
- a real campaign whose matrix values put the same sequence, and
  ``<img src=x onerror=alert(1)><script>alert(2)</script>``, into workload names:
  ``show``, ``show --failures``, ``compare``, ``report`` in every format on stdout write
  none of them raw; the Markdown report, parsed by markdown-it (CommonMark, not
  benchrun's code), holds no HTML token; the HTML report, parsed by Python's
  html.parser, has no ``img`` or ``script`` element; the CSV report is CSV with the name
  in its ``workload`` column.

On main the raw ESC reached stdout of every one of these commands and the Markdown report
held ``<img ...>`` and ``<script>`` as HTML.
"""

from __future__ import annotations

import csv
import io
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from e2e_util import cli, run_benchrun
from markdown_it import MarkdownIt

#: OSC 0 retitles the terminal; \x9b is the one-byte CSI; \u202e shows text reversed
EVIL = "bench\x1b]0;pwned\x07\x9b\x7f\u202e"
HTML_NAME = "<img src=x onerror=alert(1)><script>alert(2)</script>"
#: what must never reach stdout or stderr raw
RAW = ("\x1b", "\x07", "\x9b", "\x7f", "\u202e")


def _assert_inert(text: str, what: str) -> None:
    found = [repr(c) for c in RAW if c in text]
    assert not found, f"{what}: raw {', '.join(found)} in the output"


def _hyperfine(path: Path, base: float) -> Path:
    results = [
        {"command": name, "times": [base + i * 1e-3 for i in range(10)], "exit_codes": [0] * 10}
        for name in (EVIL, "plain")
    ]
    path.write_text(json.dumps({"results": results}), encoding="utf-8")
    return path


def test_imported_names_are_escaped_on_every_output(tmp_path: Path) -> None:
    old = _hyperfine(tmp_path / "old.json", 0.100)
    new = _hyperfine(tmp_path / "new.json", 0.120)
    table = tmp_path / "long.csv"
    table.write_text(
        "benchmark,value\n" + "".join(f"{EVIL},{1 + i % 3}\n" for i in range(30)), "utf-8"
    )
    runs = {
        "analyze summary": ("analyze", "summary", str(old)),
        "analyze compare": ("analyze", "compare", str(old)),
        "analyze summary csv": ("analyze", "summary", str(table)),
        "compare": ("compare", str(old), str(new)),
        "compare --json": ("compare", str(old), str(new), "--json"),
        "analyze summary --json": ("analyze", "summary", str(old), "--json"),
    }
    for what, args in runs.items():
        r = run_benchrun(*args, cwd=tmp_path, env={"COLUMNS": "400"})
        assert r.returncode == 0, (what, r.stderr)
        _assert_inert(r.stdout + r.stderr, what)
        if "--json" not in args:
            assert "bench\\x1b]0;pwned\\x07\\x9b\\x7f\\u202e" in r.stdout, what
    # the JSON holds the escaped name as text (json.loads gives back the backslashes)
    doc = json.loads(run_benchrun(*runs["compare --json"], cwd=tmp_path).stdout)
    names = json.dumps(doc)
    assert "\\\\x1b]0;pwned" in names and "\\u001b" not in names


def test_two_names_that_differ_only_in_escapes_are_refused(tmp_path: Path) -> None:
    """Escaping maps "a\\x1b" and the text "a\\\\x1b" to one name: refused, not merged."""
    path = tmp_path / "twins.json"
    times = [0.1 + i * 1e-3 for i in range(5)]
    path.write_text(
        json.dumps({"results": [{"command": c, "times": times} for c in ("a\x1b", "a\\x1b")]}),
        encoding="utf-8",
    )
    r = cli("analyze", "summary", str(path), cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "once their unprintable characters are escaped" in r.stderr


#: the file is quoted in the report: a comment that closes a ``` fence must not end it
EXPERIMENT = """\
# ```
# <script>alert(3)</script>
name: hostile
settings: {{rounds: 4, warmup_rounds: 1}}
workloads:
  - name: w
    command: ["{py}", "-c", "import sys; print(sys.argv[1], file=sys.stderr); sys.exit(0)", "{{v}}"]
matrix:
  v: [{evil}, {html}]
"""


class _Elements(HTMLParser):
    """Every start tag of an HTML document, by Python's parser."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import sys

    tmp = tmp_path_factory.mktemp("hostile")
    (tmp / "e.yaml").write_text(
        EXPERIMENT.format(py=sys.executable, evil=json.dumps(EVIL), html=json.dumps(HTML_NAME)),
        encoding="utf-8",
    )
    r = run_benchrun("run", "e.yaml", "-o", "res", "--quiet", cwd=tmp, timeout=300)
    assert r.returncode == 0, r.stderr
    (tmp / "run.out").write_text(r.stdout + r.stderr, encoding="utf-8")
    return tmp / "res" / "hostile"


def test_run_prints_no_raw_name(campaign: Path) -> None:
    _assert_inert((campaign.parents[1] / "run.out").read_text(encoding="utf-8"), "run")


@pytest.mark.parametrize(
    "args",
    [
        ("validate", "../../e.yaml"),
        ("show", "."),
        ("show", ".", "--failures"),
        ("compare", ".", "."),
        ("report", ".", "--format", "md", "-o", "-"),
        ("report", ".", "--format", "html", "-o", "-"),
        ("report", ".", "--format", "csv"),
        ("report", ".", "--format", "json"),
    ],
    ids=lambda a: " ".join(a[:1] + a[2:]),
)
def test_stored_names_reach_no_terminal_raw(campaign: Path, args: tuple[str, ...]) -> None:
    # in process (cli.main, the console script's function): stdout and stderr as written
    r = cli(*args, cwd=campaign, env={"COLUMNS": "400"}, timeout=300)
    assert r.returncode == 0, r.stderr
    _assert_inert(r.stdout + r.stderr, " ".join(args))


def test_markdown_report_holds_no_html(campaign: Path) -> None:
    r = cli("report", ".", "--format", "md", "--no-plots", "-o", "r.md", cwd=campaign)
    assert r.returncode == 0, r.stderr
    text = (campaign / "r.md").read_text(encoding="utf-8")
    _assert_inert(text, "report.md")
    tokens = MarkdownIt("commonmark").enable("table").parse(text)

    def walk(ts: list) -> list[str]:
        out = []
        for t in ts:
            if t.type in ("html_inline", "html_block"):
                out.append(t.content)
            out += walk(t.children or [])
        return out

    assert walk(tokens) == []
    rendered = MarkdownIt("commonmark").enable("table").render(text)
    parser = _Elements()
    parser.feed(rendered)
    assert "img" not in parser.tags and "script" not in parser.tags
    # the name is shown, as text
    assert "&lt;img src=x onerror=alert(1)&gt;" in rendered


def test_html_report_has_no_injected_element(campaign: Path) -> None:
    r = cli("report", ".", "--format", "html", "--no-plots", "-o", "r.html", cwd=campaign)
    assert r.returncode == 0, r.stderr
    parser = _Elements()
    parser.feed((campaign / "r.html").read_text(encoding="utf-8"))
    assert "script" not in parser.tags and "img" not in parser.tags


def test_csv_report_stays_csv(campaign: Path) -> None:
    r = cli("report", ".", "--format", "csv", "-o", "r.csv", cwd=campaign)
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO((campaign / "r.csv").read_text(encoding="utf-8"))))
    escaped = "bench\\x1b]0;pwned\\x07\\x9b\\x7f\\u202e"
    assert {row["workload"] for row in rows} == {f"w[v={escaped}]", f"w[v={HTML_NAME}]"}


def _on_a_terminal(args: list[str], cwd: Path) -> str:
    """What ``benchrun ARGS`` writes to a pseudo-terminal (the kernel's pty), as text."""
    import os
    import pty
    import subprocess

    from e2e_util import benchrun_argv

    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS="300", TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    p = subprocess.Popen(
        [*benchrun_argv(), *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    out = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert p.wait(timeout=300) == 0, out.decode(errors="replace")
    return out.decode("utf-8", errors="replace")


@pytest.mark.parametrize("command", ["analyze", "compare", "system"])
def test_on_a_terminal_colours_pass_and_names_do_not(tmp_path: Path, command: str) -> None:
    """On a terminal rich writes its colour codes (CSI ... m): they reach it as they are,
    never shown as the text ``\\x1b[``, while the name's own sequences are escaped."""
    old = _hyperfine(tmp_path / "old.json", 0.100)
    args = {
        "analyze": ["analyze", "summary", str(old)],
        "compare": ["compare", str(old), str(_hyperfine(tmp_path / "new.json", 0.120))],
        "system": ["system"],
    }[command]
    out = _on_a_terminal(args, tmp_path)
    assert "\x1b[" in out  # rich's styles
    assert "\\x1b[" not in out  # ...not escaped as if they were data
    assert "\x1b]" not in out and "\x07" not in out and "\u202e" not in out
    if command != "system":
        assert "bench\\x1b]0;pwned\\x07" in out


def test_a_failed_rounds_output_is_shown_escaped(tmp_path: Path) -> None:
    """``show --failures`` prints the output tails of failed rounds: a workload's own
    output, which may carry OSC 52 (write the clipboard) or a title sequence."""
    (tmp_path / "f.yaml").write_text(
        """\
name: failing
settings: {rounds: 3, warmup_rounds: 0}
workloads:
  - name: ok
    command: ["true"]
  - name: bad
    command: ['sh', '-c', 'printf "out\\033]0;pwned\\007\\n"; printf "err\\033]52;c;cHduZWQ=\\007\\n" >&2; exit 3']
""",
        encoding="utf-8",
    )
    r = run_benchrun("run", "f.yaml", "-o", "res", "-q", cwd=tmp_path, timeout=300)
    assert r.returncode != 0 and "bad" in r.stdout + r.stderr
    _assert_inert(r.stdout + r.stderr, "run with failures")
    shown = cli("show", "res/failing", "--failures", cwd=tmp_path)
    _assert_inert(shown.stdout + shown.stderr, "show --failures")
    assert "err\\x1b]52;c;cHduZWQ=" in shown.stdout and "out\\x1b]0;pwned" in shown.stdout
