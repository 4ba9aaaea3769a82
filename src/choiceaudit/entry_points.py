"""Reading what installed distributions declare in an entry-point group (the backend and
instrument plug-ins): each entry point's object, or what it returns when it is a function, with
a text naming the entry point for the caller's messages. An entry point that cannot be imported
or called is ``error`` naming it, never skipped."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator

__all__ = ["declared"]


def declared(group: str, kind: type, error: type[Exception]) -> Iterator[tuple[str, object]]:
    """``(where, object)`` for every entry point of ``group``: its object when it is a
    ``kind``, else the result of calling it; ``where`` names the entry point."""
    for point in importlib.metadata.entry_points(group=group):
        where = f"entry point {point.name!r} ({point.value}) of {group}"
        try:
            loaded = point.load()
            yield where, loaded if isinstance(loaded, kind) else loaded()
        except Exception as exc:  # a plug-in that cannot be imported is named, not hidden
            raise error(f"{where}: cannot be loaded ({type(exc).__name__}: {exc})") from None
