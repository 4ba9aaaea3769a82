"""The signalling instrument's declaration: its runs, its configuration and its analyses (the
frozen battery per item set, then the human study analyses of imported people)."""

from __future__ import annotations

from collections.abc import Sequence

from choiceaudit.instruments import Instrument
from choiceaudit.instruments.signalling._config import SignallingConfig
from choiceaudit.instruments.signalling._freeze import FrozenInstrument
from choiceaudit.instruments.signalling._human import analyse_human_runs
from choiceaudit.instruments.signalling._run_analysis import analyse_signalling_runs
from choiceaudit.types import Arm, Query

__all__ = ["INSTRUMENT"]


def _analyse(arms: Sequence[Arm[SignallingConfig]]) -> list[object]:
    return [*analyse_signalling_runs(arms), *analyse_human_runs(arms)]


def _plan(frozen: FrozenInstrument, **grid: Sequence[str] | None) -> list[Query]:
    """The frozen renderings of ``grid`` (conditions, formats, label forms)."""
    return frozen.render(**grid)


#: A run directory is named after its model or chooser, with no prefix (``<out>/smollm2``).
INSTRUMENT = Instrument("signalling", SignallingConfig, _analyse, _plan)
