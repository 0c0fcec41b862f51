"""Rounds run the way hyperfine's flags ask (issue 32; docs/oneline.md).

:class:`HyperfineLocalExecutor` is a :class:`LocalExecutor` whose timed rounds (not the
setup/prepare/cleanup hooks) also follow :class:`RoundOptions`:

- ``--input FILE``: the round's stdin is FILE, opened afresh for every round (before its
  clock starts), instead of ``/dev/null``;
- ``--conclude CMD``: after every round, warm-up rounds included, CMD runs with the
  round's environment, directory and CPUs, untimed (the round's wall time ended when it
  was reaped); a failing conclude fails the round it followed ("conclude failed: ...")
  like a failing prepare fails the round it precedes, an interrupted one leaves the round
  interrupted (redone on ``--resume``);
- ``-i``/``--ignore-failure``: a round that exits with a non-zero code is kept as a
  timed round (status ok, its exit code stored), as hyperfine times failing runs;
  a round killed by a signal or its timeout still fails;
- ``--show-output``: each round's stdout and stderr (their last ``output_limit`` bytes,
  as stored) are handed to ``on_output`` when it ends.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from typing import Any

from benchrun.runner.config.hyperfine import RoundOptions
from benchrun.runner.execute.executor import RoundOutcome, RoundSpec
from benchrun.runner.execute.local import LocalExecutor

#: key of ``RoundOutcome.extra`` holding the exit code that ``-i`` let pass
IGNORED_EXIT = "ignored_exit_code"


class HyperfineLocalExecutor(LocalExecutor):
    """A :class:`LocalExecutor` applying ``options`` to every timed round (module
    docstring). ``on_output(workload, stdout, stderr)`` is called after each round with
    ``--show-output``; the other keyword arguments are :class:`LocalExecutor`'s."""

    def __init__(
        self,
        options: RoundOptions,
        *,
        on_output: Callable[[str, str, str], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.options = options
        self.on_output = on_output

    def launch(self, spec: RoundSpec) -> RoundOutcome:
        """Run one round as :meth:`LocalExecutor.launch` does, with the options applied
        (hooks run unchanged)."""
        if spec.hook is not None:
            return super().launch(spec)
        outcome = self._timed(spec)
        if self.options.show_output and self.on_output is not None:
            self.on_output(spec.workload, outcome.stdout_tail, outcome.stderr_tail)
        if self.options.ignore_failure:
            outcome = ignore_exit_code(outcome)
        conclude = self.options.conclude.get(spec.workload)
        if conclude is not None and outcome.status != "interrupted":
            outcome = self._conclude(spec, conclude, outcome)
        return outcome

    def _timed(self, spec: RoundSpec) -> RoundOutcome:
        """The round itself, reading ``--input`` as its stdin when given."""
        if self.options.input is None:
            return super().launch(spec)
        try:
            fd = os.open(self.options.input, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:  # checked before the campaign; gone since
            return RoundOutcome(
                status="failed",
                wall_ns=0,
                user_s=0.0,
                sys_s=0.0,
                max_rss_kib=0,
                exit_code=None,
                started_at=time.time(),
                reason=f"--input {self.options.input}: cannot open: {exc.strerror or exc}; "
                "the round did not run",
            )
        saved = self._devnull
        self._devnull = fd  # the stdin LocalExecutor gives the child
        try:
            return super().launch(spec)
        finally:
            self._devnull = saved
            os.close(fd)

    def _conclude(
        self, spec: RoundSpec, command: tuple[str, ...], outcome: RoundOutcome
    ) -> RoundOutcome:
        """Run ``command`` after the round ``outcome``, untimed; the round fails when it
        does (its reason says so), else it is returned as it was."""
        after = super().launch(
            dataclasses.replace(
                spec,
                argv=command,
                shell=self.options.conclude_shell,
                readings=None,
                hook="conclude",  # a hook's spec: never a measurement
            )
        )
        if after.status == "ok":
            return outcome
        if after.status == "interrupted":  # Ctrl-C: the round is redone on --resume
            return dataclasses.replace(
                outcome, status="interrupted", reason=f"--conclude {after.reason}"
            )
        last = (after.stderr_tail or after.stdout_tail).strip().splitlines()
        detail = f" ({last[-1][:200]})" if last else ""
        reason = f"conclude failed: {after.reason}{detail}; the round ran and was timed"
        if outcome.status != "ok":
            reason = f"{outcome.reason}; {reason}"
        return dataclasses.replace(outcome, status="failed", reason=reason)


def ignore_exit_code(outcome: RoundOutcome) -> RoundOutcome:
    """``outcome`` with a non-zero exit code let pass (``-i``): a round that failed only
    by its exit code becomes ok, the code kept in ``exit_code`` and in
    ``extra[IGNORED_EXIT]``; any other outcome is returned as it is."""
    code = outcome.exit_code
    if outcome.status != "failed" or code is None or code <= 0:
        return outcome
    if outcome.reason != f"exit code {code}":  # e.g. a memory limit's explanation
        return outcome
    return dataclasses.replace(
        outcome, status="ok", reason=None, extra={**outcome.extra, IGNORED_EXIT: code}
    )
