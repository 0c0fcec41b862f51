"""Fixtures for end-to-end tests (helpers live in e2e_util.py)."""

from __future__ import annotations

import sys

import pytest


@pytest.fixture
def py() -> str:
    """The interpreter workloads should use (the one running the tests)."""
    return sys.executable
