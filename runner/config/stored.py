"""The experiment of a stored campaign, rebuilt from what its store holds.

``benchrun run DIR --resume`` continues the campaign in the directory DIR without its
experiment file or command line: the store holds the experiment's text (a file's text,
or the one the one-line form made) and the settings it ran with (``--set`` and
``--baseline`` applied), so the experiment is the stored text with the stored settings
(:func:`stored_experiment_text`), loaded like a file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from benchrun.runner.config.schema import SETTINGS_KEYS, key_names
from benchrun.runner.errors import UserError


def stored_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A ``settings:`` mapping equivalent to the stored ``settings`` (every field of
    :class:`runner.config.experiment.Settings` as JSON): keys this benchrun does not know
    are left out, and so is ``rounds`` of an adaptive campaign (adaptive mode ignores it and
    the file format refuses it)."""
    known = set(key_names(SETTINGS_KEYS))
    out = {k: v for k, v in settings.items() if k in known}
    if out.get("adaptive", True):
        out.pop("rounds", None)
    return out


def stored_experiment_text(config_text: str, settings: Mapping[str, Any]) -> str:
    """``config_text`` (an experiment file as stored) with its ``settings:`` replaced by the
    stored ``settings`` (:func:`stored_settings`), as YAML text to load like a file."""
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
