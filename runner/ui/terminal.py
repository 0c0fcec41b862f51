"""What benchrun writes to stdout and stderr holds no control character of the data.

Names and sentences printed by benchrun quote text from files someone else may have
written: a workload name expanded from a matrix value, an imported benchmark name, a
stored campaign, a round's output tail, the daemon's log. A terminal obeys the escape
sequences in such text (``\\x1b]0;TITLE\\x07`` retitles the window, OSC 52 sets the
clipboard, CSI sequences move the cursor and rewrite lines already shown), so every
character :func:`runner.format.printable` escapes is shown escaped (``\\x1b``) instead,
newlines and tabs kept. Two ways out are covered:

- :func:`safe_output` replaces ``sys.stdout`` and ``sys.stderr`` by :class:`SafeStream`
  for the length of a command (``runner/cli.py``): every ``print`` and ``write``;
- :class:`SafeConsole` is the rich console of the live display and the result tables: it
  writes its own colour and cursor codes to the real stream, and escapes the text of
  every segment it renders.

Tables escape names before they are laid out (so columns keep their width); these two are
the net under everything else (verdict sentences, notes, reasons). docs/security.md.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator
from typing import IO, Any, TextIO

from rich.console import Console
from rich.segment import Segment

from benchrun.runner.format import printable
from benchrun.runner.ui.fit import output_width

#: what a line of text may keep as it is
KEEP = "\n\t"


class SafeStream:
    """A text stream that writes ``printable(text, keep="\\n\\t")`` of everything to
    ``raw``; every other attribute (``isatty``, ``fileno``, ``encoding``...) is raw's."""

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(printable(text, KEEP))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def raw_stream(stream: Any) -> TextIO:
    """The stream under a :class:`SafeStream` (``stream`` itself if it is not one)."""
    while isinstance(stream, SafeStream):
        stream = stream.raw
    return stream


@contextlib.contextmanager
def safe_output() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` as :class:`SafeStream` within the block, the
    streams of before it after it (also for tests that call ``cli.main`` in process)."""
    before = sys.stdout, sys.stderr
    sys.stdout = SafeStream(sys.stdout)
    sys.stderr = SafeStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = before


class SafeConsole(Console):
    """A rich console whose rendered text is escaped like :class:`SafeStream` escapes it,
    while rich's own control segments (cursor moves of the live display) and the colour
    codes of styles pass: they are added after the text is escaped. It writes to the
    stream under ``sys.stdout`` (or ``sys.stderr`` with ``stderr=True``) unless given
    ``file``, so that those codes are not escaped by :class:`SafeStream`."""

    def __init__(
        self, *args: Any, file: IO[str] | None = None, stderr: bool = False, **kwargs: Any
    ) -> None:
        if file is None:
            file = raw_stream(sys.stderr if stderr else sys.stdout)
        super().__init__(*args, file=file, stderr=stderr, **kwargs)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        safe = (
            s if s.control else Segment(printable(s.text, "\n"), s.style, s.control) for s in buffer
        )
        return super()._render_buffer(safe)


def stdout_console() -> Console:
    """A console for results on stdout: the terminal's width, or in a pipe or a file
    ``COLUMNS`` when set, else the width of a terminal on stderr, else 160 columns
    (runner/ui/fit.py :func:`~runner.ui.fit.output_width`); tables fit that width."""
    console: Console = SafeConsole()
    if not console.is_terminal:
        console = SafeConsole(width=output_width())
    return console
