"""Instruments: signalling (Consistency Without Alignment), meaning (literal attraction) and
scoring (plain labelled query files). Each subpackage exports its entry points and its
declaration (``INSTRUMENT``, an :class:`Instrument`); this package holds only what every
instrument shares: the declaration type and the rule naming run directories."""

from choiceaudit.instruments._declare import Instrument, run_dir_name

__all__ = ["Instrument", "run_dir_name"]
