"""A stored campaign's settings as the typed :class:`Settings` (issue 30).

The store keeps the settings a campaign ran with as JSON (``campaign.settings_json``: every
field of :class:`benchrun.runner.config.experiment.Settings`, ``dataclasses.asdict`` with
``env`` as a mapping). Everything that reads a stored campaign (show, report, export,
compare, history) reads them through :func:`campaign_settings`, so each setting has one
name, one type and one default on the read side instead of ``settings.get("…", default)``
at every use.

Older stores are tolerated: a key they lack takes the default below (the field's
default, except where the readers always assumed another value for a store written before
the setting existed, :data:`MISSING`) and a key this benchrun does not know is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from benchrun.runner.config.experiment import DuetSpec, Settings

__all__ = ["MISSING", "StoredSettings", "campaign_settings"]

#: what the readers take: the typed settings, or the stored JSON object (``CampaignRow.settings``)
StoredSettings = Settings | Mapping[str, Any]

#: the value of a setting absent from an older store where it differs from the field's
#: default: a store written before adaptive mode existed holds a fixed campaign
MISSING: Mapping[str, object] = {"adaptive": False}

#: fields stored as JSON lists and held as tuples
_TUPLES = ("record_env", "secret_env")


def _duet(value: Any) -> DuetSpec | None:
    """``settings.duet`` as stored: null, or the :class:`DuetSpec` fields as an object."""
    if not isinstance(value, Mapping):
        return None
    known = {f.name for f in fields(DuetSpec)}
    return DuetSpec(**{k: v for k, v in value.items() if k in known})


def _pin(value: Any) -> Any:
    """``settings.pin`` as stored: a word (``auto``...) or a JSON list of CPUs (a tuple)."""
    return tuple(int(c) for c in value) if isinstance(value, list) else value


def campaign_settings(stored: StoredSettings | None) -> Settings:
    """The :class:`Settings` of a stored campaign from its stored JSON object ``stored``
    (``CampaignRow.settings``); a :class:`Settings` is returned as it is and None gives
    the defaults.

    Built field by field with :func:`dataclasses.fields`: a stored key overrides the
    default, a missing one takes :data:`MISSING` or the field's default, unknown keys are
    ignored. No validation: the values are those the campaign ran with."""
    if isinstance(stored, Settings):
        return stored
    raw: Mapping[str, Any] = stored if isinstance(stored, Mapping) else {}
    values: dict[str, Any] = {}
    for f in fields(Settings):
        if f.name in raw:
            value = raw[f.name]
        elif f.name in MISSING:
            value = MISSING[f.name]
        else:
            continue
        if f.name == "env":
            value = dict(value) if isinstance(value, Mapping) else {}
        elif f.name in _TUPLES:
            value = tuple(value) if isinstance(value, list | tuple) else ()
        elif f.name == "duet":
            value = _duet(value)
        elif f.name == "pin":
            value = _pin(value)
        values[f.name] = value
    return Settings(**values)
