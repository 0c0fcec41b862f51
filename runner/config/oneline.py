"""The one-line form, ``benchrun run -c CMD -c CMD ...``: an experiment without a file.

The options become an ordinary experiment file's text (:func:`oneline_text`), which is
validated by the loader like any file and stored with the campaign (so ``--resume``,
``show``, ``report`` and ``compare`` see an ordinary campaign; ``--print-config`` prints
it). Rules (docs/oneline.md):

- each ``-c`` command is one workload, run by ``/bin/sh -c`` like hyperfine's (``-N``: split
  like a shell would and run without one); it runs in the current directory, written as
  the workload's absolute ``cwd:``;
- ``-n`` names the commands in order (default: the command itself, whitespace collapsed,
  shortened to :data:`NAME_CHARS` characters);
- ``-L NAME v1,v2`` is a matrix factor; ``{NAME}`` in a command (or hook) is replaced, as
  is ``{round}`` (the round's number, in commands and ``--prepare``), and every other
  brace is literal (``${HOME}``, ``awk '{print $1}'``), as in hyperfine;
- ``--setup/--prepare/--cleanup`` given once apply to every command, given once per ``-c``
  to each in order; they always run through ``/bin/sh -c``;
- the experiment's name is ``--experiment-name``, else made from the commands and a hash
  of everything that defines the measurement (:func:`derived_name`), so the same
  options name the same campaign directory and ``--resume`` finds it;
- ``--set``, ``-o`` and ``--baseline`` land in ``settings:`` and ``output:``;
- ``executor`` (``slurm`` or a mapping, docs/slurm.md) lands in ``executor:``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from benchrun.runner.config.experiment import DEFAULT_OUTPUT, HOOK_KINDS, Experiment
from benchrun.runner.config.loader import parse_experiment, settings_from_overrides
from benchrun.runner.config.yamlsource import SourceError
from benchrun.runner.errors import UserError

#: longest default workload name (the command itself, shortened)
NAME_CHARS = 48
#: how errors in the generated text name it (they are rewritten to name the option)
DISPLAY = "<command line>"

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SLUG_DROP = re.compile(r"[^A-Za-z0-9._+=-]+")


@dataclass(frozen=True)
class OneLine:
    """The options of the one-line form, as given (see the module docstring).

    ``params`` holds each ``-L NAME VALUES`` pair with VALUES still comma-separated;
    ``setup``/``prepare``/``cleanup`` each hold one command for every workload or one
    per command; ``shell`` is false with ``-N``; ``baseline`` is ``--baseline`` as given.
    """

    commands: tuple[str, ...]
    names: tuple[str, ...] = ()
    params: tuple[tuple[str, str], ...] = ()
    setup: tuple[str, ...] = ()
    prepare: tuple[str, ...] = ()
    cleanup: tuple[str, ...] = ()
    shell: bool = True
    experiment_name: str | None = None
    output: str | None = None
    overrides: tuple[str, ...] = ()
    baseline: str | None = None
    description: str = ""
    #: ``executor:`` of the experiment: None (local), ``"slurm"``, or the mapping
    #: ``{"kind": "slurm", "partition": ...}`` (docs/slurm.md)
    executor: str | dict[str, Any] | None = None

    def hooks(self, kind: str) -> tuple[str, ...]:
        """The ``--setup``/``--prepare``/``--cleanup`` commands given."""
        hooks: tuple[str, ...] = getattr(self, kind)
        return hooks


def parse_params(params: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """``-L NAME v1,v2,...`` pairs as the matrix ``{NAME: [v1, v2, ...]}`` (values stay
    strings, as typed: ``1.10`` is not ``1.1``); a malformed pair is a UserError."""
    matrix: dict[str, list[str]] = {}
    for name, raw in params:
        shown = f"-L {name} {raw}"
        if name in matrix:
            raise UserError(f"{shown}: parameter {name!r} given twice; give each -L NAME once")
        values = raw.split(",")
        if any(not v.strip() for v in values):
            raise UserError(
                f"{shown}: an empty value; give the values separated by commas, e.g. -L "
                f"{name} 1,2,3"
            )
        seen: set[str] = set()
        for v in values:
            if v in seen:
                raise UserError(f"{shown}: value {v!r} given twice")
            seen.add(v)
        matrix[name] = values
    return matrix


def _spread(kind: str, given: tuple[str, ...], count: int) -> list[str | None]:
    """One hook command per workload: none, the same for all, or one each in order."""
    if not given:
        return [None] * count
    if len(given) == 1:
        return [given[0]] * count
    if len(given) == count:
        return list(given)
    raise UserError(
        f"--{kind} given {len(given)} times for {count} commands (-c); give it once (for "
        "every command) or once per -c, in order"
    )


def escape_braces(text: str, names: Sequence[str]) -> str:
    """``text`` with every brace doubled except around ``{NAME}`` of a name in ``names``
    and ``{round}``, so that only the ``-L`` parameters and the round number are
    placeholders."""
    names = [*names, "round"]
    out: list[str] = []
    end = 0
    for m in _PLACEHOLDER.finditer(text):
        out.append(_double(text[end : m.start()]))
        out.append(m.group(0) if m.group(1) in names else _double(m.group(0)))
        end = m.end()
    out.append(_double(text[end:]))
    return "".join(out)


def _double(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def default_names(commands: Sequence[str], names: Sequence[str]) -> list[str]:
    """The workload names: ``names`` in order, then each remaining command itself
    (whitespace collapsed, at most :data:`NAME_CHARS` characters); a repeated default
    name gets `` (N)``, N the command's position from 1."""
    if len(names) > len(commands):
        raise UserError(
            f"-n: {len(names)} names for {len(commands)} command"
            f"{'s' if len(commands) > 1 else ''} (-c); give at most one -n "
            "per -c, in the order of the commands"
        )
    for i, name in enumerate(names):
        if name in names[:i]:
            raise UserError(f"-n {name}: the name is given twice; workload names are unique")
    out = list(names)
    for i, command in enumerate(commands[len(names) :], start=len(names)):
        text = " ".join(command.split()) or f"command {i + 1}"
        if len(text) > NAME_CHARS:
            text = text[: NAME_CHARS - 3] + "..."
        if text in out:
            text = f"{text} ({i + 1})"
        out.append(text)
    return out


