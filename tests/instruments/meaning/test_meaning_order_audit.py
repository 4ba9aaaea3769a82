"""The E7 order audit reads the gold option's canonical index from every row (never assumes 0),
reads vectors as returned within a stated tolerance, and keeps its values per item."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from choiceaudit.errors import AnalysisError
from choiceaudit.instruments.meaning import MeaningRows
from choiceaudit.instruments.meaning._audits import order_audit
from choiceaudit.instruments.meaning._order_audit import order_result

CONTENT = np.array([0.2, 1.5, 0.9, 0.0])  # canonical options' content, gold given separately
BIAS = np.array([0.0, 0.8, 0.3, 0.0])  # by display slot


def _vector(perm: tuple[int, ...], content: np.ndarray, decimals: int | None) -> np.ndarray:
    z = np.exp(content[list(perm)] + BIAS)
    p = z / z.sum()
    out: np.ndarray = np.round(p, decimals) if decimals is not None else p
    return out


def sweep_records(
    item: str, gold: int, *, decimals: int | None = None, relabel: list[int] | None = None
) -> list[dict[str, Any]]:
    """One item under all 24 orderings; canonical option ``gold`` is the gold gloss. With
    ``relabel`` (old canonical index -> new), the same renderings under another canonical order."""
    out = []
    for perm in itertools.permutations(range(4)):
        vec = _vector(perm, CONTENT, decimals)
        shown = perm if relabel is None else tuple(relabel[c] for c in perm)
        out.append(
            {
                "item_id": item,
                "experiment": "e7",
                "family": "d-rand",
                "condition": "p" + "".join(map(str, perm)),
                "language": "en",
                "state": item,
                "options": [f"opt{c}" for c in perm],
                "perm": shown,
                "probs": vec / vec.sum(),
                "raw": vec,
                "gold_slot": perm.index(gold),
                "literal_slot": None,
            }
        )
    return out


def brute_gold_range(gold: int, decimals: int | None = None) -> float:
    values = [
        _vector(p, CONTENT, decimals)[p.index(gold)] for p in itertools.permutations(range(4))
    ]
    return float(max(values) - min(values))


def test_gold_at_canonical_two_gives_the_gold_range_not_option_zeros() -> None:
    rows = MeaningRows.from_records(sweep_records("7", gold=2) + sweep_records("9", gold=2))
    assert rows.gold_canonical.tolist() == [2] * 48
    audit = order_audit(rows)
    expected = brute_gold_range(2)
    assert audit.mean_gold_prob_range == pytest.approx(expected, abs=1e-12)
    # the range of canonical option 0, which the audit used to report, is a different number
    assert abs(brute_gold_range(0) - expected) > 0.01
    assert audit.items is not None and audit.items.column("gold_canonical") == (2, 2)


def test_relabelling_the_canonical_order_changes_no_number() -> None:
    relabel = [2, 1, 0, 3]  # canonical 2 (the gold) becomes 0
    a = order_result(MeaningRows.from_records(sweep_records("7", gold=2)))
    b = order_result(MeaningRows.from_records(sweep_records("7", gold=2, relabel=relabel)))
    assert b.items is not None and b.items.column("gold_canonical") == (0,)
    for name in (
        "answer_instability",
        "mean_distinct_choices",
        "mean_gold_prob_range",
        "selection_spread",
        "slot_shares",
        "distinct_choice_counts",
    ):
        assert getattr(a, name) == getattr(b, name), name
    assert a.permutation_audit == b.permutation_audit


def test_an_item_whose_renderings_disagree_on_the_gold_is_refused_by_name() -> None:
    records = sweep_records("7", gold=2)
    records[5] = {**records[5], "gold_slot": (records[5]["gold_slot"] + 1) % 4}
    with pytest.raises(AnalysisError, match="item 7: the gold option sits at canonical"):
        order_audit(MeaningRows.from_records(records))


def test_two_decimal_vectors_are_read_as_returned_and_their_deviation_reported() -> None:
    rows = MeaningRows.from_records(sweep_records("7", gold=1, decimals=2))
    audit = order_result(rows)
    sums = [abs(float(np.sum(r)) - 1.0) for r in rows.raw_probs]
    assert max(sums) > 0  # two-decimal rounding leaves some vectors off 1
    assert audit.max_sum_deviation == pytest.approx(max(sums))
    assert audit.sum_tolerance == 0.02
    assert audit.mean_gold_prob_range == pytest.approx(brute_gold_range(1, 2), abs=1e-12)
    with pytest.raises(AnalysisError, match="within 1e-06"):
        order_result(rows, tolerance=1e-6)


def test_per_item_values_and_the_distinct_choice_distribution() -> None:
    stable = sweep_records("1", gold=0)
    for r in stable:  # a point mass on canonical option 0 wherever it is shown: stable
        vec = np.zeros(4)
        vec[r["perm"].index(0)] = 1.0
        r["probs"] = r["raw"] = vec
    rows = MeaningRows.from_records(stable + sweep_records("2", gold=0))
    audit = order_result(rows)
    assert audit.items is not None
    assert audit.items.column("item_id") == ("1", "2")
    assert audit.items.column("distinct_choices")[0] == 1
    assert audit.items.column("unstable")[0] is False
    assert audit.items.column("travel")[0] == 0.0
    distinct = audit.items.column("distinct_choices")
    assert audit.distinct_choice_counts == tuple(distinct.count(n) for n in range(1, 5))
    assert sum(audit.distinct_choice_counts) == 2
    assert audit.mean_distinct_choices == pytest.approx(np.mean(distinct))
