"""Secret ``env:`` values: which variables are secret, and text with their values hidden.

An experiment's ``env:`` (``settings.env`` and each workload's ``env``) may hold an API
token or a password the workload needs. The workload still receives every value; what
benchrun *shows* (exports, reports, ``show``, the stored experiment text it prints) has a
secret value replaced by :data:`SECRET_MARKER`, unless the user asks for it with
``--include-secrets`` (docs/export-format.md "Secrets").

A variable is secret when its name contains one of :data:`SECRET_WORDS` (case does not
matter: ``API_TOKEN``, ``db_password``, ``AWS_SECRET_ACCESS_KEY``), or when
``settings.secret_env`` lists it by its exact name. Hiding a value that was no secret
costs a line of a report; showing a token costs the token, so the words are broad.

Two ways a value is hidden, both here:

- where it is written as a value of ``env:`` in the experiment's YAML text, the scalar
  (quoted, plain or block) is replaced in place by ``"<secret>"``
  (:func:`redact_experiment_text`: positions from PyYAML's composed nodes, so the rest
  of the text, comments included, stays as written, and it still parses);
- anywhere else in free text (a command line, an event, an output tail, the metadata),
  every occurrence of a secret value of at least :data:`MIN_SCRUB_CHARS` characters is
  replaced (:meth:`Secrets.scrub`). Shorter values are hidden where they are env values,
  not searched for in other text (a two-letter value would eat the text around it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import overload

import yaml

#: what a secret value is replaced by
SECRET_MARKER = "<secret>"
#: a variable whose name contains one of these (any case) holds a secret
SECRET_WORDS = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "KEY",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
)
#: secret values shorter than this are hidden as env values only, not searched in text
MIN_SCRUB_CHARS = 4
#: the experiment text shown when its secret values could not be hidden in place
WITHHELD_TEXT = (
    "# the experiment text is withheld: it sets secret env values that could not be "
    "hidden in place (--include-secrets shows it)\n"
)

_WORDS = re.compile("|".join(SECRET_WORDS), re.IGNORECASE)


def is_secret_name(name: str, listed: Iterable[str] = ()) -> bool:
    """Whether the variable ``name`` holds a secret: a word of :data:`SECRET_WORDS` in it,
    or ``name`` among ``listed`` (``settings.secret_env``, exact names)."""
    return bool(_WORDS.search(name)) or name in set(listed)


@dataclass(frozen=True)
class Secrets:
    """The secret names and values of one campaign, and text with those values hidden.

    ``names``: the names ``settings.secret_env`` lists (the :data:`SECRET_WORDS` rule
    applies to every name besides); ``values``: the secret values found, longest first
    (so a value that contains another is replaced whole).
    """

    names: tuple[str, ...] = ()
    values: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.values)

    def is_secret(self, name: str) -> bool:
        return is_secret_name(name, self.names)

    def scrub(self, text: str) -> str:
        """``text`` with every secret value of :data:`MIN_SCRUB_CHARS` or more characters
        replaced by :data:`SECRET_MARKER`."""
        for value in self.values:
            if len(value) >= MIN_SCRUB_CHARS and value in text:
                text = text.replace(value, SECRET_MARKER)
        return text

    def env(self, env: Mapping[str, object]) -> dict[str, object]:
        """A copy of the variables ``env`` with each secret one's value replaced."""
        return {
            k: SECRET_MARKER if self.is_secret(str(k)) and v is not None else self.deep(v)
            for k, v in env.items()
        }

    @overload
    def deep(self, value: Mapping[str, object]) -> dict[str, object]: ...

    @overload
    def deep(self, value: object) -> object: ...

    def deep(self, value: object) -> object:
        """``value`` (JSON-like: dicts, lists, strings, numbers) with every string scrubbed
        (:meth:`scrub`) and every ``env``/``variables`` mapping's secret values hidden; a
        mapping comes back a dict, a list or tuple a list."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, Mapping):
            return {
                k: self.env(v)
                if k in ("env", "variables") and isinstance(v, Mapping)
                # keys are names (of settings, metadata): never secrets themselves
                else self.deep(v)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.deep(v) for v in value]
        return value


def env_maps(doc: object) -> list[Mapping[object, object]]:
    """The ``env:`` mappings of a parsed experiment ``doc`` (YAML as loaded, any shape):
    ``settings.env`` and each workload's; a part of another shape has none."""
    out: list[Mapping[object, object]] = []
    match doc:
        case {"settings": {"env": Mapping() as env}}:
            out.append(env)
    match doc:
        case {"workloads": list() as workloads}:
            for workload in workloads:
                match workload:
                    case {"env": Mapping() as env}:
                        out.append(env)
    return out


