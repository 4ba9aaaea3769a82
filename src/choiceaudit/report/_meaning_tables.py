"""The main tables of the meaning section — ladder, LAR, order and permutation audits, slot
shares, option ablation, the o4 control, unit integrity, the capture matrix — one record per
(model, cell), read from :func:`~choiceaudit.instruments.meaning.analyse_meaning` output. The
report computes nothing the analysis does not, except the d-hard decomposition (with the
instrument's own :func:`decomposition`). Calibration tables are in ``_meaning_calibration``,
the secondary ones in ``_meaning_strata``.

Every interval is the analysis's 95% item-clustered percentile bootstrap (2,000 resamples, seed 0;
the meaning paper §4.3, Appendix R). Each table's note cites the paper section it reproduces.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from choiceaudit.instruments.meaning import (
    FAMILIES,
    MeaningRows,
    decomposition,
)
from choiceaudit.report._tables import ReportTable

__all__ = [
    "CHANCE",
    "CURVE_FAMILIES",
    "E3_LABELS",
    "E6_LABELS",
    "MeaningResult",
    "ablation_table",
    "family_order",
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
CHANCE = 0.25


@dataclass(frozen=True)
class MeaningResult:
    """One run's rows, its analysis and its meaning config, under the model label shown."""

    label: str
    rows: MeaningRows
    analysis: dict[str, Any]
    config: dict[str, Any]


def make_table(
    name: str, title: str, records: list[dict[str, Any]], note: str
) -> ReportTable | None:
    return ReportTable.from_records(name, title, records, note=note) if records else None


def _ci_columns(cell: dict[str, Any], name: str) -> dict[str, Any]:
    """An analysis interval cell as the columns ``name`` (its estimate), ``ci_low``, ``ci_high``
    and ``n_items``."""
    return {
        name: float(cell["estimate"]),
        "ci_low": float(cell["low"]),
        "ci_high": float(cell["high"]),
        "n_items": int(cell["n_items"]),
    }


def _negate(value: Any) -> float | None:
    return None if value is None else -float(value)


def ladder_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    records = []
    for r in results:
        e1 = r.analysis.get("e1")
        if e1 is None:
            continue
        for family, cell in e1["accuracy"].items():
            contrast = e1.get("contrast_vs_d_rand", {}).get(family, {})
            records.append(
                {
                    "model": r.label,
                    "family": family,
                    **_ci_columns(cell, "accuracy"),
                    "chance": CHANCE,
                    # the analysis reports d-rand − family; the ladder reads family − d-rand
                    "minus_d_rand": _negate(contrast.get("difference")),
                    "minus_d_rand_low": _negate(contrast.get("high")),
                    "minus_d_rand_high": _negate(contrast.get("low")),
                    "mcnemar_p": contrast.get("mcnemar_p"),
                }
            )
    return make_table(
        "meaning_ladder",
        "The distractor ladder: accuracy by distractor family (E1)",
        records,
        "§4.2, §5.1, Appendix E (Table 8). Accuracy = credit on the gold gloss (ties share credit);"
        " chance 0.250. minus_d_rand: paired difference (this family − d-rand) on shared items "
        "with its bootstrap interval; mcnemar_p: exact McNemar on unique-argmax outcomes.",
    )


