"""The signalling instrument (Huynh, "Consistency Without Alignment", arXiv 2609.00576).

A chooser who knows a hidden (Means, Clue) pair sends one option of a fixed property tile; the
salience (fit-maximising), Bayes (posterior-maximising) and uniform-random references are exact,
so any chooser's coordinate can be placed between them. Section numbers in docstrings are the
paper's. Entry points: ``build_signalling_items`` builds the item set in one call (or step by
step: norms bundle ``load_things`` / ``load_lancaster`` → ``build_pool`` → ``load_tiles`` →
``generate_candidates``, oracle under both decay families → ``select_items``);
``freeze_instrument`` writes the frozen item directory with its content hash before any model
runs (``load_instrument``; amendments and the log in the public module
:mod:`choiceaudit.instruments.signalling.frozen`); the frozen renderings are scored by any scorer
or reference chooser (``signalling_chooser`` by name; the classes — uniform, salience, Bayes
oracle, cosine — in :mod:`choiceaudit.instruments.signalling.choosers`; the audit layer,
``choiceaudit.audit.run_signalling``, does this into run directories); and
``analyse_signalling_runs`` runs the frozen analysis battery on the scored runs, returning one
typed :class:`SignallingAnalysis` (Table I ``CoordinateCell`` s, references, slopes, condition
agreement, format L, excess against distance with r, and every skipped analysis) per
instrument. docs/instruments/signalling.md lists
every choice made where the paper is silent.
"""

from choiceaudit.instruments.signalling._build import (
    build_signalling_items,
)
from choiceaudit.instruments.signalling._chooser_factory import (
    signalling_chooser,
)
from choiceaudit.instruments.signalling._config import SignallingConfig
from choiceaudit.instruments.signalling._conformance import (
    ConformanceReport,
    check_conformance,
)
from choiceaudit.instruments.signalling._declaration import INSTRUMENT
from choiceaudit.instruments.signalling._fetch import (
    fetch_things,
)
from choiceaudit.instruments.signalling._freeze import (
    FrozenInstrument,
    InstrumentMismatchError,
    freeze_instrument,
    load_instrument,
)
from choiceaudit.instruments.signalling._human import HumanAnalysis, analyse_human_runs
from choiceaudit.instruments.signalling._items import (
    RobustnessConfig,
)
from choiceaudit.instruments.signalling._results import (
    CoordinateCell,
    SignallingAnalysis,
)
from choiceaudit.instruments.signalling._run_analysis import (
    analyse_signalling_runs,
)
from choiceaudit.instruments.signalling._selection import (
    candidate_columns,
)

__all__ = [
    "INSTRUMENT",
    "ConformanceReport",
    "CoordinateCell",
    "FrozenInstrument",
    "HumanAnalysis",
    "InstrumentMismatchError",
    "RobustnessConfig",
    "SignallingAnalysis",
    "SignallingConfig",
    "analyse_human_runs",
    "analyse_signalling_runs",
    "build_signalling_items",
    "candidate_columns",
    "check_conformance",
    "fetch_things",
    "freeze_instrument",
    "load_instrument",
    "signalling_chooser",
]
