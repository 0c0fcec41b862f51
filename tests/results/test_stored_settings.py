"""runner/results/settings.py: a stored campaign's settings read back as the typed Settings.

The settings are written by the real writer (``benchrun run``'s session: the loader's
``Settings`` as JSON) into a real SQLite store and read back through ``CampaignRow``; the
expected values are the ones the experiment text wrote, and the field defaults of
``runner/config/experiment.py`` for what it did not.
"""

from __future__ import annotations

from pathlib import Path

from benchrun.runner import __version__
from benchrun.runner.campaign.session import _settings_dict
from benchrun.runner.config.experiment import DuetSpec, Settings
from benchrun.runner.config.loader import parse_experiment
from benchrun.runner.results.settings import campaign_settings
from benchrun.runner.store.database import Store

EXPERIMENT = """\
name: typed
settings:
  ci_rel_width: 0.07
  alpha: 0.02
  pin: [0, 1]
  env: {A: "1"}
  record_env: [HOME]
  contended: keep
  duet: {solo_every: 3, cpus: random}
workloads:
  - name: a
    command: ["true"]
  - name: b
    command: ["true"]
"""


def _stored(tmp_path: Path, settings: dict[str, object]) -> dict[str, object]:
    """``settings`` written to a real store and read back as ``CampaignRow.settings``."""
    with Store.create_or_open(tmp_path / "benchrun.db") as store:
        cid = store.create_campaign(
            name="typed", config_path=None, config_text="name: typed\n", fingerprint="x",
            settings=settings, workloads=[], benchrun_version=__version__, command_line=None,
        )  # fmt: skip
        return store.campaign(cid).settings


def test_round_trip_through_the_store_gives_the_loaded_settings(tmp_path: Path) -> None:
    loaded = parse_experiment(EXPERIMENT, check_commands=False)
    got = campaign_settings(_stored(tmp_path, _settings_dict(loaded)))
    assert got == loaded.settings
    # what the file wrote, typed as the loader types it
    assert got.ci_rel_width == 0.07 and got.alpha == 0.02
    assert got.pin == (0, 1)
    assert got.env == {"A": "1"} and got.record_env == ("HOME",)
    assert got.contended == "keep"
    assert got.duet == DuetSpec(solo_every=3, cpus="random")


def test_an_older_store_missing_keys_gets_the_defaults(tmp_path: Path) -> None:
    # a store written before most settings existed: only these keys, and one unknown
    got = campaign_settings(_stored(tmp_path, {"rounds": 12, "confidence": 0.9, "gone": 1}))
    assert got.rounds == 12 and got.confidence == 0.9
    # without "adaptive" the campaign predates adaptive mode: a fixed campaign
    assert got.adaptive is False
    assert got.alpha == 0.01 and got.margin == 0.01 and got.comparison == "paired"
    assert got.contended == "exclude" and got.contended_threshold == 0.25
    assert got.env == {} and got.duet is None and got.pin == "auto"


def test_typed_settings_pass_through_and_none_gives_the_defaults() -> None:
    s = Settings(alpha=0.05)
    assert campaign_settings(s) is s
    assert campaign_settings(None) == Settings(adaptive=False)


def test_a_stored_value_not_of_its_setting_s_type_takes_the_default(tmp_path: Path) -> None:
    # a store another program wrote: text where numbers belong, a list for the env
    got = campaign_settings(
        _stored(
            tmp_path,
            {"adaptive": True, "alpha": "0.05", "confidence": 0.9, "env": ["A"],
             "pin": [0, "x"], "duet": {"solo_every": "3", "cpus": "random"}},
        )
    )  # fmt: skip
    assert got.alpha == 0.01 and got.confidence == 0.9  # the default, and the stored value
    assert got.env == {} and got.pin == "auto"
    assert got.duet is None  # a value inside it is not of its type: the whole default
