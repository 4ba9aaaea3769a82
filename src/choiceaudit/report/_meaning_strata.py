"""Secondary meaning tables: paired model contrasts on the ladder (Table 1's Δ), LAR by
construction cue (§5.6) and idiom length (Appendix J), output distributions (Appendix H), the
task-language swap (E4), alternative surface forms (E2) and the pairing check between every pair
of runs, all laid out from the fields of a
:class:`~choiceaudit.instruments.meaning.MeaningAnalysis`."""

from __future__ import annotations

from choiceaudit.instruments.meaning import MeaningAnalysis
from choiceaudit.report._meaning_tables import TableRecord, arms, make_table
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


def model_contrast_table(analysis: MeaningAnalysis) -> ReportTable | None:
    """Per family and pair of models, accuracy (and LAR) of a − b on the items both answered."""
    records: list[TableRecord] = []
    for m in analysis.model_contrasts:
        c = m.contrast
        records.append(
            {
                "model_a": m.model_a,
                "model_b": m.model_b,
                "family": m.family,
                "measure": m.measure,
                "a": c.a,
                "b": c.b,
                "a_minus_b": c.difference,
                "ci_low": c.low,
                "ci_high": c.high,
                "mcnemar_p": c.mcnemar_p,
                "mcnemar_p_bonferroni": c.mcnemar_p_bonferroni,
                "n_tests": c.n_tests,
                "n_items": c.n_items,
                "n_tied_excluded": c.n_tied_excluded,
            }
        )
    return make_table(
        "meaning_model_contrasts",
        "Paired model contrasts on the ladder (a − b on shared items)",
        records,
        "§5.1, Table 1 (Δ with McNemar), §5.3 (o4 between arms), Appendix L: contrasts are made "
        "only between parts of one test language; the difference is paired per item; exact "
        "McNemar on unique-argmax outcomes (Bonferroni over the n_tests contrasts of the pair), "
        "bootstrap interval on per-item differences. Parts built under different seeds (e.g. a "
        "commercial Bengali control against an open arm's ladder) share items but not "
        "distractors (Appendix L).",
    )


def cue_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records: list[TableRecord] = []
    for label, a in arms(analysis):
        if a.e1 is None:
            continue
        for cue, cell in a.e1.cue_strata_d_lit.items():
            records.append(
                {
                    "model": label,
                    "cue": cue,
                    "lar_with": cell.lar_with,
                    "n_with": cell.n_with,
                    "lar_without": cell.lar_without,
                    "n_without": cell.n_without,
                    "difference": cell.difference,
                    "difference_low": cell.difference_low,
                    "difference_high": cell.difference_high,
                }
            )
    return make_table(
        "meaning_cue_strata",
        "LAR on d-lit with and without each construction cue",
        records,
        "§5.6, Appendix J (Tables 3, 17): verbatim (the idiom appears inside its literal gloss), "
        "latin (the literal gloss carries an English parenthetical, the paper's split of the "
        "Latin-script cue), longest (the literal is the longest option), hook (it shares a "
        "content word with the idiom). difference = with − without, with a 95% bootstrap "
        "interval (items resampled within each side). Capture that survives without a cue is "
        "not explained by it.",
    )


def length_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records: list[TableRecord] = []
    for label, a in arms(analysis):
        if a.e1 is None:
            continue
        for words, cell in a.e1.lar_by_length_d_lit.items():
            records.append(
                {
                    "model": label,
                    "idiom_words": words,
                    "lar": cell.estimate,
                    "ci_low": cell.low,
                    "ci_high": cell.high,
                    "n_items": cell.n_items,
                }
            )
    return make_table(
        "meaning_lar_by_length",
        "LAR on d-lit by idiom length (words)",
        records,
        "Appendix J (stratified LAR); 95% item-bootstrap intervals.",
    )


def output_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records: list[TableRecord] = []
    for label, a in arms(analysis):
        if a.e1 is None:
            continue
        for family, cell in a.e1.output_distribution.items():
            records.append(
                {
                    "model": label,
                    "family": family,
                    "mean_peak": cell.mean_peak,
                    "share_peak_over_0_95": cell.share_peak_over_0_95,
                    "mean_normalized_entropy": cell.mean_normalized_entropy,
                }
            )
    return make_table(
        "meaning_output_distribution",
        "Shape of the returned probability vectors",
        records,
        "Appendix H (Table 12): mean peak probability, share of peaks above 0.95 and mean "
        "normalised entropy (entropy / log 4; 1 = uniform).",
    )


