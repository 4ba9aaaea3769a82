"""Run directories → the instruments' typed analysis results (what the report lays out).

:func:`analyse_runs` opens each run, groups the runs by the instrument that made them (in the
order first seen) and calls that instrument's analysis on the runs as
:class:`~choiceaudit.types.Arm` objects. The CLI's ``report`` command is this function followed
by :func:`choiceaudit.report.build_report` on its result.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from choiceaudit.errors import InputError
from choiceaudit.instruments.meaning import MeaningAnalysis, analyse_meaning_runs
from choiceaudit.instruments.scoring import ScoringAnalysis, analyse_scoring_runs
from choiceaudit.instruments.signalling import (
    HumanAnalysis,
    SignallingAnalysis,
    analyse_human_runs,
    analyse_signalling_runs,
)
from choiceaudit.store import Run, open_run

__all__ = ["AnalysisResult", "analyse_runs"]

#: What an instrument's analysis returns; :func:`choiceaudit.report.build_report` lays out each.
AnalysisResult = ScoringAnalysis | SignallingAnalysis | MeaningAnalysis | HumanAnalysis


def analyse_runs(run_dirs: Sequence[Path | str]) -> tuple[AnalysisResult, ...]:
    """Every analysis the runs support, one result per instrument (signalling: one per frozen
    item set), in the order the instruments first appear among ``run_dirs``."""
    if not run_dirs:
        raise InputError("give at least one run directory")
    by_instrument: dict[str, list[Run]] = {}
    for path in run_dirs:
        run = open_run(path)
        by_instrument.setdefault(run.instrument, []).append(run)
    results: list[AnalysisResult] = []
    for instrument, runs in by_instrument.items():
        arms = [run.arm() for run in runs]
        if instrument == "score":
            results.append(analyse_scoring_runs(arms))
        elif instrument == "signalling":
            results.extend(analyse_signalling_runs(arms))
            results.extend(analyse_human_runs(arms))  # people's own analyses (import human)
        elif instrument == "meaning":
            results.append(analyse_meaning_runs(arms))
        else:
            raise InputError(f"no analysis for instrument {instrument!r} ({runs[0].path})")
    return tuple(results)
