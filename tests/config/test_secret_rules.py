"""The rules of runner/config/secrets.py: which env variables are secret, and how a value
is hidden in the experiment text and in other text (docs/export-format.md "Secrets")."""

from __future__ import annotations

import pytest
import yaml

from benchrun.runner.config.secrets import (
    SECRET_MARKER,
    Secrets,
    find_secrets,
    is_secret_name,
    redact_experiment_text,
)


@pytest.mark.parametrize(
    "name",
    ["API_TOKEN", "github_token", "DB_PASSWORD", "PGPASSWD", "AWS_SECRET_ACCESS_KEY",
     "SSH_PASSPHRASE", "GOOGLE_APPLICATION_CREDENTIALS", "HTTP_AUTH", "SESSION_COOKIE",
     "apikey"],
)  # fmt: skip
def test_names_that_hold_secrets(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["OMP_NUM_THREADS", "PATH", "LANG", "SERVICE_PIN"])
def test_names_that_do_not(name: str) -> None:
    assert not is_secret_name(name)
    assert is_secret_name(name, [name])  # unless settings.secret_env lists it


TEXT = """\
name: x
settings:
  secret_env: [SERVICE_PIN]
  env: {SERVICE_PIN: '0042', LANG: C}
workloads:
  - name: w
    command: [run, --pin, "0042", --user, alice-the-admin]
    env:
      API_TOKEN: "alice-the-admin"   # the token
      N: 1
"""


def test_the_experiment_text_is_hidden_in_place() -> None:
    secrets = find_secrets(TEXT, {"secret_env": ["SERVICE_PIN"]})
    assert set(secrets.values) == {"0042", "alice-the-admin"}
    out = redact_experiment_text(TEXT, secrets)
    doc = yaml.safe_load(out)
    assert doc["settings"]["env"] == {"SERVICE_PIN": SECRET_MARKER, "LANG": "C"}
    assert doc["workloads"][0]["env"] == {"API_TOKEN": SECRET_MARKER, "N": 1}
    assert "# the token" in out  # the rest of the text as written
    # a value of 4+ characters is hidden wherever it occurs (here: the command)
    assert doc["workloads"][0]["command"] == [
        "run",
        "--pin",
        SECRET_MARKER,
        "--user",
        SECRET_MARKER,
    ]


def test_short_values_are_hidden_as_env_values_only() -> None:
    secrets = Secrets((), ("abc",))
    assert secrets.scrub("the abc of it") == "the abc of it"
    assert secrets.env({"API_KEY": "abc", "N": "abc"}) == {"API_KEY": SECRET_MARKER, "N": "abc"}


def test_deep_hides_env_and_variables_mappings_and_scrubs_strings() -> None:
    secrets = Secrets((), ("hunter2-long",))
    doc = {
        "environment": {"variables": {"CI_TOKEN": "x", "HOME": "/root"}},
        "env": {"DB_PASSWORD": None},
        "message": ["ran with hunter2-long"],
        "n": 3,
    }
    assert secrets.deep(doc) == {
        "environment": {"variables": {"CI_TOKEN": SECRET_MARKER, "HOME": "/root"}},
        "env": {"DB_PASSWORD": None},
        "message": [f"ran with {SECRET_MARKER}"],
        "n": 3,
    }