def find_secrets(
    config_text: str,
    settings: Mapping[str, object],
    envs: Iterable[Mapping[str, object]] = (),
) -> Secrets:
    """The secrets of a stored campaign: the names ``settings.secret_env`` lists, and the
    values of secret variables in its experiment text, its stored ``settings.env`` and the
    further variable mappings ``envs`` (each workload's filled-in ``env``, the metadata's
    recorded ``variables``).

    ``settings`` is the stored settings JSON as read: a ``secret_env`` that is not a list
    lists nothing, an ``env`` that is not a mapping holds nothing."""
    names: tuple[str, ...] = ()
    variables: list[Iterable[tuple[object, object]]] = [m.items() for m in envs]
    match settings:
        case {"secret_env": list() | tuple() as listed}:
            names = tuple(str(n) for n in listed)
    match settings:
        case {"env": Mapping() as env}:
            variables.append(env.items())
    try:
        variables += [m.items() for m in env_maps(yaml.safe_load(config_text))]
    except yaml.YAMLError:
        pass
    values = {
        str(v)
        for items in variables
        for k, v in items
        if v is not None and str(v) and str(v) != SECRET_MARKER and is_secret_name(str(k), names)
    }
    return Secrets(names, tuple(sorted(values, key=lambda v: (-len(v), v))))


def _secret_spans(node: yaml.Node, text: str, secrets: Secrets) -> list[tuple[int, int]]:
    """(start, end) character offsets in ``text`` of the secret values of the ``env:``
    mappings under ``settings`` and each workload in its composed document ``node``."""
    spans: list[tuple[int, int]] = []

    def child(n: yaml.Node, key: str) -> yaml.Node | None:
        if isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                if isinstance(k, yaml.ScalarNode) and k.value == key:
                    return v
        return None

    def env_node(n: yaml.Node | None) -> None:
        env = None if n is None else child(n, "env")
        if isinstance(env, yaml.MappingNode):
            for k, v in env.value:
                if isinstance(k, yaml.ScalarNode) and secrets.is_secret(str(k.value)):
                    start, end = v.start_mark.index, v.end_mark.index
                    # a block scalar's span ends after its line breaks: keep them
                    spans.append((start, start + len(text[start:end].rstrip())))

    env_node(child(node, "settings"))
    workloads = child(node, "workloads")
    if isinstance(workloads, yaml.SequenceNode):
        for w in workloads.value:
            env_node(w)
    return spans


def redact_experiment_text(text: str, secrets: Secrets) -> str:
    """The experiment text ``text`` with each secret ``env:`` value replaced in place by
    ``"<secret>"``, then :meth:`Secrets.scrub` (a value repeated elsewhere, in a command).

    The result is checked: it must parse, and its ``env:`` mappings must hold no secret
    value; when it does not (an anchor or a merge key moved the value where the in-place
    replacement did not reach) :data:`WITHHELD_TEXT` is returned instead.
    """
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        node = None
    out = text
    if node is not None:
        for start, end in sorted(_secret_spans(node, text, secrets), reverse=True):
            out = out[:start] + f'"{SECRET_MARKER}"' + out[end:]
    out = secrets.scrub(out)
    try:
        doc = yaml.safe_load(out)
    except yaml.YAMLError:
        return WITHHELD_TEXT if node is not None else out
    for env in env_maps(doc):
        for k, v in env.items():
            if secrets.is_secret(str(k)) and v is not None and str(v) != SECRET_MARKER:
                return WITHHELD_TEXT
    return out
