"""Instrument-free statistics on arrays (docs/architecture.md, "Statistics"; the names are a contract).

Pure functions with keyword-only options, importing only numpy and scipy. Every function validates
its input: NaN, empty input, mismatched shapes and probability rows that do not sum to 1 (within
1e-6) raise :class:`ValueError` naming the argument and row. The order statistics read vectors as
a model returned them and accept Σp within a ``tolerance`` of 1 (default
0.02, wide enough for four options rounded to two decimals),
recording the tolerance and the largest |Σp − 1| in their results.

Exact ties among options are a tied *set* in the toolkit. Functions that take probabilities or
scores keep ties as sets (fractional credit, split shares); functions that take one choice per row
(``mcnemar_exact``'s correctness, ``agreement_rate``, ``excess_consistency``) need the caller to
resolve or exclude tied rows first and count them; ``split_credit_excess`` takes tied sets.

What callers keep of a bootstrap is typed: :class:`BootstrapResult` for the raw interval,
:class:`Interval` (``mean_interval``: a mean with its row and cluster counts) and
:class:`PairedContrast` (``paired_contrast``: McNemar plus the paired interval on aligned
credits), each with ``to_columns`` for the report's flat tables.
"""

from choiceaudit.stats._agreement import agreement_rate, jaccard_similarity
from choiceaudit.stats._bootstrap import BootstrapResult, bootstrap_ci, paired_bootstrap_ci
from choiceaudit.stats._calibration import (
    ReliabilityBins,
    brier,
    ece,
    nll,
    reliability_bins,
    top_label,
)
from choiceaudit.stats._consistency import (
    SplitCreditExcess,
    excess_consistency,
    excess_consistency_ci,
    marginal_null,
    option_marginal,
    permutation_consistency,
    split_credit_excess,
)
from choiceaudit.stats._divergence import js_divergence, normalized_entropy
from choiceaudit.stats._intervals import Interval, PairedContrast, mean_interval, paired_contrast
from choiceaudit.stats._order import (
    OrderSensitivity,
    PermutationAudit,
    answer_instability,
    canonical_probs,
    gold_prob_range,
    n_distinct_choices,
    order_sensitivity,
    permutation_audit,
    selection_spread,
    slot_shares,
    unstable_items,
)
from choiceaudit.stats._paired_tests import McNemarResult, bonferroni, mcnemar_exact
from choiceaudit.stats._regression import ols_slope, pearson_r
from choiceaudit.stats._selective import (
    ConfidenceByOutcome,
    RiskCoverage,
    augrc,
    aurc,
    confidence_by_outcome,
    random_gate_augrc,
    random_gate_aurc,
    risk_coverage_curve,
    selective_accuracy,
)
from choiceaudit.stats._ties import PermutationSweeps, permutation_sweeps, tie_credit

__all__ = [
    "BootstrapResult",
    "ConfidenceByOutcome",
    "Interval",
    "McNemarResult",
    "OrderSensitivity",
    "PairedContrast",
    "PermutationAudit",
    "PermutationSweeps",
    "ReliabilityBins",
    "RiskCoverage",
    "SplitCreditExcess",
    "agreement_rate",
    "answer_instability",
    "augrc",
    "aurc",
    "bonferroni",
    "bootstrap_ci",
    "brier",
    "canonical_probs",
    "confidence_by_outcome",
    "ece",
    "excess_consistency",
    "excess_consistency_ci",
    "gold_prob_range",
    "jaccard_similarity",
    "js_divergence",
    "marginal_null",
    "mcnemar_exact",
    "mean_interval",
    "n_distinct_choices",
    "nll",
    "normalized_entropy",
    "ols_slope",
    "option_marginal",
    "order_sensitivity",
    "paired_bootstrap_ci",
    "paired_contrast",
    "pearson_r",
    "permutation_audit",
    "permutation_consistency",
    "permutation_sweeps",
    "random_gate_augrc",
    "random_gate_aurc",
    "reliability_bins",
    "risk_coverage_curve",
    "selection_spread",
    "selective_accuracy",
    "slot_shares",
    "split_credit_excess",
    "tie_credit",
    "top_label",
    "unstable_items",
]
