"""The Examples sections of benchrun.stats run as doctests (numpy's repr fixed to 1.x style
so outputs read the same with numpy 1 and 2)."""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil

import numpy as np
import pytest

from benchrun import stats

MODULES = sorted(m.name for m in pkgutil.iter_modules(stats.__path__, "benchrun.stats."))


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    options = np.get_printoptions()
    np.set_printoptions(legacy="1.25")
    try:
        result = doctest.testmod(
            module,
            optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS,
            report=True,
            verbose=False,
        )
    finally:
        np.set_printoptions(**options)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"


def test_public_functions_have_examples() -> None:
    """Every public function of benchrun.stats carries an Examples section (scipy's form)."""
    missing = []
    for name in getattr(stats, "__all__", []):
        obj = getattr(stats, name)
        if callable(obj) and not isinstance(obj, type):
            if "Examples" not in (obj.__doc__ or ""):
                missing.append(name)
    assert len(missing) <= MAX_WITHOUT_EXAMPLES, sorted(missing)


#: public functions allowed without a numpydoc Examples section (every one has one now)
MAX_WITHOUT_EXAMPLES = 0


@pytest.mark.parametrize("section", ["Parameters", "Returns", "References", "Examples"])
def test_public_functions_have_every_numpydoc_section(section: str) -> None:
    """scipy's form (issue 15): each public function documents its parameters, what it
    returns, where the method comes from (full citations) and an example run as a doctest."""
    missing = [
        name
        for name in stats.__all__
        if inspect.isfunction(getattr(stats, name))
        and f"{section}\n    ---" not in (getattr(stats, name).__doc__ or "")
    ]
    assert missing == []
