"""The meaning-choice instrument (arXiv 2610.22526): literal attraction in decision models.

Corpora (:func:`load_bagdhara`, :func:`load_idioms_en`) → :func:`plan_meaning` (candidate pools,
item draws per distractor family, interventions, typed choice queries) → any scorer →
:func:`analyse_meaning_runs` over the scored arms (:func:`analyse_meaning` for one arm's
:class:`MeaningRows`) → a frozen :class:`MeaningAnalysis` that the report lays out.

The entry points are exported here; the building blocks (pools, slates, interventions, single
analyses such as ``paired_contrast``) live in the private modules, listed in docs/instruments/meaning.md beside
every choice the paper leaves open. The JSON records of a run's configuration are typed in
:mod:`choiceaudit.instruments.meaning.records`; ``Interval`` is
:class:`choiceaudit.stats.Interval`, re-exported for the report, which does not import ``stats``.
"""

from choiceaudit.instruments.meaning._analysis_results import MeaningAnalysis
from choiceaudit.instruments.meaning._arms import analyse_meaning_runs, meaning_rows
from choiceaudit.instruments.meaning._bagdhara import load_bagdhara
from choiceaudit.instruments.meaning._conditions import condition_problem
from choiceaudit.instruments.meaning._config import MeaningConfig
from choiceaudit.instruments.meaning._contract import FAMILIES
from choiceaudit.instruments.meaning._corpus import Corpus, CorpusError, IdiomEntry
from choiceaudit.instruments.meaning._declaration import INSTRUMENT
from choiceaudit.instruments.meaning._experiment_results import ArmAnalysis
from choiceaudit.instruments.meaning._idioms_en import load_idioms_en
from choiceaudit.instruments.meaning._plan import (
    DEFAULT_EXPERIMENTS,
    EXPERIMENTS,
    MeaningPlan,
    plan_meaning,
)
from choiceaudit.instruments.meaning._results import Calibration, Interval
from choiceaudit.instruments.meaning._rows import MeaningRows
from choiceaudit.instruments.meaning._summary import analyse_meaning

__all__ = [
    "DEFAULT_EXPERIMENTS",
    "EXPERIMENTS",
    "FAMILIES",
    "INSTRUMENT",
    "ArmAnalysis",
    "Calibration",
    "Corpus",
    "CorpusError",
    "IdiomEntry",
    "Interval",
    "MeaningAnalysis",
    "MeaningConfig",
    "MeaningPlan",
    "MeaningRows",
    "analyse_meaning",
    "analyse_meaning_runs",
    "condition_problem",
    "load_bagdhara",
    "load_idioms_en",
    "meaning_rows",
    "plan_meaning",
]
