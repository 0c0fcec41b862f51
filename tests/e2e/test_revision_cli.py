"""A campaign knows what it measured (issue 31, item 1): `run --revision`, or git's
describe of settings.repository / the working directory; stored, shown and exported."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from e2e_util import cli, write_experiment

from tests.machine.test_revision import git, make_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def stored_revision(db: Path) -> dict:
    con = sqlite3.connect(db)
    try:
        (meta,) = con.execute("SELECT metadata_json FROM campaign ORDER BY id DESC").fetchone()
    finally:
        con.close()
    return json.loads(meta)["revision"]


def test_a_campaign_is_tagged_with_its_revision(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "prog")
    exp = write_experiment(
        tmp_path,
        f"""
        name: tagged
        output: {tmp_path / "out"}
        settings: {{rounds: 2, warmup_rounds: 0, pin: none, repository: prog}}
        workloads:
          - name: t
            command: ["true"]
        """,
    )
    r = cli("run", str(exp), "-q")
    assert r.returncode == 0, r.stderr
    db = tmp_path / "out" / "tagged" / "benchrun.db"
    rev = stored_revision(db)
    assert rev["label"] == "v1.0" and rev["commit"] == git(repo, "rev-parse", "HEAD")
    shown = cli("show", str(db.parent))
    assert "revision: v1.0 (" in shown.stdout
    doc = json.loads(cli("show", str(db.parent), "--json").stdout)
    assert doc["revision"]["label"] == "v1.0"
    out = tmp_path / "e.json"
    assert cli("export", str(db.parent), "-o", str(out)).returncode == 0
    assert json.loads(out.read_text())["campaign"]["metadata"]["revision"]["label"] == "v1.0"
    # --revision names it; a resume cannot retag it
    r = cli("run", str(exp), "-q", "--new", "--revision", "r07")
    assert r.returncode == 0, r.stderr
    assert stored_revision(db)["label"] == "r07" and stored_revision(db)["source"] == "flag"
    r = cli("run", str(exp), "--resume", "--revision", "r08")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "a resumed campaign keeps the revision" in r.stderr


def test_a_repository_that_is_no_directory_is_refused_with_its_line(tmp_path: Path) -> None:
    exp = write_experiment(
        tmp_path,
        """
        name: x
        settings: {rounds: 1, repository: nowhere}
        workloads:
          - name: t
            command: ["true"]
        """,
    )
    r = cli("validate", str(exp))
    assert r.returncode == 2 and "repository" in r.stderr and "not a directory" in r.stderr
