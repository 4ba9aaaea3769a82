"""The table of instruments the audit layer knows: each instrument package's declaration
(:class:`~choiceaudit.instruments.Instrument`). A run directory names its instrument in its
configuration; everything else (its configuration type, its analyses, its run directory names)
is read from that instrument's declaration here, never matched by name elsewhere."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from choiceaudit.errors import InputError
from choiceaudit.instruments import Instrument, plugin_instruments
from choiceaudit.instruments.meaning import INSTRUMENT as MEANING
from choiceaudit.instruments.scoring import INSTRUMENT as SCORING
from choiceaudit.instruments.signalling import INSTRUMENT as SIGNALLING
from choiceaudit.types import RunConfig

__all__ = ["INSTRUMENTS", "instrument_named", "read_config"]

#: Every instrument, by the name its runs record (``score``: runs that record none).
INSTRUMENTS: Mapping[str, Instrument[Any, Any]] = {
    i.name: i for i in (SCORING, SIGNALLING, MEANING)
}


def instrument_named(name: str, *, source: str | None = None) -> Instrument[Any, Any]:
    """The declaration of the instrument ``name`` (built in, or a plug-in:
    :func:`~choiceaudit.instruments.register_instrument`); an unknown name is an input error
    naming the run it came from."""
    plugins = plugin_instruments()
    found = INSTRUMENTS.get(name) or plugins.get(name)
    if found is None:
        raise InputError(
            f"no analysis for instrument {name!r} (known: {', '.join([*INSTRUMENTS, *plugins])})",
            source=source,
            field="config.instrument",
        )
    return found


def read_config(config: RunConfig | Mapping[str, Any] | None) -> RunConfig:
    """A run configuration as its instrument's type (a mapping is read by the instrument it
    names; plain scoring when it names none)."""
    if isinstance(config, RunConfig):
        return config
    data = dict(config or {})
    config_type: type[RunConfig] = instrument_named(
        str(data.get("instrument", "score"))
    ).config_type
    return config_type.from_json(data)
