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

from benchrun.runner.config.experiment import Settings
from benchrun.runner.jsonread import record_from_json

__all__ = ["MISSING", "StoredSettings", "campaign_settings"]

#: what the readers take: the typed settings, or the stored JSON object (``CampaignRow.settings``)
StoredSettings = Settings | Mapping[str, object]

#: the value of a setting absent from an older store where it differs from the field's
#: default: a store written before adaptive mode existed holds a fixed campaign
MISSING: Mapping[str, object] = {"adaptive": False}


def campaign_settings(stored: StoredSettings | None) -> Settings:
    """The :class:`Settings` of a stored campaign from its stored JSON object ``stored``
    (``CampaignRow.settings``); a :class:`Settings` is returned as it is and None gives
    the defaults.

    Built field by field from the fields' type hints
    (:func:`runner.jsonread.record_from_json`: JSON lists as tuples, ``duet`` as a
    :class:`DuetSpec`, ``pin`` a word or a tuple of CPUs): a stored key overrides the
    default, a missing one takes :data:`MISSING` or the field's default, unknown keys are
    ignored, and so is a value not of its field's type (the field's default). No other
    validation: the values are those the campaign ran with."""
    if isinstance(stored, Settings):
        return stored
    raw = {**MISSING, **stored} if isinstance(stored, Mapping) else dict(MISSING)
    return record_from_json(Settings, raw, "settings", lenient=True)
