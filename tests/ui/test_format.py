"""runner/format.py: the one place numbers become text (values written out by hand)."""

from __future__ import annotations

import pytest

from benchrun.runner.format import format_duration, format_number, format_percent, format_value


@pytest.mark.parametrize(
    ("share", "kw", "text"),
    [
        (0.0123, {}, "1.23 %"),
        (0.0123, {"signed": True}, "+1.23 %"),
        (-0.05, {"signed": True}, "-5 %"),
        (0.01234, {"digits": 2}, "1.2 %"),
        (None, {}, "-"),
        (None, {"missing": "n/a"}, "n/a"),
    ],
)
def test_format_percent(share: float | None, kw: dict, text: str) -> None:
    assert format_percent(share, **kw) == text


@pytest.mark.parametrize(
    ("value", "text"), [(0.000123456, "0.000123"), (12345.0, "1.23e+04"), (None, "-")]
)
def test_format_number(value: float | None, text: str) -> None:
    assert format_number(value) == text


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (0.03759, "s", "37.59 ms"),
        (2.5e-7, "s", "250 ns"),
        (1.5, "s", "1.5 s"),
        (42.0, "MB/s", "42 MB/s"),
    ],
)
def test_format_value(value: float, unit: str, text: str) -> None:
    assert format_value(value, unit) == text


@pytest.mark.parametrize(("seconds", "text"), [(12.4, "12s"), (185, "3m05s"), (3725, "1h02m")])
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
