"""``build_report``: lay out the analysis results of ``choiceaudit.audit.analyse_runs`` as one
report (sections in the order of the results; the signalling analyses of several frozen item
sets share one call so their sections are keyed by instrument hash)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from choiceaudit.errors import InputError
from choiceaudit.instruments.meaning import MeaningAnalysis
from choiceaudit.instruments.scoring import ScoringAnalysis
from choiceaudit.instruments.signalling import HumanAnalysis, SignallingAnalysis
from choiceaudit.report._generic import scoring_section
from choiceaudit.report._html import Section, write_report
from choiceaudit.report._human import human_sections
from choiceaudit.report._meaning import meaning_sections
from choiceaudit.report._signalling import signalling_sections

__all__ = ["build_report"]


def build_report(
    results: Sequence[ScoringAnalysis | SignallingAnalysis | MeaningAnalysis | HumanAnalysis],
    out_dir: Path | str,
    *,
    title: str = "choiceaudit report",
) -> Path:
    """Write the report of ``results`` into ``out_dir``; return the path of ``index.html``."""
    if not results:
        raise InputError("build_report needs at least one analysis result")
    sections: list[Section] = []
    signalling = [r for r in results if isinstance(r, SignallingAnalysis)]
    human = [r for r in results if isinstance(r, HumanAnalysis)]
    for result in results:
        if isinstance(result, ScoringAnalysis):
            sections.append(scoring_section(result))
        elif isinstance(result, MeaningAnalysis):
            sections.extend(meaning_sections(result))
        elif isinstance(result, SignallingAnalysis):
            if result is signalling[0]:
                sections.extend(signalling_sections(signalling))
        elif isinstance(result, HumanAnalysis):
            if result is human[0]:
                sections.extend(human_sections(human))
        else:
            raise TypeError(f"build_report cannot lay out {type(result).__name__}")
    return write_report(sections, Path(out_dir), title=title)
