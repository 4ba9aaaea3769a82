"""The typed records a signalling run stores, a freeze writes or a figure draws, typed as what
they are.

A reader of ``arm.config`` (a :class:`~choiceaudit.instruments.signalling.SignallingConfig`) or
of a :class:`~choiceaudit.instruments.signalling.SignallingAnalysis` meets these as field types:
the chat-template note and coverage record of a run's configuration, and the points and bins
the report's figures draw. A reader of a frozen item directory meets the JSON records: the
freeze record ``instrument.json`` with its blocks (``FreezeRecord``, ``RenderingSpec``,
``RenderingOverrides``, ``AnalysisBattery``, ``AnalysisSetSpec``, ``BootstrapSpec``,
``FitFamily``, ``CovariateReport``, ``CandidateRecord``), an amendment line (``Amendment``) and
the build's reports in the item set's configuration (``PoolRecord``, ``RetentionReport``,
``TileScreen``, ``ScreenDecision``, ``TileRecord``, ``LossRecord``, ``TieReadings``,
``TileSelection``). They live here rather than beside the instrument's entry points so that the
package itself exports only what a user calls.
"""

from choiceaudit.instruments.signalling._build_records import (
    LossRecord,
    PoolRecord,
    RetentionReport,
    ScreenDecision,
    TileRecord,
    TileScreen,
)
from choiceaudit.instruments.signalling._config import ChatTemplateNote, CoverageRecord
from choiceaudit.instruments.signalling._figure_results import ExcessPoint, FitCostBin
from choiceaudit.instruments.signalling._freeze_records import (
    Amendment,
    AnalysisBattery,
    AnalysisSetSpec,
    BootstrapSpec,
    CandidateRecord,
    CovariateReport,
    FitFamily,
    FreezeRecord,
    RenderingOverrides,
    RenderingSpec,
)
from choiceaudit.instruments.signalling._results import CoordinatePoint
from choiceaudit.instruments.signalling._selection import TileSelection
from choiceaudit.instruments.signalling._ties import TieReadings

__all__ = [
    "Amendment",
    "AnalysisBattery",
    "AnalysisSetSpec",
    "BootstrapSpec",
    "CandidateRecord",
    "ChatTemplateNote",
    "CoordinatePoint",
    "CovariateReport",
    "CoverageRecord",
    "ExcessPoint",
    "FitCostBin",
    "FitFamily",
    "FreezeRecord",
    "LossRecord",
    "PoolRecord",
    "RenderingOverrides",
    "RenderingSpec",
    "RetentionReport",
    "ScreenDecision",
    "TieReadings",
    "TileRecord",
    "TileScreen",
    "TileSelection",
]
