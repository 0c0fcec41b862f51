"""Strings a program is started with: what ``execve`` can pass, checked when the file is read.

A workload's command, its hooks' commands and its ``env`` reach the kernel as C strings
(``execve(path, argv, envp)``): a NUL byte ends one early, so Python refuses the call
("embedded null byte") and every round of the workload would fail, after setup had run and
with a campaign already stored. Text that cannot be encoded as bytes at all (a lone
surrogate such as ``"\\ud800"`` written as a YAML escape) fails the same way. Both are
refused here, when the experiment is validated (``benchrun validate``, ``run``, ``submit``),
with one line naming the workload and the key. The checks run on the strings after the
matrix and ``params`` placeholders are filled, so a NUL arriving through a matrix value
is caught too. docs/security.md, docs/limits.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from benchrun.runner.format import printable

#: a key path inside the experiment file, as runner/config/yamlsource.py writes it
PathT = tuple[str | int, ...]


def unpassable(text: str) -> str | None:
    """Why ``text`` cannot be passed to a program by ``execve`` (an argument, a variable's
    name or value), or None when it can.

    Examples
    --------
    >>> unpassable("a\\x00b")
    'holds a NUL character (\\\\x00), which ends a C string: execve cannot pass it'
    >>> unpassable("plain") is None
    True
    """
    if "\x00" in text:
        return "holds a NUL character (\\x00), which ends a C string: execve cannot pass it"
    try:
        os.fsencode(text)
    except UnicodeEncodeError as exc:
        bad = printable(text[exc.start : exc.end])
        return f"holds {bad}, which cannot be encoded as bytes for execve (a lone surrogate)"
    return None


def execve_problems(
    workload: str,
    command: tuple[PathT, Sequence[str]],
    env: tuple[PathT, Mapping[str, str]],
    hooks: Sequence[tuple[str, PathT, Sequence[str], bool]] = (),
    shell: bool = False,
) -> list[tuple[PathT, str]]:
    """Every string of one workload that ``execve`` cannot pass, as (key path, message).

    Parameters
    ----------
    workload : str
        The workload's name (after the matrix), named in each message.
    command : (path, argv)
        The command's key path and its arguments; with ``shell`` the path is the command's
        own (one string), else argument ``i`` is at ``path + (i,)``.
    env : (path, mapping)
        The ``env`` key's path and the variables (filled).
    hooks : sequence of (kind, path, argv, shell)
        The setup, prepare and cleanup commands, likewise.
    shell : bool
        The command is one string run by ``/bin/sh -c``.
    """
    who = f"workload '{printable(workload)}'"
    out: list[tuple[PathT, str]] = []

    def argv(kind: str, path: PathT, parts: Sequence[str], one: bool) -> None:
        for i, part in enumerate(parts):
            why = unpassable(part)
            if why is not None:
                if one:  # one string for /bin/sh -c
                    label = kind if kind == "command" else f"{kind} command"
                    out.append((path, f"{who}: the {label} {why}; remove it"))
                else:
                    out.append((path + (i,), f"{who}: {kind} argument {i} {why}; remove it"))

    argv("command", command[0], command[1], shell)
    for kind, path, parts, one in hooks:
        argv(kind, path, parts, one)
    return out + env_problems(env[0], env[1], who)


def env_problems(path: PathT, env: Mapping[str, str], who: str) -> list[tuple[PathT, str]]:
    """Every variable of ``env`` (at key ``path``) whose name or value ``execve`` cannot
    pass, as (key path, message); ``who`` starts each message ("workload 'a'", "settings")."""
    out: list[tuple[PathT, str]] = []
    for name, value in env.items():
        why = unpassable(name)
        if why is not None:
            out.append((path, f"{who}: env variable name '{printable(name)}' {why}"))
            continue
        why = unpassable(value)
        if why is not None:
            out.append((path + (name,), f"{who}: env {name}: the value {why}; remove it"))
    return out
