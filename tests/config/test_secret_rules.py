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


@pytest.mark.parametrize(
    "settings",
    [{"secret_env": "SERVICE_PIN"}, {"secret_env": None}, {"secret_env": {"SERVICE_PIN": 1}}],
)
def test_a_stored_secret_env_that_is_no_list_lists_nothing(settings: dict[str, object]) -> None:
    secrets = find_secrets("name: x\n", {**settings, "env": {"SERVICE_PIN": "0042"}})
    assert secrets.names == ()
    assert secrets.values == ()  # SERVICE_PIN has no secret word in it


def test_the_stored_settings_env_and_a_tuple_secret_env_count() -> None:
    secrets = find_secrets("name: x\n", {"secret_env": ("PIN",), "env": {"PIN": "1234"}})
    assert secrets.names == ("PIN",)
    assert secrets.values == ("1234",)


@pytest.mark.parametrize(
    "text",
    [
        "[1, 2]\n",
        "settings: [env]\nworkloads: {env: {API_TOKEN: abcdef}}\n",
        "settings: {env: [API_TOKEN]}\nworkloads: [7, {env: null}, {name: w}]\n",
        "name: [unclosed\n",
    ],
)
def test_experiment_text_of_another_shape_holds_no_secret(text: str) -> None:
    assert find_secrets(text, {"env": "API_TOKEN=abcdef"}).values == ()


def test_each_workload_env_of_a_list_counts() -> None:
    text = "workloads:\n  - 3\n  - env: {API_TOKEN: first-token}\n  - env: {DB_PASSWORD: pw-2nd}\n"
    assert find_secrets(text, {}).values == ("first-token", "pw-2nd")