def lar_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    records = []
    for r in results:
        e1 = r.analysis.get("e1")
        if e1 is None:
            continue
        ladder = r.rows.where(experiment="e1")
        for family, cell in e1.get("lar", {}).items():
            parts = decomposition(ladder.where(family=family))
            records.append(
                {
                    "model": r.label,
                    "family": family,
                    **_ci_columns(cell, "lar"),
                    "gold": parts["gold"],
                    "literal": parts["literal"],
                    "other": parts["other"],
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


def order_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    records = []
    for r in results:
        e7 = r.analysis.get("e7")
        if e7 is None:
            continue
        records.append(
            {
                "model": r.label,
                "n_items": e7["n_items"],
                "incomplete_excluded": e7["n_incomplete_items_excluded"],
                "answer_instability": e7["answer_instability"],
                "mean_distinct_choices": e7["mean_distinct_choices"],
                "mean_gold_prob_range": e7["mean_gold_prob_range"],
                "selection_spread": e7["selection_spread"],
            }
        )
    return make_table(
        "meaning_order_audit",
        "Order sensitivity over all 24 orderings (E7; Table 21)",
        records,
        "§5.4, Appendix Q (Table 21). Identity is the canonical option perm[slot], never the slot "
        "letter. answer_instability: share of items whose chosen gloss changes across orderings; "
        "mean_distinct_choices: glosses chosen per item (1 = stable); mean_gold_prob_range: "
        "within-item range of p(gold); selection_spread: most minus least chosen slot (0 = no "
        "positional preference).",
    )


def permutation_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    records = []
    for r in results:
        e7 = r.analysis.get("e7")
        if e7 is None:
            continue
        audit = e7["permutation_audit"]
        records.append(
            {
                "model": r.label,
                "n_items": e7["n_items"],
                "median_travel": audit["median_travel"],
                "mean_travel": audit["mean_travel"],
                "max_travel": audit["max_travel"],
                "share_travel_le_1e-4": audit["share_at_or_below"],
                "share_identical": audit["share_identical"],
            }
        )
    return make_table(
        "meaning_permutation_audit",
        "Permutation audit (E7; Table 22)",
        records,
        "§5.4, Appendix Q (Table 22): per item, the largest distance one option's own probability "
        "travels across the 24 orderings after mapping slots back to options. An order-independent "
        "scorer sits at fp32 noise (about 1e-7); the share column counts items at or below 1e-4.",
    )


def slot_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    records = []
    for r in results:
        sources = []
        if "e1" in r.analysis:
            sources.append(("e1 ladder", r.analysis["e1"]["slot_shares"]))
        if "e7" in r.analysis:
            sources.append(("e7 orderings", r.analysis["e7"]["slot_shares"]))
        for source, shares in sources:
            for slot, share in enumerate(shares):
                records.append(
                    {"model": r.label, "source": source, "slot": "ABCD"[slot] if slot < 4 else slot,
                     "share": float(share), "uniform": 1.0 / len(shares)}
                )  # fmt: skip
    return make_table(
        "meaning_slot_shares",
        "Share of selections by display slot",
        records,
        "Appendix Q (Figure 11): gold is placed uniformly at random, so 0.25 per slot is the "
        "no-bias expectation; ties split their credit.",
    )


def ablation_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    records = []
    for r in results:
        retention = r.analysis.get("e6", {}).get("signal_retention")
        if retention is None:
            continue
        for variant, cell in retention.items():
            records.append(
                {
                    "model": r.label,
                    "variant": E6_LABELS.get(variant, variant),
                    **_ci_columns(cell, "accuracy"),
                    "signal_retained": cell["signal_retained"],
                }
            )
    return make_table(
        "meaning_ablation",
        "Option-side ablation (E6)",
        records,
        "§5.5, Appendix P (Table 20). Signal retained = (acc − 0.25) / (acc_o0 − 0.25). o4 replaces "
        "every option by a bare label: no option carries information, so its accuracy should be "
        "chance (§5.3).",
    )


def o4_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    records = []
    for r in results:
        e6 = r.analysis.get("e6", {})
        if "o4_overconfidence_gap" not in e6:
            continue
        gap = e6["o4_overconfidence_gap"]
        calibration = e6["o4_calibration"]
        records.append(
            {
                "model": r.label,
                "accuracy": calibration["accuracy"],
                "mean_confidence": calibration["accuracy"] + float(gap["estimate"]),
                "overconfidence_gap": float(gap["estimate"]),
                "ci_low": float(gap["low"]),
                "ci_high": float(gap["high"]),
                "ece": calibration["ece"],
                "n_items": int(gap["n_items"]),
            }
        )
    return make_table(
        "meaning_o4_control",
        "The semantics-free control (o4): confidence without information",
        records,
        "§5.3 (Figure 7): overconfidence gap = mean peak probability − accuracy on bare labels, "
        "a lower bound on ECE in that cell.",
    )


def unit_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    records = []
    for r in results:
        e3 = r.analysis.get("e3")
        if e3 is None:
            continue
        agreement = e3["agreement_with_intact"]
        for variant, cell in e3["accuracy"].items():
            agree = agreement.get(variant, {})
            interval = agree.get("interval", {})
            records.append(
                {
                    "model": r.label,
                    "variant": E3_LABELS.get(variant, variant),
                    **_ci_columns(cell, "accuracy"),
                    "agreement_with_intact": 1.0 if variant == "v0" else agree.get("agreement"),
                    "agreement_low": interval.get("low"),
                    "agreement_high": interval.get("high"),
                    "n_tied_excluded": agree.get("n_tied_excluded", 0),
                }
            )
    return make_table(
        "meaning_unit_integrity",
        "Unit integrity: the idiom perturbed, the options byte-identical (E3)",
        records,
        "§5.5, Appendix M (Table 11, Figure 9). Agreement = the variant's chosen gloss equals the "
        "intact (v0) one, on rows with a unique argmax (tied rows excluded and counted). A model "
        "that holds the idiom as a unit loses accuracy and agreement under v1–v4.",
    )


def matrix_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    records = []
    for r in results:
        matrix = r.analysis.get("matrix")
        if matrix is None:
            continue
        for lang, cell in matrix["accuracy"].items():
            lar = matrix.get("lar", {}).get(lang, {})
            records.append(
                {
                    "model": r.label,
                    "language": lang,
                    "accuracy": float(cell["estimate"]),
                    "accuracy_low": float(cell["low"]),
                    "accuracy_high": float(cell["high"]),
                    "lar": lar.get("estimate"),
                    "lar_low": lar.get("low"),
                    "lar_high": lar.get("high"),
                    "n_items": int(cell["n_items"]),
                }
            )
        for key, contrast in matrix.items():
            if key.startswith("contrast_"):
                records.append(
                    {"model": r.label, "language": key.removeprefix("contrast_"),
                     "lar": contrast["difference"], "lar_low": contrast["low"],
                     "lar_high": contrast["high"], "n_items": contrast["n_items"]}
                )  # fmt: skip
    return make_table(
        "meaning_capture_matrix",
        "The capture matrix: model × task language on one item draw",
        records,
        "§5.1, Appendix I (Tables 14–15, Figure 5): both language cells of an item share one draw, "
        "so the a_minus_b row is a paired LAR contrast (bootstrap interval on per-item "
        "differences).",
    )


def family_order(values: Sequence[str]) -> list[str]:
    known = [f for f in FAMILIES if f in values]
    return known + [v for v in dict.fromkeys(values) if v not in FAMILIES]
