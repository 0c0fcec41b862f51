"""Fixtures of the daemon tests (helpers in daemon_util.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from daemon_util import Env, xdg_env


@pytest.fixture
def xdg() -> Iterator[Env]:
    """Private XDG directories; every daemon started through it is killed at the end."""
    with xdg_env() as env:
        yield env
