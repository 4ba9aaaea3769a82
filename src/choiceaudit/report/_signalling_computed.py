"""What each table of the signalling section computed — the rule, the aggregation and the n
behind its numbers — stated beside it in the report and defined, table by table, in the
signalling guide (each statement's anchor is the table's name without the instrument hash a
report of several item sets adds)."""

from __future__ import annotations

from choiceaudit.report._tables import Computed

__all__ = [
    "CONDITIONS",
    "DECAY",
    "DECILES",
    "FORMAT_L",
    "PLAIN",
    "RANDOM_COMPARISON",
    "REFERENCES",
    "RUNS",
    "SLOPES",
    "SLOPES_GAUSSIAN",
    "TABLE1",
]

PAGE = "instruments/signalling.md"
#: the choice every coordinate table reads
_CHOICE = (
    "a chooser's choice per rendering (a model's argmax under the rule; a tied set scored by "
    "split credit, each tied option 1/|T|)"
)
_POST = (
    _CHOICE + ", placed on the coordinate: post_norm (1 = the Bayes pole) and fit_norm (1 = the "
    "salience pole) of the chosen option"
)
_ITEMS = "mean over the analysis set's items"


def _computed(anchor: str, rule: str, aggregation: str, n: str) -> Computed:
    return Computed(rule=rule, aggregation=aggregation, n=n, page=PAGE, anchor=anchor)


RUNS = _computed(
    "signalling_runs",
    "none: what each run holds (its chooser, condition, rules and coverage).",
    "one row per run.",
    "rows = the renderings the run stores; covered = analysis-set items it could score.",
)
TABLE1 = _computed(
    "signalling_table1",
    _POST + ".",
    _ITEMS + " per chooser × rule; delta = paired per-item difference from the random "
    "reference with a 95% item-bootstrap interval (Bonferroni across the model × rule cells for "
    "sig_bonf); excess = permutation consistency minus the marginal null.",
    "column n (of of_n); excess over excess_n items.",
)
REFERENCES = _computed(
    "signalling_references",
    "the three references' choices: uniform random (drawn with its spread), the salience pole "
    "(o_fit) and the Bayes pole (o_bayes), on the coordinate.",
    _ITEMS + ", with the SD across items.",
    "the analysis set's items (in the title).",
)
DECAY = _computed(
    "signalling_decay_families",
    _POST + ", under the exponential (primary) and the Gaussian decay family.",
    _ITEMS + "; delta against random with its 95% item-bootstrap interval.",
    "the analysis set's items per cell.",
)
RANDOM_COMPARISON = _computed(
    "signalling_random_comparison",
    _POST + ".",
    "per model × rule cell on both axes: the paired per-item difference from random and its "
    "95% item-bootstrap interval (and at the Bonferroni level); indistinguishable, worse or "
    "better by where the interval lies.",
    "the cell's items, as in Table I.",
)
SLOPES = _computed(
    "signalling_fit_cost_slopes",
    "each item's achieved fit_norm (and post_norm) of the chosen option against its fit_cost.",
    "least-squares slope over items with an item-bootstrap interval; predicted_change = "
    "post_slope × the observed fit_cost range, against the smallest effect of interest.",
    "the analysis set's items per chooser × rule.",
)
SLOPES_GAUSSIAN = _computed(
    "signalling_fit_cost_slopes_gaussian",
    "as signalling_fit_cost_slopes, with fit_cost, fit_norm and post_norm recomputed under the "
    "Gaussian decay f = exp(-(d/w)^2).",
    "least-squares slope over items with an item-bootstrap interval.",
    "the analysis set's items per chooser × rule.",
)
DECILES = _computed(
    "signalling_fit_cost_deciles",
    _POST + "; the references' poles beside it.",
    "mean per fit_cost decile of the analysis set's items.",
    "the decile's items (a tenth of the analysis set).",
)
CONDITIONS = _computed(
    "signalling_condition_agreement",
    "each model's canonical choice and probability vector per rendering under condition 4 and "
    "condition 5 (format V, all items).",
    "share of renderings with the same canonical choice, and the mean total-variation distance "
    "between the two distributions.",
    "the renderings both conditions hold.",
)
FORMAT_L = _computed(
    "signalling_format_l",
    _CHOICE + ", in format L (lettered options), condition 4.",
    "permutation consistency against the marginal null over items holding both permutations; "
    "the letter prior (top_share) and the canonical distribution's largest distance from "
    "uniform over renderings.",
    "column n (items holding both permutations).",
)
_PLAIN = {
    "signalling_rule_agreement": (
        "the chosen option of one model under two scoring rules, per rendering (a tie counted "
        "|A ∩ B| / (|A| |B|)).",
        "share of renderings on which the two rules agree.",
        "the renderings both rules score.",
    ),
    "signalling_tile_excess": (
        _CHOICE + ", condition 4, format V.",
        "per tile: permutation consistency minus the marginal null, over items holding both "
        "permutations.",
        "column n_items (tied: those with a tied rendering, scored by split credit).",
    ),
    "signalling_label_forms": (
        _CHOICE + ", in format L under the (A) and the bare A label forms.",
        "share of renderings whose canonical choice agrees across the two forms.",
        "the renderings both forms hold.",
    ),
    "signalling_cosine_sign": (
        "the cosine chooser's compatibility of each hypothesis (condition 1).",
        "share of hypothesis entries below 0.",
        "the hypothesis entries of the covered renderings.",
    ),
    "signalling_batch_flips": (
        "each rendering's chosen canonical option set, scored batched and at batch size 1.",
        "per model, rule and tile: share of renderings whose set differs (flip_rate), and the "
        "largest raw score change.",
        "the renderings both runs hold.",
    ),
    "signalling_inert_parameters": (
        "the chosen option at each swept value of a parameter that cannot move an argmax.",
        "share of covered renderings whose choice is identical at every value.",
        "the covered renderings.",
    ),
}
PLAIN = {name: _computed(name, *texts) for name, texts in _PLAIN.items()}
