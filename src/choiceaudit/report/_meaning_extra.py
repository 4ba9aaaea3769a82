"""Further meaning tables: Table 2 pooled over the literal-bearing families, the
returned-choice check, LAR by the corpus frequency label (Appendix G), the cue-free subset
(Table 3), the parenthetical split of the families without a literal option (Table 17, lower
block), the hook split of the capture matrix (Table 16), subset drift (Appendix O), one example
item per experiment (Tables 6, 11, 13) and the corpus membership steps. Laid out from a
:class:`~choiceaudit.instruments.meaning.MeaningAnalysis`; nothing is computed here."""

from __future__ import annotations

from choiceaudit.instruments.meaning import MeaningAnalysis
from choiceaudit.report._meaning_tables import TableRecord, arms, make_table
from choiceaudit.report._tables import ReportTable

__all__ = [
    "choice_check_table",
    "cue_free_table",
    "example_table",
    "frequency_table",
    "hook_table",
    "loader_table",
    "parenthetical_table",
    "pooled_confidence_table",
    "subset_drift_table",
]


def pooled_confidence_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records: list[TableRecord] = []
    for label, a in arms(analysis):
        pooled = None if a.e1 is None else a.e1.literal_pooled
        if pooled is None:
            continue
        for signal, split in (
            ("peak", pooled.confidence_by_outcome),
            ("conf_head", pooled.conf_head_by_outcome),
        ):
            if split is None:
                continue
            records.append(
                {
                    "model": label,
                    "signal": signal,
                    "correct": split.correct,
                    "incorrect": split.incorrect,
                    "captured": split.captured,
                    "n_rows": pooled.n_rows,
                    "ece": pooled.ece,
                    "brier": pooled.brier,
                }
            )
    return make_table(
        "meaning_confidence_literal_pooled",
        "Confidence by outcome pooled over d-lit and d-hard (Table 2)",
        records,
        "§5.2, Table 2: mean confidence when correct, incorrect and captured by the literal gloss, "
        "over both literal-bearing families; signal peak = the maximum returned probability, "
        "conf_head = the model's separate confidence head (Appendix A). captured > correct is "
        "the inversion.",
    )


def choice_check_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records: list[TableRecord] = []
    for label, a in arms(analysis):
        checks = {} if a.e1 is None else a.e1.choice_check
        for family, c in checks.items():
            records.append(
                {
                    "model": label,
                    "family": family,
                    "rows_with_choice": c.n_rows_with_choice,
                    "choice_not_argmax": c.n_choice_not_argmax,
                    "accuracy_argmax": c.accuracy_argmax,
                    "accuracy_choice": c.accuracy_choice,
                    "lar_argmax": c.lar_argmax,
                    "lar_choice": c.lar_choice,
                }
            )
    if not any(r["choice_not_argmax"] for r in records):
        return None  # nothing to flag: the headline tables read choice and argmax alike
    return make_table(
        "meaning_choice_check",
        "FLAG: the returned choice is not the argmax of the returned probabilities",
        records,
        "A deployed system acts on the server's choice; the paper's metrics use "
        "the argmax of the returned vector. Where they disagree both readings are shown.",
    )


def frequency_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records = [
        {
            "model": label,
            "frequency": freq,
            "lar": cell.estimate,
            "ci_low": cell.low,
            "ci_high": cell.high,
            "n_items": cell.n_items,
        }
        for label, a in arms(analysis)
        if a.e1 is not None
        for freq, cell in a.e1.lar_by_frequency_d_lit.items()
    ]
    return make_table(
        "meaning_lar_by_frequency",
        "LAR on d-lit by the corpus's frequency label (Appendix G)",
        records,
        "Appendix G: the corpus's own frequency annotation, carried in the query meta; 95% "
        "item-bootstrap intervals.",
    )


def cue_free_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records: list[TableRecord] = []
    for label, a in arms(analysis):
        free = None if a.e1 is None else a.e1.cue_free_d_lit
        if free is None:
            continue
        longest = free.longest
        records.append(
            {
                "model": label,
                "n_items": free.lar.n_items,
                "lar": free.lar.estimate,
                "lar_low": free.lar.low,
                "lar_high": free.lar.high,
                "accuracy": free.accuracy.estimate,
                "mean_literal_chars": free.mean_literal_chars,
                "mean_other_chars": free.mean_other_chars,
                "lar_literal_longest": None if longest is None else longest.lar_with,
                "lar_literal_not_longest": None if longest is None else longest.lar_without,
                "longest_difference": None if longest is None else longest.difference,
                "longest_difference_low": None if longest is None else longest.difference_low,
                "longest_difference_high": None if longest is None else longest.difference_high,
            }
        )
    return make_table(
        "meaning_cue_free",
        "The cue-free subset of d-lit: multi-word, not verbatim, no English parenthetical",
        records,
        "§5.6, Table 3 (last block), Appendix J: neither lexical cue is available; the length "
        "split (is the literal the longest option?) is reported on its own because the subset "
        "does not remove it.",
    )


