"""The package's public surface: entry points only, sorted, each one a name a
private module declares in its own ``__all__``; the internals stay in the private modules."""

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


def test_exports_are_entry_points_declared_by_private_modules() -> None:
    exported = set(signalling.__all__)
    assert len(exported) <= 18  # entry points, result types and the declaration, not internals
    declared: set[str] = set()
    for info in pkgutil.iter_modules(signalling.__path__):
        if not info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{signalling.__name__}.{info.name}")
        names = list(module.__all__)
        assert len(names) == len(set(names)), info.name
        for name in names:
            assert hasattr(module, name), f"{info.name}.{name}"
        declared |= set(names)
    assert exported <= declared
    assert {"analyse_signalling_runs", "SignallingAnalysis", "CoordinateCell"} <= exported
