"""True perturbations, language as a plan dimension, the paper's designs as presets,
the travelling-key E7 arm, vectors analysed as returned, and the membership steps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from choiceaudit.instruments.meaning import (
    Corpus,
    IdiomEntry,
    MeaningRows,
    analyse_meaning,
    analyse_meaning_runs,
    load_bagdhara,
    plan_meaning,
)
from choiceaudit.instruments.meaning._contract import INSTRUCTIONS, SEEDS_EN, item_rng
from choiceaudit.instruments.meaning._corpus import LoaderReport
from choiceaudit.instruments.meaning._designs import DESIGNS, block_items, design_blocks
from choiceaudit.instruments.meaning._interventions import build_e3, build_e7
from choiceaudit.instruments.meaning._matrix import subset10
from choiceaudit.instruments.meaning._options import build_e6
from choiceaudit.instruments.meaning._text import words
from choiceaudit.scorers import FakeScorer
from choiceaudit.types import Arm, Decision, Manifest, Query


def short_corpus() -> Corpus:
    """2- and 3-word expressions and 2- and 3-word glosses, with the cases that have no other
    order: every word the same (``ha ha ha``), and a palindrome for the reversal (``a b a``)."""
    words3 = [("ka", "kha", "ga"), ("gha", "ca", "cha"), ("ja", "jha", "ta")]
    entries = []
    for i in range(30):
        if i == 0:
            expression = "ha ha ha"
        elif i == 1:
            expression = "pa pha pa"
        elif i % 2:
            expression = " ".join(words3[i % 3]) + f"{i}"
        else:
            expression = f"ek{i} dui{i}"
        gold = f"gold{i} sense" if i % 3 else f"gold{i} real sense"
        if i == 2:
            gold = "same same"  # an option with no other word order
        entries.append(
            IdiomEntry(
                id=i + 1,
                expression=expression,
                gold=gold,
                literal=f"literal{i} words here",
                language="bn",
                tags=(f"t{i % 3}",),
                carriers=(f"a carrier {i}",),
            )
        )
    return Corpus("short", "bn", tuple(entries), LoaderReport("short"))


def test_no_identity_perturbations_on_short_expressions() -> None:
    corpus = short_corpus()
    e3 = build_e3(corpus)
    intact = {q.meta["item_id"]: q.state for q in e3.queries if q.meta["condition"] == "v0"}
    flagged = 0
    for q in e3.queries:
        variant = q.meta["condition"]
        if variant not in ("v1", "v2", "v3", "v4"):
            continue
        toks = intact[q.meta["item_id"]].split()
        if q.meta["identity_perturbation"]:
            flagged += 1
            assert q.state == intact[q.meta["item_id"]]
            # only where no other string exists
            assert len(set(toks)) == 1 or (variant == "v2" and toks == toks[::-1])
        else:
            assert q.state != intact[q.meta["item_id"]], (variant, q.state)
        if variant == "v1":
            assert sorted(q.state.split()) == sorted(toks)  # a permutation of the words
    v1 = [q for q in e3.queries if q.meta["condition"] == "v1"]
    assert sum(q.meta["identity_perturbation"] for q in v1) == 1  # only "ha ha ha"
    assert (
        sum(e3.report["identity_perturbations"].values()) == flagged == 3
    )  # ha ha ha v1/v2, pa pha pa v2
    e6 = build_e6(corpus)
    full = {q.meta["item_id"]: q for q in e6.queries if q.meta["condition"] == "o0"}
    for q in e6.queries:
        if q.meta["condition"] != "o2":
            continue
        original = full[q.meta["item_id"]]
        for slot, text in enumerate(q.options):
            before = words(original.options[slot])
            after = text.split()
            assert sorted(after) == sorted(before)
            if len(set(before)) >= 2:
                assert after != before, (before, after)  # never the original order
        assert q.meta["identity_perturbation"] is False  # every list has a changeable option
    assert (
        e6.report["o2_options_unchangeable"]
        == sum(
            1
            for q in e6.queries
            if q.meta["condition"] == "o2"
            for o in full[q.meta["item_id"]].options
            if len(set(words(o))) < 2
        )
        > 0
    )
    # the analysis leaves flagged rows out of their variant, counted
    queries = list(e3.queries)
    rows = MeaningRows.from_decisions(queries, FakeScorer().score(queries))
    unit = analyse_meaning(rows, n_resamples=20).e3
    assert unit is not None
    assert unit.n_identity_excluded == {"v1": 1, "v2": 2}
    n_v1 = sum(1 for q in queries if q.meta["condition"] == "v1")
    assert unit.accuracy["v1"].n_rows == n_v1 - 1
    assert set(unit.contrast_vs_intact) == {"v1", "v2", "v3", "v4", "v5"}
    for c in unit.contrast_vs_intact.values():
        assert c.n_tests == 5 and c.mcnemar_p_bonferroni == min(1.0, 5 * c.mcnemar_p)


def test_english_blocks_carry_english_strings_and_seeds(synthetic: Corpus) -> None:
    plan = plan_meaning(
        synthetic,
        experiments=("e1", "e6", "e7"),
        n_items=40,
        n_order_items=3,
        languages=("bn", "en"),
    )
    assert list(plan.builds) == [
        "e1",
        "j2_lit_en",
        "j3_ceiling_en",
        "e6",
        "j5_options_en",
        "e7",
        "j1_order",
    ]
    by_id = synthetic.by_id()
    seeds = {
        "j2_lit_en": SEEDS_EN["j2_lit_en"],
        "j3_ceiling_en": SEEDS_EN["j3_ceiling_en"],
        "j5_options_en": SEEDS_EN["j5_options_en"],
        "j1_order": SEEDS_EN["j1_order"],
    }
    english = [q for q in plan.queries() if q.meta["language"] == "en"]
    assert {q.meta["block"] for q in english} == set(seeds)
    for q in plan.queries():
        lang = q.meta["language"]
        assert q.instruction == INSTRUCTIONS[lang]
        entry = by_id[int(q.meta["item_id"])]
        if lang == "en":
            assert q.meta["seed_base"] == seeds[q.meta["block"]]
            assert q.state == entry.equivalents_other[0]
            if q.meta["condition"] not in ("o1", "o2", "o3", "o4"):
                assert q.options[q.meta["gold_slot"]] == entry.gold_other
            if q.meta["condition"] == "o4":
                assert sorted(q.options) == [f"meaning {n}" for n in range(1, 5)]
            if q.meta["condition"] == "o3":  # the other language is the corpus's (Bengali)
                assert q.options[q.meta["gold_slot"]] == entry.gold
            if q.meta["experiment"] == "e1":
                # the permutation is the first draw of the contract's per-item generator
                perm = list(range(4))
                item_rng(q.meta["seed_base"], entry.id).shuffle(perm)
                assert q.meta["perm"] == "".join(map(str, perm))
        else:
            assert q.state == entry.expression and q.meta["block"] in ("e1", "e6", "e7")
    lit_en = [q for q in english if q.meta["family"] == "d-lit"]
    assert lit_en and all(q.meta["block"] == "j2_lit_en" for q in lit_en)
    for q in lit_en:
        assert q.options[q.meta["literal_slot"]] == by_id[int(q.meta["item_id"])].literal_other
    # the analysis never shows an English cell under a Bengali name
    queries = plan.queries()
    decisions = FakeScorer().score(queries)
    arm = Arm(
        "fake",
        "runs/meaning-fake",
        Manifest(config=plan.config),
        tuple(zip(queries, decisions, strict=True)),
    )
    analysis = analyse_meaning_runs([arm], n_resamples=20)
    parts = {a.display: a for a in analysis.arms}
    assert set(parts) == {"fake [bn]", "fake [en, j2_lit_en]", "fake [en, j3_ceiling_en]"}
    for label, part in parts.items():
        assert part.analysis is not None and part.analysis.e1 is not None
        assert part.analysis.e1.language == part.language == label.split("[")[1][:2]
    assert list(parts["fake [en, j2_lit_en]"].analysis.e1.accuracy) == ["d-rand", "d-lit", "d-hard"]  # type: ignore[union-attr]
    j2 = parts["fake [en, j2_lit_en]"].analysis
    assert j2 is not None and j2.e6 is not None and j2.e6.language == "en"
    assert j2.e7 is not None and j2.e7.language == "en"
    for record in analysis.summary():
        assert str(record["model"]).endswith("]")


def contract_corpus(contract: dict[str, Any] | None = None) -> Corpus:
    """A synthetic corpus of the full corpus's size whose membership counts are the task
    contract's: 8,876 usable, 8,761 with an English equivalent (15 of the 115 without one in the
    10% subset, so the subset has 873 English items), 3,391 with an English parenthetical, 3,352
    of those with an equivalent, 3,265 of those lexically distinct (Jaccard < 0.34)."""
    n = 8876
    entries_stub = Corpus(
        "stub",
        "bn",
        tuple(
            IdiomEntry(id=i + 1, expression=f"x{i}", gold=f"g{i}", literal=f"l{i}", language="bn")
            for i in range(n)
        ),
        LoaderReport("stub"),
        other_language="en",
    )
    in_subset = {int(i) - 1 for i in subset10(entries_stub)}
    outside = [i for i in range(n) if i not in in_subset]
    no_english = set(sorted(in_subset)[:15]) | set(outside[:100])
    # parentheticals: 3,352 among the English items (87 of them not distinct), 39 without English
    english = [i for i in range(n) if i not in no_english]
    paren = set(english[:3352]) | set(sorted(no_english)[:39])
    similar = set(english[3265:3352])
    entries = []
    for i in range(n):
        gold_en = None if i in no_english else f"english gold sense {i}"
        literal_en = None
        if i in paren:
            literal_en = f"english gold sense {i}" if i in similar else f"plain literal {i}"
        entries.append(
            IdiomEntry(
                id=i + 1,
                expression=f"বাগধারা{i} দুই",
                gold=f"রূপক{i} অর্থ",
                literal=f"আক্ষরিক{i}" + (f" ({literal_en})" if literal_en else ""),
                language="bn",
                tags=(f"t{i % 50}",),
                gold_other=gold_en,
                literal_other=literal_en,
                equivalents_other=() if i in no_english else (f"equivalent {i}",),
            )
        )
    return Corpus("contract", "bn", tuple(entries), LoaderReport("contract"), other_language="en")


@pytest.fixture(scope="module")
def full_size() -> Corpus:
    return contract_corpus()


def test_presets_build_the_contract_counts(
    full_size: Corpus, task_contract: dict[str, Any]
) -> None:
    counts = {
        (design, b.name): len(block_items(full_size, b))
        for design in DESIGNS
        for b in design_blocks(design)
    }
    usable, subset = task_contract["n_usable"], task_contract["n_subset10"]
    pool, english = task_contract["n_pool_en_literal"], task_contract["n_with_sim_en"]
    for block in ("e1", "e2", "e3", "e4", "e6"):
        assert counts[("laya", block)] == usable == 8876
        assert counts[("lod", block)] == subset == 888
    assert counts[("laya", "e7")] == 992 and counts[("lod", "e7")] == 299
    assert counts[("laya", "matrix")] == counts[("lod", "matrix")] == pool == 3265
    assert counts[("jev", "j1_order")] == 300
    assert counts[("jev", "j2_lit_en")] == counts[("jev", "matrix")] == 3265
    assert counts[("jev", "j3_ceiling_en")] == counts[("jev", "j4_bn_control")] == english == 8761
    assert counts[("jev", "j5_options_en")] == 873
    # E7's sample is random, not the lowest ids, and drawn separately per arm
    laya_e7 = block_items(full_size, design_blocks("laya")[5])
    lod_e7 = block_items(full_size, design_blocks("lod")[5])
    assert laya_e7 != [e.id for e in full_size.entries[:992]]
    assert set(lod_e7) <= set(subset10(full_size))
    assert len(set(laya_e7) & set(lod_e7)) < 100


def test_lod_preset_builds_888_ladder_items(full_size: Corpus) -> None:
    plan = plan_meaning(full_size, design="lod", experiments=("e1",), n_items=None)
    e1_items = {q.meta["item_id"] for q in plan.builds["e1"].queries}
    assert len(e1_items) == 888
    assert len(plan.builds["e1"].queries) == 888 * 5
    assert plan.config["design"] == "lod"
    assert {b["block"]: b["n_items"] for b in plan.config["blocks"]} == {"e1": 888}
    steps = {s["step"]: s["count"] for s in plan.config["loader_steps"]}
    assert steps["pool: English parenthetical"] == 3391
    assert steps["pool: English equivalent and gold"] == 3352
    assert steps["pool: Jaccard < 0.34"] == 3265


def test_the_matrix_is_not_cut_by_n_items(synthetic: Corpus) -> None:
    full = plan_meaning(synthetic, experiments=("matrix",), n_items=5)
    assert len(full.builds["matrix"].queries) == 2 * full.config["blocks"][0]["n_items"]
    assert full.config["blocks"][0]["n_items"] > 5
    cut = plan_meaning(synthetic, experiments=("matrix",), matrix_items=5)
    assert cut.config["blocks"][0]["n_items"] == 5


def _rows(queries: list[Query], scorer: FakeScorer) -> MeaningRows:
    return MeaningRows.from_decisions(queries, scorer.score(queries))


def test_travelling_keys_separate_label_from_position(synthetic: Corpus) -> None:
    build = build_e7(synthetic, item_ids=[11, 21, 31], key_bindings=("slot", "travelling"))
    queries = list(build.queries)
    travelling = [q for q in queries if q.meta["key_binding"] == "travelling"]
    assert len(travelling) == 3 * 24
    for q in travelling:  # each option keeps its key wherever it is shown
        own = {q.perm[s]: key for s, key in enumerate(q.keys)}  # type: ignore[index]
        base = next(q2 for q2 in travelling if q2.meta["item_id"] == q.meta["item_id"])
        assert own == {base.perm[s]: k for s, k in enumerate(base.keys)}  # type: ignore[index]
    # a model that follows the label A (not the position): travels with slot-bound keys only
    label = analyse_meaning(_rows(queries, FakeScorer(label_prior={"A": 2.0})), n_resamples=20)
    assert label.e7 is not None and label.e7.travelling is not None
    assert label.e7.key_binding == "slot"
    assert label.e7.permutation_audit.max_travel > 0.3
    travel = label.e7.travelling.permutation_audit  # float noise of the softmax sum only
    assert travel.share_at_or_below == 1.0 and travel.max_travel < 1e-12
    # a model that follows the position: travels under both bindings by the same amount
    position = analyse_meaning(_rows(queries, FakeScorer(position_bias=[2.0])), n_resamples=20)
    assert position.e7 is not None and position.e7.travelling is not None
    assert position.e7.travelling.permutation_audit.max_travel == pytest.approx(
        position.e7.permutation_audit.max_travel
    )
    assert position.e7.travelling.answer_instability == 1.0


def test_vectors_are_analysed_as_returned_and_the_choice_checked(synthetic: Corpus) -> None:
    queries = list(plan_meaning(synthetic, experiments=("e1",), n_items=10).queries())
    decisions = []
    for i, q in enumerate(queries):
        raw = np.array([0.5, 0.2, 0.2, 0.09])  # sums to 0.99: within the API's 1e-2
        choice = "B" if i % 2 else "A"  # every other row's choice is not its argmax
        decisions.append(
            Decision(
                query_id=q.id,
                probs=raw / raw.sum(),
                scores={"prob": raw},
                aux={"reported_choice": choice},
            )
        )
    rows = MeaningRows.from_decisions(queries, decisions)
    assert rows.peak.tolist() == [0.5] * len(rows)  # the returned peak, not 0.5 / 0.99
    assert int((~rows.choice_is_argmax).sum()) == len(rows) // 2
    e1 = analyse_meaning(rows, n_resamples=20).e1
    assert e1 is not None
    check = e1.choice_check["d-rand"]
    cell = rows.where(family="d-rand")
    assert check.n_choice_not_argmax == int((~cell.choice_is_argmax).sum())
    assert check.accuracy_argmax == pytest.approx(np.mean(cell.gold_slot == 0))
    expected = np.mean(
        [
            (g == 1) if r == 1 else (g == 0)
            for g, r in zip(cell.gold_slot, cell.reported, strict=True)
        ]
    )
    assert check.accuracy_choice == pytest.approx(expected)
    assert e1.mean_p_gold["d-rand"] == pytest.approx(
        np.mean(cell.raw_probs[np.arange(len(cell)), cell.gold_slot])
    )


def write_loader_corpus(path: Path) -> None:
    """20 records: 3 duplicate idioms, 2 without a figurative gloss and 1 without a literal gloss
    (14 usable); 8 literal glosses with an English parenthetical, 6 of those with an English
    equivalent and gold, 5 of those distinct from the gold (one copies it)."""
    fields = (
        "alternative_idioms",
        "example_sentences_in_bangla",
        "example_sentences_in_english",
        "usage_domain",
        "tags",
    )
    records = []
    for i in range(20):
        rec: dict[str, Any] = {name: [] for name in fields}
        rec |= {
            "id": i + 1,
            "idiom": f"বাগধারা{i}",
            "figurative_meaning_bn": f"রূপক{i}",
            "literal_meaning": f"আক্ষরিক{i}",
            "figurative_meaning_en": f"english gold {i}",
            "similar_in_english": [f"equivalent {i}"],
        }
        for name in (
            "frequency",
            "sentiment",
            "historical_significance",
            "religious_significance",
            "cultural_significance",
            "scape",
            "note",
            "history",
        ):
            rec[name] = None
        records.append(rec)
    for i in (17, 18, 19):
        records[i]["idiom"] = f"বাগধারা{i - 10}"  # duplicates of 7, 8, 9
    records[14]["figurative_meaning_bn"] = records[15]["figurative_meaning_bn"] = ""
    records[16]["literal_meaning"] = ""
    for i in range(8):  # parentheticals on usable rows 0-7
        records[i]["literal_meaning"] += f" (plain sense of thing {i})"
    records[6]["similar_in_english"] = records[7]["similar_in_english"] = []
    records[5]["literal_meaning"] = "আক্ষরিক5 (english gold 5)"  # not distinct from its gold
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", "utf-8")


def test_loader_and_pool_steps_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "b.jsonl"
    write_loader_corpus(path)
    corpus = load_bagdhara(path)
    plan = plan_meaning(corpus, experiments=("e1",), n_items=4)
    steps = [(s["step"], s["count"]) for s in plan.config["loader_steps"]]
    assert steps == [
        ("loaded", 20),
        ("normalised", 20),
        ("deduplicated", 17),
        ("usable", 14),
        ("with_alt", 0),
        ("with_sim_en", 12),
        ("with_en_parenthetical", 8),
        ("pool: English parenthetical", 8),
        ("pool: English equivalent and gold", 6),
        ("pool: Jaccard < 0.34", 5),
    ]
    assert corpus.report.dropped == {
        "duplicate_idiom": 3,
        "missing_figurative_meaning_bn": 2,
        "missing_literal_meaning": 1,
    }


def test_membership_rules_are_parameters(synthetic: Corpus) -> None:
    from choiceaudit.instruments.meaning._matrix import capture_pool
    from choiceaudit.instruments.meaning._pools import Pools

    default = Pools(synthetic)
    no_stop = Pools(synthetic, stopwords={})
    assert default.surface(0) == no_stop.surface(0)  # the synthetic glosses have no stopwords
    everything = Pools(synthetic, stopwords={"bn": frozenset({"red", "river"})})
    assert len(everything.surface(0)) < len(default.surface(0))
    ids, _ = capture_pool(synthetic)
    loose, _ = capture_pool(synthetic, jaccard_max=1.01)
    strict, _ = capture_pool(synthetic, tokenize=lambda text: [text])
    assert set(ids) <= set(loose) and len(strict) >= len(ids)


def literal_rows(specs: list[tuple[str, str, int]]) -> MeaningRows:
    """d-lit rows from ``(state, literal option, chosen slot)``; gold at slot 0, literal at 1."""
    records = []
    for i, (state, literal, chosen) in enumerate(specs):
        probs = [0.1, 0.1, 0.1, 0.1]
        probs[chosen] = 0.7
        records.append(
            {
                "item_id": str(i),
                "experiment": "e1",
                "family": "d-lit",
                "condition": "d-lit",
                "language": "bn",
                "state": state,
                "perm": "0123",
                "gold_slot": 0,
                "literal_slot": 1,
                "probs": probs,
                "options": [f"gold {i}", literal, f"other {i}", f"third {i}"],
            }
        )
    return MeaningRows.from_records(records)


def test_cue_free_subset_and_cue_intervals() -> None:
    from choiceaudit.instruments.meaning._audits import cue_free, cue_strata

    specs = [
        ("one", "one two (english gloss)", 1),  # single word, verbatim, parenthetical
        ("ab cd", "ab cd literal", 1),  # verbatim
        ("ef gh", "a gloss (english words)", 1),  # parenthetical
        ("ij kl", "a long literal gloss here", 1),  # cue-free, longest, captured
        ("mn op", "short", 0),  # cue-free, not longest, correct
        ("qr st", "another long literal", 1),  # cue-free, longest, captured
    ]
    rows = literal_rows(specs)
    free = cue_free(rows, n_resamples=200)
    assert free is not None
    assert free.lar.n_items == 3 and free.lar.estimate == pytest.approx(2 / 3)
    assert free.accuracy.estimate == pytest.approx(1 / 3)
    assert free.longest is not None and free.longest.difference == pytest.approx(1.0)
    strata = cue_strata(rows, n_resamples=200)
    latin = strata["latin"]  # defined by the English parenthetical, as the paper splits it
    assert latin.n_with == 2 and latin.n_without == 4
    assert latin.difference == pytest.approx(1.0 - 3 / 4)
    assert latin.difference_low <= latin.difference <= latin.difference_high


@pytest.mark.models
def test_sparrow_moves_with_its_labels_not_its_positions(idioms_en_corpus: Corpus) -> None:
    """A real measurement (sparrow-decider on 20 idioms-en items, 960 calls): with travelling
    keys every option's probability stays at fp32 noise across the 24 orderings, with slot-bound
    keys it travels by more than 0.05 — the paper's E7 measures the label, not the position."""
    from choiceaudit.scorers import load_scorer

    ids = [e.id for e in idioms_en_corpus.entries][:400:20]
    queries = list(
        build_e7(idioms_en_corpus, item_ids=ids, key_bindings=("slot", "travelling")).queries
    )
    rows = MeaningRows.from_decisions(queries, load_scorer("sparrow").score(queries))
    e7 = analyse_meaning(rows, n_resamples=20).e7
    assert e7 is not None and e7.travelling is not None
    assert e7.permutation_audit.median_travel > 0.05
    assert e7.travelling.permutation_audit.max_travel < 1e-5
    assert e7.travelling.answer_instability == 0.0


@pytest.mark.slow
def test_the_jev_dry_run_is_the_papers_call_volume(full_size: Corpus) -> None:
    """Appendix R, "Call volume": 300 × 24 = 7,200 + 3,265 × 3 = 9,795 + 8,761 × 3 = 26,283 +
    8,761 + 873 × 5 = 4,365 = 56,404 retained rows; the matrix run is 3,265 × 2 apart."""
    from choiceaudit.audit import dry_run_meaning

    plan = dry_run_meaning(["jev"], corpus=full_size, design="jev", n_items=None, embedder="none")
    rows = {b.block: (b.n_items, b.n_rows) for b in plan.blocks}
    assert rows == {
        "j1_order": (300, 7200),
        "j2_lit_en": (3265, 9795),
        "j3_ceiling_en": (8761, 26283),
        "j4_bn_control": (8761, 8761),
        "j5_options_en": (873, 4365),
        "matrix": (3265, 6530),
    }
    assert plan.main_rows == 56404 and plan.total_rows == plan.total_calls == 62934