def parenthetical_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records = [
        {
            "model": label,
            "family": family,
            "accuracy_with": c.lar_with,
            "n_with": c.n_with,
            "accuracy_without": c.lar_without,
            "n_without": c.n_without,
            "difference": c.difference,
            "difference_low": c.difference_low,
            "difference_high": c.difference_high,
        }
        for label, a in arms(analysis)
        if a.e1 is not None
        for family, c in a.e1.parenthetical_accuracy.items()
    ]
    return make_table(
        "meaning_parenthetical_accuracy",
        "Accuracy on families without a literal option, split by the English parenthetical",
        records,
        "Appendix J, Table 17 lower block: whether the item's literal gloss carries an English "
        "parenthetical, read on families where that gloss is not an option; a small difference "
        "means the parenthetical stratum is not simply the easier or harder half.",
    )


def hook_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records: list[TableRecord] = []
    for label, a in arms(analysis):
        hook = None if a.matrix is None else a.matrix.hook
        if hook is None:
            continue
        for lang in hook.lar_hook:
            records.append(
                {
                    "model": label,
                    "row": f"LAR {lang}",
                    "hook": hook.lar_hook[lang],
                    "no_hook": hook.lar_no_hook[lang],
                    "n_hook": hook.n_hook,
                    "n_no_hook": hook.n_no_hook,
                }
            )
        for name, gap in (
            ("gap, all items", hook.gap_all),
            ("gap, hook-absent items", hook.gap_no_hook),
        ):
            if gap is None:
                continue
            records.append(
                {
                    "model": label,
                    "row": name,
                    "gap": gap.difference,
                    "gap_low": gap.low,
                    "gap_high": gap.high,
                    "mcnemar_p": gap.mcnemar_p,
                    "n_items": gap.n_items,
                }
            )
    return make_table(
        "meaning_matrix_hook",
        "The content-word hook on the capture matrix (Table 16)",
        records,
        "Appendix J, Table 16: hook = the corpus-language literal gloss shares a content word "
        "with the idiom. Upper rows: LAR of each language cell with and without the hook; lower "
        "rows: the paired language gap (first − second language) on all items and on hook-absent "
        "items only.",
    )


def subset_drift_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records = [
        {
            "model": d.arm,
            "subset_of": d.subset_of,
            "family": d.family,
            "full": d.full.estimate,
            "full_low": d.full.low,
            "full_high": d.full.high,
            "subset": d.subset.estimate,
            "drift": d.drift,
            "outside_full_interval": d.outside_full_interval,
            "n_subset": d.subset.n_items,
        }
        for d in analysis.subset_drift
    ]
    return make_table(
        "meaning_subset_drift",
        "Subset drift: an arm on another arm's item subset against its own full set",
        records,
        "Appendix O, Table 19: the model is held fixed and only the sample changes, so the drift "
        "measures how well the subset stands in for the full set.",
    )


def example_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records: list[TableRecord] = []
    for ex in analysis.examples:
        for key, role, text, prob in ex.options:
            records.append(
                {
                    "experiment": ex.experiment,
                    "condition": ex.condition,
                    "item": ex.item_id,
                    "model": ex.model,
                    "language": ex.language,
                    "state": ex.state,
                    "key": key,
                    "role": role,
                    "option": text,
                    "p": prob,
                    "choice": ex.choice,
                }
            )
    return make_table(
        "meaning_examples",
        "One item per experiment exactly as each model received it",
        records,
        "Tables 6, 11, 13: per experiment, the lowest item id every model answered (E7: its own "
        "order only), with the state, the keyed options and their roles, the returned "
        "probabilities and the chosen key.",
    )


def loader_table(analysis: MeaningAnalysis) -> ReportTable | None:
    records: list[TableRecord] = []
    seen: set[str] = set()
    for arm in analysis.arms:
        config = arm.config
        corpus = str(config.corpus)
        if corpus in seen:
            continue
        seen.add(corpus)
        previous: int | None = None
        for step in config.loader_steps or ():
            count = int(step["count"])
            records.append(
                {
                    "corpus": corpus,
                    "step": step["step"],
                    "count": count,
                    "removed": None if previous is None else previous - count,
                }
            )
            if not str(step["step"]).startswith("with_"):
                previous = count
    return make_table(
        "meaning_corpus_steps",
        "Corpus membership: rows after each loading step and each capture-pool cut",
        records,
        "§3, Appendix J: loaded → deduplicated → usable (the loader), then the capture pool's "
        "English parenthetical → English equivalent → Jaccard < 0.34 (full corpus: 10,359 → 8,876 "
        "→ 3,391 → 3,352 → 3,265). with_* rows are counts of the usable set, not cuts.",
    )
