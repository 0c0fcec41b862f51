"""YAML documents that remember where each key and value was written.

:func:`read_yaml` returns the plain Python data (``yaml.SafeLoader`` semantics) and a
:class:`SourceMap` from key paths such as ``("workloads", 1, "command")`` to line numbers,
so that every validation error can say ``FILE:LINE: workloads[1].command: ...``.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NoReturn

import yaml

from benchrun.runner.errors import UserError
from benchrun.runner.format import printable as format_printable

PathT = tuple[str | int, ...]

#: most values (scalars, lists, mappings) a document may hold once its aliases are
#: expanded: a few kilobytes of nested aliases otherwise expand to billions
MAX_VALUES = 100_000
#: environment variable that raises :data:`MAX_VALUES`
MAX_VALUES_ENV = "BENCHRUN_MAX_CONFIG_VALUES"


def dotted(path: Sequence[str | int]) -> str:
    """``("workloads", 1, "command")`` -> ``"workloads[1].command"``; ``()`` -> ``"top level"``;
    a key holding spaces or control characters is shown quoted: ``env['A B']``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not part.isprintable() or any(c.isspace() for c in part):
            out += f"[{part!r}]"  # a key with a newline or NUL stays on one visible line
        else:
            out += ("." if out else "") + part
    return out or "top level"


def one_line(text: str) -> str:
    """Collapse whitespace (newlines included) so a message fits on one line."""
    return " ".join(str(text).split())


@dataclass(frozen=True)
class ConfigError:
    """One problem of an experiment file: where it is and what is wrong.

    ``file`` is the name shown for the file, ``line`` its 1-based line (None when the
    problem has no place in a file, e.g. a missing file), ``key`` the dotted key path
    (``workloads[1].command``; None for syntax errors), ``message`` what is wrong and
    what is valid; ``path`` the key path as a tuple (for callers that map it elsewhere).
    """

    file: str
    line: int | None
    key: str | None
    message: str
    path: PathT = ()

    def text(self) -> str:
        """``FILE:LINE: key.path: message`` (the one-line form of every config error)."""
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"

    def as_dict(self) -> dict[str, str | int | None]:
        """``{"file", "line", "key", "message"}`` for ``benchrun validate --json``."""
        return {"file": self.file, "line": self.line, "key": self.key, "message": self.message}


class SourceError(UserError):
    """A :class:`UserError` raised at one place of an experiment file (:class:`ConfigError`)."""

    def __init__(self, error: ConfigError) -> None:
        super().__init__(error.text())
        self.error = error


class ConfigErrors(UserError):
    """Several problems of one experiment file, found by a collecting
    :class:`SourceMap`: the message is the first one and how many more there are."""

    def __init__(self, errors: Sequence[ConfigError]) -> None:
        self.errors = tuple(errors)
        more = len(self.errors) - 1
        tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        super().__init__(self.errors[0].text() + tail)

    def lines(self, file: str) -> list[str]:
        """What the CLI prints: one ``benchrun: error: FILE:LINE: key: message`` line per
        problem (unprintable characters escaped), then how many there are in ``file``."""
        out = [f"benchrun: error: {printable(e.text())}" for e in self.errors]
        if len(self.errors) > 1:
            out.append(f"benchrun: {len(self.errors)} problems in {file}")
        return out


def printable(text: str) -> str:
    """``text`` with unprintable characters escaped (``\\x1b``), so each error stays a line."""
    return format_printable(text)


