"""One signalling arm once analysed: its coordinate rows beside the arm and the verified frozen
item set they were placed on. The per-arm analysis (``_run_analysis``) makes it; the batch-1
comparison and the diagnostics read it."""

from __future__ import annotations

from dataclasses import dataclass

from choiceaudit.instruments.signalling._analysis import CoordinateRow
from choiceaudit.instruments.signalling._battery import ChooserRows
from choiceaudit.instruments.signalling._config import SignallingConfig
from choiceaudit.instruments.signalling._freeze import FrozenInstrument
from choiceaudit.types import Arm

__all__ = ["AnalysedArm"]


@dataclass(kw_only=True)
class AnalysedArm(ChooserRows):
    """One arm's coordinate rows (primary, exponential decay), with the arm, its verified
    frozen instrument and the same rows under the Gaussian decay family (§I-A)."""

    arm: Arm[SignallingConfig]
    frozen: FrozenInstrument
    rows_gaussian: list[CoordinateRow]
