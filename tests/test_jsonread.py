"""The reader of JSON from outside (runner/jsonread.py): each field of the type asked for,
or one error naming the field; a dataclass read by its fields' type hints."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

import pytest

from benchrun.runner.jsonread import MISSING, FieldError, JsonFields, record_from_json


def fields(text: str) -> JsonFields:
    return JsonFields(json.loads(text), "thing")


def test_only_an_object_is_read() -> None:
    for text in ("[1]", "3", '"x"', "null"):
        with pytest.raises(FieldError, match="thing: not a JSON object"):
            fields(text)


def test_required_fields_are_there_and_of_their_type() -> None:
    f = fields('{"n": 5, "x": 2, "s": "a", "b": false, "t": true, "z": null}')
    assert f.required("n", int) == 5
    assert f.required("x", float) == 2.0 and isinstance(f.required("x", float), float)
    assert f.required("s", str) == "a"
    assert f.required("b", bool) is False
    with pytest.raises(FieldError, match="thing: field 't' is True, not an integer"):
        f.required("t", int)  # a bool is no number
    with pytest.raises(FieldError, match="thing: field 's' is 'a', not a number"):
        f.required("s", float)
    with pytest.raises(FieldError, match="thing: field 'gone' is missing"):
        f.required("gone", str)
    with pytest.raises(FieldError, match="thing: field 'z' is missing"):
        f.required("z", str)  # null counts as missing


def test_optional_and_loose_fields() -> None:
    f = fields('{"n": 5, "s": "a", "z": null}')
    assert f.optional("z", int) is None and f.optional("gone", int, 7) == 7
    assert f.optional("n", int, 7) == 5
    with pytest.raises(FieldError, match="field 's' is 'a', not an integer"):
        f.optional("s", int)
    assert f.loose("s", int) is None and f.loose("s", str) == "a"


def test_lists_and_objects() -> None:
    f = fields('{"c": [0, 2], "bad": [1, "x"], "o": {"A": "1"}, "no": {"A": 1}, "w": "w"}')
    assert f.items("c", int) == (0, 2) and f.items("gone", int) is None
    with pytest.raises(FieldError, match=r"field 'bad\[1\]' is 'x', not an integer"):
        f.items("bad", int)
    with pytest.raises(FieldError, match="field 'w' is not a list"):
        f.items("w", int)
    assert f.strings("o") == {"A": "1"}
    with pytest.raises(FieldError, match=r"field \"no\['A'\]\" is 1, not a string"):
        f.strings("no")
    with pytest.raises(FieldError, match="field 'w' is not a JSON object"):
        f.object("w")
    assert f.raw_list("bad") == [1, "x"]


def test_a_shown_value_is_cut_and_printable() -> None:
    f = JsonFields({"s": "\x1b[2J" + "y" * 200}, "thing")
    with pytest.raises(FieldError) as caught:
        f.required("s", int)
    assert "\x1b" not in str(caught.value) and len(str(caught.value)) < 140


def test_finite_numbers_and_words() -> None:
    f = fields(
        '{"p": 0.25, "i": 3, "nan": NaN, "inf": -Infinity, "t": true, "z": null, "v": "welch"}'
    )
    assert f.finite("p") == 0.25 and f.finite("i") == 3.0 and isinstance(f.finite("i"), float)
    assert f.optional_finite("z") is None and f.optional_finite("gone") is None
    with pytest.raises(FieldError, match="thing: field 'nan' is nan, not a finite number"):
        f.finite("nan")
    with pytest.raises(FieldError, match="thing: field 'inf' is -inf, not a finite number"):
        f.optional_finite("inf")
    with pytest.raises(FieldError, match="thing: field 't' is True, not a number"):
        f.finite("t")
    with pytest.raises(FieldError, match="thing: field 'z' is missing"):
        f.finite("z")
    assert f.one_of("v", ("paired", "welch")) == "welch"
    with pytest.raises(FieldError, match="thing: field 'v' is 'welch', not one of a, b"):
        f.one_of("v", ("a", "b"))
    with pytest.raises(FieldError, match="thing: field 'gone' is missing"):
        f.one_of("gone", ("a", "b"))


def test_a_readers_own_check_gets_the_value_and_its_place() -> None:
    f = JsonFields({"n": None, "k": 2}, "run.json: rounds[3]")
    seen: list[tuple[object, str]] = []

    def check(value: object, where: str) -> int:
        seen.append((value, where))
        return 1

    assert f.check("k", check) == 1 and f.check("n", check) == 1
    assert f.check("gone", check, place=False) == 1
    assert seen == [
        (2, "run.json: rounds[3].k"),
        (None, "run.json: rounds[3].n"),  # null is None, not MISSING
        (MISSING, "run.json: rounds[3]"),
    ]
    assert f.has("n") and not f.has("gone")


@dataclass(frozen=True)
class Inner:
    cpus: tuple[int, ...] = ()
    mode: Literal["auto", "off"] = "auto"


@dataclass(frozen=True)
class Outer:
    name: str
    ratio: float = 1.0
    count: int = 0
    inner: Inner = Inner()
    pin: str | tuple[int, ...] = "none"
    limit: int | None = None


def test_a_record_is_read_by_its_type_hints() -> None:
    doc = json.loads(
        '{"name": "a", "ratio": 2, "inner": {"cpus": [1, 3], "mode": "off"}, "pin": [0], '
        '"limit": null, "unknown": 5}'
    )
    assert record_from_json(Outer, doc) == Outer(
        "a", 2, 0, Inner((1, 3), "off"), (0,), None
    )  # a missing field takes its default, an unknown key is ignored
    assert record_from_json(Outer, {"name": "b", "pin": "auto"}).pin == "auto"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"name": 1}, "w.name: expected a string, found 1"),
        ({"name": "a", "count": True}, "w.count: expected an integer, found true"),
        ({"name": "a", "ratio": "2"}, 'w.ratio: expected a number, found "2"'),
        (
            {"name": "a", "inner": {"cpus": [1, "x"]}},
            'w.inner.cpus[1]: expected an integer, found "x"',
        ),
        ({"name": "a", "inner": {"mode": "on"}}, "w.inner.mode: expected one of 'auto', 'off'"),
        ({"name": "a", "inner": []}, "w.inner: expected an object, found []"),
        ({"name": "a", "pin": 3}, "w.pin: expected a string, found 3"),
        ([1], "w: expected an object, found [1]"),
    ],
)
def test_a_value_not_of_its_fields_type_is_named(doc: object, message: str) -> None:
    with pytest.raises(FieldError) as caught:
        record_from_json(Outer, doc, "w")
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_a_lenient_record_takes_the_default_of_a_bad_value() -> None:
    got = record_from_json(Outer, {"name": "a", "count": "7", "ratio": 0.5}, lenient=True)
    assert got == Outer("a", 0.5, 0)
    with pytest.raises(FieldError, match="the top level: expected an object"):
        record_from_json(Outer, None, lenient=True)