@dataclass
class SourceMap:
    """Line numbers (1-based) of keys and values in one YAML file, by key path.

    With ``collect`` set, :meth:`recover` blocks record the error raised inside them in
    :attr:`errors` and let parsing go on, so that one pass finds every problem
    (``benchrun validate``); without it the first error ends parsing.
    """

    display: str
    key_lines: dict[PathT, int] = field(default_factory=dict)
    value_lines: dict[PathT, int] = field(default_factory=dict)
    collect: bool = False
    errors: list[ConfigError] = field(default_factory=list)
    #: the text of each plain (unquoted) scalar value as written, by path: YAML 1.1 reads
    #: ``1:00:00`` as the integer 3600, and a key such as Slurm's ``time`` needs to know
    #: it was written with colons
    plain_scalars: dict[PathT, str] = field(default_factory=dict)

    def line(self, path: Sequence[str | int], at: str = "key") -> int:
        """Line of the key (``at="key"``, where there is one: list items have none) or of
        the value (``at="value"``) at ``path``; the nearest enclosing path that was written
        when ``path`` itself was not (a missing key). The key line is the default because a
        block mapping or list starts on the line after its key."""
        p: PathT = tuple(path)
        table = self.key_lines if at == "key" else self.value_lines
        while True:
            if p in table:
                return table[p]
            if p in self.value_lines:
                return self.value_lines[p]
            if not p:
                return 1
            p = p[:-1]

    def error(self, path: Sequence[str | int], message: str, at: str = "key") -> NoReturn:
        """Raise the one-line :class:`SourceError` ``FILE:LINE: key.path: message``."""
        p = tuple(path)
        raise SourceError(
            ConfigError(self.display, self.line(p, at), dotted(p), one_line(message), p)
        )

    def recover(self) -> Recover:
        """A ``with`` block whose :class:`SourceError` is recorded (collecting) or raised."""
        return Recover(self)

    def record(self, error: ConfigError) -> None:
        """Keep ``error`` unless the same problem at the same place is already kept (a
        workload multiplied over a matrix repeats its errors)."""
        if not any(
            (e.line, e.key, e.message) == (error.line, error.key, error.message)
            for e in self.errors
        ):
            self.errors.append(error)

    def raise_collected(self) -> None:
        """Raise :class:`ConfigErrors` with every recorded error, ordered by line."""
        if self.errors:
            raise ConfigErrors(sorted(self.errors, key=lambda e: e.line or 0))


class Recover:
    """See :meth:`SourceMap.recover`: ``value = default; with smap.recover(): value = ...``."""

    def __init__(self, smap: SourceMap) -> None:
        self.smap = smap

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> bool:
        if isinstance(exc, SourceError) and self.smap.collect:
            self.smap.record(exc.error)
            return True
        return False


def read_yaml(text: str, display: str, collect: bool = False) -> tuple[object, SourceMap]:
    """Parse one YAML document; return ``(data, source_map)`` (``collect``: see
    :class:`SourceMap`).

    Syntax errors, several documents in one file and duplicate keys in one mapping raise
    :class:`SourceError` naming ``display`` and the line (in a collecting map, every
    duplicate key is recorded instead and the first one kept).
    """
    smap = SourceMap(display, collect=collect)
    try:
        loader = yaml.SafeLoader(text)
    except yaml.reader.ReaderError as exc:
        raise SourceError(_reader_error(text, exc, display)) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None, smap
        _check_size(node, display)
        _check_scalars(node, loader, display)
        _record(node, (), smap)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        what = one_line(" ".join(p for p in (exc.context, exc.problem) if p))
        started = exc.context_mark
        if started is not None and mark is not None and started.line != mark.line:
            what += f" (the construct started on line {started.line + 1})"
        raise SourceError(
            ConfigError(
                display,
                line,
                None,
                f"YAML syntax error: {what}; "
                "check indentation, colons and quoting on this line or the one before",
            )
        ) from None
    except yaml.reader.ReaderError as exc:
        raise SourceError(_reader_error(text, exc, display)) from None
    except RecursionError:
        raise SourceError(
            ConfigError(
                display, 1, None, "YAML nested too deeply to read; an experiment needs a few levels"
            )
        ) from None
    except yaml.YAMLError as exc:  # pragma: no cover - unmarked errors are rare
        raise SourceError(
            ConfigError(display, 1, None, f"YAML error: {one_line(str(exc))}")
        ) from None
    finally:
        loader.dispose()
    return data, smap


def _reader_error(text: str, exc: yaml.reader.ReaderError, display: str) -> ConfigError:
    """``FILE:LINE: character U+0008 is not allowed in YAML ...`` for a non-printable char."""
    line = text.count("\n", 0, max(0, exc.position)) + 1
    return ConfigError(
        display,
        line,
        None,
        f"character U+{exc.character:04X} is not allowed in YAML "
        "(control characters other than tab and newline); remove it",
    )


def env_limit(name: str, default: int, unit: str) -> int:
    """A limit raised through the environment variable ``name`` (a whole number of
    ``unit``, at least 1), else ``default``; a bad value is a UserError."""
    raw = os.environ.get(name, "")
    try:
        return max(1, int(raw)) if raw.strip() else default
    except ValueError:
        raise UserError(f"{name}={raw!r}: expected a whole number of {unit}") from None


def value_limit() -> int:
    """:data:`MAX_VALUES`, or the value of the environment variable :data:`MAX_VALUES_ENV`."""
    return env_limit(MAX_VALUES_ENV, MAX_VALUES, "values")


