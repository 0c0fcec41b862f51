"""The experiment of a stored campaign, rebuilt from what its store holds.

``benchrun run DIR --resume`` continues the campaign in the directory DIR without its
experiment file or command line: the store holds the experiment's text (a file's text,
or the one the one-line form made) and the settings it ran with (``--set`` and
``--baseline`` applied), so the experiment is the stored text with the stored settings
(:func:`stored_experiment_text`), loaded like a file.

Every other reader of a stored campaign (show, report, export, comparisons) needs the
parsed :class:`Experiment` only for what its text says (``compare:`` groups, the executor,
the matrix), never with this machine's files checked: the store keeps it parsed, as JSON
(``campaign.experiment_json``, schema 6; docs/design.md "The store"), written once when the
campaign starts (:func:`experiment_to_json`) and read back into the typed record by
:func:`experiment_from_json`, so nothing parses YAML when a campaign is read. The JSON holds
every field of the :class:`Experiment` and its dataclasses except ``settings`` (stored on
their own, ``campaign.settings_json``) and ``source_text`` (``campaign.config_text``); it is
built from the dataclasses' fields and read back by their type hints
(:func:`runner.jsonread.record_from_json`), so a field added to them is stored and read
without a change here. Never pickle: the store is a file another
user may write (docs/security.md); the reader checks every value's type.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path

from benchrun.runner.config.experiment import Experiment, Settings
from benchrun.runner.errors import UserError
from benchrun.runner.jsonread import record_fields

__all__ = [
    "experiment_from_json",
    "experiment_to_json",
    "stored_experiment_text",
    "stored_settings",
]

#: fields of :class:`Experiment` the JSON leaves out: stored in columns of their own
_NOT_STORED = ("settings", "source_text")


def stored_settings(settings: Mapping[str, object]) -> dict[str, object]:
    """A ``settings:`` mapping equivalent to the stored ``settings`` (every field of
    :class:`runner.config.experiment.Settings` as JSON): keys this benchrun does not know
    are left out, and so is ``rounds`` of an adaptive campaign (adaptive mode ignores it and
    the file format refuses it)."""
    from benchrun.runner.config.schema import SETTINGS_KEYS, key_names

    known = set(key_names(SETTINGS_KEYS))
    out = {k: v for k, v in settings.items() if k in known}
    if out.get("adaptive", True):
        out.pop("rounds", None)
    return out


def stored_experiment_text(config_text: str, settings: Mapping[str, object]) -> str:
    """``config_text`` (an experiment file as stored) with its ``settings:`` replaced by the
    stored ``settings`` (:func:`stored_settings`), as YAML text to load like a file."""
    import yaml  # only `benchrun run DIR --resume` reads the text

    try:
        data = yaml.safe_load(config_text)
    except yaml.YAMLError as exc:
        raise UserError(f"the stored experiment text is not YAML ({exc})") from None
    except ValueError as exc:  # an integer past Python's int_max_str_digits
        raise UserError(f"the stored experiment text cannot be read ({exc})") from None
    if not isinstance(data, dict):
        raise UserError("the stored experiment text is not an experiment (not a mapping)")
    data["settings"] = stored_settings(settings)
    return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000))


# -- the parsed experiment as JSON (schema 6) -------------------------------------------------


def _plain(value: object) -> object:
    """``value`` (a field of the experiment's dataclasses) as JSON values: a dataclass as
    an object of its fields, tuples as lists, a path as its text; TypeError for anything
    else that is not a JSON value."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"cannot store {type(value).__name__} in the experiment's JSON")


def experiment_to_json(experiment: Experiment) -> str:
    """The JSON text of ``experiment`` as the store keeps it (module docstring): every field
    but ``settings`` and ``source_text``, keys sorted."""
    doc = {
        f.name: _plain(getattr(experiment, f.name))
        for f in dataclasses.fields(Experiment)
        if f.name not in _NOT_STORED
    }
    return json.dumps(doc, sort_keys=True, allow_nan=False)


def experiment_from_json(
    text: str, *, settings: Settings, source_text: str, display: str
) -> Experiment:
    """The :class:`Experiment` stored as ``text`` (:func:`experiment_to_json`), with the
    campaign's stored ``settings`` and experiment text ``source_text``.

    Raises :class:`UserError` (one line naming ``display``, the campaign) when ``text`` is
    not JSON or a value is not of its field's type."""
    try:
        doc = json.loads(text)
        fields = record_fields(Experiment, doc, skip=_NOT_STORED)
        return Experiment(**fields, settings=settings, source_text=source_text)  # type: ignore[arg-type]
    except (ValueError, RecursionError, TypeError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise UserError(
            f"{display}: the stored experiment (campaign.experiment_json) cannot be read: "
            f"{reason}; the store was written by another program or damaged"
        ) from None
