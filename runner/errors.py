"""The one exception type for mistakes a user can fix.

Anything raised as :class:`UserError` reaches the terminal as one line (no traceback)
and makes ``benchrun`` exit with :attr:`UserError.exit_code` (2 by default: bad input).
"""

from __future__ import annotations


class UserError(Exception):
    """A problem with the user's input or environment, reported as one line.

    ``message`` says what happened and what to do; ``exit_code`` is the process exit code
    (2 for bad input such as an invalid experiment file, 1 for a run that did not finish).
    """

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message
