"""Secondary meaning tables: paired model contrasts on the ladder (Table 1's Δ), LAR by
construction cue (§5.6) and idiom length (Appendix J), output distributions (Appendix H), the
task-language swap (E4), alternative surface forms (E2) and the pairing check between runs. All read the analysis, except the model contrasts, which pair two
runs' rows on shared items with the instrument's own :func:`paired_contrast`."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from choiceaudit.instruments.meaning import paired_contrast, pairing_check
from choiceaudit.report._meaning_tables import MeaningResult, family_order, make_table
from choiceaudit.report._tables import ReportTable

__all__ = [
    "cue_table",
    "e4_table",
    "length_table",
    "model_contrast_table",
    "output_table",
    "pairing_table",
    "surface_table",
]


def model_contrast_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    """Per family and pair of models, accuracy (and LAR) of a − b on the items both answered."""
    records: list[dict[str, Any]] = []
    for a, b in itertools.combinations(results, 2):
        ladder_a = a.rows.where(experiment="e1")
        ladder_b = b.rows.where(experiment="e1")
        families = family_order(
            sorted(set(ladder_a.family.tolist()) & set(ladder_b.family.tolist()))
        )
        for family in families:
            cell_a, cell_b = ladder_a.where(family=family), ladder_b.where(family=family)
            outcomes = ["correct"] + (["captured"] if (cell_a.literal_slot >= 0).any() else [])
            for outcome in outcomes:
                try:
                    c = paired_contrast(cell_a, cell_b, outcome=outcome)
                except ValueError:  # no shared item: different plans
                    continue
                records.append(
                    {
                        "model_a": a.label,
                        "model_b": b.label,
                        "family": family,
                        "measure": "accuracy" if outcome == "correct" else "lar",
                        "a": c["a"],
                        "b": c["b"],
                        "a_minus_b": c["difference"],
                        "ci_low": c["low"],
                        "ci_high": c["high"],
                        "mcnemar_p": c["mcnemar_p"],
                        "n_items": c["n_items"],
                        "n_tied_excluded": c["n_tied_excluded"],
                    }
                )
    return make_table(
        "meaning_model_contrasts",
        "Paired model contrasts on the ladder (a − b on shared items)",
        records,
        "§5.1, Table 1 (Δ with McNemar): every model answers byte-identical questions, so the "
        "difference is paired per item; exact McNemar on unique-argmax outcomes, bootstrap "
        "interval on per-item differences.",
    )


def cue_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    records: list[dict[str, Any]] = []
    for r in results:
        for cue, cell in r.analysis.get("e1", {}).get("cue_strata_d_lit", {}).items():
            records.append(
                {
                    "model": r.label,
                    "cue": cue,
                    "lar_with": cell["with"]["estimate"],
                    "n_with": cell["with"]["n_rows"],
                    "lar_without": cell["without"]["estimate"],
                    "n_without": cell["without"]["n_rows"],
                    "difference": cell["difference"],
                }
            )
    return make_table(
        "meaning_cue_strata",
        "LAR on d-lit with and without each construction cue",
        records,
        "§5.6, Appendix J: verbatim (the idiom appears inside its literal gloss), latin (only the "
        "literal option has Latin script), longest (the literal is the longest option), hook (it "
        "shares a content word with the idiom). Capture that survives without a cue is not "
        "explained by it.",
    )


def length_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    records: list[dict[str, Any]] = []
    for r in results:
        for words, cell in r.analysis.get("e1", {}).get("lar_by_length_d_lit", {}).items():
            records.append(
                {
                    "model": r.label,
                    "idiom_words": words,
                    "lar": cell["estimate"],
                    "ci_low": cell["low"],
                    "ci_high": cell["high"],
                    "n_items": cell["n_items"],
                }
            )
    return make_table(
        "meaning_lar_by_length",
        "LAR on d-lit by idiom length (words)",
        records,
        "Appendix J (stratified LAR); 95% item-bootstrap intervals.",
    )


def output_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    records: list[dict[str, Any]] = []
    for r in results:
        for family, cell in r.analysis.get("e1", {}).get("output_distribution", {}).items():
            records.append({"model": r.label, "family": family, **cell})
    return make_table(
        "meaning_output_distribution",
        "Shape of the returned probability vectors",
        records,
        "Appendix H (Table 12): mean peak probability, share of peaks above 0.95 and mean "
        "normalised entropy (entropy / log 4; 1 = uniform).",
    )


def e4_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    records: list[dict[str, Any]] = []
    for r in results:
        e4 = r.analysis.get("e4")
        if e4 is None:
            continue
        for lang, cell in e4["accuracy"].items():
            records.append(
                {
                    "model": r.label,
                    "task_language": lang,
                    "accuracy": cell["estimate"],
                    "ci_low": cell["low"],
                    "ci_high": cell["high"],
                    "n_items": cell["n_items"],
                }
            )
        for key, c in e4.items():
            if key.startswith("contrast_"):
                records.append(
                    {"model": r.label, "task_language": key.removeprefix("contrast_"),
                     "accuracy": c["difference"], "ci_low": c["low"], "ci_high": c["high"],
                     "n_items": c["n_items"]}
                )  # fmt: skip
    return make_table(
        "meaning_task_language",
        "Task-language swap (E4): accuracy in each language",
        records,
        "§5.7, Appendix K: the same items asked with the English entry; the a_minus_b row is the "
        "paired difference.",
    )


def surface_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    records = []
    for r in results:
        e2 = r.analysis.get("e2")
        if e2 is None or not e2.get("n_pairs"):
            continue
        records.append(
            {
                "model": r.label,
                "n_pairs": e2["n_pairs"],
                "n_items": e2.get("n_items"),
                "agreement": e2["agreement"],
                "agreement_item_mean": e2.get("agreement_item_mean"),
                "mean_js_divergence_bits": e2.get("mean_js_divergence"),
                "accuracy_canonical": e2.get("accuracy_canonical"),
                "accuracy_alternative": e2.get("accuracy_alternative"),
                "mcnemar_p": e2.get("mcnemar_p"),
                "n_tied_excluded": e2["n_tied_excluded"],
            }
        )
    return make_table(
        "meaning_surface_forms",
        "Alternative surface forms (E2)",
        records,
        "Appendix N: canonical vs alternative form of one idiom, same options; agreement of the "
        "chosen gloss and Jensen–Shannon divergence (bits) between the two vectors.",
    )


def pairing_table(results: Sequence[MeaningResult]) -> ReportTable | None:
    if len(results) < 2:
        return None
    base = results[0]
    records = []
    for other in results[1:]:
        check = pairing_check(base.rows, other.rows)
        records.append({"model_a": base.label, "model_b": other.label, **check})
    return make_table(
        "meaning_pairing",
        "Pairing check between runs",
        records,
        "Appendix R (Pairing): on rows two runs share, the share with identical gold slot, literal "
        "slot, state and options; 1.000 everywhere licenses the paired comparisons.",
    )
