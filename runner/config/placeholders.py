"""``{name}`` placeholders in workload commands, parsed with :class:`string.Formatter`.

``{{`` and ``}}`` are literal braces (so ``python3 -c`` code with dicts or f-strings must
double its braces). ``params``/``matrix`` names are filled in when the experiment is
loaded; the launch-time names ``{work}`` and ``{round}`` are kept for
:meth:`runner.config.experiment.Workload.render`. Errors are ``ValueError`` with one line.
"""

from __future__ import annotations

import difflib
import string
from collections.abc import Iterable, Mapping

#: placeholders filled per round by the runner, not at load time
LAUNCH_TIME: tuple[str, ...] = ("work", "round")

BRACE_HINT = (
    "for a literal brace write {{ or }} (e.g. dicts, sets and f-strings in python3 -c code)"
)

_FORMATTER = string.Formatter()


def placeholder_names(template: str) -> list[str]:
    """Names of the ``{...}`` fields in ``template``, in order (``ValueError`` on bad syntax)."""
    try:
        parsed = list(_FORMATTER.parse(template))
    except ValueError as exc:
        raise ValueError(f"bad placeholder syntax in {template!r}: {exc}; {BRACE_HINT}") from None
    return [name for _, name, _, _ in parsed if name is not None]


def substitute(
    template: str, values: Mapping[str, object], keep: Iterable[str] = LAUNCH_TIME
) -> str:
    """Fill every placeholder of ``template`` from ``values`` except those in ``keep``.

    Kept names are written back as ``{name}`` (no format spec or conversion allowed on
    them); ``{{``/``}}`` become single braces. A format spec on a filled name is applied
    with :func:`format` (``{n:08d}``). Unknown names, ``{}``, attribute/index access and
    conversions (``!r``) raise ``ValueError`` listing the known names. A literal
    ``{work}``/``{round}`` produced by escapes is refused, since the runner would fill it.
    """
    kept = tuple(keep)
    known = sorted(values) + [k for k in kept if k not in values]
    try:
        parsed = list(_FORMATTER.parse(template))
    except ValueError as exc:
        raise ValueError(f"bad placeholder syntax in {template!r}: {exc}; {BRACE_HINT}") from None
    out: list[str] = []
    sentinel = "\x00"
    for literal, name, spec, conversion in parsed:
        out.append(literal)
        if name is None:
            continue
        shown = (
            "{"
            + name
            + (f"!{conversion}" if conversion else "")
            + (f":{spec}" if spec else "")
            + "}"
        )
        if name in kept:
            if spec or conversion:
                raise ValueError(f"{shown}: {{{name}}} takes no format spec or conversion")
            out.append(sentinel + name + sentinel)
            continue
        if not name.isidentifier() or name not in values:
            listing = ", ".join("{" + k + "}" for k in known) or "none"
            close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
            guess = f"did you mean {{{close[0]}}}? " if close else ""
            raise ValueError(f"unknown placeholder {shown}; {guess}known: {listing}; {BRACE_HINT}")
        if conversion:
            raise ValueError(f"{shown}: conversions like !{conversion} are not supported")
        value = values[name]
        try:
            out.append(format(value, spec) if spec else str(value))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{shown}: cannot format {value!r} with {spec!r}: {exc}") from None
    text = "".join(out)
    for name in kept:
        if "{" + name + "}" in text:
            raise ValueError(
                f"{template!r} would contain a literal {{{name}}}, which the runner fills in; "
                "rename it or build it differently"
            )
    for name in kept:
        text = text.replace(sentinel + name + sentinel, "{" + name + "}")
    return text


def fill_launch_time(template: str, values: Mapping[str, int | None]) -> str:
    """Fill the launch-time placeholders (:data:`LAUNCH_TIME`) that :func:`substitute` kept.

    The second of the two stages: at load time :func:`substitute` filled every other name
    and turned ``{{``/``}}`` into single braces, so the template may now hold literal braces
    (Python dicts in ``python3 -c`` code) and only the exact ``{work}``/``{round}`` fields
    are placeholders; a ``None`` value leaves its field as written.
    """
    out = template
    for name, value in values.items():
        if name in LAUNCH_TIME and value is not None:
            out = out.replace("{" + name + "}", str(value))
    return out
