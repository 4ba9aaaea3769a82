"""Instruments: signalling (Consistency Without Alignment), meaning (literal attraction) and
scoring (plain labelled query files). Each subpackage exports its entry points and its
declaration (``INSTRUMENT``, an :class:`Instrument`); this package holds only what every
instrument shares: the declaration type, the rule naming run directories, and the table of
instruments added from outside the project (:func:`register_instrument`, the
``choiceaudit.instruments`` entry points)."""

from choiceaudit.instruments._declare import Instrument, run_dir_name
from choiceaudit.instruments._plugins import (
    INSTRUMENT_ENTRY_POINTS,
    plugin_instruments,
    register_instrument,
)

__all__ = [
    "INSTRUMENT_ENTRY_POINTS",
    "Instrument",
    "plugin_instruments",
    "register_instrument",
    "run_dir_name",
]
