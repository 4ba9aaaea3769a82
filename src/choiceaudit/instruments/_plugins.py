"""Instruments added from outside this project: :func:`register_instrument`, or an entry point
in the ``choiceaudit.instruments`` group of an installed distribution (its object an
:class:`~choiceaudit.instruments.Instrument`, or a callable returning one), read the first time
the plug-ins are asked for.

A plug-in instrument plans from options given as text (``plan(**options)`` returns the
queries), so ``choiceaudit run <name> -p key=value`` runs it on any model; its analysis turns
its arms into results, and it declares the report layout of each result type, since the report
package knows only the built-in ones. A declaration that lacks any of these, or takes a name
another instrument has, is refused when it is registered, naming what is missing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from choiceaudit.entry_points import declared
from choiceaudit.errors import InputError
from choiceaudit.instruments._declare import Instrument
from choiceaudit.types import RunConfig

__all__ = [
    "INSTRUMENT_ENTRY_POINTS",
    "plugin_instruments",
    "register_instrument",
]

#: the entry-point group an installed distribution declares its instruments in
INSTRUMENT_ENTRY_POINTS = "choiceaudit.instruments"

#: the names of the instruments this project ships (a plug-in cannot take one)
BUILT_IN = ("score", "signalling", "meaning")

_PLUGINS: dict[str, Instrument[Any, Any]] = {}
_READ = [False]
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


def _problems(instrument: object) -> list[str]:
    if not isinstance(instrument, Instrument):
        return [f"an Instrument, got {type(instrument).__name__}"]
    found = []
    if not _NAME.match(instrument.name):
        found.append(f"a name of lower-case letters, digits, '_' and '-' (got {instrument.name!r})")
    elif instrument.name in BUILT_IN:
        found.append(f"a name of its own ({instrument.name!r} is built in)")
    if not (
        isinstance(instrument.config_type, type) and issubclass(instrument.config_type, RunConfig)
    ):
        found.append("config_type: a RunConfig subclass (what its runs record)")
    if not callable(instrument.analyse):
        found.append("analyse: its arms -> its results")
    if not callable(instrument.plan):
        found.append("plan: options -> its queries")
    if not instrument.layouts:
        found.append("layouts: the report layout of each result type its analysis returns")
    for kind, layout in dict(instrument.layouts).items():
        if not isinstance(kind, type) or not callable(layout):
            found.append(f"layouts: a result type -> a layout function (got {kind!r})")
    return found


def register_instrument(
    instrument: Instrument[Any, Any], *, replace: bool = False
) -> Instrument[Any, Any]:
    """Add a plug-in instrument, so ``run``, ``analyse_runs`` and ``report`` know it (see the
    module docstring); an incomplete declaration is an
    :class:`~choiceaudit.errors.InputError` naming each problem."""
    _read_entry_points()
    problems = _problems(instrument)
    name = getattr(instrument, "name", "?")
    if problems:
        raise InputError(f"instrument {name!r} is incomplete; it needs " + "; ".join(problems))
    if name in _PLUGINS and not replace:
        raise InputError(f"an instrument named {name!r} is registered already")
    _PLUGINS[name] = instrument
    return instrument


def _read_entry_points() -> None:
    if _READ[0]:
        return
    _READ[0] = True
    for where, instrument in declared(INSTRUMENT_ENTRY_POINTS, Instrument, InputError):
        try:
            register_instrument(instrument)  # type: ignore[arg-type]
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None


def plugin_instruments() -> Mapping[str, Instrument[Any, Any]]:
    """The plug-in instruments by name: those registered and those installed distributions
    declare."""
    _read_entry_points()
    return dict(_PLUGINS)
