"""``build_report``: group run directories by instrument and write one report for all of them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from choiceaudit.errors import InputError
from choiceaudit.instruments.meaning import analyse_meaning_runs
from choiceaudit.report._generic import scoring_section
from choiceaudit.report._html import Section, write_report
from choiceaudit.report._meaning import meaning_sections
from choiceaudit.report._signalling import signalling_sections
from choiceaudit.store import Run, open_run

__all__ = ["SECTION_BUILDERS", "build_report"]

#: instrument name (``manifest["config"]["instrument"]``) → section builder.
SECTION_BUILDERS: dict[str, Callable[[Sequence[Run]], list[Section]]] = {
    "score": lambda runs: [scoring_section(runs)],
    "meaning": lambda runs: meaning_sections(analyse_meaning_runs([run.arm() for run in runs])),
    "signalling": signalling_sections,
}


def build_report(
    run_dirs: Sequence[Path | str], out_dir: Path | str, *, title: str = "choiceaudit report"
) -> Path:
    """Write the report for ``run_dirs`` into ``out_dir``; return the path of ``index.html``."""
    if not run_dirs:
        raise InputError("build_report needs at least one run directory")
    runs = [open_run(p) for p in run_dirs]
    by_instrument: dict[str, list[Run]] = {}
    for run in runs:
        by_instrument.setdefault(run.instrument, []).append(run)
    sections: list[Section] = []
    for instrument, group in by_instrument.items():
        builder = SECTION_BUILDERS.get(instrument)
        if builder is None:
            raise InputError(f"no report section for instrument {instrument!r} ({group[0].path})")
        sections.extend(builder(group))
    return write_report(sections, Path(out_dir), title=title)
