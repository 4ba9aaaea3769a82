"""The JSON records a meaning run stores in its configuration, typed as the JSON they are.

A reader of ``arm.config`` (a :class:`~choiceaudit.instruments.meaning.MeaningConfig`) meets
these as field types: the plan's blocks and settings, the corpus loader's steps and the build
report's family counts. They live here rather than beside the instrument's entry points so that
the package itself exports only what a user calls.
"""

from choiceaudit.instruments.meaning._build_report import BuildReport, FamilyCounts
from choiceaudit.instruments.meaning._config import PlanBlock, PlanConfig
from choiceaudit.instruments.meaning._corpus import LoaderRecord, LoaderStep

__all__ = [
    "BuildReport",
    "FamilyCounts",
    "LoaderRecord",
    "LoaderStep",
    "PlanBlock",
    "PlanConfig",
]