def e4_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records: list[TableRecord] = []
    for label, a in arms(analysis):
        e4 = a.e4
        if e4 is None:
            continue
        for lang, cell in e4.accuracy.items():
            records.append(
                {
                    "model": label,
                    "task_language": lang,
                    "accuracy": cell.estimate,
                    "ci_low": cell.low,
                    "ci_high": cell.high,
                    "n_items": cell.n_items,
                    "built_from": ", ".join(e4.built_from) or "e4",
                }
            )
        if e4.contrast is not None:
            c = e4.contrast
            records.append(
                {
                    "model": label,
                    "task_language": e4.contrast_label,
                    "accuracy": c.difference,
                    "ci_low": c.low,
                    "ci_high": c.high,
                    "n_items": c.n_items,
                    "built_from": ", ".join(e4.built_from) or "e4",
                    "mcnemar_p": c.mcnemar_p,
                }
            )
    return make_table(
        "meaning_task_language",
        "Task-language swap (E4): accuracy in each language",
        records,
        "§5.7, Appendix K: the same items asked with the English entry; the en_minus_bn row is "
        "the paper's gain, the other language minus the corpus language, paired on the items, "
        "with its exact McNemar p. built_from: e4 where E4 was asked as its "
        "own block (one distractor draw in both languages); otherwise the two d-rand ladder "
        "blocks it is read from on their shared items (the commercial arm's Bengali control and "
        "English ceiling, which keep their own draws, as the paper's do).",
    )


def surface_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records = []
    for label, a in arms(analysis):
        e2 = a.e2
        if e2 is None or not e2.n_pairs:
            continue
        records.append(
            {
                "model": label,
                "n_pairs": e2.n_pairs,
                "n_items": e2.n_items,
                "agreement": e2.agreement,
                "agreement_item_mean": e2.agreement_item_mean,
                "mean_js_divergence_bits": e2.mean_js_divergence,
                "accuracy_canonical": e2.accuracy_canonical,
                "accuracy_alternative": e2.accuracy_alternative,
                "canonical_only_correct": e2.mcnemar_b,
                "alternative_only_correct": e2.mcnemar_c,
                "both_correct": e2.both_correct,
                "mcnemar_p": e2.mcnemar_p,
                "items_paired": e2.items_paired,
                "accuracy_canonical_items": e2.accuracy_canonical_items,
                "accuracy_alternative_items": e2.accuracy_alternative_items,
                "mcnemar_p_items": e2.mcnemar_p_items,
                "n_tied_excluded": e2.n_tied_excluded,
            }
        )
    return make_table(
        "meaning_surface_forms",
        "Alternative surface forms (E2): pairs, as the paper prints them; *_items is this "
        "project's addition",
        records,
        "Appendix N: canonical vs alternative form of one idiom, same options; agreement of the "
        "chosen gloss and Jensen–Shannon divergence (bits) between the two vectors, per pair. "
        "The paper prints the pair-level figures: agreement over pairs (and, in its caveat, "
        "averaged within item first: agreement_item_mean), and accuracy_canonical / "
        "accuracy_alternative with McNemar over the pairs (its 0.035 → 0.158 for Lod-lille are "
        "11 and 49 of 310 pairs). McNemar's discordant counts are canonical_only_correct (b) "
        "and alternative_only_correct (c), beside both_correct, over the pairs whose credit "
        "is whole on both members. The *_items columns (one canonical row per item against its "
        "first alternative, with exact McNemar) are this project's addition; the paper does not "
        "print them.",
    )


def pairing_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records: list[TableRecord] = []
    for p in analysis.pairing:
        record: TableRecord = {"model_a": p.model_a, "model_b": p.model_b, "n_shared": p.n_shared}
        if p.n_shared:
            record |= {
                "gold_slot": p.gold_slot,
                "literal_slot": p.literal_slot,
                "state": p.state,
                "options": p.options,
            }
        records.append(record)
    return make_table(
        "meaning_pairing",
        "Pairing check between runs",
        records,
        "Appendix R (Pairing): on rows two runs share, the share with identical gold slot, literal "
        "slot, state and options; 1.000 everywhere licenses the paired comparisons.",
    )
