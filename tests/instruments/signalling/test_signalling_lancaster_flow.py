"""The offline default end to end: lancaster norms → items → queries → reference choosers."""

from __future__ import annotations

import numpy as np
import pytest

from choiceaudit.instruments.signalling._analysis import (
    cell_summary,
    coordinate_table,
)
from choiceaudit.instruments.signalling._items import generate_candidates
from choiceaudit.instruments.signalling._lancaster import load_lancaster
from choiceaudit.instruments.signalling._oracle import FIT_COST_ATOL
from choiceaudit.instruments.signalling._pool import build_pool
from choiceaudit.instruments.signalling._render import (
    render_queries,
)
from choiceaudit.instruments.signalling._selection import (
    build_item_set,
    select_items,
)
from choiceaudit.instruments.signalling._tiles import load_tiles
from choiceaudit.instruments.signalling.choosers import BayesOracleChooser


def test_lancaster_items_render_and_score() -> None:
    norms = load_lancaster()
    tiles = load_tiles("lancaster", norms=norms)
    pool = build_pool(norms, dimensions=[t.dimension for t in tiles])
    assert len(pool) == 4094
    blocks = generate_candidates(pool, tiles, n_candidates=8_000, seed=3)
    leaked = {b.tile.name: b.excluded_by_leak for b in blocks}
    assert leaked["auditory"] == ("ear",)  # "ear" occurs in "clear": the test over-fires
    items = build_item_set(select_items(blocks, n_items=80, seed=3), seed=3)
    assert items.config["norms"] == "lancaster"
    for item in items:
        assert item.meta["target_means_concreteness"] >= 4.5
        assert "target_means_frequency" not in item.meta  # not shipped: absent, not invented
        # conflict is a fit_cost beyond rounding; a control item's fit_cost is 0 up to rounding
        cost = item.meta["fit_cost"]
        assert cost > FIT_COST_ATOL if item.meta["conflict"] else abs(cost) <= FIT_COST_ATOL
    queries = render_queries(items, conditions=("4", "5"))
    assert len(queries) == 80 * 2 * 2
    rows = coordinate_table(items, queries, BayesOracleChooser(items).score(queries))
    rows = [r for r in rows if r.rule == "probs" and r.tile == "haptic"]
    s = cell_summary(rows, seed=0, n_resamples=200)
    assert s.agree_bayes.mean == 1.0
    assert s.post_norm.mean == pytest.approx(1.0)
    assert np.isfinite(s.random_post_norm.sd)
