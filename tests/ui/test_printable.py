"""runner/format.py ``printable`` and runner/ui/terminal.py: what reaches a terminal.

The categories checked against are ``unicodedata``'s (the Unicode database), not
benchrun's: every control (Cc), format (Cf), line and paragraph separator (Zl, Zp) and
surrogate (Cs) character of the BMP is escaped, nothing else is.
"""

from __future__ import annotations

import io
import sys
import unicodedata

from rich.text import Text

from benchrun.runner.format import printable
from benchrun.runner.ui.terminal import SafeConsole, SafeStream, raw_stream, safe_output

ESCAPED = {"Cc", "Cf", "Zl", "Zp", "Cs"}


def test_exactly_the_characters_a_terminal_acts_on_are_escaped() -> None:
    for code in range(0x10000):
        ch = chr(code)
        shown = printable(ch)
        if unicodedata.category(ch) in ESCAPED:
            assert shown.isascii() and shown.isprintable() and shown.startswith("\\"), hex(code)
            # the escape reads back as the character (Python's unicode_escape codec)
            assert shown.encode("ascii").decode("unicode_escape") == ch, hex(code)
        else:
            assert shown == ch, hex(code)


def test_the_probe_name_and_friends() -> None:
    assert printable("bench\x1b]0;pwned\x07") == "bench\\x1b]0;pwned\\x07"
    assert printable("\x9b2J\x7f") == "\\x9b2J\\x7f"
    assert printable("abc\u202edef") == "abc\\u202edef"
    assert printable("a\nb", keep="\n") == "a\nb" and printable("a\nb") == "a\\nb"
    # what benchrun's own tables hold stays: the no-break space between digit groups, µ, ±
    assert printable("1\u00a0234 µs ± 2 %") == "1\u00a0234 µs ± 2 %"


def test_escaping_twice_changes_nothing() -> None:
    text = "".join(chr(c) for c in range(0x300)) + "\u202e\u2028\ud800"
    once = printable(text, "\n\t")
    assert printable(once, "\n\t") == once and printable(printable(text)) == printable(text)


def test_safe_stream_escapes_what_print_writes() -> None:
    raw = io.StringIO()
    stream = SafeStream(raw)
    print("name: a\x1b]0;x\x07\tb", file=stream)  # type: ignore[arg-type]
    assert raw.getvalue() == "name: a\\x1b]0;x\\x07\tb\n"
    assert raw_stream(stream) is raw


def test_safe_output_wraps_and_restores_the_streams() -> None:
    before = sys.stdout, sys.stderr
    with safe_output():
        assert isinstance(sys.stdout, SafeStream) and isinstance(sys.stderr, SafeStream)
    assert (sys.stdout, sys.stderr) == before


def test_safe_console_keeps_its_colours_and_escapes_the_text() -> None:
    raw = io.StringIO()
    console = SafeConsole(file=raw, force_terminal=True, color_system="standard", width=80)
    console.print(Text("w\x1b]0;pwned\x07", style="bold red"))
    out = raw.getvalue()
    assert "\x1b[1;31m" in out  # rich's own SGR for bold red reached the terminal
    assert "w\\x1b]0;pwned" in out  # (rich itself drops the BEL)
    assert out.count("\x1b") == out.count("\x1b[")  # every ESC left is a CSI rich wrote
    assert "\x07" not in out and "\x1b]" not in out


def test_safe_console_writes_under_the_safe_stream() -> None:
    raw = io.StringIO()
    saved = sys.stdout
    sys.stdout = SafeStream(raw)  # type: ignore[assignment]
    try:
        console = SafeConsole(force_terminal=True, color_system="standard")
        console.print(Text("x", style="bold"))
    finally:
        sys.stdout = saved
    assert "\x1b[1m" in raw.getvalue()  # not escaped twice
