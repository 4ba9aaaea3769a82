"""The main tables of the meaning section — ladder, LAR, order and permutation audits, slot
shares, option ablation, the o4 control, unit integrity, the capture matrix — one record per
(model, cell), laid out from a :class:`~choiceaudit.instruments.meaning.MeaningAnalysis`. Nothing
here computes a statistic: every number is a field of the analysis. Calibration tables are in
``_meaning_calibration``, the secondary ones in ``_meaning_strata``.

Every interval is the analysis's 95% item-clustered percentile bootstrap (2,000 resamples, seed 0;
the meaning paper §4.3, Appendix R). Each table's note cites the paper section it reproduces.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from choiceaudit.instruments.meaning import ArmAnalysis, Interval, MeaningAnalysis
from choiceaudit.report._tables import ReportTable

#: One row of a meaning table: column name → its cell (a number, a label, a flag or empty),
#: written as CSV, Markdown and LaTeX by ``ReportTable``.
TableRecord = dict[str, object]

__all__ = [
    "CHANCE",
    "CURVE_FAMILIES",
    "E3_LABELS",
    "E6_LABELS",
    "TableRecord",
    "ablation_table",
    "arms",
    "ladder_table",
    "lar_table",
    "make_table",
    "matrix_table",
    "o4_table",
    "order_table",
    "permutation_table",
    "slot_table",
    "unit_table",
]

#: E3 variants (Appendix M) and E6 option forms (Appendix P), as the paper names them.
E3_LABELS = {
    "v0": "v0 intact",
    "v1": "v1 shuffled",
    "v2": "v2 reversed",
    "v3": "v3 word deleted",
    "v4": "v4 word substituted",
    "v5": "v5 carrier sentence",
}
E6_LABELS = {
    "o0": "o0 intact",
    "o1": "o1 truncated (6 words)",
    "o2": "o2 words scrambled",
    "o3": "o3 other-language gloss",
    "o4": "o4 bare labels",
}
#: the two families the reliability and risk–coverage figures compare (Figure 4)
CURVE_FAMILIES = ("d-rand", "d-lit")
#: the dashed line and the ladder's ``chance`` column (k = 4)
CHANCE = 0.25


def arms(analysis: MeaningAnalysis) -> Iterator[tuple[str, ArmAnalysis]]:
    """``(model label, arm analysis)`` for every arm with rows, in the order given."""
    for arm in analysis.arms:
        if arm.analysis is not None:
            yield arm.display, arm.analysis


def make_table(
    name: str, title: str, records: Sequence[Mapping[str, object]], note: str
) -> ReportTable | None:
    rows = [dict(r) for r in records]
    return ReportTable.from_records(name, title, rows, note=note) if rows else None


def _ci_columns(cell: Interval, name: str) -> TableRecord:
    """An interval as the columns ``name`` (its estimate), ``ci_low``, ``ci_high``, ``n_items``."""
    return {**cell.to_columns(name, bounds="ci"), "n_items": cell.n_items}


def _absent(name: str, *, bounds: str | None = None) -> dict[str, None]:
    """The columns ``to_columns`` gives, empty, for a cell the analysis could not compute."""
    stem = name if bounds is None else bounds
    return dict.fromkeys((name, f"{stem}_low", f"{stem}_high"))


def ladder_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records = []
    for label, a in arms(analysis):
        if a.e1 is None:
            continue
        for family, cell in a.e1.accuracy.items():
            # the analysis reports d-rand − family; the ladder reads family − d-rand
            c = a.e1.contrast_vs_d_rand.get(family)
            records.append(
                {
                    "model": label,
                    "family": family,
                    **_ci_columns(cell, "accuracy"),
                    "chance": CHANCE,
                    **(
                        _absent("minus_d_rand")
                        if c is None
                        else c.reversed().to_columns("minus_d_rand")
                    ),
                    "mcnemar_p": None if c is None else c.mcnemar_p,
                    "mcnemar_p_bonferroni": None if c is None else c.mcnemar_p_bonferroni,
                    "mean_p_gold": a.e1.mean_p_gold.get(family),
                    "mean_p_literal": a.e1.mean_p_literal.get(family),
                }
            )
    return make_table(
        "meaning_ladder",
        "The distractor ladder: accuracy by distractor family (E1)",
        records,
        "§4.2, §5.1, Appendix E (Table 8). Accuracy = credit on the gold gloss (ties share credit);"
        " chance 0.250. minus_d_rand: paired difference (this family − d-rand) on shared items "
        "with its bootstrap interval; mcnemar_p: exact McNemar on unique-argmax outcomes, "
        "mcnemar_p_bonferroni: times the number of families contrasted with d-rand. "
        "mean_p_gold / mean_p_literal: mean returned probability on the gold and on the literal "
        "option (Table 1's last rows). The model label names the test language of every cell.",
    )


def lar_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records = []
    for label, a in arms(analysis):
        if a.e1 is None:
            continue
        for family, cell in a.e1.lar.items():
            parts = a.e1.decomposition[family]
            records.append(
                {
                    "model": label,
                    "family": family,
                    **_ci_columns(cell, "lar"),
                    "gold": parts.gold,
                    "literal": parts.literal,
                    "other": parts.other,
                }
            )
    return make_table(
        "meaning_lar",
        "Literal attraction rate and the gold / literal / other decomposition",
        records,
        "§4.2 (LAR = share of choices on the expression's own literal gloss, over lists that carry "
        "it), §5.1 (decomposition; the three shares sum to 1). Not 1 − accuracy: LAR isolates "
        "literal errors from other errors.",
    )


def _order_audits(a: ArmAnalysis) -> list[tuple[str, Any]]:
    """The E7 audits of one arm: the slot-bound one (the paper's E7) and the travelling-key one."""
    if a.e7 is None:
        return []
    out: list[tuple[str, Any]] = [(a.e7.key_binding, a.e7)]
    if a.e7.travelling is not None:
        out.append(("travelling", a.e7.travelling))
    return out


def order_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records = []
    for label, a in arms(analysis):
        for binding, e7 in _order_audits(a):
            records.append(
                {
                    "model": label,
                    "keys": binding,
                    "n_items": e7.n_items,
                    "incomplete_excluded": e7.n_incomplete_items_excluded,
                    "answer_instability": e7.answer_instability,
                    "mean_distinct_choices": e7.mean_distinct_choices,
                    "mean_gold_prob_range": e7.mean_gold_prob_range,
                    "selection_spread": e7.selection_spread,
                }
            )
    return make_table(
        "meaning_order_audit",
        "Order sensitivity over all 24 orderings (E7; Table 21), slot-bound and travelling keys",
        records,
        "§5.4, Appendix Q (Table 21). Identity is the canonical option perm[slot], never the slot "
        "letter. keys=slot: A–D bound to display slots, so moving a gloss also relabels it (the "
        "paper's E7: position and label together); keys=travelling: each option keeps its key "
        "as it moves (position only). A gap between the two rows is the label component. "
        "answer_instability: share of items whose chosen gloss changes across orderings; "
        "mean_distinct_choices: glosses chosen per item (1 = stable); mean_gold_prob_range: "
        "within-item range of p(gold) as returned; selection_spread: most minus least chosen "
        "slot (0 = no positional preference).",
    )


def permutation_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records = []
    for label, a in arms(analysis):
        for binding, e7 in _order_audits(a):
            audit = e7.permutation_audit
            records.append(
                {
                    "model": label,
                    "keys": binding,
                    "n_items": e7.n_items,
                    "median_travel": audit.median_travel,
                    "p95_travel": audit.p95_travel,
                    "mean_travel": audit.mean_travel,
                    "max_travel": audit.max_travel,
                    "share_travel_le_1e-4": audit.share_at_or_below,
                    "share_identical": audit.share_identical,
                    "sum_tolerance": e7.sum_tolerance,
                    "max_sum_deviation": e7.max_sum_deviation,
                }
            )
    return make_table(
        "meaning_permutation_audit",
        "Permutation audit (E7; Table 22), slot-bound and travelling keys",
        records,
        "§5.4, Appendix Q (Table 22): per item, the largest distance one option's own probability "
        "travels across the 24 orderings after mapping slots back to options, on the vectors as "
        "returned (share_identical: identical as returned); p95_travel is the 95th percentile "
        "over items (linear interpolation). An order-independent scorer sits at "
        "fp32 noise (about 1e-7); the share column counts items at or below 1e-4. keys=slot "
        "travel is position plus label; keys=travelling travel is position alone. Vectors are "
        "read as returned when their sum is within sum_tolerance of 1; max_sum_deviation is the "
        "largest |Σp − 1| read (a two-decimal API reaches 0.02).",
    )


def slot_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records = []
    for label, a in arms(analysis):
        sources = []
        if a.e1 is not None:
            sources.append(("e1 ladder", a.e1.slot_shares))
        if a.e7 is not None:
            sources.append(("e7 orderings", a.e7.slot_shares))
        for source, shares in sources:
            for slot, share in enumerate(shares):
                records.append(
                    {
                        "model": label,
                        "source": source,
                        "slot": "ABCD"[slot] if slot < 4 else slot,
                        "share": float(share),
                        "uniform": a.chance,
                    }
                )
    return make_table(
        "meaning_slot_shares",
        "Share of selections by display slot",
        records,
        "Appendix Q (Figure 11): gold is placed uniformly at random, so 0.25 per slot is the "
        "no-bias expectation; ties split their credit.",
    )


def ablation_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records = []
    for label, a in arms(analysis):
        if a.e6 is None:
            continue
        for variant, cell in a.e6.signal_retention.items():
            records.append(
                {
                    "model": label,
                    "variant": E6_LABELS.get(variant, variant),
                    **_ci_columns(cell.accuracy, "accuracy"),
                    "signal_retained": cell.signal_retained,
                    "mean_conf_head": a.e6.mean_conf_head.get(variant),
                    "identity_excluded": a.e6.n_identity_excluded.get(variant, 0),
                }
            )
    return make_table(
        "meaning_ablation",
        "Option-side ablation (E6)",
        records,
        "§5.5, Appendix P (Table 20). Signal retained = (acc − 0.25) / (acc_o0 − 0.25). o4 replaces "
        "every option by a bare label: no option carries information, so its accuracy should be "
        "chance (§5.3). mean_conf_head: the model's presence head (§5.3 compares o4 with o0). "
        "identity_excluded: o2 rows none of whose options has another word order, left out.",
    )


def o4_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records = []
    for label, a in arms(analysis):
        o4 = None if a.e6 is None else a.e6.o4
        if o4 is None:
            continue
        gap = o4.overconfidence_gap
        records.append(
            {
                "model": label,
                "accuracy": o4.accuracy,
                "mean_confidence": o4.mean_confidence,
                **gap.to_columns("overconfidence_gap", bounds="ci"),
                "ece": o4.calibration.ece,
                "n_items": gap.n_items,
            }
        )
    return make_table(
        "meaning_o4_control",
        "The semantics-free control (o4): confidence without information",
        records,
        "§5.3 (Figure 7): overconfidence gap = mean peak probability − accuracy on bare labels, "
        "a lower bound on ECE in that cell.",
    )


def unit_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records = []
    for label, a in arms(analysis):
        if a.e3 is None:
            continue
        agreement = a.e3.agreement_with_intact
        for variant, cell in a.e3.accuracy.items():
            agree = agreement.get(variant)
            interval = None if agree is None else agree.interval
            c = a.e3.contrast_vs_intact.get(variant)
            records.append(
                {
                    "model": label,
                    "variant": E3_LABELS.get(variant, variant),
                    **_ci_columns(cell, "accuracy"),
                    "agreement_with_intact": 1.0
                    if variant == "v0"
                    else None
                    if agree is None
                    else agree.agreement,
                    "agreement_low": None if interval is None else interval.low,
                    "agreement_high": None if interval is None else interval.high,
                    "n_tied_excluded": 0 if agree is None else agree.n_tied_excluded,
                    **(_absent("minus_intact") if c is None else c.to_columns("minus_intact")),
                    "mcnemar_p": None if c is None else c.mcnemar_p,
                    "mcnemar_p_bonferroni": None if c is None else c.mcnemar_p_bonferroni,
                    "identity_excluded": a.e3.n_identity_excluded.get(variant, 0),
                }
            )
    return make_table(
        "meaning_unit_integrity",
        "Unit integrity: the idiom perturbed, the options byte-identical (E3)",
        records,
        "§5.5, Appendix M (Table 11, Figure 9). Agreement = the variant's chosen gloss equals the "
        "intact (v0) one, on rows with a unique argmax (tied rows excluded and counted). A model "
        "that holds the idiom as a unit loses accuracy and agreement under v1–v4. minus_intact: "
        "paired accuracy v_k − v0 with exact McNemar, Bonferroni over the variants. "
        "identity_excluded: rows whose perturbation left the idiom unchanged (no other order), "
        "left out of that variant.",
    )


def matrix_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records = []
    for label, a in arms(analysis):
        matrix = a.matrix
        if matrix is None:
            continue
        for lang, cell in matrix.accuracy.items():
            lar = matrix.lar.get(lang)
            records.append(
                {
                    "model": label,
                    "language": lang,
                    **cell.to_columns("accuracy"),
                    **(_absent("lar") if lar is None else lar.to_columns("lar")),
                    "n_items": cell.n_items,
                }
            )
        if matrix.contrast is not None:
            c = matrix.contrast
            records.append(
                {
                    "model": label,
                    "language": matrix.contrast_label,
                    **c.to_columns("lar"),
                    "n_items": c.n_items,
                    "mcnemar_p": c.mcnemar_p,
                }
            )
    return make_table(
        "meaning_capture_matrix",
        "The capture matrix: model × task language on one item draw",
        records,
        "§5.1, Appendix I (Tables 14–15, Figure 5): both language cells of an item share one draw, "
        "so the a_minus_b row is a paired LAR contrast (bootstrap interval on per-item "
        "differences, exact McNemar on capture).",
    )
