"""Revisions of the measured program's repository and a git worktree for each
(``benchrun sweep`` and ``benchrun bisect``, docs/history.md).

A range ``A..B`` is ``git rev-list --reverse A..B`` (oldest first); a list of revisions is
resolved one by one. Each revision is checked out, detached, in a worktree of its own under
a cache directory inside the campaign directory (``<output>/<name>/.worktrees/<short>``):
a clean checkout per revision, so the build of one revision cannot leak into the next. A
worktree left by an interrupted run is reused when it still holds its revision, else
removed and made again. Git runs with ``core.fsmonitor`` and hooks off
(runner/machine/revision.py), so the repository's configuration runs no command, and
under a timeout; its refusals become one-line :class:`UserError` (exit 2).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from benchrun.runner.errors import UserError
from benchrun.runner.machine.revision import SAFE_GIT_OPTIONS

#: seconds a git command may take (a worktree of a large repository takes a while)
GIT_TIMEOUT = 600.0

#: the cache directory of the worktrees, inside the campaign directory
WORKTREES = ".worktrees"


@dataclass(frozen=True)
class Commit:
    """One revision: the full ``commit`` hash, its ``short`` form (``git rev-parse
    --short``), the committer ``date`` (ISO 8601) and the ``subject`` line."""

    commit: str
    short: str
    date: str
    subject: str

    def to_dict(self) -> dict[str, str]:
        """The JSON record of the revision."""
        return {"commit": self.commit, "short": self.short, "date": self.date,
                "subject": self.subject}  # fmt: skip


def git(folder: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``git -C folder ARGS`` with the safe options; with ``check``, a failure is a
    :class:`UserError` quoting git's first line."""
    try:
        proc = subprocess.run(
            ["git", *SAFE_GIT_OPTIONS, "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise UserError("git is not installed (benchrun sweep and bisect need it)") from None
    except subprocess.TimeoutExpired:
        raise UserError(f"git {' '.join(args)} in {folder} took over {GIT_TIMEOUT:g} s") from None
    if check and proc.returncode != 0:
        said = (proc.stderr.strip().splitlines() or ["failed"])[0]
        raise UserError(f"git {' '.join(args)} in {folder}: {said}")
    return proc


def repository_top(path: Path) -> Path:
    """The top directory of the git repository ``path`` names.

    Raises
    ------
    UserError
        ``path`` is not a directory, or not in a git repository git will read.
    """
    if not path.is_dir():
        raise UserError(f"--repo {path}: not a directory; give the program's git checkout")
    proc = git(path, "rev-parse", "--show-toplevel", check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise UserError(f"--repo {path}: not a git repository (or one git refuses to read)")
    return Path(proc.stdout.strip())


def describe_commit(top: Path, commit: str) -> Commit:
    """The :class:`Commit` record of the full hash ``commit``."""
    out = git(top, "show", "-s", "--no-show-signature", "--format=%h%x00%cI%x00%s", commit)
    short, date, subject = (out.stdout.rstrip("\n").split("\x00") + ["", ""])[:3]
    return Commit(commit, short, date, subject)


def resolve(top: Path, rev: str) -> Commit:
    """The commit ``rev`` names (a hash, tag, branch, ``HEAD~3``).

    Raises
    ------
    UserError
        git knows no commit of that name.
    """
    if not rev or rev.startswith("-"):
        raise UserError(f"{rev!r}: not a revision of {top}")
    proc = git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}",
               check=False)  # fmt: skip
    if proc.returncode != 0 or not proc.stdout.strip():
        raise UserError(f"{rev}: not a revision of {top}")
    return describe_commit(top, proc.stdout.strip())


def revisions(top: Path, specs: list[str]) -> list[Commit]:
    """The revisions ``specs`` name, in the order they are measured: a range ``A..B`` as
    ``git rev-list --reverse A..B`` (oldest first), other words one revision each, in the
    order given; a revision named twice is measured once.

    Raises
    ------
    UserError
        A word git cannot resolve, or a range without commits.
    """
    out: list[Commit] = []
    for spec in specs:
        if ".." in spec:
            a, _, b = spec.partition("..")
            if spec.count("..") != 1 or b.startswith("."):
                raise UserError(f"{spec}: expected a range A..B (git's two dots)")
            ends = [resolve(top, x or "HEAD").commit for x in (a, b)]
            listed = git(top, "rev-list", "--reverse", f"{ends[0]}..{ends[1]}").stdout.split()
            if not listed:
                raise UserError(
                    f"{spec}: no commits in the range (git rev-list {spec} lists none: is "
                    f"{b or 'HEAD'} a descendant of {a}?)"
                )
            out.extend(describe_commit(top, c) for c in listed)
        else:
            out.append(resolve(top, spec))
    unique: dict[str, Commit] = {}
    for c in out:
        unique.setdefault(c.commit, c)
    return list(unique.values())


def is_ancestor(top: Path, older: str, newer: str) -> bool:
    """``older`` is an ancestor of ``newer`` (``git merge-base --is-ancestor``)."""
    return git(top, "merge-base", "--is-ancestor", older, newer, check=False).returncode == 0


def between(top: Path, good: str, bad: str) -> list[Commit]:
    """The commits after ``good`` up to ``bad`` that descend from ``good``, oldest first
    (``git log --reverse --topo-order --ancestry-path good..bad``); ``bad`` last."""
    out = git(top, "log", "--no-show-signature", "--reverse", "--topo-order", "--ancestry-path",
              "--format=%H%x00%h%x00%cI%x00%s", f"{good}..{bad}").stdout  # fmt: skip
    return [Commit(*(line.split("\x00") + ["", "", ""])[:4]) for line in out.splitlines() if line]


def worktree(top: Path, cache: Path, rev: Commit) -> Path:
    """A worktree of ``top`` holding ``rev`` (detached) at ``cache/<short>``: the one an
    interrupted run left when it still holds ``rev``, else a new one."""
    path = cache / rev.short
    if path.exists():
        head = git(path, "rev-parse", "--verify", "--quiet", "HEAD", check=False)
        top_here = git(path, "rev-parse", "--show-toplevel", check=False)
        if head.stdout.strip() == rev.commit and top_here.stdout.strip() == str(path.resolve()):
            return path
        remove_worktree(top, path)
    cache.mkdir(parents=True, exist_ok=True, mode=0o700)
    git(top, "worktree", "add", "--detach", "--force", str(path), rev.commit)
    return path


def remove_worktree(top: Path, path: Path) -> None:
    """Remove the worktree at ``path`` (its build products with it) and git's record of
    it; a directory there that is no worktree is deleted (it lies in benchrun's cache)."""
    git(top, "worktree", "remove", "--force", "--force", str(path), check=False)
    if path.exists():
        shutil.rmtree(path, ignore_errors=True)
    git(top, "worktree", "prune", check=False)
