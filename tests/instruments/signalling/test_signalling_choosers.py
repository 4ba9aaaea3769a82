"""Reference choosers (§I-K) and the coordinate analysis (§I-F1, §I-H1, §I-H2, §IV-A)."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from sig_helpers import things_items

from choiceaudit import stats
from choiceaudit.instruments.signalling._analysis import (
    CoordinateRow,
    cell_summary,
    coordinate_table,
    item_references,
    summarise_cells,
)
from choiceaudit.instruments.signalling._render import (
    render_queries,
)
from choiceaudit.instruments.signalling.choosers import (
    BayesOracleChooser,
    SalienceChooser,
    UniformChooser,
)
from choiceaudit.scorers import FakeScorer, Scorer
from choiceaudit.types import ItemSet, Query

SEED = 5


def _items() -> ItemSet:
    return things_items(80, SEED)


@cache
def _queries() -> tuple[Query, ...]:
    return tuple(render_queries(_items()))


def _size_rows(scorer: Scorer, rule: str = "probs") -> list[CoordinateRow]:
    qs = list(_queries())
    rows = coordinate_table(_items(), qs, scorer.score(qs), rules=[rule])
    return [r for r in rows if r.tile == "size"]


def test_choosers_implement_the_scorer_protocol() -> None:
    for chooser in (UniformChooser(), SalienceChooser(_items()), BayesOracleChooser(_items())):
        assert isinstance(chooser, Scorer)
        assert chooser.describe()["backend"] == "reference"


def test_bayes_oracle_sends_o_bayes_in_every_permutation() -> None:
    items = {i.id: i for i in _items()}
    qs = list(_queries())
    for q, d in zip(qs, BayesOracleChooser(_items()).score(qs), strict=True):
        (slot,) = d.choice()
        assert q.canonical(slot) == items[str(q.meta["item_id"])].meta["o_bayes"]
        assert q.options[slot] == items[str(q.meta["item_id"])].options[q.canonical(slot)]


def test_salience_chooser_sits_at_the_salience_pole() -> None:
    rows = _size_rows(SalienceChooser(_items()))
    assert all(r.fit_norm == 1.0 and r.agree_fit == 1.0 for r in rows)
    assert all(r.post_norm == pytest.approx(r.salience_post_norm) for r in rows)
    conflict = [r for r in rows if r.conflict]
    assert all(r.agree_bayes == 0.0 for r in conflict)


def test_bayes_cell_summary_poles_and_consistency() -> None:
    rows = _size_rows(BayesOracleChooser(_items()))
    s = cell_summary(rows, seed=0, n_resamples=500)
    assert s.n_items == 20 and s.n_renderings == 40
    assert s.post_norm.mean == pytest.approx(1.0)
    assert s.agree_bayes.mean == 1.0
    assert s.post_norm_minus_random.excludes_zero
    ex = s.excess_consistency
    assert ex.consistency == 1.0 and ex.tied_items == 0 and ex.n_items == 20
    a = [r.chosen[0] for r in rows if r.perm_index == 0]
    assert ex.excess == pytest.approx(1.0 - stats.marginal_null(a, a, 6))


def test_uniform_chooser_lands_exactly_on_the_random_reference() -> None:
    rows = _size_rows(UniformChooser())
    for r in rows:
        assert r.n_tied == 6
        assert r.post_norm == pytest.approx(r.random_post_norm)
        assert r.agree_bayes == pytest.approx(1 / 6)
    s = cell_summary(rows, seed=0, n_resamples=500)
    assert s.post_norm_minus_random.estimate == pytest.approx(0.0, abs=1e-12)
    assert not s.post_norm_minus_random.excludes_zero
    # every rendering is the whole menu tied: split credit keeps all 20 items and gives an
    # indifferent chooser an excess of exactly 0 (§I-H), where leaving ties out gave none
    ex = s.excess_consistency
    assert (ex.n_items, ex.tied_items, ex.excluded_unpaired) == (20, 20, 0)
    assert ex.excess == 0.0
    assert ex.consistency == pytest.approx(1 / 6) and ex.marginal_null == pytest.approx(1 / 6)


def test_random_reference_is_mean_coordinate_over_options() -> None:
    item = next(i for i in _items() if i.meta["tile"] == "size")
    ref = item_references(item)
    post = np.asarray(item.meta["posterior"])
    expected = np.mean((post - post.min()) / (post.max() - post.min()))
    assert ref.random_post_norm == pytest.approx(expected)
    assert ref.bayes_post_norm == pytest.approx(1.0)
    gauss = item_references(item, "gaussian")
    assert gauss.o_bayes == item.meta["o_bayes_gaussian"]


def test_position_biased_chooser_maps_slots_through_the_permutation() -> None:
    # a chooser that always takes display slot 0 picks canonical perm[0]: its consistency is
    # the share of items whose two permutations start with the same option
    fake = FakeScorer(content=lambda text: 0.0, position_bias=[5.0])
    rows = _size_rows(fake)
    items = {i.id: i for i in _items() if i.meta["tile"] == "size"}
    for r in rows:
        assert r.perm_index is not None
        perm = items[r.item_id].meta["perms"][r.perm_index]
        assert r.chosen == (int(perm[0]),)
    s = cell_summary(rows, seed=0, n_resamples=200)
    same = np.mean([i.meta["perms"][0][0] == i.meta["perms"][1][0] for i in items.values()])
    assert s.excess_consistency.consistency == pytest.approx(same)


def test_summarise_cells_groups_by_rule_and_tile() -> None:
    qs = list(_queries())
    rows = coordinate_table(_items(), qs, SalienceChooser(_items()).score(qs))
    cells = summarise_cells(rows, by=("rule", "tile"), seed=1, n_resamples=200)
    assert set(cells) == {
        (rule, t)
        for rule in ("probs", "fit", "posterior")
        for t in ("hold", "manmade", "moves", "size")
    }
    assert cells[("probs", "size")].fit_norm.mean == 1.0
    with pytest.raises(ValueError, match="rule"):
        summarise_cells(rows, by=("tile",), seed=1)


def test_unknown_item_and_missing_rule_are_errors() -> None:
    qs = list(_queries())[:2]
    ds = UniformChooser().score(qs)
    with pytest.raises(KeyError, match="unknown item"):
        coordinate_table([], qs, ds)
    with pytest.raises(KeyError, match="pmi"):
        coordinate_table(_items(), qs, ds, rules=["pmi"])
    with pytest.raises(KeyError, match="unknown item"):
        BayesOracleChooser([]).score(qs)
