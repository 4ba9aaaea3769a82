"""What each table of the meaning section computed — the rule, the aggregation and the n behind
its numbers — stated beside it in the report and defined, table by table, in the meaning guide.
The section's tables are named once (their file names), so the statements are kept here by
name, and :func:`stated` gives every table and figure of the section its own; a table with no
statement stops the report, so a new table cannot appear unexplained."""

from __future__ import annotations

import dataclasses

from choiceaudit.errors import AnalysisError
from choiceaudit.report._html import Section
from choiceaudit.report._tables import Computed, ReportTable

__all__ = ["COMPUTED", "stated"]

PAGE = "instruments/meaning.md"

#: how a row's answer is read in every meaning table
_CHOICE = (
    "the choice is the argmax of the returned probabilities over the four glosses; a tie "
    "shares its credit evenly (1/|tie|)"
)
_CORRECT = _CHOICE + "; correct = credit on the gold gloss"
_LITERAL = _CHOICE + "; captured = credit on the expression's own literal gloss"
_BOOT = "95% percentile bootstrap over whole items (2,000 resamples)"
_PAIRED = (
    "paired per-item difference on the items both cells share, with its " + _BOOT + ", and an "
    "exact McNemar test on unique-argmax outcomes (Bonferroni over the family of tests)"
)
_CONFIDENCE = "confidence = the peak returned probability (conf_head: the model's own head)"


def _c(rule: str, aggregation: str, n: str) -> Computed:
    return Computed(rule=rule, aggregation=aggregation, n=n, page=PAGE)


