"""The revision a campaign measured: what ``--revision`` names, or what git says of the
measured program's checkout (docs/history.md).

A campaign is tagged once, when it is created: ``benchrun run EXP --revision REV`` takes
REV as the label (resolved to a commit and its date when the repository knows it); without
the flag the label is ``git describe --always --dirty`` of ``settings.repository``, else of
the current directory when it is a git checkout. Git runs with ``core.fsmonitor`` and
hooks off (a repository's configuration must not run commands for benchrun), under a
timeout, and its refusals (not a repository, another user's repository: git's own
``safe.directory`` rule) leave the campaign untagged with a note.
"""

from __future__ import annotations

import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

#: longest revision label kept (a branch name or a describe string is far shorter)
MAX_LABEL = 200

#: git options that keep a repository's configuration from running commands
SAFE_GIT_OPTIONS = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")


#: the optional text fields of a stored revision
_TEXT_FIELDS = ("commit", "date", "repository", "note")


@dataclass(frozen=True)
class Revision:
    """What one campaign measured.

    ``label``: how outputs name it (the flag's text, or ``git describe --always --dirty``);
    ``commit``: the full commit hash when known; ``date``: the commit's date (ISO 8601,
    committer date) when known; ``repository``: the checkout's top directory when git was
    asked; ``source``: ``"flag"`` or ``"git"``; ``note``: why commit or date are missing.
    """

    label: str
    commit: str | None = None
    date: str | None = None
    repository: str | None = None
    source: str = "git"
    note: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        """The JSON record stored in the campaign's metadata (key ``revision``)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, doc: object) -> Revision | None:
        """The record :meth:`to_dict` made (None for anything else: an old campaign); a
        field that is not a string is None, a source other than ``flag`` is ``git``."""
        match doc:
            case {"label": str(label), **rest}:
                pass
            case _:
                return None
        text = {k: v for k, v in rest.items() if k in _TEXT_FIELDS and isinstance(v, str)}
        match rest:
            case {"source": "flag"}:
                source = "flag"
            case _:
                source = "git"
        return cls(label[:MAX_LABEL], source=source, **text)

    def describe(self) -> str:
        """``v1.2-3-gabc1234 (commit abc1234…, 2026-11-20)`` for a line of output."""
        facts = []
        if self.commit and not self.label.startswith(self.commit[:7]):
            facts.append(f"commit {self.commit[:12]}")
        if self.date:
            facts.append(self.date[:10])
        return f"{self.label} ({', '.join(facts)})" if facts else self.label


def _git(folder: Path, *args: str, timeout: float) -> str | None:
    """stdout of ``git -C folder ARGS`` (stripped) or None when git fails or is missing."""
    try:
        proc = subprocess.run(
            ["git", *SAFE_GIT_OPTIONS, "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = proc.stdout.strip()
    return out if proc.returncode == 0 and out else None


def _checkout(folder: Path, timeout: float) -> str | None:
    """The top directory of the git checkout holding ``folder``, or None."""
    if not folder.is_dir():
        return None
    return _git(folder, "rev-parse", "--show-toplevel", timeout=timeout)


def detect_revision(
    label: str | None,
    repository: Path | None,
    cwd: Path,
    timeout: float = 5.0,
) -> Revision | None:
    """The revision a new campaign measures.

    Parameters
    ----------
    label : str or None
        ``--revision``: taken as the label as given; resolved to a commit and its date in
        the repository when git knows it (a tag, a branch, a hash).
    repository : Path or None
        ``settings.repository``: the measured program's checkout; None: ``cwd`` when it is
        a git checkout.
    cwd : Path
        The directory ``benchrun run`` was started in.
    timeout : float
        Seconds each git command may take.

    Returns
    -------
    Revision or None
        None when there is no label and no checkout to ask.
    """
    folder = repository if repository is not None else cwd
    top = _checkout(folder, timeout)
    if label is not None:
        label = label.strip()[:MAX_LABEL]
        if top is None:
            why = "no git checkout to resolve it in" if repository is None else (
                f"{repository} is not a git checkout git will read"
            )  # fmt: skip
            return Revision(label, source="flag", note=why)
        commit = _git(folder, "rev-parse", "--verify", "--quiet", f"{label}^{{commit}}",
                      timeout=timeout)  # fmt: skip
        if commit is None:
            return Revision(label, repository=top, source="flag",
                            note=f"{label!r} is not a revision of {top}")  # fmt: skip
        date = _git(folder, "show", "-s", "--format=%cI", commit, timeout=timeout)
        return Revision(label, commit, date, top, "flag")
    if top is None:
        return None
    described = _git(folder, "describe", "--always", "--dirty", timeout=timeout)
    commit = _git(folder, "rev-parse", "--verify", "--quiet", "HEAD", timeout=timeout)
    if described is None or commit is None:
        return Revision("unknown", repository=top, note="the checkout has no commit yet")
    date = _git(folder, "show", "-s", "--format=%cI", "HEAD", timeout=timeout)
    return Revision(described[:MAX_LABEL], commit, date, top, "git")
