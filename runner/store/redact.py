"""Stored rows with a campaign's secret ``env:`` values hidden, for every output that shows them.

The store keeps what ran, secrets included (``benchrun run DIR --resume`` re-runs the
stored experiment, and the workloads need their token). What ``show``, ``report`` and
``export`` print is read through :func:`campaign_secrets` and the ``redact_*`` functions
here, unless ``--include-secrets`` asks for the values (runner/config/secrets.py says which
variables are secret and how a value is hidden; docs/export-format.md "Secrets").
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

from benchrun.runner.config.secrets import Secrets, find_secrets, redact_experiment_text
from benchrun.runner.store.database import CampaignRow, EventRow, HookRow, RoundRow, WorkloadRow


def campaign_secrets(campaign: CampaignRow, workloads: Sequence[WorkloadRow]) -> Secrets:
    """The secret names and values of ``campaign``: in its experiment text and settings,
    its workloads' filled-in ``env`` (``{param}`` placeholders replaced) and the
    variables its metadata recorded (``settings.record_env``)."""
    envs = [w.typed_spec.env for w in workloads]
    environment = campaign.sections.environment
    if environment is not None:
        envs.append(environment.variables)
    return find_secrets(campaign.config_text, campaign.settings, envs)


def _text(secrets: Secrets, text: str | None) -> str | None:
    return None if text is None else secrets.scrub(text)


def _experiment_json(secrets: Secrets, text: str | None) -> str | None:
    """The stored experiment's JSON with every string scrubbed and each ``env``'s secret
    values hidden (None when it is not JSON: nothing of it is shown then)."""
    if text is None:
        return None
    try:
        return json.dumps(secrets.deep(json.loads(text)), sort_keys=True)
    except (ValueError, RecursionError):
        return None


def redact_campaign(campaign: CampaignRow, secrets: Secrets) -> CampaignRow:
    """``campaign`` with its experiment text and parsed experiment, settings, metadata,
    command line and stop reason free of secret values."""
    if not secrets:
        return campaign
    return dataclasses.replace(
        campaign,
        config_text=redact_experiment_text(campaign.config_text, secrets),
        experiment_json=_experiment_json(secrets, campaign.experiment_json),
        settings=secrets.deep(campaign.settings),
        metadata=None if campaign.metadata is None else secrets.deep(campaign.metadata),
        command_line=_text(secrets, campaign.command_line),
        stop_reason=_text(secrets, campaign.stop_reason),
        config_path=_text(secrets, campaign.config_path),
    )


def redact_workloads(workloads: Sequence[WorkloadRow], secrets: Secrets) -> list[WorkloadRow]:
    """The workloads with their stored specs' ``env`` values and commands free of secrets."""
    if not secrets:
        return list(workloads)
    return [
        dataclasses.replace(
            w, spec=secrets.deep(w.spec), status_reason=_text(secrets, w.status_reason)
        )
        for w in workloads
    ]


def redact_events(events: Sequence[EventRow], secrets: Secrets) -> list[EventRow]:
    """The events with their messages and data free of secret values."""
    if not secrets:
        return list(events)
    return [
        dataclasses.replace(
            e,
            message=secrets.scrub(e.message),
            data=None if e.data is None else secrets.deep(e.data),
        )
        for e in events
    ]


def redact_hooks(hooks: Sequence[HookRow], secrets: Secrets) -> list[HookRow]:
    """The hook runs with their argv, reason and output tails free of secret values."""
    if not secrets:
        return list(hooks)
    return [
        dataclasses.replace(
            h,
            argv=[secrets.scrub(a) for a in h.argv],
            reason=_text(secrets, h.reason),
            stdout_tail=_text(secrets, h.stdout_tail),
            stderr_tail=_text(secrets, h.stderr_tail),
        )
        for h in hooks
    ]


def redact_rounds(rounds: Sequence[RoundRow], secrets: Secrets) -> list[RoundRow]:
    """The rounds with their argv, reason, output tails and facts free of secret values
    (readings and times are numbers: unchanged)."""
    if not secrets:
        return list(rounds)
    return [
        dataclasses.replace(
            r,
            argv=[secrets.scrub(a) for a in r.argv],
            reason=_text(secrets, r.reason),
            stdout_tail=_text(secrets, r.stdout_tail),
            stderr_tail=_text(secrets, r.stderr_tail),
            facts=None if r.facts is None else secrets.deep(r.facts),
        )
        for r in rounds
    ]
