"""Each setting declared once (issue 30 item 2): what is derived from the declaration
(docs/settings.md, ``benchrun init``'s example, ControllerParams' defaults) checked
against what the loader makes of the experiment file.

Expected values come from the loader reading YAML text written here (a file that omits a
setting against one that writes the documented default), or from the bounds as the docs
table prints them, read back with a regular expression written here.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import yaml

from benchrun.runner.commands.validate import template_text
from benchrun.runner.config.experiment import Settings
from benchrun.runner.config.loader import ENV_CONTENDED, load_experiment
from benchrun.runner.config.settingsdoc import settings_table
from benchrun.runner.control.params import ControllerParams
from benchrun.runner.errors import UserError

DOCS = Path(__file__).resolve().parents[2] / "docs" / "settings.md"
WORKLOADS = "workloads:\n  - {name: a, command: [python3, -c, pass]}\n"
TWO_WORKLOADS = WORKLOADS + "  - {name: b, command: [python3, -c, pass]}\n"


def _rows() -> list[tuple[str, str, str, str]]:
    """(key, value kind, default, range) of each row of docs/settings.md's first table."""
    rows = []
    text = DOCS.read_text(encoding="utf-8").split("\n## ")[0]  # the settings: table
    for line in text.splitlines():
        m = re.match(r"^\| `(\w+)` \| (.*?) \| `(.*?)` \| (.*?) \| ", line)
        if m:
            rows.append((m.group(1), m.group(2), m.group(3), m.group(4)))
    return rows


def _settings(tmp_path: Path, settings: str, workloads: str = WORKLOADS) -> Settings:
    path = tmp_path / "exp.yaml"
    path.write_text(f"name: x\nsettings: {settings}\n{workloads}", encoding="utf-8")
    return load_experiment(path).settings


def test_docs_table_is_written_from_the_declarations() -> None:
    # regenerate with: python -m benchrun.runner.config.settingsdoc > docs/settings.md
    assert DOCS.read_text(encoding="utf-8") == settings_table()


def test_docs_table_has_one_row_per_setting_in_file_order() -> None:
    assert [r[0] for r in _rows()] == [f.name for f in dataclasses.fields(Settings)]


def test_each_documented_default_is_what_omitting_the_setting_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_CONTENDED, raising=False)
    omitted = _settings(tmp_path, "{}")
    for key, _, default, _ in _rows():
        given = _settings(tmp_path, f"{{{key}: {default}}}")
        assert getattr(given, key) == getattr(omitted, key), key


def _bounds(text: str) -> list[tuple[str, float]]:
    return [(op, float(v)) for op, v in re.findall(r"(>=|>|<=|<) ([0-9.e+]+)(?= and|$)", text)]


def _one_setting(tmp_path: Path, key: str, value: float) -> Settings:
    """The settings of a file that sets ``key`` to ``value``, the cross-key rules
    (min_rounds <= max_rounds, warm-up within max_rounds, rounds only in fixed mode) kept
    out of the way."""
    section: dict[str, object] = {"min_rounds": 1, "max_rounds": 10**8}
    if key == "rounds":
        section["adaptive"] = False
    section[key] = value
    return _settings(tmp_path, yaml.safe_dump(section, default_flow_style=True).strip())


def test_documented_ranges_are_the_loaders(tmp_path: Path) -> None:
    checked = 0
    for key, kind, _, rng in _rows():
        if not kind.startswith(("integer", "number")):
            continue
        for op, bound in _bounds(rng):
            if kind.startswith("integer") and bound != int(bound) or bound > 2**53:
                continue  # printed rounded (seed's 2^63 - 1)
            value = int(bound) if kind.startswith("integer") else bound
            inclusive = "=" in op
            outside = value - 1 if op.startswith(">") else value + 1
            if inclusive:
                assert getattr(_one_setting(tmp_path, key, value), key) == value
            for bad in (outside,) if inclusive else (value, outside):
                with pytest.raises(UserError, match=rf"settings\.{key}: .* out of range"):
                    _one_setting(tmp_path, key, bad)
            checked += 1
    assert checked >= 20


def test_init_example_sets_each_setting_it_shows(tmp_path: Path) -> None:
    text = template_text()
    data = yaml.safe_load(text)["settings"]
    shown = set(re.findall(r"^  (?:# )?(\w+): ", text.split("\nsettings:\n")[1], re.M))
    names = {f.name for f in dataclasses.fields(Settings)}
    assert names <= shown
    # the two commented out (fixed mode's count, duet) are valid when written in
    assert set(names) - set(data) == {"rounds", "duet"}
    assert _settings(tmp_path, "{adaptive: false, rounds: 10}").rounds == 10
    assert _settings(tmp_path, "{duet: true}", TWO_WORKLOADS).duet is not None


def test_controller_params_default_to_what_the_file_gives(tmp_path: Path) -> None:
    loaded = _settings(tmp_path, "{}")
    params = ControllerParams.from_settings(loaded)
    plain = ControllerParams()
    for f in dataclasses.fields(ControllerParams):
        if hasattr(loaded, f.name):
            assert getattr(plain, f.name) == getattr(params, f.name), f.name
