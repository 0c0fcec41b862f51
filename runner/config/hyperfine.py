"""hyperfine's command-line habits in the one-line form of ``benchrun run`` (issue 32).

hyperfine's flags are translated, with hyperfine's meanings, into what benchrun already
has (docs/oneline.md, "hyperfine's flags"):

- ``--runs N`` is ``settings.rounds: N`` (fixed mode: exactly N timed rounds per command),
  ``--warmup N`` is ``settings.warmup_rounds``, ``--min-runs``/``--max-runs`` are the
  adaptive ``min_rounds``/``max_rounds`` (:func:`hyperfine_settings`);
- ``--parameter-scan NAME MIN MAX [-D STEP]`` is a matrix factor over MIN, MIN+STEP, ...,
  MAX (:func:`scan_values`), exactly as ``-L NAME v1,v2,...`` would give it;
- ``--shell SHELL`` is the program the commands are run by (:func:`shell_words`).

The flags that change how a round is run (``--input``, ``--conclude``,
``--ignore-failure``, ``--show-output``) are :class:`RoundOptions`, applied by
runner/execute/hyperfine_local.py; the exports are runner/results/hyperfine_export.py.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from benchrun.runner.config.experiment import Settings
from benchrun.runner.errors import UserError

#: most values one ``--parameter-scan`` may make (each is a workload per command)
MAX_SCAN_VALUES = 10_000
#: the time units of ``--time-unit`` (hyperfine's spellings) -> seconds per unit
TIME_UNITS: Mapping[str, float] = {
    "second": 1.0,
    "millisecond": 1e-3,
    "microsecond": 1e-6,
    "nanosecond": 1e-9,
}
#: hyperfine flag -> the setting it stands for (the order of the messages)
SETTING_FLAGS: tuple[tuple[str, str], ...] = (
    ("--runs", "rounds"),
    ("--warmup", "warmup_rounds"),
    ("--min-runs", "min_rounds"),
    ("--max-runs", "max_rounds"),
)


@dataclass(frozen=True)
class RoundOptions:
    """How each timed round of a one-line campaign is run, beyond its experiment.

    ``input``: the absolute path of the file every round of a command reads as stdin
    (``--input``; None: ``/dev/null``). ``conclude``: per workload name, the command run
    after each of its rounds, untimed (``--conclude``), as an argv, or with
    ``conclude_shell`` a 1-tuple run by ``/bin/sh -c``. ``ignore_failure``
    (``-i``): a round that exits non-zero is kept as a timed round, its exit code stored.
    ``show_output``: each round's stdout and stderr are printed as it ends.
    """

    input: str | None = None
    conclude: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    conclude_shell: bool = True
    ignore_failure: bool = False
    show_output: bool = False

    @property
    def active(self) -> bool:
        """Whether any of them differs from a plain round."""
        return bool(self.input or self.conclude or self.ignore_failure or self.show_output)


def hyperfine_settings(
    *,
    runs: int | None,
    warmup: int | None,
    min_runs: int | None,
    max_runs: int | None,
    overrides: Sequence[str],
) -> list[str]:
    """The ``--set`` items standing for ``--runs``, ``--warmup``, ``--min-runs`` and
    ``--max-runs`` (hyperfine's meanings: exactly N timed rounds; N untimed rounds first;
    at least / at most N rounds of the adaptive mode). A ``--max-runs`` below benchrun's
    default ``min_rounds`` lowers it too, as hyperfine's maximum wins over its default
    minimum.

    Raises
    ------
    UserError
        ``--runs`` with ``--min-runs`` or ``--max-runs`` (hyperfine refuses them too), a
        minimum above the maximum, a negative count, or a flag given together with a
        ``--set`` of the same setting (one line each, naming both).
    """
    given = {"--runs": runs, "--warmup": warmup, "--min-runs": min_runs, "--max-runs": max_runs}
    for flag, value in given.items():
        low = 0 if flag == "--warmup" else 1
        if value is not None and value < low:
            raise UserError(f"{flag} {value}: must be at least {low}")
    if runs is not None:
        for other in ("--min-runs", "--max-runs"):
            if given[other] is not None:
                raise UserError(
                    f"--runs and {other} contradict each other: --runs N runs exactly N "
                    f"rounds (fixed mode), {other} bounds the adaptive mode; give one of them"
                )
    if min_runs is not None and max_runs is not None and min_runs > max_runs:
        raise UserError(
            f"--min-runs {min_runs} is above --max-runs {max_runs}; lower --min-runs or "
            "raise --max-runs"
        )
    set_keys = {item.split("=", 1)[0].strip() for item in overrides}
    items: list[str] = []
    for flag, key in SETTING_FLAGS:
        value = given[flag]
        if value is None:
            continue
        clash = {key} | ({"adaptive"} if flag == "--runs" else set())
        if clash & set_keys:
            raise UserError(
                f"{flag} and --set {sorted(clash & set_keys)[0]} both set {key}; give one of them"
            )
        items.append(f"{key}={value}")
    default_min = Settings().min_rounds
    if max_runs is not None and max_runs < default_min and min_runs is None:
        if "min_rounds" not in set_keys:  # hyperfine: the maximum wins over the default
            items.append(f"min_rounds={max_runs}")
    if runs is None and (min_runs is not None or max_runs is not None) and "rounds" in set_keys:
        raise UserError(
            "--min-runs/--max-runs bound the adaptive mode and --set rounds asks for fixed "
            "mode; give one of them"
        )
    return items


def setting_flag(key: str) -> str | None:
    """The hyperfine flag that sets the setting ``key`` (None: none does)."""
    return next((flag for flag, k in SETTING_FLAGS if k == key), None)


def scan_values(name: str, low: str, high: str, step: str | None) -> list[str]:
    """The values of ``--parameter-scan NAME LOW HIGH [-D STEP]``: LOW, LOW+STEP, ... up
    to HIGH inclusive, as hyperfine makes them (decimal arithmetic, so ``-D 0.1`` gives
    ``0.3``, not ``0.30000000000000004``). Without a step, LOW and HIGH must be integers
    and the step is 1.

    Raises
    ------
    UserError
        A bound or step that is not a number, a step of zero or below, LOW above HIGH, or
        more than :data:`MAX_SCAN_VALUES` values.
    """
    shown = f"--parameter-scan {name} {low} {high}" + (f" -D {step}" if step else "")

    def number(text: str, what: str) -> Decimal:
        try:
            value = Decimal(text.strip())
        except InvalidOperation:
            raise UserError(f"{shown}: {what} {text!r} is not a number") from None
        if not value.is_finite():
            raise UserError(f"{shown}: {what} {text!r} is not a finite number")
        return value

    lo, hi = number(low, "the minimum"), number(high, "the maximum")
    if step is None:
        if lo != lo.to_integral_value() or hi != hi.to_integral_value():
            raise UserError(
                f"{shown}: without -D STEP the bounds are integers (step 1); give -D STEP "
                "for decimal values"
            )
        lo, hi, delta = Decimal(int(lo)), Decimal(int(hi)), Decimal(1)
    else:
        delta = number(step, "the step")
        if delta <= 0:
            raise UserError(f"{shown}: the step must be above zero")
    if lo > hi:
        raise UserError(f"{shown}: the minimum is above the maximum")
    count = int((hi - lo) / delta) + 1
    if count > MAX_SCAN_VALUES:
        raise UserError(
            f"{shown}: {count} values, at most {MAX_SCAN_VALUES}; give a larger -D STEP"
        )
    values, value = [], lo
    for _ in range(count):  # added up as hyperfine does: 0, 0.01, 0.02 (not 0.00)
        values.append(str(value))
        value += delta
    return values


def shell_words(shell: str | None, no_shell: bool) -> tuple[bool, tuple[str, ...]]:
    """How the commands run, from ``--shell SHELL`` (hyperfine's meaning: the shell that
    spawns them) and ``-N``: ``(through /bin/sh -c, other shell's argv before -c)``.

    ``none`` is ``-N`` (no shell); ``sh`` and ``/bin/sh`` (hyperfine's default) are
    benchrun's default; anything else, such as ``bash`` or ``'bash --norc'``, runs each
    command as ``SHELL -c CMD`` (split like a shell would split it).

    Raises
    ------
    UserError
        ``-N`` with a shell other than ``none``, or an empty or unsplittable SHELL.
    """
    if shell is None:
        return (not no_shell, ())
    if shell.strip() == "none":
        return (False, ())
    if no_shell:
        raise UserError(
            f"-N and --shell {shell} contradict each other: -N runs the commands without a "
            "shell; give one of them"
        )
    try:
        words = tuple(shlex.split(shell))
    except ValueError as exc:
        raise UserError(f"--shell {shell}: {exc}") from None
    if not words:
        raise UserError("--shell: empty; give a shell such as bash, or none")
    if words in (("sh",), ("/bin/sh",)):
        return (True, ())
    return (False, words)
