"""The meaning instrument's declaration: its runs, its configuration, its plan and its
analysis."""

from __future__ import annotations

from collections.abc import Sequence

from choiceaudit.instruments import Instrument
from choiceaudit.instruments.meaning._arms import analyse_meaning_runs
from choiceaudit.instruments.meaning._config import MeaningConfig
from choiceaudit.instruments.meaning._plan import plan_meaning
from choiceaudit.types import Arm

__all__ = ["INSTRUMENT"]


def _analyse(arms: Sequence[Arm[MeaningConfig]]) -> list[object]:
    return [analyse_meaning_runs(arms)]


#: A run directory is ``<out>/meaning-<model>``.
INSTRUMENT = Instrument("meaning", MeaningConfig, _analyse, plan_meaning, run_prefix="meaning-")
