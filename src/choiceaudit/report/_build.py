"""``build_report``: lay out the analysis results of ``choiceaudit.audit.analyse_runs`` as one
report. Each result type has one layout in :data:`LAYOUTS` (a report module's function of every
result of that type); the sections of a type stand where its first result stands, so the
signalling analyses of several frozen item sets share one call and their sections are keyed by
instrument hash."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from choiceaudit.errors import InputError
from choiceaudit.instruments import plugin_instruments
from choiceaudit.instruments.meaning import MeaningAnalysis
from choiceaudit.instruments.scoring import ScoringAnalysis
from choiceaudit.instruments.signalling import HumanAnalysis, SignallingAnalysis
from choiceaudit.report._generic import scoring_section
from choiceaudit.report._html import Section, write_report
from choiceaudit.report._human import human_sections
from choiceaudit.report._meaning import meaning_sections
from choiceaudit.report._precision import with_precision
from choiceaudit.report._signalling import signalling_sections
from choiceaudit.report._tables import DOCS_URL

__all__ = ["LAYOUTS", "build_report"]

#: Result type → the sections laid out from every result of that type, in the order given.
LAYOUTS: dict[type, Callable[[Sequence[Any]], Sequence[Section]]] = {
    ScoringAnalysis: lambda results: [scoring_section(r) for r in results],
    SignallingAnalysis: signalling_sections,
    MeaningAnalysis: lambda results: [s for r in results for s in meaning_sections(r)],
    HumanAnalysis: human_sections,
}


def build_report(
    results: Sequence[object],
    *,
    out: Path | str,
    title: str = "choiceaudit report",
    docs_url: str = DOCS_URL,
) -> Path:
    """Write the report of ``results`` (analysis results of any type in :data:`LAYOUTS`, or of
    a type a plug-in instrument declares a layout for) into ``out``; return the path of
    ``index.html``. A result no layout knows is an :class:`~choiceaudit.errors.InputError`.
    Each table and figure links the page of the documentation site at ``docs_url`` that
    defines it. A section with runs scored in a reduced precision opens with their precision
    gate's figures, and every row of such a run carries its noise floor and flip rate.

    >>> import json, pathlib, tempfile
    >>> from choiceaudit.audit import analyse_runs, score_file
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> line = {"state": "2 + 2 =", "options": ["4", "5"], "meta": {"gold": 0}}
    >>> _ = (tmp / "q.jsonl").write_text(json.dumps(line) + "\\n", encoding="utf-8")
    >>> _ = score_file(tmp / "q.jsonl", "fake", out=tmp / "run")
    >>> index = build_report(analyse_runs([tmp / "run"]), out=tmp / "report")
    >>> index.name, (tmp / "report" / "tables").is_dir()
    ('index.html', True)
    """
    if not results:
        raise InputError("build_report needs at least one analysis result")
    layouts = _layouts()
    by_type: dict[type, list[object]] = {}
    for result in results:
        if type(result) not in layouts:
            raise InputError(
                f"no report layout for {type(result).__name__}: an instrument declares the "
                "layout of each result type its analysis returns (Instrument.layouts)"
            )
        by_type.setdefault(type(result), []).append(result)
    sections: list[Section] = []
    for kind, group in by_type.items():
        for section in layouts[kind](group):
            if not isinstance(section, Section):
                raise InputError(
                    f"the report layout of {kind.__name__} returned a {type(section).__name__}, "
                    "not a choiceaudit.report.Section"
                )
            sections.append(with_precision(section))
    return write_report(sections, Path(out), title=title, docs_url=docs_url)


def _layouts() -> dict[type, Callable[[Sequence[Any]], Sequence[object]]]:
    """The built-in layouts, and those plug-in instruments declare for their result types."""
    layouts: dict[type, Callable[[Sequence[Any]], Sequence[object]]] = dict(LAYOUTS)
    for instrument in plugin_instruments().values():
        layouts.update(instrument.layouts)
    return layouts
