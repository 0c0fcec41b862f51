"""What a campaign measured: runner/machine/revision.py against a real git repository, the
labels and commits read back with git itself."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from benchrun.runner.machine.revision import Revision, detect_revision
from tests.other_user import OTHER_UID, needs_root

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                         env=env, check=True)  # fmt: skip
    return out.stdout.strip()


def make_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q")
    (path / "prog.py").write_text("print(1)\n")
    git(path, "add", "prog.py")
    git(path, "commit", "-q", "-m", "first")
    git(path, "tag", "-a", "v1.0", "-m", "release 1.0")  # describe reads annotated tags
    return path


def test_the_label_is_git_describe_and_the_commit_and_date_are_heads(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    rev = detect_revision(None, repo, tmp_path)
    assert rev is not None
    assert (rev.label, rev.source) == ("v1.0", "git")
    assert rev.commit == git(repo, "rev-parse", "HEAD")
    assert rev.date == git(repo, "show", "-s", "--format=%cI", "HEAD")
    assert rev.repository == str(repo.resolve())
    (repo / "prog.py").write_text("print(2)\n")
    assert detect_revision(None, repo, tmp_path).label == "v1.0-dirty"  # type: ignore[union-attr]
    git(repo, "commit", "-q", "-am", "second")
    later = detect_revision(None, None, repo)  # the working directory when no repository
    assert later is not None
    assert later.label == git(repo, "describe", "--always", "--dirty")
    assert later.label.startswith("v1.0-1-g")


def test_a_given_label_is_kept_and_resolved_when_git_knows_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "prog.py").write_text("print(2)\n")
    git(repo, "commit", "-q", "-am", "second")
    rev = detect_revision("v1.0", repo, tmp_path)
    assert rev == Revision("v1.0", first, git(repo, "show", "-s", "--format=%cI", first),
                           str(repo.resolve()), "flag")  # fmt: skip
    unknown = detect_revision("nightly-7", repo, tmp_path)
    assert (
        unknown is not None and unknown.commit is None and "not a revision" in (unknown.note or "")
    )
    outside = detect_revision("r01", None, tmp_path)  # tmp_path is no checkout
    assert outside == Revision("r01", source="flag", note="no git checkout to resolve it in")
    assert detect_revision(None, None, tmp_path) is None


def test_the_record_round_trips_and_refuses_other_shapes() -> None:
    rev = Revision("v2", "a" * 40, "2026-11-20T10:00:00+00:00", "/src", "flag")
    assert Revision.from_dict(rev.to_dict()) == rev
    assert Revision.from_dict(None) is None and Revision.from_dict({"label": 3}) is None
    assert rev.describe() == "v2 (commit aaaaaaaaaaaa, 2026-11-20)"


def test_a_repository_configuration_runs_nothing(tmp_path: Path) -> None:
    """core.fsmonitor names a command git runs on status-like commands; the repository's
    configuration is the measured program's, not benchrun's, so it must not run."""
    repo = make_repo(tmp_path / "repo")
    marker = tmp_path / "ran"
    git(repo, "config", "core.fsmonitor", f"touch {marker}; false")
    (repo / "prog.py").write_text("print(3)\n")
    rev = detect_revision(None, repo, tmp_path)
    assert rev is not None and rev.label == "v1.0-dirty"
    assert not marker.exists()


@needs_root
def test_another_users_repository_is_not_read_as_root(tmp_path: Path) -> None:
    """git's safe.directory rule: root does not read a checkout another user owns (its
    configuration could run commands), so the campaign stays untagged."""
    repo = make_repo(tmp_path / "repo")
    for p in [repo, *repo.rglob("*")]:
        os.lchown(p, OTHER_UID, OTHER_UID)
    assert detect_revision(None, repo, tmp_path) is None
    given = detect_revision("v1.0", repo, tmp_path)
    assert given is not None and given.commit is None and "git checkout" in (given.note or "")
