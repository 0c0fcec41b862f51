"""The reader of JSON objects from outside (runner/jsonread.py): each field of
the type asked for, or one error naming the field."""

from __future__ import annotations

import json

import pytest

from benchrun.runner.jsonread import FieldError, JsonFields


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