COMPUTED: dict[str, Computed] = {
    "meaning_runs": _c(
        "none: what each run's manifest records.",
        "one row per run and test language.",
        "rows = the rows the run stores.",
    ),
    "meaning_ladder": _c(
        _CORRECT + ".",
        "mean credit over items per family (E1) with its "
        + _BOOT
        + "; minus_d_rand: "
        + _PAIRED
        + ".",
        "column n_items.",
    ),
    "meaning_lar": _c(
        _LITERAL + "; gold / literal / other split the credit.",
        "LAR = mean literal credit over the items whose list carries the literal gloss, with its "
        + _BOOT
        + ".",
        "column n_items.",
    ),
    "meaning_model_contrasts": _c(
        _CORRECT + " (or captured, by the measure).",
        "model a − model b on the items both answered, within one test language: " + _PAIRED + ".",
        "column n_items (tied items left out of McNemar: n_tied_excluded).",
    ),
    "meaning_confidence_literal_pooled": _c(
        _CONFIDENCE + "; outcome = correct, incorrect, or captured by the literal gloss.",
        "mean confidence per outcome over the rows of d-lit and d-hard pooled; ECE and Brier of "
        "the same rows.",
        "column n_rows.",
    ),
    "meaning_calibration": _c(
        _CONFIDENCE + "; " + _CORRECT + ".",
        "per cell: accuracy, ECE over 15 equal-width and 15 equal-mass bins, multiclass Brier.",
        "column n_rows.",
    ),
    "meaning_selective_gates": _c(
        _CONFIDENCE + "; " + _CORRECT + ".",
        "AURC and AUGRC of gating on confidence, beside a random gate's (the error rate; half "
        "of it).",
        "the cell's rows (as in meaning_calibration).",
    ),
    "meaning_selective": _c(
        _CONFIDENCE + "; " + _CORRECT + ".",
        "accuracy on the most confident share of the cell at each coverage; ties in confidence "
        "spread evenly.",
        "the cell's rows (as in meaning_calibration).",
    ),
    "meaning_reliability": _c(
        _CONFIDENCE + "; " + _CORRECT + ".",
        "15 equal-width confidence bins under d-rand and d-lit: per bin the mean confidence and "
        "the accuracy (empty bins left out).",
        "the bin's rows (column n_rows).",
    ),
    "meaning_risk_coverage": _c(
        _CONFIDENCE + "; error = 1 − credit on the gold gloss.",
        "selective risk (error among accepted) at each coverage, the most confident accepted "
        "first, beside the random gate's flat line.",
        "the family's rows.",
    ),
    "meaning_confidence_by_outcome": _c(
        _CONFIDENCE + "; outcome = correct, incorrect, or captured by the literal gloss.",
        "mean confidence per outcome and cell.",
        "the cell's rows per outcome.",
    ),
    "meaning_o4_control": _c(
        _CONFIDENCE + "; every option replaced by a bare label (o4), so no option carries "
        "information.",
        "mean peak probability − accuracy (the overconfidence gap) with its " + _BOOT + ".",
        "column n_items.",
    ),
    "meaning_order_audit": _c(
        "the chosen canonical gloss perm[slot] under each of the 24 orderings of one item "
        "(keys bound to slots, or travelling with their options).",
        "over items: the share whose choice changes (answer_instability), the mean number of "
        "distinct choices, the gold probability's range and the selection spread.",
        "column n_items (items missing an ordering left out: incomplete_excluded).",
    ),
    "meaning_permutation_audit": _c(
        "per item, the largest distance one option's own returned probability travels across "
        "the 24 orderings, slots mapped back to options.",
        "median, 95th percentile, mean and largest travel over items; the share under 1e-4 and "
        "identical as returned.",
        "column n_items.",
    ),
    "meaning_distinct_choices": _c(
        "the number of distinct canonical glosses an item's 24 orderings chose.",
        "share of items choosing 1, 2, 3 or 4 distinct glosses.",
        "column n_items.",
    ),
    "meaning_slot_shares": _c(
        _CHOICE + "; the chosen display slot.",
        "share of a model's choices per display slot on the ladder rows.",
        "the model's ladder rows.",
    ),
    "meaning_ablation": _c(
        _CORRECT + ", under each option-side ablation (E6: o0 intact … o4 bare labels).",
        "mean credit over items with its " + _BOOT + "; signal retained = (acc − 0.25) / "
        "(acc_o0 − 0.25).",
        "column n_items.",
    ),
    "meaning_unit_integrity": _c(
        _CORRECT + ", with the idiom perturbed and the options byte-identical (E3); agreement = "
        "the chosen gloss equals the intact one's.",
        "mean credit and agreement over items with their "
        + _BOOT
        + "; minus_intact: "
        + _PAIRED
        + ".",
        "column n_items (tied rows left out of agreement: n_tied_excluded).",
    ),
    "meaning_surface_forms": _c(
        _CORRECT + " under the canonical and an alternative form of one idiom (E2), same "
        "options; agreement of the chosen gloss; Jensen–Shannon divergence (bits) between the two "
        "vectors.",
        "over pairs, as the paper prints them, and (the *_items columns) within item first; "
        "exact McNemar on the discordant pairs.",
        "columns n_pairs and n_items.",
    ),
    "meaning_cue_strata": _c(
        _LITERAL + " on d-lit.",
        "LAR with and without each construction cue, and the difference with its " + _BOOT + ".",
        "columns n_with and n_without.",
    ),
    "meaning_cue_free": _c(
        _LITERAL + " on d-lit, on the items with neither lexical cue.",
        "LAR and accuracy with their " + _BOOT + "; LAR split by whether the literal gloss is "
        "the longest option.",
        "column n_items.",
    ),
    "meaning_parenthetical_accuracy": _c(
        _CORRECT + ", on families without the literal gloss as an option.",
        "accuracy with and without an English parenthetical in the item's literal gloss, and "
        "the difference with its " + _BOOT + ".",
        "columns n_with and n_without.",
    ),
    "meaning_lar_by_length": _c(
        _LITERAL + " on d-lit.",
        "LAR per idiom length in words, with its " + _BOOT + ".",
        "column n_items.",
    ),
    "meaning_lar_by_frequency": _c(
        _LITERAL + " on d-lit.",
        "LAR per frequency label of the corpus, with its " + _BOOT + ".",
        "column n_items.",
    ),
    "meaning_capture_matrix": _c(
        _LITERAL + ", in each test language of the capture matrix.",
        "accuracy and LAR per model × language with their "
        + _BOOT
        + "; the a_minus_b row: "
        + _PAIRED
        + ".",
        "column n_items.",
    ),
    "meaning_matrix_hook": _c(
        _LITERAL + ", split by the content-word hook (the literal gloss shares a content word "
        "with the idiom).",
        "LAR per language cell with and without the hook; the paired language gap on all items "
        "and on hook-absent items, with its " + _BOOT + ".",
        "the items of each split (its n_items column).",
    ),
    "meaning_task_language": _c(
        _CORRECT + " under d-rand, the same items asked in each task language (E4).",
        "accuracy per language with its " + _BOOT + "; the language difference: " + _PAIRED + ".",
        "column n_items.",
    ),
    "meaning_output_distribution": _c(
        "the returned probability vectors themselves.",
        "per family: the mean peak probability, the share of peaks above 0.95 and the mean "
        "normalised entropy (entropy / log 4).",
        "the family's rows.",
    ),
    "meaning_descriptives": _c(
        "the returned vectors and the options as built.",
        "counts (items reading 1.000 on the literal gloss) and means (E2's peak; the options' "
        "lengths and cues), as each row's measure names.",
        "as each row's measure names.",
    ),
    "meaning_examples": _c(
        "none: one item per experiment as each model received it.",
        "one row per option of the shown item: its key, role, text, returned probability, and "
        "the chosen key.",
        "one item per experiment (the lowest id every model answered).",
    ),
    "meaning_pairing": _c(
        "on the rows two runs share: whether gold slot, literal slot, state and options agree.",
        "share of shared rows that agree, per field.",
        "column n_shared.",
    ),
    "meaning_corpus_steps": _c(
        "the corpus's rows after each loading step and each capture-pool cut.",
        "counts (with_* rows: counts of the usable set, not cuts).",
        "column count.",
    ),
    "meaning_choice_check": _c(
        "the server's returned choice against the argmax of its returned probabilities.",
        "rows where they disagree, per model.",
        "the model's rows.",
    ),
    "meaning_subset_drift": _c(
        _CORRECT + " (and captured), of one model on another arm's item subset and on its own "
        "full set.",
        "per family: drift = the value on the subset − on the full set, and whether it falls "
        "outside the full set's " + _BOOT + ".",
        "column n_subset (the subset's items).",
    ),
}


def _stated_table(table: ReportTable) -> ReportTable:
    computed = COMPUTED.get(table.name)
    if computed is None:
        raise AnalysisError(
            f"the meaning table {table.name!r} states nothing it computed: add it to "
            "report/_meaning_computed.py and define it in docs/instruments/meaning.md"
        )
    return dataclasses.replace(table, computed=computed)


def stated(section: Section) -> Section:
    """``section`` with every table and figure stating what it computed."""
    section.tables = [_stated_table(t) for t in section.tables]
    section.figures = [dataclasses.replace(f, data=_stated_table(f.data)) for f in section.figures]
    return section
