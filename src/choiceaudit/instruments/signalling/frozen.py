"""The frozen item directory's whole life cycle: freeze, load, amend, and the amendment log.

``freeze_instrument`` / ``load_instrument`` / ``FrozenInstrument`` / ``InstrumentMismatchError``
are also exported by the package (the entry points); this module adds what only tooling needs:
the manifest's file name, ``default_analysis`` (the analysis block a freeze writes unless it is
given one), ``amend_instrument`` (a recorded, hash-preserving amendment) and ``read_amendments``
(the log).
"""

from choiceaudit.instruments.signalling._freeze import (
    INSTRUMENT_FILE,
    FrozenInstrument,
    InstrumentMismatchError,
    amend_instrument,
    default_analysis,
    freeze_instrument,
    load_instrument,
    read_amendments,
)

__all__ = [
    "INSTRUMENT_FILE",
    "FrozenInstrument",
    "InstrumentMismatchError",
    "amend_instrument",
    "default_analysis",
    "freeze_instrument",
    "load_instrument",
    "read_amendments",
]
