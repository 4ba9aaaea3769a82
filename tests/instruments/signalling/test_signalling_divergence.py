"""fit_cost deciles (§IV-D), condition 4 vs 5 (§IV-G), excess vs distance (§IV-C), Bonferroni."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from sig_helpers import things_items

from choiceaudit.instruments.signalling._analysis import (
    CoordinateRow,
    coordinate_table,
    summarise_cells,
)
from choiceaudit.instruments.signalling._divergence import (
    choice_distributions,
    condition_agreement,
    excess_distance_correlation,
    fit_cost_deciles,
)
from choiceaudit.instruments.signalling._render import (
    render_queries,
)
from choiceaudit.instruments.signalling._results import (
    CellSummary,
    MeanMedianSD,
    PairedExcess,
    RandomDifference,
)
from choiceaudit.instruments.signalling.choosers import (
    BayesOracleChooser,
    SalienceChooser,
    UniformChooser,
)
from choiceaudit.scorers import FakeScorer, Scorer
from choiceaudit.types import ItemSet

SEED = 9


def _items() -> ItemSet:
    return things_items(160, SEED)


def _rows(scorer: Scorer, condition: str = "4", tile: str = "size") -> list[CoordinateRow]:
    qs = render_queries(_items(), conditions=(condition,))  # type: ignore[arg-type]
    rows = coordinate_table(_items(), qs, scorer.score(qs), rules=["probs"])
    return [r for r in rows if r.tile == tile]


def test_salience_holds_fit_at_one_and_bayes_falls_with_fit_cost() -> None:
    out = fit_cost_deciles(
        _rows(SalienceChooser(_items())), _items(), n_bins=5, seed=0, n_resamples=300
    )
    assert out.n_items == 40
    assert [b.achieved_fit_norm for b in out.bins] == [1.0] * 5
    assert out.slope.estimate == pytest.approx(0.0, abs=1e-12)
    assert out.bayes_slope.estimate < -0.3
    costs = [b.fit_cost for b in out.bins]
    assert costs == sorted(costs) and costs[0] == 0.0  # controls first


def test_bayes_chooser_achieved_fit_equals_the_bayes_reference() -> None:
    out = fit_cost_deciles(
        _rows(BayesOracleChooser(_items())), _items(), n_bins=4, seed=0, n_resamples=300
    )
    for b in out.bins:
        assert b.achieved_fit_norm == pytest.approx(b.bayes_fit_norm)
    assert out.slope.estimate == pytest.approx(out.bayes_slope.estimate)


def test_condition_agreement_identical_choosers() -> None:
    sal = SalienceChooser(_items())
    rows4 = _rows(sal, "4")
    out = condition_agreement(rows4, _rows(sal, "5"))
    assert out.n_matched == 80 and out.unmatched == 0
    # identical tied sets A agree with probability 1/|A| (two independent indifferent draws)
    assert out.agreement == pytest.approx(np.mean([1 / len(r.chosen) for r in rows4]))
    assert out.tvd == pytest.approx(0.0)


def test_condition_agreement_uniform_vs_bayes() -> None:
    a, b = _rows(UniformChooser(), "4"), _rows(BayesOracleChooser(_items()), "5")
    out = condition_agreement(a, b)
    assert out.agreement == pytest.approx(1 / 6)
    chosen = np.bincount([r.chosen[0] for r in b], minlength=6) / len(b)
    assert out.tvd == pytest.approx(0.5 * np.abs(chosen - 1 / 6).sum())


def test_tied_sets_agree_by_independent_indifferent_draws() -> None:
    base = _rows(SalienceChooser(_items()))[0]
    base = replace(base, item_id="i", perm_index=0, n_options=3)
    out = condition_agreement([replace(base, chosen=(0, 1))], [replace(base, chosen=(1, 2))])
    assert out.agreement == pytest.approx(0.25)
    assert out.tvd == pytest.approx(0.5)


def _cell(excess: PairedExcess, distance: float) -> CellSummary:
    # only the excess and the difference from random enter the correlation
    m = MeanMedianSD(0.0, 0.0, 0.0)
    d = RandomDifference(distance, distance, distance, 0.95, False)
    # the ten per-item summaries filled positionally, which mypy cannot count through a star
    return CellSummary("probs", 1, 2, 0, 0, 0, *[m] * 10, d, d, excess, None)  # type: ignore[call-arg, arg-type]


def test_excess_distance_correlation_matches_numpy() -> None:
    excess = [0.05, 0.10, 0.20, 0.26, 0.02]
    dist = [0.01, 0.08, 0.03, 0.20, 0.00]
    cells = {
        i: _cell(PairedExcess(True, 1, 0, 0, excess=e), -d if i % 2 else d)
        for i, (e, d) in enumerate(zip(excess, dist, strict=True))
    }
    cells[99] = _cell(PairedExcess(False, 0, 0, 0), 0.0)
    out = excess_distance_correlation(cells, seed=0, n_resamples=300)
    assert out.estimate == pytest.approx(np.corrcoef(excess, dist)[0, 1])
    assert out.n_cells == 5 and out.skipped == 1


def test_bonferroni_interval_is_wider_and_recorded() -> None:
    qs = render_queries(_items())
    rows = coordinate_table(_items(), qs, SalienceChooser(_items()).score(qs), rules=["probs"])
    cells = summarise_cells(rows, by=("rule", "tile"), seed=0, n_resamples=400)
    cell = cells[("probs", "size")]
    plain, bonf = cell.post_norm_minus_random, cell.post_norm_minus_random_bonferroni
    assert bonf is not None
    assert bonf.level == pytest.approx(1 - 0.05 / 4)
    assert bonf.low <= plain.low and bonf.high >= plain.high


def test_letter_prior_shows_in_slots_not_in_canonical_options() -> None:
    # format L with a strong prior on the label "B": every rendering picks slot 1, so the slot
    # distribution is degenerate while the canonical one follows the permutations
    fake = FakeScorer(content=lambda text: 0.0, label_prior={"B": 4.0})
    qs = [q for q in render_queries(_items(), formats=("L",)) if q.meta["tile"] == "size"]
    rows = coordinate_table(_items(), qs, fake.score(qs), rules=["probs"])
    out = choice_distributions(rows)
    assert out.top_slot == 1 and out.top_slot_share == 1.0
    expected = np.bincount([q.perm[1] for q in qs if q.perm is not None], minlength=6) / len(qs)
    np.testing.assert_allclose(out.canonical, expected)
    assert out.canonical_max_deviation_from_uniform < out.slot_max_deviation_from_uniform
