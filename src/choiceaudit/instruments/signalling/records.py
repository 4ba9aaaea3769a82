"""The typed JSON records of the signalling instrument, for code that reads or writes them:
a run's ``chat_template_default`` and ``coverage`` (``ChatTemplateNote``, ``CoverageRecord``),
the freeze record ``instrument.json`` with its blocks (``FreezeRecord``, ``RenderingSpec``,
``RenderingOverrides``, ``AnalysisBattery``, ``AnalysisSetSpec``, ``BootstrapSpec``,
``FitFamily``, ``CovariateReport``, ``CandidateRecord``), an amendment line (``Amendment``) and
the build's reports in the item set's configuration (``PoolRecord``, ``RetentionReport``,
``TileScreen``, ``ScreenDecision``, ``TileRecord``, ``LossRecord``, ``TieReadings``,
``TileSelection``).
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
from choiceaudit.instruments.signalling._selection import TileSelection
from choiceaudit.instruments.signalling._ties import TieReadings

__all__ = [
    "Amendment",
    "AnalysisBattery",
    "AnalysisSetSpec",
    "BootstrapSpec",
    "CandidateRecord",
    "ChatTemplateNote",
    "CovariateReport",
    "CoverageRecord",
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
