"""Run directories → the instruments' typed analysis results (what the report lays out).

:func:`analyse_runs` opens each run (its rows read only when an analysis asks for them), groups the runs by the instrument that made them (in the
order first seen) and hands them, as :class:`~choiceaudit.types.Arm` objects with their
configuration read as the instrument's type, to that instrument's declared analysis
(:data:`~choiceaudit.audit.INSTRUMENTS`). The CLI's ``report`` command is this function followed
by :func:`choiceaudit.report.build_report` on its result.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from choiceaudit.audit._registry import instrument_named
from choiceaudit.errors import InputError
from choiceaudit.instruments.meaning import MeaningAnalysis
from choiceaudit.instruments.scoring import ScoringAnalysis
from choiceaudit.instruments.signalling import HumanAnalysis, SignallingAnalysis
from choiceaudit.store import stored_arm
from choiceaudit.types import Arm

__all__ = ["AnalysisResult", "analyse_runs"]

#: What the instruments' analyses return; :func:`choiceaudit.report.build_report` lays out each.
AnalysisResult = ScoringAnalysis | SignallingAnalysis | MeaningAnalysis | HumanAnalysis


def analyse_runs(run_dirs: Sequence[Path | str]) -> tuple[AnalysisResult, ...]:
    """Every analysis the runs support, in the order the instruments first appear among
    ``run_dirs`` (each instrument's results in the order its analysis returns them: signalling
    gives one per frozen item set, then one per imported human study).

    >>> import json, pathlib, tempfile
    >>> from choiceaudit.audit import score_file
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> line = {"state": "2 + 2 =", "options": ["4", "5"], "meta": {"gold": 0}}
    >>> _ = (tmp / "q.jsonl").write_text(json.dumps(line) + "\\n", encoding="utf-8")
    >>> _ = score_file(tmp / "q.jsonl", "fake", out=tmp / "run")
    >>> (analysis,) = analyse_runs([tmp / "run"])
    >>> [(cell.rule, cell.rows) for cell in analysis.accuracy]
    [('probs', 1), ('logit', 1), ('prob', 1)]
    """
    if not run_dirs:
        raise InputError("give at least one run directory")
    by_instrument: dict[str, list[Arm]] = {}
    for path in run_dirs:
        # rows are read when an analysis asks: the scoring analysis reads columns only
        arm = stored_arm(path)
        by_instrument.setdefault(arm.manifest.instrument, []).append(arm)
    results: list[AnalysisResult] = []
    for name, arms in by_instrument.items():
        instrument = instrument_named(name, source=arms[0].source)
        results.extend(instrument.analyse_arms(arms))  # type: ignore[arg-type]
    return tuple(results)
