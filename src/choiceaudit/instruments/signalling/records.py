"""The typed records a signalling run stores or a figure draws, typed as what they are.

A reader of ``arm.config`` (a :class:`~choiceaudit.instruments.signalling.SignallingConfig`) or
of a :class:`~choiceaudit.instruments.signalling.SignallingAnalysis` meets these as field types:
the chat-template note and coverage record of a run's configuration, and the points and bins
the report's figures draw. They live here rather than beside the instrument's entry points so
that the package itself exports only what a user calls.
"""

from choiceaudit.instruments.signalling._config import ChatTemplateNote, CoverageRecord
from choiceaudit.instruments.signalling._figure_results import ExcessPoint, FitCostBin
from choiceaudit.instruments.signalling._results import CoordinatePoint

__all__ = [
    "ChatTemplateNote",
    "CoordinatePoint",
    "CoverageRecord",
    "ExcessPoint",
    "FitCostBin",
]
