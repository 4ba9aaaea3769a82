"""Plain scoring runs as an instrument: runs that record no ``instrument`` (query files scored
with ``choiceaudit score``, imported harness results) are analysed here."""

from __future__ import annotations

from collections.abc import Sequence

from choiceaudit.instruments import Instrument
from choiceaudit.instruments.scoring._analysis import analyse_scoring_runs
from choiceaudit.instruments.scoring._config import ScoreConfig
from choiceaudit.types import Arm, Query

__all__ = ["INSTRUMENT"]


def _analyse(arms: Sequence[Arm[ScoreConfig]]) -> list[object]:
    return [analyse_scoring_runs(arms)]


def _plan(queries: Sequence[Query]) -> list[Query]:
    """A query file is its own plan: its queries, in file order."""
    return list(queries)


INSTRUMENT = Instrument("score", ScoreConfig, _analyse, _plan)