def derived_name(spec: OneLine) -> str:
    """The experiment name of the one-line form without ``--experiment-name``: the commands
    as a slug (``sleep-0.1-vs-sleep-0.2``) and 8 hex digits of a SHA-256 over the commands,
    names, parameters, hooks and shell choice; budgets and other settings are left out,
    so ``--resume --set max_time=1h`` finds the same campaign."""
    parts = []
    for command in spec.commands:
        slug = _SLUG_DROP.sub("-", command).strip("-.")[:24].strip("-.")
        parts.append(slug or "cmd")
    stem = "-vs-".join(parts)[:64].strip("-.") or "oneline"
    doc = {
        "commands": list(spec.commands),
        "names": list(spec.names),
        "params": [list(p) for p in spec.params],
        "hooks": {k: list(spec.hooks(k)) for k in HOOK_KINDS},
        "shell": spec.shell,
    }
    digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:8]
    return f"{stem}-{digest}"


def oneline_document(spec: OneLine, cwd: Path) -> dict[str, Any]:
    """The experiment file of ``spec`` as a YAML-ready mapping (see :func:`oneline_text`)."""
    if not spec.commands:
        raise UserError("no command; give one or more with -c CMD")
    matrix = parse_params(spec.params)
    names = default_names(spec.commands, spec.names)
    hooks = {k: _spread(k, spec.hooks(k), len(spec.commands)) for k in HOOK_KINDS}
    settings = settings_from_overrides(spec.overrides) if spec.overrides else {}
    if spec.baseline is not None:
        where = Path(spec.baseline).expanduser()
        if not where.exists():
            raise UserError(
                f"--baseline {spec.baseline}: not found; give a campaign directory, its "
                "benchrun.db, or a JSON summary"
            )
        settings["baseline"] = str(where.resolve())
    workloads = []
    for i, command in enumerate(spec.commands):
        workload: dict[str, Any] = {
            "name": names[i],
            "command": escape_braces(command, list(matrix)),
        }
        if spec.shell:
            workload["shell"] = True
        workload["cwd"] = str(cwd)
        for kind in HOOK_KINDS:
            hook = hooks[kind][i]
            if hook is not None:
                workload[kind] = escape_braces(hook, list(matrix))
        workloads.append(workload)
    doc: dict[str, Any] = {"name": spec.experiment_name or derived_name(spec)}
    if spec.description:
        doc["description"] = spec.description
    doc["output"] = spec.output or DEFAULT_OUTPUT
    if settings:
        doc["settings"] = settings
    doc["workloads"] = workloads
    if matrix:
        doc["matrix"] = matrix
    if spec.executor is not None:
        doc["executor"] = spec.executor
    return doc


def oneline_text(spec: OneLine, cwd: Path) -> str:
    """The experiment file the one-line options stand for, as YAML text: what is stored
    with the campaign and what ``--print-config`` prints (``benchrun run`` runs it the
    same way)."""
    header = (
        "# benchrun experiment made by the one-line form of `benchrun run` (-c); run it "
        "with\n# `benchrun run FILE` (docs/oneline.md)\n"
    )
    body = yaml.safe_dump(
        oneline_document(spec, cwd),
        sort_keys=False,
        allow_unicode=True,
        width=1000,
        default_flow_style=False,
    )
    return header + body


def oneline_experiment(spec: OneLine, cwd: Path, check_commands: bool = True) -> Experiment:
    """The :class:`Experiment` of the one-line options (its ``source_text`` is
    :func:`oneline_text`); an error in it names the option it came from (``-c 'sleep x'``,
    ``-L n``, ``--set rounds``) rather than a line of the generated text."""
    text = oneline_text(spec, cwd)
    try:
        return parse_experiment(
            text, display=DISPLAY, base_dir=cwd, source_path=None, check_commands=check_commands
        )
    except SourceError as exc:
        raise UserError(_option_error(spec, exc)) from None


def _option_error(spec: OneLine, exc: SourceError) -> str:
    """The loader's error about the generated text, naming the option instead."""
    path = exc.error.path
    message = exc.error.message
    names = default_names(spec.commands, spec.names)
    option = "the one-line options"
    if path[:1] == ("name",):
        option = f"--experiment-name {spec.experiment_name}"
    elif path[:1] == ("output",):
        option = f"-o {spec.output}"
    elif path[:1] == ("settings",) and len(path) > 1:
        option = "--baseline" if path[1] == "baseline" else f"--set {path[1]}"
    elif path[:1] == ("executor",):
        option = "--executor"
    elif path[:1] == ("matrix",) and len(path) > 1:
        option = f"-L {path[1]}"
    elif path[:1] == ("workloads",) and len(path) > 1 and isinstance(path[1], int):
        i = path[1]
        key = path[2] if len(path) > 2 else "command"
        if key == "name" and i < len(spec.names):
            option = f"-n {names[i]!r}"
        elif key in HOOK_KINDS:
            given = spec.hooks(str(key))
            option = f"--{key} {(given[i] if len(given) > 1 else given[0])!r}"
        else:
            option = f"-c {spec.commands[i]!r}"
    return f"{option}: {message}"
