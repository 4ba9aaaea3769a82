"""The meaning section: literal attraction in decision models (arXiv 2610.22526), one section
comparing every meaning run given (one run per model, all answering the same plan).

:func:`meaning_sections` lays out a :class:`~choiceaudit.instruments.meaning.MeaningAnalysis`
(computed by :func:`~choiceaudit.instruments.meaning.analyse_meaning_runs`) as tables and
figures: the ladder, literal attraction, the capture matrix, reliability, risk–coverage,
confidence by outcome, order sensitivity and slot shares, option ablation and unit integrity.
It computes nothing: every number is a field of the analysis. What the runs cannot support (the
analysis's :class:`~choiceaudit.types.Skipped` reasons, and figures without records) is listed
in ``Section.skipped``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from choiceaudit.instruments.meaning import MeaningAnalysis
from choiceaudit.report._figures import ReportFigure
from choiceaudit.report._html import Section
from choiceaudit.report._meaning_calibration import (
    calibration_table,
    confidence_table,
    gate_table,
    reliability_table,
    risk_coverage_table,
    selective_table,
)
from choiceaudit.report._meaning_computed import stated
from choiceaudit.report._meaning_extra import (
    choice_check_table,
    cue_free_table,
    example_table,
    frequency_table,
    hook_table,
    loader_table,
    parenthetical_table,
    pooled_confidence_table,
    subset_drift_table,
)
from choiceaudit.report._meaning_figures import (
    ablation_figure,
    confidence_figure,
    e4_figure,
    ladder_figure,
    lar_figure,
    matrix_figure,
    o4_figure,
    order_figure,
    reliability_figure,
    risk_coverage_figure,
    slot_figure,
    unit_figure,
)
from choiceaudit.report._meaning_items import (
    descriptives_table,
    distinct_figure,
    distinct_table,
    item_tables,
)
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

__all__ = ["MEANING_METHOD", "meaning_sections"]

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
    "credit; intervals are 95% percentile bootstraps over items (2,000 resamples, seed 0); every "
    "paired contrast prints its exact McNemar p-value, Bonferroni-adjusted where several are "
    "tested together.</p>"
    "<p><strong>Language.</strong> Every model label carries the test language of its cells "
    "(<code>[bn]</code>, <code>[en]</code>; a run holding several ladders in one language is "
    "split by block, e.g. <code>[en, j2_lit_en]</code>), so no cell of one language is shown "
    "under another's name; E4 and the matrix carry both languages in their rows. "
    "<strong>Vectors as returned.</strong> Choices, peak confidence, p(gold), the order audit "
    "and LAR read the probability vector the model returned; only ECE, Brier, reliability bins, "
    "entropy and JS divergence read it renormalised to sum to 1. Where a server's returned "
    "<em>choice</em> is not the argmax of its vector, the rows are counted and accuracy and LAR "
    "are shown on both. <strong>Order.</strong> The paper's E7 binds A–D to display slots, so it "
    "measures position and label together; the travelling-key rows keep each option's key as it "
    "moves (position alone), and the gap between the two is the label component.</p>"
)


def runs_table(analysis: MeaningAnalysis) -> ReportTable:
    """The runs in the section, as given (the same columns as every section's runs table)."""
    records = []
    for arm in analysis.arms:
        scorer = arm.manifest.scorer or {}
        records.append(
            {
                "run": Path(arm.source).name,
                "model": arm.display,
                "language": arm.language,
                "design": arm.config.design,
                "backend": scorer.get("backend"),
                "dtype": scorer.get("dtype"),
                "rows": arm.n_rows,
                "status": arm.manifest.status,
                "created": arm.manifest.created,
                "choice_not_argmax": arm.n_choice_not_argmax,
                "manifest_choice_not_argmax": arm.manifest.choice_not_argmax_rows,
            }
        )
    return ReportTable.from_records("meaning_runs", "Runs in this report", records)


Pair = tuple[Callable[[MeaningAnalysis], ReportTable | None], Callable[..., ReportFigure]]

_FIGURES: tuple[tuple[str, Pair], ...] = (
    ("distractor ladder", (ladder_table, ladder_figure)),
    ("literal attraction", (lar_table, lar_figure)),
    ("capture matrix", (matrix_table, matrix_figure)),
    ("reliability diagrams", (reliability_table, reliability_figure)),
    ("risk–coverage curves", (risk_coverage_table, risk_coverage_figure)),
    ("confidence by outcome", (confidence_table, confidence_figure)),
    ("order sensitivity", (order_table, order_figure)),
    ("distinct choices", (distinct_table, distinct_figure)),
    ("slot shares", (slot_table, slot_figure)),
    ("option ablation", (ablation_table, ablation_figure)),
    ("semantics-free control", (o4_table, o4_figure)),
    ("unit integrity", (unit_table, unit_figure)),
    ("task language", (e4_table, e4_figure)),
)
_FIGURE_NEEDS = {
    "distractor ladder": "the ladder (E1)",
    "literal attraction": "a literal-bearing family (d-lit or d-hard) in the ladder",
    "capture matrix": "capture-matrix rows (a two-language corpus)",
    "reliability diagrams": "d-rand or d-lit ladder rows",
    "risk–coverage curves": "d-rand or d-lit ladder rows",
    "confidence by outcome": "d-rand or d-lit ladder rows",
    "order sensitivity": "an item scored under all 24 orderings (E7)",
    "distinct choices": "an item scored under all 24 orderings (E7)",
    "slot shares": "ladder (E1) or order-audit (E7) rows",
    "option ablation": "option-ablation rows (E6)",
    "semantics-free control": "o4 rows (E6)",
    "unit integrity": "unit-integrity rows (E3)",
    "task language": "task-language rows (E4, a two-language corpus)",
}
#: tables shown without a figure of their own: after the LAR table, and at the end
_TABLES_EARLY = (
    choice_check_table,
    model_contrast_table,
    pooled_confidence_table,
    calibration_table,
    gate_table,
    selective_table,
)
_TABLES_LATE = (
    surface_table,
    hook_table,
    cue_table,
    cue_free_table,
    parenthetical_table,
    length_table,
    frequency_table,
    output_table,
    descriptives_table,
    subset_drift_table,
    example_table,
    pairing_table,
    loader_table,
)


def meaning_sections(analysis: MeaningAnalysis) -> list[Section]:
    """One section comparing every meaning run (see the module docstring)."""
    section = Section(
        key="meaning",
        title="Meaning choice: literal attraction (arXiv 2610.22526)",
        method=MEANING_METHOD,
        runs=list({arm.source: (arm.source, arm.manifest) for arm in analysis.arms}.values()),
    )
    section.tables.append(runs_table(analysis))
    section.skipped.extend(str(s) for s in analysis.skipped)
    tables: dict[str, ReportTable] = {}
    for name, (make_table, make_figure) in _FIGURES:
        table = make_table(analysis)
        if table is None or (name == "confidence by outcome" and not _has_curve_cells(table)):
            section.skipped.append(f"figure '{name}': no run has {_FIGURE_NEEDS[name]}")
            continue
        tables[name] = table
        if name == "distractor ladder":
            section.figures.append(ladder_figure(table, analysis.families))
        else:
            section.figures.append(make_figure(table))
    for name in ("distractor ladder", "literal attraction"):
        if name in tables:
            section.tables.append(tables[name])
    for make in _TABLES_EARLY:
        early = make(analysis)
        if early is not None:
            section.tables.append(early)
    for name in (
        "semantics-free control",
        "capture matrix",
        "order sensitivity",
        "option ablation",
        "unit integrity",
        "task language",
    ):
        if name in tables:
            section.tables.append(tables[name])
        if name == "order sensitivity" and (permutation := permutation_table(analysis)):
            section.tables.append(permutation)
        if name == "order sensitivity" and "distinct choices" in tables:
            section.tables.append(tables["distinct choices"])
    for make in _TABLES_LATE:
        late = make(analysis)
        if late is not None:
            section.tables.append(late)
    section.item_tables.extend(item_tables(analysis))
    return [stated(section)]


def _has_curve_cells(table: ReportTable) -> bool:
    return any(r["signal"] == "peak" and r["cell"] in ("d-rand", "d-lit") for r in table.records())
