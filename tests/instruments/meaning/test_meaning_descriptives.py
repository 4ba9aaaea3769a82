"""Appendix H / J descriptives on constructed rows, and E6 keeping items without an
other-language gloss for the forms that do not need one."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from choiceaudit.instruments.meaning import MeaningRows, analyse_meaning
from choiceaudit.instruments.meaning._descriptives import descriptives
from choiceaudit.instruments.meaning._options import build_e6

from .conftest import synthetic_corpus


def row(
    item: str,
    experiment: str,
    condition: str,
    state: str,
    options: list[str],
    probs: list[float],
    *,
    literal: int | None = 1,
    language: str = "bn",
    family: str = "d-lit",
) -> dict[str, Any]:
    return {
        "item_id": item,
        "experiment": experiment,
        "family": family,
        "condition": condition,
        "language": language,
        "state": state,
        "options": options,
        "perm": "0123",
        "probs": probs,
        "gold_slot": 0,
        "literal_slot": literal,
    }


def test_descriptives_count_what_the_appendices_describe() -> None:
    records = [
        # literal certain to three decimals: 0.9996 -> 1.000, gold 0.0003 -> 0.000
        row(
            "1",
            "e1",
            "d-lit",
            "ঘর",
            ["gold one", "ঘর literal gloss long", "x", "y"],
            [0.0003, 0.9996, 0.0001, 0.0],
        ),
        # not certain: the literal reads 0.999
        row(
            "2",
            "e1",
            "d-lit",
            "জল দাম",
            ["gold two is long", "short", "xx", "yy"],
            [0.0004, 0.9990, 0.0006, 0.0],
        ),
        row(
            "1",
            "e2",
            "canonical",
            "ঘর",
            ["a", "b", "c", "d"],
            [0.6, 0.2, 0.1, 0.1],
            family="d-hard",
        ),
        row("1", "e2", "alt1", "ঘরে", ["a", "b", "c", "d"], [0.4, 0.3, 0.2, 0.1], family="d-hard"),
        row(
            "2",
            "e2",
            "canonical",
            "জল দাম",
            ["a", "b", "c", "d"],
            [0.9, 0.1, 0.0, 0.0],
            family="d-hard",
        ),  # no alternative: not in a pair
        # item 4: two alternatives, so its canonical row stands in two pairs
        row(
            "4",
            "e2",
            "canonical",
            "চাঁদ",
            ["a", "b", "c", "d"],
            [0.8, 0.1, 0.1, 0.0],
            family="d-hard",
        ),
        row("4", "e2", "alt1", "চাঁদে", ["a", "b", "c", "d"], [0.5, 0.3, 0.2, 0.0], family="d-hard"),
        row("4", "e2", "alt2", "চাঁদের", ["a", "b", "c", "d"], [0.7, 0.1, 0.1, 0.1], family="d-hard"),
        row(
            "3",
            "matrix",
            "bn",
            "নদী পার",
            ["red sun", "নদী red bank (river bank)", "q", "r"],
            [0.25] * 4,
        ),
        row(
            "3",
            "matrix",
            "en",
            "cross river",
            ["red sun", "river bank", "q", "r"],
            [0.25] * 4,
            language="en",
        ),
    ]
    d = descriptives(MeaningRows.from_records(records))
    assert d.n_literal_certain == {"d-lit": 1}
    # the paper's: the canonical peak once per pair (pairs 1/alt1, 4/alt1, 4/alt2)
    assert d.e2_mean_peak == pytest.approx((0.6 + 0.8 + 0.8) / 3)
    # every distinct row of the pairs once: 1 canonical, 1 alt1, 4 canonical, alt1, alt2
    assert d.e2_mean_peak_rows == pytest.approx((0.6 + 0.4 + 0.8 + 0.5 + 0.7) / 5)
    c = d.construction
    assert c is not None and c.n_items == 2
    assert c.share_single_word == 0.5 and c.share_verbatim == 0.5
    assert c.share_literal_longer_than_gold == 0.5 and c.share_literal_longest == 0.5
    assert c.mean_literal_chars == pytest.approx((len("ঘর literal gloss long") + 5) / 2)
    assert c.mean_gold_chars == pytest.approx((8 + 16) / 2)
    assert c.mean_other_chars == pytest.approx((8 + 1 + 1 + 16 + 2 + 2) / 6)
    m = d.matrix
    assert m is not None and m.n_items == 1
    # bn: {red, sun} vs {নদী, red, bank, river}: 1 / 5; en: {red, sun} vs {river, bank}: 0
    assert m.jaccard_gold_literal == {"bn": pytest.approx(0.2), "en": 0.0}
    assert m.hook_share == {"bn": 1.0, "en": 1.0}  # নদী in both; "river" in both
    assert m.mean_literal_chars == {"bn": len("নদী red bank (river bank)"), "en": 10}


def test_descriptives_are_part_of_the_arm_analysis() -> None:
    records = [row("1", "e1", "d-lit", "ঘর", ["g", "ঘর l", "x", "y"], [0.0, 1.0, 0.0, 0.0])]
    analysis = analyse_meaning(MeaningRows.from_records(records), n_resamples=10)
    assert analysis.descriptives is not None
    assert analysis.descriptives.n_literal_certain == {"d-lit": 1}
    assert analysis.descriptives.matrix is None and analysis.descriptives.e2_mean_peak is None


def test_e6_keeps_items_without_an_english_gloss_for_every_form_but_o3() -> None:
    corpus = synthetic_corpus(40)
    entries = tuple(
        dataclasses.replace(e, gold_other=None) if e.id in (11, 21) else e for e in corpus.entries
    )
    corpus = dataclasses.replace(corpus, entries=entries)
    ids = [1, 11, 21, 31]
    build = build_e6(corpus, item_ids=ids)
    forms: dict[str, set[str]] = {}
    for q in build.queries:
        forms.setdefault(str(q.meta["condition"]), set()).add(str(q.meta["item_id"]))
    for form in ("o0", "o1", "o2", "o4"):
        assert forms[form] == {"1", "11", "21", "31"}, form
    assert forms["o3"] == {"1", "31"}
    assert build.report["skipped"]["d-rand"] == {"o3: no other-language gloss": 2}
