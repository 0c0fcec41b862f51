"""Issue 29, item 4 (secrets): secret ``env:`` values reach the workload and no output.

A real campaign (real processes) whose workloads get an API token, a matrix of
passwords (``{n}`` filled in) and a value ``settings.secret_env`` names, records an
inherited CI token (``record_env``), and has hooks and a failing workload that print the
token. The workload's readings prove it received the token (it prints its length, and the
store read with plain sqlite3 holds that length); every output a user sees (``export``
JSON and CSV, ``report`` in each format, ``show``, ``show --json``, ``show --failures``)
must hold none of the secret strings, and the JSON export must still be read back by
benchrun's own importer. ``--include-secrets`` shows them (so they were in the store).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from e2e_util import cli, query, run_benchrun

from benchrun.runner.config.secrets import (
    SECRET_MARKER,
    WITHHELD_TEXT,
    Secrets,
    redact_experiment_text,
)
from benchrun.runner.importers.detect import load

TOKEN = "tok-7f3a9c1e5d"
PIN = "pin-5551234"
CI_TOKEN = "ci-inherited-secret-777"
SECRETS = (TOKEN, PIN, CI_TOKEN, "pw-1-zzz", "pw-2-zzz", "pw-{n}-zzz")

EXPERIMENT = f"""\
name: sec
output: out
settings:
  adaptive: false
  rounds: 4
  warmup_rounds: 1
  pin: none
  min_round_time: 0
  record_env: [CI_JOB_TOKEN]
  secret_env: [SERVICE_PIN]
  env: {{SERVICE_PIN: "{PIN}", PLAIN_SETTING: visible-value}}
matrix: {{n: [1, 2]}}
workloads:
  - name: tok
    command: [sh, -c, 'echo t=$(printf %s "$API_TOKEN" | wc -c); echo "$API_TOKEN $SERVICE_PIN" >&2']
    readings: {{pattern: 't=([0-9.]+)', unit: ms}}
    setup: echo setup sees $API_TOKEN
    env:
      API_TOKEN: {TOKEN}
      DB_PASSWORD: pw-{{n}}-zzz  # a comment that stays
      OMP_NUM_THREADS: "1"
  - name: leaky
    command: [sh, -c, 'echo "using $API_TOKEN and $DB_PASSWORD"; exit 3']
    env: {{API_TOKEN: '{TOKEN}', DB_PASSWORD: "pw-{{n}}-zzz"}}
"""


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("secrets")
    (root / "sec.yaml").write_text(EXPERIMENT)
    proc = run_benchrun(
        "run", "sec.yaml", "-q", cwd=root, env={"CI_JOB_TOKEN": CI_TOKEN}, timeout=300
    )
    for secret in SECRETS:  # the end of `run` prints the results: no secret either
        assert secret not in proc.stdout + proc.stderr
    db = root / "out" / "sec" / "benchrun.db"
    assert db.is_file(), proc.stderr
    return db.parent


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def test_the_workload_receives_its_secrets(campaign: Path) -> None:
    rows = query(
        campaign / "benchrun.db",
        "SELECT r.value FROM reading r JOIN round o ON o.id = r.round_id "
        "JOIN workload w ON w.id = o.workload_id WHERE w.name LIKE 'tok%' AND o.status = 'ok'",
    )
    assert rows and {v for (v,) in rows} == {float(len(TOKEN))}
    # the store keeps the experiment as written (a resume re-runs it)
    (text,) = query(campaign / "benchrun.db", "SELECT config_text FROM campaign")[0]
    assert TOKEN in text and PIN in text


@pytest.mark.parametrize(
    "argv",
    [
        ("export",),
        ("export", "--format", "csv"),
        ("export", "--what", "results"),
        ("report", "--format", "json", "--out", "-"),
        ("report", "--format", "csv", "--out", "-"),
        ("report", "--format", "md", "--no-plots", "--out", "-"),
        ("report", "--format", "html", "--no-plots", "--out", "-"),
        ("show",),
        ("show", "--json"),
        ("show", "--failures"),
    ],
    ids=lambda a: " ".join(a),
)
def test_no_output_shows_a_secret(campaign: Path, argv: tuple[str, ...]) -> None:
    r = cli(*argv[:1], str(campaign), *argv[1:], env={"COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    assert len(r.stdout) > 200
    assert _leaks(r.stdout + r.stderr) == []


def test_the_export_marks_secrets_and_is_read_back(campaign: Path, tmp_path: Path) -> None:
    out = tmp_path / "sec.json"
    assert cli("export", str(campaign), "-o", str(out)).returncode == 0
    doc = json.loads(out.read_text())
    c = doc["campaign"]
    assert c["settings"]["env"] == {"SERVICE_PIN": SECRET_MARKER, "PLAIN_SETTING": "visible-value"}
    assert c["metadata"]["environment"]["variables"]["CI_JOB_TOKEN"] == SECRET_MARKER
    text = c["config_text"]
    assert "# a comment that stays" in text  # hidden in place, not rewritten
    parsed = yaml.safe_load(text)
    assert parsed["workloads"][0]["env"] == {
        "API_TOKEN": SECRET_MARKER,
        "DB_PASSWORD": SECRET_MARKER,
        "OMP_NUM_THREADS": "1",
    }
    assert parsed["workloads"][1]["env"]["DB_PASSWORD"] == SECRET_MARKER
    assert [h for h in doc["hooks"] if h["kind"] == "setup"][0]["stdout_tail"].startswith(
        "setup sees " + SECRET_MARKER
    )
    assert len(load(out).groups) >= 2  # benchrun's importer reads it back


def test_include_secrets_shows_them(campaign: Path) -> None:
    r = cli("export", str(campaign), "--include-secrets")
    assert r.returncode == 0, r.stderr
    assert {TOKEN, PIN, CI_TOKEN, "pw-{n}-zzz"} <= set(_leaks(r.stdout))


def test_a_block_scalar_is_hidden_in_place() -> None:
    text = (
        "workloads:\n  - name: w\n    command: [x]\n    env:\n"
        "      API_KEY: |\n        first line\n        second line\n      B: kept\n"
    )
    out = redact_experiment_text(text, Secrets((), ("first line\nsecond line\n",)))
    assert yaml.safe_load(out)["workloads"][0]["env"] == {"API_KEY": SECRET_MARKER, "B": "kept"}
    assert "first line" not in out


def test_a_value_behind_an_anchor_withholds_the_text() -> None:
    # the alias makes the in-place replacement remove the anchor: the text no longer
    # parses, so none of it is shown
    text = (
        "settings:\n  env: {A: &t plain}\n"
        "workloads:\n  - {name: w, command: [x], env: {API_TOKEN: *t}}\n"
    )
    assert redact_experiment_text(text, Secrets((), ("plain",))) == WITHHELD_TEXT
