"""Analysis on scripted decisions, where every figure has an exact expected value."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from choiceaudit.instruments.meaning import Corpus, MeaningRows
from choiceaudit.instruments.meaning._analysis import (
    accuracy_by,
    calibration,
    decomposition,
    lar_by_stratum,
    length_strata,
    literal_attraction_rate,
    output_distribution,
    overconfidence_gap,
    paired_contrast,
)
from choiceaudit.instruments.meaning._analysis_results import PairingCheck
from choiceaudit.instruments.meaning._audits import (
    cue_flags,
    cue_strata,
    order_audit,
    pairing_check,
    signal_retention,
    subset_drift,
    surface_agreement,
    unit_integrity,
)
from choiceaudit.instruments.meaning._interventions import build_e2, build_e3, build_e7
from choiceaudit.instruments.meaning._items import build_ladder
from choiceaudit.instruments.meaning._options import build_e6
from choiceaudit.instruments.meaning._rows import choice_credit
from choiceaudit.scorers import FakeScorer
from choiceaudit.types import Decision, Query

Rule = Callable[[Query], tuple[int | None, float]]


def scripted(queries: Sequence[Query], rule: Rule) -> list[Decision]:
    """``rule(query) -> (slot, peak)``: ``peak`` on ``slot``, the rest spread evenly; slot None
    gives a uniform (fully tied) vector."""
    out = []
    for q in queries:
        slot, peak = rule(q)
        k = q.n_options
        if slot is None:
            probs = np.full(k, 1.0 / k)
        else:
            probs = np.full(k, (1.0 - peak) / (k - 1))
            probs[slot] = peak
        out.append(Decision(query_id=q.id, probs=probs, scores={"prob": probs}))
    return out


def index(q: Query) -> int:
    return (int(q.meta["item_id"]) - 1) // 10  # synthetic ids are 10 * i + 1


def test_choice_credit_splits_ties() -> None:
    credit = choice_credit(np.array([[0.4, 0.4, 0.1, 0.1], [0.7, 0.1, 0.1, 0.1]]))
    np.testing.assert_allclose(credit, [[0.5, 0.5, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])


def ladder_rule(q: Query) -> tuple[int | None, float]:
    i = index(q)
    if q.meta["literal_slot"] is not None and i % 3 == 0:
        return q.meta["literal_slot"], 0.9  # captured, and confident about it
    if i % 2 == 0:
        return q.meta["gold_slot"], 0.5
    return None, 0.0  # uniform: a four-way tie, credit 1/4 on the gold


def test_ladder_accuracy_lar_and_decomposition(synthetic: Corpus) -> None:
    queries = build_ladder(synthetic).queries
    rows = MeaningRows.from_decisions(queries, scripted(queries, ladder_rule))
    even = sum(1 for i in range(40) if i % 2 == 0)  # 20
    lit = sum(1 for i in range(40) if i % 3 == 0)  # 14
    even_not_lit = sum(1 for i in range(40) if i % 2 == 0 and i % 3 != 0)  # 13
    acc = accuracy_by(rows, n_resamples=200)
    assert list(acc) == ["d-rand", "d-surf", "d-sem", "d-lit", "d-hard"]
    assert all(type(key) is str for key in acc)  # plain str keys: JSON and report friendly
    assert acc["d-rand"].estimate == pytest.approx((even + 0.25 * 20) / 40)
    expected_lit_acc = (even_not_lit + 0.25 * (40 - lit - even_not_lit)) / 40
    assert acc["d-lit"].estimate == pytest.approx(expected_lit_acc)
    assert acc["d-rand"].n_items == 40 and acc["d-rand"].low <= acc["d-rand"].estimate
    lar = literal_attraction_rate(rows.where(family="d-lit"), n_resamples=200)
    uniform_rows = 40 - lit - even_not_lit
    assert lar.estimate == pytest.approx((lit + 0.25 * uniform_rows) / 40)
    parts = decomposition(rows.where(family="d-lit"))
    assert parts.gold == pytest.approx(expected_lit_acc)
    assert parts.gold + parts.literal + parts.other == pytest.approx(1.0)
    with pytest.raises(ValueError, match="literal gloss"):
        literal_attraction_rate(rows.where(family="d-rand"))


def test_calibration_and_outcome_confidence(synthetic: Corpus) -> None:
    queries = build_ladder(synthetic, families=("d-lit",)).queries
    rows = MeaningRows.from_decisions(queries, scripted(queries, ladder_rule))
    cal = calibration(rows)
    assert cal.brier_uniform == 0.75
    by = cal.confidence_by_outcome
    # 14 captured rows at 0.9; 13 uniform rows give the literal credit 1/4 at peak 0.25
    assert by.captured == pytest.approx((14 * 0.9 + 13 * 0.25 * 0.25) / (14 + 13 * 0.25))
    assert by.correct < by.captured  # … than when correct: the inversion of §5.2
    assert cal.aurc > cal.aurc_random  # so a confidence gate is worse than random
    assert cal.selective_accuracy["0.35"] == 0.0  # the 14 captured rows fill the top 35%
    assert cal.conf_head_rows == 0 and cal.conf_head_by_outcome is None
    bins = cal.reliability
    assert sum(bins.n_rows) == 40 and bins.confidence[-1] == pytest.approx(0.9)
    assert bins.accuracy[-1] == 0.0  # the most confident bin is all captured rows
    uniform = MeaningRows.from_decisions(queries, scripted(queries, lambda q: (None, 0.0)))
    cal_u = calibration(uniform)
    assert cal_u.brier == pytest.approx(0.75) and cal_u.ece == pytest.approx(0.0)
    assert output_distribution(uniform).mean_normalized_entropy == pytest.approx(1.0)


def test_paired_contrast_counts_discordant_items(synthetic: Corpus) -> None:
    queries = build_ladder(synthetic, families=("d-rand", "d-lit")).queries
    rule: Rule = lambda q: (  # noqa: E731
        (q.meta["literal_slot"], 0.8)
        if q.meta["literal_slot"] is not None and index(q) % 4 == 0
        else (q.meta["gold_slot"], 0.8)
    )
    rows = MeaningRows.from_decisions(queries, scripted(queries, rule))
    result = paired_contrast(
        rows.where(family="d-rand"), rows.where(family="d-lit"), n_resamples=200
    )
    assert (result.mcnemar_b, result.mcnemar_c) == (10, 0)  # i % 4 == 0: 10 items
    assert result.difference == pytest.approx(10 / 40)
    assert result.mcnemar_p == pytest.approx(2 * 0.5**10)
    with pytest.raises(ValueError, match="more than one row"):
        paired_contrast(rows, rows)


def test_o4_overconfidence_and_signal_retention(synthetic: Corpus) -> None:
    queries = build_e6(synthetic, variants=("o0", "o4")).queries
    rule: Rule = lambda q: (q.meta["gold_slot"], 0.6) if q.meta["condition"] == "o0" else (0, 0.8)  # noqa: E731
    rows = MeaningRows.from_decisions(queries, scripted(queries, rule))
    o4 = rows.where(condition="o4")
    share_gold_first = float(np.mean(o4.gold_slot == 0))
    gap = overconfidence_gap(o4, n_resamples=200)
    assert gap.estimate == pytest.approx(0.8 - share_gold_first)
    retention = signal_retention(rows, n_resamples=200)
    assert retention["o0"].signal_retained == pytest.approx(1.0)
    assert retention["o4"].signal_retained == pytest.approx((share_gold_first - 0.25) / 0.75)


def test_surface_agreement_and_js(synthetic: Corpus) -> None:
    queries = build_e2(synthetic).queries
    rule: Rule = lambda q: (  # noqa: E731
        (q.meta["gold_slot"], 0.7)
        if q.meta["condition"] == "canonical" or index(q) % 4 == 1
        else (q.meta["literal_slot"], 0.7)
    )
    rows = MeaningRows.from_decisions(queries, scripted(queries, rule))
    result = surface_agreement(rows)
    assert result.n_pairs == 20 and result.agreement == pytest.approx(0.5)
    js = jensenshannon([0.7, 0.1, 0.1, 0.1], [0.1, 0.7, 0.1, 0.1], base=2) ** 2
    assert result.mean_js_divergence == pytest.approx(0.5 * js)
    assert result.accuracy_canonical == 1.0 and result.accuracy_alternative == 0.5
    assert (result.mcnemar_b, result.mcnemar_c, result.both_correct) == (10, 0, 10)


def test_unit_integrity_agreement_with_intact(synthetic: Corpus) -> None:
    queries = build_e3(synthetic).queries
    rule: Rule = lambda q: (  # noqa: E731
        (q.meta["literal_slot"], 0.6) if q.meta["condition"] == "v4" else (q.meta["gold_slot"], 0.6)
    )
    rows = MeaningRows.from_decisions(queries, scripted(queries, rule))
    result = unit_integrity(rows, n_resamples=200)
    agreement = result.agreement_with_intact
    assert agreement["v1"].agreement == 1.0 and agreement["v4"].agreement == 0.0
    assert result.accuracy["v4"].estimate == 0.0 and agreement["v1"].n_pairs == 26


def test_order_audit_with_the_fake_scorer(synthetic: Corpus) -> None:
    queries = build_e7(synthetic, item_ids=[1, 11, 21], key_bindings=("slot",)).queries
    biased = MeaningRows.from_decisions(
        queries, FakeScorer(content={}, position_bias=[1.0]).score(queries)
    )
    audit = order_audit(biased)
    assert audit.n_items == 3 and audit.answer_instability == 1.0
    assert audit.slot_shares == (1.0, 0.0, 0.0, 0.0) and audit.mean_distinct_choices == 4.0
    e = math.e
    assert audit.permutation_audit.median_travel == pytest.approx((e - 1) / (e + 3))
    fair = MeaningRows.from_decisions(queries, FakeScorer().score(queries))
    audit = order_audit(fair)
    assert audit.answer_instability == 0.0
    # the softmax sums in slot order, so the canonical vectors differ only at float noise
    assert audit.permutation_audit.share_at_or_below == 1.0
    assert audit.permutation_audit.max_travel < 1e-12
    partial = MeaningRows.from_decisions(queries[:30], FakeScorer().score(queries[:30]))
    assert order_audit(partial).n_incomplete_items_excluded == 1


def test_pairing_check_and_subset_drift(synthetic: Corpus) -> None:
    queries = build_ladder(synthetic, families=("d-rand",)).queries
    rows = MeaningRows.from_decisions(queries, scripted(queries, ladder_rule))
    assert pairing_check(rows, rows) == PairingCheck(
        model_a="a",
        model_b="b",
        n_shared=40,
        gold_slot=1.0,
        literal_slot=1.0,
        state=1.0,
        options=1.0,
    )
    other = MeaningRows.from_decisions(
        build_ladder(synthetic, families=("d-rand",), seed_base=5000).queries[:10],
        scripted(
            build_ladder(synthetic, families=("d-rand",), seed_base=5000).queries[:10], ladder_rule
        ),
    )
    assert (pairing_check(rows, other).options or 0.0) < 1.0
    even_items = [str(10 * i + 1) for i in range(0, 40, 2)]
    drift = subset_drift(rows, even_items, n_resamples=200)["d-rand"]
    assert drift.subset.estimate == 1.0
    assert drift.drift == pytest.approx(1.0 - (20 + 5) / 40)
    assert drift.outside_full_interval is True


def test_cue_flags_and_strata() -> None:
    base = {
        "experiment": "e1",
        "family": "d-lit",
        "condition": "d-lit",
        "language": "bn",
        "gold_slot": 0,
        "literal_slot": 1,
        "perm": "0123",
    }
    records = [
        {
            **base,
            "item_id": "1",
            "state": "অগ্নি বল",
            "options": ["তীব্র ক্ষুধা", "অগ্নি বল (fire strength)", "খুব রাগ", "দুঃখ"],
            "probs": [0.1, 0.7, 0.1, 0.1],
        },
        {
            **base,
            "item_id": "2",
            "state": "জলের দাম",
            "options": ["খুব সস্তা", "পানির মূল্য", "অনেক দামি জিনিস", "ঝগড়া"],
            "probs": [0.7, 0.1, 0.1, 0.1],
        },
    ]
    rows = MeaningRows.from_records(records)
    flags = cue_flags(rows)
    assert flags["verbatim"].tolist() == [True, False]
    assert flags["latin"].tolist() == [True, False]
    assert flags["longest"].tolist() == [True, False]
    assert flags["hook"].tolist() == [True, False]
    strata = cue_strata(rows, cues=("verbatim",), n_resamples=50)
    assert strata["verbatim"].lar_with == 1.0
    assert strata["verbatim"].difference == 1.0
    with pytest.raises(ValueError, match="record 0: missing field 'state'"):
        MeaningRows.from_records([{k: v for k, v in records[0].items() if k != "state"}])


def test_lar_by_stratum_and_length(synthetic: Corpus) -> None:
    queries = build_ladder(synthetic, families=("d-lit",)).queries
    rows = MeaningRows.from_decisions(queries, scripted(queries, ladder_rule))
    lengths = length_strata(rows)
    assert lengths["1"] == "1" and lengths["11"] == "4+"  # "idiom0" / "idiom1 has three words"
    by_parity = {str(10 * i + 1): ("even" if i % 2 == 0 else "odd") for i in range(40)}
    strata = lar_by_stratum(rows, by_parity, n_resamples=100)
    # i % 3 == 0 is captured outright (7 even, 7 odd); odd items otherwise tie four ways
    assert strata["even"].estimate == pytest.approx(7 / 20)
    assert strata["odd"].estimate == pytest.approx((7 + 0.25 * 13) / 20)


def test_conf_head_gets_its_own_gate(synthetic: Corpus) -> None:
    queries = build_ladder(synthetic, families=("d-lit",)).queries
    decisions = [
        Decision(query_id=d.query_id, probs=d.probs, aux={"conf_head": 1.0 - float(d.probs.max())})
        for d in scripted(queries, ladder_rule)
    ]
    cal = calibration(MeaningRows.from_decisions(queries, decisions))
    assert cal.conf_head_rows == 40
    assert cal.conf_head_by_outcome is not None
    assert cal.conf_head_by_outcome.captured == pytest.approx(
        (14 * 0.1 + 13 * 0.25 * 0.75) / (14 + 13 * 0.25)
    )
    # the reversed head ranks the captured rows last
    assert cal.conf_head_aurc is not None and cal.conf_head_aurc < cal.aurc
