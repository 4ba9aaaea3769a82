"""The package's public surface: every private module's ``__all__`` is re-exported, sorted."""

from __future__ import annotations

import importlib
import pkgutil

import choiceaudit.instruments.signalling as signalling


def test_all_is_sorted_unique_and_importable() -> None:
    names = list(signalling.__all__)
    assert len(names) == len(set(names))
    upper = [n for n in names if n.isupper()]
    assert names[: len(upper)] == sorted(upper)  # isort order: constants, classes, functions
    for name in names:
        assert getattr(signalling, name) is not None


def test_every_private_module_is_re_exported() -> None:
    exported = set(signalling.__all__)
    for info in pkgutil.iter_modules(signalling.__path__):
        if not info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{signalling.__name__}.{info.name}")
        assert set(module.__all__) <= exported, info.name