def _check_size(root: yaml.Node, display: str) -> None:
    """Refuse a document whose alias-expanded tree holds more than :func:`value_limit`
    values, or whose aliases refer to themselves; linear in the number of distinct nodes."""
    limit = value_limit()
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in _children(node))
            if sizes[key] > limit:
                line = node.start_mark.line + 1
                raise SourceError(
                    ConfigError(
                        display,
                        line,
                        None,
                        f"this part of the file expands to more than {limit} values through "
                        "YAML aliases (*name); write the values out, or set "
                        f"{MAX_VALUES_ENV} to raise the limit",
                    )
                )
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise SourceError(
                ConfigError(
                    display,
                    node.start_mark.line + 1,
                    None,
                    "a YAML alias refers to the value that contains it; an experiment "
                    "cannot be infinite",
                )
            )
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in sizes)


#: the YAML tag of an integer scalar (plain ``123``, ``0x7f``, ``1_000`` or ``!!int``)
INT_TAG = "tag:yaml.org,2002:int"
#: scalar tags whose construction can fail on the text (``!!int abc``, a plain
#: ``2020-13-45`` read as a timestamp, ``!!bool maybe``): checked one by one, with a line
CHECKED_TAGS = {
    f"tag:yaml.org,2002:{name}" for name in ("int", "float", "bool", "timestamp", "binary", "null")
}


def int_digit_limit() -> int:
    """The most decimal digits Python converts between an int and text
    (``sys.get_int_max_str_digits``, 4 300 by default; 0: no limit)."""
    get = getattr(sys, "get_int_max_str_digits", None)
    return int(get()) if get is not None else 0


def too_many_digits(display: str, line: int | None, digits: int, limit: int) -> ConfigError:
    """The one line that refuses an integer of more than ``limit`` decimal digits."""
    return ConfigError(
        display,
        line,
        None,
        f"an integer of about {digits} digits; benchrun reads integers of at most {limit} "
        "digits (Python's int limit, PYTHONINTMAXSTRDIGITS); write a smaller value",
    )


def _check_scalars(root: yaml.Node, loader: yaml.SafeLoader, display: str) -> None:
    """Construct each typed scalar on its own, so that one the constructor cannot read is
    a line of the file, not a traceback (issue 29).

    An integer of more than :func:`int_digit_limit` decimal digits: Python refuses to
    convert it between text and int (a ``ValueError`` while the YAML is constructed, or
    later wherever the value is printed in a message); hexadecimal, octal and binary ones
    convert without the limit but could not be printed, so their size is checked too.
    ``!!int abc``, ``!!bool maybe`` and a plain ``2020-13-45`` (a YAML timestamp that is no
    date) fail in the constructor with ValueError or KeyError. Each distinct node is
    visited once (aliases are not expanded); what is constructed here is kept by the
    loader and not constructed again."""
    limit = int_digit_limit()
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(_children(node))
        if not (isinstance(node, yaml.ScalarNode) and node.tag in CHECKED_TAGS):
            continue
        line = node.start_mark.line + 1
        if node.tag == INT_TAG and limit > 0:
            digits = sum(c.isdigit() for c in node.value)
            if digits > limit:
                raise SourceError(too_many_digits(display, line, digits, limit))
        try:
            value = loader.construct_object(node)
        except (ValueError, KeyError, TypeError, OverflowError) as exc:
            kind = node.tag.rsplit(":", 1)[-1]
            shown = node.value if len(node.value) <= 40 else node.value[:37] + "..."
            raise SourceError(
                ConfigError(
                    display,
                    line,
                    None,
                    f"{shown!r} is not a valid YAML {kind} ({one_line(str(exc))[:80]}); "
                    "quote it to make it a string, or correct it",
                )
            ) from None
        if isinstance(value, int) and limit > 0 and abs(value) >= 10**limit:
            shown_digits = int(value.bit_length() * math.log10(2)) + 1
            raise SourceError(too_many_digits(display, line, shown_digits, limit))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _record(node: yaml.Node, path: PathT, smap: SourceMap, depth: int = 0) -> None:
    smap.value_lines.setdefault(path, node.start_mark.line + 1)
    if depth > 50:  # aliases can make cycles; nothing sane nests this deep
        return
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue  # a non-scalar key is rejected later, by type
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in seen and key != "<<":
                error = ConfigError(
                    smap.display,
                    line,
                    dotted(path + (key,)),
                    f"duplicate key (first written on line {seen[key]}); keep only one",
                    path + (key,),
                )
                if not smap.collect:
                    raise SourceError(error)
                smap.record(error)
                continue
            seen[key] = line
            smap.key_lines.setdefault(path + (key,), line)
            _record(value_node, path + (key,), smap, depth + 1)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _record(item, path + (index,), smap, depth + 1)
    elif isinstance(node, yaml.ScalarNode) and node.style is None and ":" in node.value:
        smap.plain_scalars.setdefault(path, node.value)
