"""The runnable examples in choiceaudit.stats docstrings are checked, so the docs cannot drift."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import choiceaudit.stats as stats

MODULES = sorted(m.name for m in pkgutil.iter_modules(stats.__path__, "choiceaudit.stats."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0


def test_examples_exist_for_the_contract() -> None:
    examples = sum(
        doctest.testmod(importlib.import_module(n), verbose=False, report=False).attempted
        for n in MODULES
    )
    assert examples >= 20
