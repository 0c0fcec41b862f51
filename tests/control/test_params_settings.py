"""ControllerParams checks the settings it takes as the experiment file's loader does (one
declaration, runner/config/settings.py): the same values refused, with the same sentence.

The boundary values are written here from the documented ranges (docs/settings.md):
alpha in (0, 0.5), margin in (0, 1), confidence in (0, 0.999999], ci_rel_width > 0,
min_subsessions >= 2, min_rounds >= 1, max_time > 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchrun.runner.config.loader import load_experiment
from benchrun.runner.control.params import ControllerParams
from benchrun.runner.errors import UserError

CASES: list[tuple[str, object, bool]] = [
    ("alpha", 0.0, False),
    ("alpha", 0.001, True),
    ("alpha", 0.4999, True),
    ("alpha", 0.5, False),
    ("margin", 0.0, False),
    ("margin", 0.999, True),
    ("margin", 1.0, False),
    ("confidence", 0.0, False),
    ("confidence", 0.999999, True),
    ("confidence", 0.9999995, False),
    ("ci_rel_width", 0.0, False),
    ("ci_rel_width", 0.001, True),
    ("min_subsessions", 1, False),
    ("min_subsessions", 2, True),
    ("max_time", 0.0, False),
    ("max_time", 0.5, True),
    ("comparison", "welch", False),
    ("paired_test", "t", True),
    ("paired_test", "sign", False),
]


def _file_message(tmp_path: Path, key: str, value: object) -> str | None:
    """The loader's message for ``settings: {key: value}`` (None: accepted)."""
    path = tmp_path / "exp.yaml"
    shown = repr(value) if not isinstance(value, str) else value
    path.write_text(
        f"name: x\nsettings: {{{key}: {shown}}}\nworkloads:\n  - {{name: a, command: [python3, -c, pass]}}\n",
        encoding="utf-8",
    )
    try:
        load_experiment(path)
    except UserError as exc:
        return str(exc).split(f"settings.{key}: ", 1)[1]
    return None


@pytest.mark.parametrize(("key", "value", "ok"), CASES)
def test_controller_params_refuse_what_the_file_refuses(
    tmp_path: Path, key: str, value: object, ok: bool
) -> None:
    from_file = _file_message(tmp_path, key, value)
    assert (from_file is None) == ok, from_file
    if ok:
        assert getattr(ControllerParams(**{key: value}), key) == value
        return
    with pytest.raises(UserError) as caught:
        ControllerParams(**{key: value})
    assert str(caught.value) == f"settings.{key}: {from_file}"


def test_min_rounds_above_max_rounds_is_refused() -> None:
    with pytest.raises(UserError, match=r"settings\.max_rounds: need 1 <= min_rounds \(9\)"):
        ControllerParams(min_rounds=9, max_rounds=8)
