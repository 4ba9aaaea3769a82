"""The meaning report section on runs of deterministic fake decision models.

Two fakes answer one plan over a small two-language Bagdhara-schema corpus:

* ``fake-lit``: content 3.0 on the literal gloss (its text carries ``literal plain``) and a +1
  bias on display slot A, so under d-lit / d-hard it always picks the literal gloss (LAR = 1,
  accuracy 0) and under d-rand (all content equal) always slot A (accuracy = share of items with
  gold at A), and over the 24 orderings of E7 it follows slot A;
* ``fake-d``: only a +1 bias on slot D.

Expected values are computed from the written queries' meta, never from the analysis.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from choiceaudit.audit import QUERIES_FILE, analyse_runs, run_meaning
from choiceaudit.errors import AnalysisError
from choiceaudit.instruments.meaning import MeaningAnalysis, analyse_meaning_runs, meaning_rows
from choiceaudit.report import build_report
from choiceaudit.store import open_run as load_run
from choiceaudit.store import read_queries

FIGURES = (
    "meaning_ladder",
    "meaning_literal_attraction",
    "meaning_capture_matrix",
    "meaning_reliability",
    "meaning_risk_coverage",
    "meaning_confidence_by_outcome",
    "meaning_order_sensitivity",
    "meaning_slot_shares",
    "meaning_option_ablation",
    "meaning_unit_integrity",
)
TABLES = (
    "meaning_runs",
    "meaning_ladder",
    "meaning_lar",
    "meaning_calibration",
    "meaning_selective_gates",
    "meaning_selective",
    "meaning_o4_control",
    "meaning_capture_matrix",
    "meaning_order_audit",
    "meaning_permutation_audit",
    "meaning_ablation",
    "meaning_unit_integrity",
    "meaning_surface_forms",
    "meaning_pairing",
    "meaning_model_contrasts",
    "meaning_task_language",
    "meaning_cue_strata",
    "meaning_lar_by_length",
    "meaning_output_distribution",
)


def bagdhara_record(i: int) -> dict[str, Any]:
    """One 19-field Bagdhara record: three-word idioms (E3), English parentheticals (matrix)."""
    colours = ("red", "blue", "green", "amber", "violet")
    nouns = ("river", "stone", "crown", "lamp", "bridge", "salt", "drum")
    return {
        "id": i + 1,
        "idiom": f"বাগধারা{i} তিন শব্দ" if i % 4 == 0 else f"বাগধারা{i} এক দুই তিন",
        "alternative_idioms": [f"বাগধারা{i} বিকল্প"] if i % 2 else None,
        "literal_meaning": f"আক্ষরিক{i} অর্থ (literal plain sense of thing {i})",
        "figurative_meaning_bn": f"রূপক{i} {colours[i % 5]} অর্থ",
        "figurative_meaning_en": f"{colours[i % 5]} {nouns[i % 7]} figurative gloss {i}",
        "similar_in_english": [f"english equivalent {i}"],
        "example_sentences_in_bangla": [f"একটি বাক্য বাগধারা{i} দিয়ে।"],
        "example_sentences_in_english": [f"A sentence with idiom {i}."],
        "usage_domain": ["test"],
        "tags": [f"t{i % 4}"],
        "frequency": "common",
        "sentiment": "neutral",
        "historical_significance": 0,
        "religious_significance": 0,
        "cultural_significance": 0,
        "scape": "country",
        "note": None,
        "history": None,
    }


def write_bagdhara(path: Path, n: int = 24) -> Path:
    lines = [json.dumps(bagdhara_record(i), ensure_ascii=False) for i in range(n)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def literal_content(text: str) -> float:
    return 3.0 if "literal plain" in text else 0.0


#: the report's labels: every model label names the test language of its cells
LIT, D = "fake-lit [bn]", "fake-d [bn]"

SCORERS: dict[str, dict[str, Any]] = {
    "fake-lit": {"name": "fake-lit", "content": literal_content, "position_bias": [1, 0, 0, 0]},
    "fake-d": {"name": "fake-d", "content": {}, "position_bias": [0, 0, 0, 1]},
}


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("meaning")
    corpus = "bagdhara:" + str(write_bagdhara(root / "bagdhara.jsonl"))
    runs = []
    for name, options in SCORERS.items():
        (run,) = run_meaning(
            ["fake"],
            out=root / name,
            corpus=corpus,
            n_items=12,
            n_order_items=3,
            embedder="none",
            scorer_options={"fake": options},
        )
        runs.append(run)
    index = build_report(analyse_runs(runs), out=root / "report")
    queries = read_queries(runs[0] / QUERIES_FILE).queries
    return {"runs": runs, "out": root / "report", "index": index, "queries": queries}


def _metas(report: dict[str, Any], **equals: str) -> list[dict[str, Any]]:
    metas = [dict(q.meta) for q in report["queries"]]
    return [m for m in metas if all(m.get(k) == v for k, v in equals.items())]


def _rows(report: dict[str, Any], table: str, folder: str = "tables") -> list[dict[str, str]]:
    return read_csv(report["out"] / folder / f"{table}.csv")


def test_every_figure_and_table_is_written(report: dict[str, Any]) -> None:
    for name in FIGURES:
        for ext in ("png", "svg", "csv"):
            path = report["out"] / "figures" / f"{name}.{ext}"
            assert path.stat().st_size > 0, path
        assert f'id="figure-{name}"' in report["index"].read_text(encoding="utf-8")
    for name in TABLES:
        for ext in ("csv", "md", "tex"):
            assert (report["out"] / "tables" / f"{name}.{ext}").exists(), (name, ext)


def test_ladder_and_lar_match_the_fake_scorers(report: dict[str, Any]) -> None:
    ladder = {(r["model"], r["family"]): r for r in _rows(report, "meaning_ladder")}
    d_rand = _metas(report, experiment="e1", family="d-rand")
    assert len(d_rand) == 12
    share_a = np.mean([m["gold_slot"] == 0 for m in d_rand])
    share_d = np.mean([m["gold_slot"] == 3 for m in d_rand])
    assert float(ladder[(LIT, "d-rand")]["accuracy"]) == pytest.approx(share_a)
    assert float(ladder[(D, "d-rand")]["accuracy"]) == pytest.approx(share_d)
    assert float(ladder[(LIT, "d-lit")]["accuracy"]) == 0.0
    assert float(ladder[(LIT, "d-lit")]["chance"]) == 0.25
    # paired difference d-lit minus d-rand on the same items
    assert float(ladder[(LIT, "d-lit")]["minus_d_rand"]) == pytest.approx(-share_a)
    lar = {(r["model"], r["family"]): r for r in _rows(report, "meaning_lar")}
    assert float(lar[(LIT, "d-lit")]["lar"]) == 1.0
    assert float(lar[(LIT, "d-hard")]["literal"]) == 1.0
    d_lit = _metas(report, experiment="e1", family="d-lit")
    expected = np.mean([m["literal_slot"] == 3 for m in d_lit])
    cell = lar[(D, "d-lit")]
    assert float(cell["lar"]) == pytest.approx(expected)
    parts = [float(cell[k]) for k in ("gold", "literal", "other")]
    assert sum(parts) == pytest.approx(1.0)
    assert parts[0] == pytest.approx(np.mean([m["gold_slot"] == 3 for m in d_lit]))
    # the figure's CSV holds exactly the table's values
    assert _rows(report, "meaning_literal_attraction", "figures") == _rows(report, "meaning_lar")


def test_calibration_of_an_always_wrong_model_is_its_mean_confidence(
    report: dict[str, Any],
) -> None:
    cal = {(r["model"], r["cell"]): r for r in _rows(report, "meaning_calibration")}
    d_lit = _metas(report, experiment="e1", family="d-lit")
    # fake-lit under d-lit: literal at slot A -> logits [4, 0, 0, 0]; elsewhere 3 and 1 and two 0
    e = math.e
    peaks = [e**4 / (e**4 + 3) if m["literal_slot"] == 0 else e**3 / (e**3 + e + 2) for m in d_lit]
    row = cal[(LIT, "d-lit")]
    assert float(row["accuracy"]) == 0.0
    assert float(row["ece"]) == pytest.approx(np.mean(peaks))
    assert float(row["brier_uniform"]) == 0.75
    assert (LIT, "matrix en") in cal and (LIT, "e6 o4") in cal
    gates = {(r["model"], r["cell"]): r for r in _rows(report, "meaning_selective_gates")}
    assert float(gates[(LIT, "d-lit")]["aurc"]) == pytest.approx(1.0)
    assert float(gates[(LIT, "d-lit")]["aurc_random"]) == 1.0
    # fake-d on d-rand: peak probability is the same on every row, so gating equals the gate
    d_rand = gates[(D, "d-rand")]
    assert float(d_rand["aurc"]) == pytest.approx(float(d_rand["aurc_random"]))
    selective = {(r["model"], r["cell"]): r for r in _rows(report, "meaning_selective")}
    assert float(selective[(LIT, "d-lit")]["at_0.05"]) == 0.0
    assert float(selective[(D, "d-rand")]["at_1.00"]) == pytest.approx(
        float(cal[(D, "d-rand")]["accuracy"])
    )


def test_order_audit_follows_the_slot_bias(report: dict[str, Any]) -> None:
    order = {r["model"]: r for r in _rows(report, "meaning_order_audit") if r["keys"] == "slot"}
    row = order[LIT]  # E7 uses d-rand lists: content is equal, slot A always wins
    assert int(row["n_items"]) == 3
    assert float(row["answer_instability"]) == 1.0
    assert float(row["mean_distinct_choices"]) == 4.0
    assert float(row["selection_spread"]) == 1.0
    e = math.e
    assert float(row["mean_gold_prob_range"]) == pytest.approx((e - 1) / (e + 3))
    audit = {
        r["model"]: r for r in _rows(report, "meaning_permutation_audit") if r["keys"] == "slot"
    }
    # fake-d's probabilities depend on the slot only: each option travels e/(e+3) - 1/(e+3)
    assert float(audit[D]["max_travel"]) == pytest.approx((e - 1) / (e + 3))
    assert float(audit[D]["share_travel_le_1e-4"]) == 0.0
    slots = _rows(report, "meaning_slot_shares", "figures")
    e7 = [r for r in slots if r["model"] == D and r["source"] == "e7 orderings"]
    assert [float(r["share"]) for r in e7] == [0.0, 0.0, 0.0, 1.0]


def test_unit_integrity_ablation_and_matrix(report: dict[str, Any]) -> None:
    unit = [r for r in _rows(report, "meaning_unit_integrity") if r["model"] == LIT]
    # the options are byte-identical and the literal gloss wins every time: full agreement
    assert {r["variant"].split()[0] for r in unit} == {"v0", "v1", "v2", "v3", "v4", "v5"}
    assert all(float(r["agreement_with_intact"]) == 1.0 for r in unit)
    assert all(float(r["accuracy"]) == 0.0 for r in unit)
    ablation = {(r["model"], r["variant"].split()[0]): r for r in _rows(report, "meaning_ablation")}
    o4 = _metas(report, experiment="e6", condition="o4")
    assert float(ablation[(D, "o4")]["accuracy"]) == pytest.approx(
        np.mean([m["gold_slot"] == 3 for m in o4])
    )
    matrix = {(r["model"], r["language"]): r for r in _rows(report, "meaning_capture_matrix")}
    assert float(matrix[(LIT, "bn")]["lar"]) == 1.0
    assert float(matrix[(LIT, "en")]["lar"]) == 1.0
    assert float(matrix[(LIT, "bn_minus_en")]["lar"]) == 0.0
    pairing = _rows(report, "meaning_pairing")[0]
    assert (pairing["model_a"], pairing["model_b"]) == (LIT, D)
    assert all(float(pairing[k]) == 1.0 for k in ("gold_slot", "literal_slot", "state", "options"))


def test_rows_round_trip_through_the_store(report: dict[str, Any]) -> None:
    run = load_run(report["runs"][0])
    rows = meaning_rows(run.arm())
    assert len(rows) == len(report["queries"]) == run.manifest.config["n_queries"]
    assert run.manifest.config["instrument"] == "meaning"
    assert run.manifest.config["embedder"] == "none"
    assert "e1" in run.manifest.config["build_reports"]
    assert run.manifest.config["loader"]["source"].endswith("bagdhara.jsonl")


def test_missing_experiments_are_listed_as_skipped(tmp_path: Path) -> None:
    corpus = "bagdhara:" + str(write_bagdhara(tmp_path / "b.jsonl", n=12))
    runs = run_meaning(
        ["fake"],
        out=tmp_path / "runs",
        corpus=corpus,
        experiments=["e1"],
        n_items=6,
        embedder="none",
        scorer_options={"fake": SCORERS["fake-d"]},
    )
    index = build_report(analyse_runs(runs), out=tmp_path / "report")
    page = index.read_text(encoding="utf-8")
    assert "figure &#x27;capture matrix&#x27;: no run has capture-matrix rows" in page
    assert "order audit (E7): not in any run" in page
    assert (tmp_path / "report" / "figures" / "meaning_ladder.png").exists()
    assert not (tmp_path / "report" / "figures" / "meaning_unit_integrity.png").exists()


def test_a_run_without_meaning_meta_is_rejected(tmp_path: Path) -> None:
    from choiceaudit import Decision, Query
    from choiceaudit.store import Manifest, Run, RunRow

    query = Query(state="s", options=("a", "b"), meta={"item_id": "1"})
    row = RunRow(0, query, Decision(query_id=query.id, probs=np.array([0.5, 0.5])))
    run = Run(tmp_path, Manifest(), (row,))
    with pytest.raises(AnalysisError, match=rf"row 0 \(query {query.id}\).*lacks.*experiment"):
        meaning_rows(run.arm())
    with pytest.raises(AnalysisError, match=str(tmp_path)):
        analyse_meaning_runs([run.arm()])


def test_every_pair_of_arms_is_contrasted_and_pair_checked(report: dict[str, Any]) -> None:
    lit, d = (load_run(p).arm() for p in report["runs"])
    analysis = analyse_meaning_runs([lit, d, d], n_resamples=20)
    assert isinstance(analysis, MeaningAnalysis)
    labels = [a.display for a in analysis.arms]
    # one run given twice: told apart by its position
    assert labels == [LIT, "fake-d (meaning-fake #1) [bn]", "fake-d (meaning-fake #2) [bn]"]
    pairs = [(p.model_a, p.model_b) for p in analysis.pairing]
    assert pairs == [(labels[0], labels[1]), (labels[0], labels[2]), (labels[1], labels[2])]
    assert all(p.n_shared and p.gold_slot == 1.0 for p in analysis.pairing)
    assert {(c.model_a, c.model_b) for c in analysis.model_contrasts} == set(pairs)
    same = [c for c in analysis.model_contrasts if c.model_a == labels[1]]
    assert all(c.contrast.difference == 0.0 for c in same)
    with pytest.raises(AttributeError):
        analysis.arms = ()  # type: ignore[misc]
    (summary_lit, *_) = analysis.summary()
    assert summary_lit["model"] == LIT and summary_lit["LAR d-lit"] == 1.0


def test_paired_model_contrasts_and_build_skips(report: dict[str, Any]) -> None:
    rows = {(r["family"], r["measure"]): r for r in _rows(report, "meaning_model_contrasts")}
    d_rand = _metas(report, experiment="e1", family="d-rand")
    share_a = np.mean([m["gold_slot"] == 0 for m in d_rand])
    share_d = np.mean([m["gold_slot"] == 3 for m in d_rand])
    cell = rows[("d-rand", "accuracy")]
    assert (cell["model_a"], cell["model_b"]) == (LIT, D)
    assert float(cell["a_minus_b"]) == pytest.approx(share_a - share_d)
    d_lit = _metas(report, experiment="e1", family="d-lit")
    lar_d = np.mean([m["literal_slot"] == 3 for m in d_lit])
    assert float(rows[("d-lit", "lar")]["a_minus_b"]) == pytest.approx(1.0 - lar_d)
    assert ("d-rand", "lar") not in rows  # d-rand lists carry no literal gloss
    # items the plan could not build are listed with their reason and count
    e2_items = {m["item_id"] for m in _metas(report, experiment="e2")}
    e1_items = {m["item_id"] for m in d_rand}
    page = report["index"].read_text(encoding="utf-8")
    missing = len(e1_items - e2_items)
    assert missing > 0
    assert f"{missing} item(s) not built: no alternative surface form" in page
    cues = {(r["model"], r["cue"]): r for r in _rows(report, "meaning_cue_strata")}
    assert float(cues[(LIT, "longest")]["lar_with"]) == 1.0


def test_every_reported_contrast_has_its_p_value(report: dict[str, Any]) -> None:
    """Wherever a paired contrast is shown, its McNemar p-value is beside it,
    Bonferroni-adjusted where several are tested together."""
    checks = {
        "meaning_ladder": ("minus_d_rand", None),
        "meaning_model_contrasts": ("a_minus_b", None),
        "meaning_capture_matrix": ("lar", "bn_minus_en"),
        "meaning_task_language": ("accuracy", "en_minus_bn"),
        "meaning_unit_integrity": ("minus_intact", None),
    }
    for table, (column, contrast_row) in checks.items():
        rows = _rows(report, table)
        shown = [
            r
            for r in rows
            if r.get(column) not in (None, "")
            and (contrast_row is None or contrast_row in r.values())
        ]
        assert shown, table
        assert all(r["mcnemar_p"] not in (None, "") for r in shown), table
    ladder = [r for r in _rows(report, "meaning_ladder") if r["model"] == LIT and r["mcnemar_p"]]
    assert len(ladder) == 4  # d-surf, d-sem, d-lit, d-hard against d-rand
    for r in ladder:
        assert float(r["mcnemar_p_bonferroni"]) == pytest.approx(
            min(1.0, 4 * float(r["mcnemar_p"]))
        )
    unit = [r for r in _rows(report, "meaning_unit_integrity") if r["mcnemar_p"]]
    assert all(
        float(r["mcnemar_p_bonferroni"]) == pytest.approx(min(1.0, 5 * float(r["mcnemar_p"])))
        for r in unit
    )
    contrasts = _rows(report, "meaning_model_contrasts")
    n_tests = {int(r["n_tests"]) for r in contrasts}
    assert n_tests == {len(contrasts)}  # one pair of models: all its contrasts tested together
    assert any(r["family"] == "e6 o4" for r in contrasts)  # §5.3: McNemar between arms under o4


def test_a_choice_that_disagrees_with_the_vector_is_flagged(report: dict[str, Any]) -> None:
    from choiceaudit.report._meaning import meaning_sections
    from choiceaudit.types import Arm, Decision

    arm = load_run(report["runs"][1]).arm()  # fake-d: always slot D
    rows = []
    for query, decision in arm.rows:
        aux = {**decision.aux, "reported_choice": query.keys[0]}  # the server says A
        rows.append(
            (
                query,
                Decision(
                    query_id=decision.query_id,
                    probs=decision.probs,
                    scores=decision.scores,
                    aux=aux,
                ),
            )
        )
    flagged = Arm(arm.label, arm.source, arm.manifest, tuple(rows))
    analysis = analyse_meaning_runs([flagged], n_resamples=20)
    (part,) = [a for a in analysis.arms if a.display == D]
    ladder_rows = [r for r in rows if r[0].meta["experiment"] == "e1"]
    assert part.n_choice_not_argmax > len(ladder_rows) * 0.5
    (section,) = meaning_sections(analysis)
    assert any("returned choice" in s and "not the argmax" in s for s in section.skipped)
    (table,) = [t for t in section.tables if t.name == "meaning_choice_check"]
    cells = {r["family"]: r for r in table.records()}
    d_rand = _metas(report, experiment="e1", family="d-rand")
    assert cells["d-rand"]["accuracy_argmax"] == pytest.approx(
        np.mean([m["gold_slot"] == 3 for m in d_rand])
    )
    assert cells["d-rand"]["accuracy_choice"] == pytest.approx(
        np.mean([m["gold_slot"] == 0 for m in d_rand])
    )
    summary = analysis.summary()[0]
    assert summary["choice≠argmax"] == part.n_choice_not_argmax
    assert summary["d-rand (choice)"] == pytest.approx(cells["d-rand"]["accuracy_choice"])
    assert summary["LAR d-lit (choice)"] == pytest.approx(cells["d-lit"]["lar_choice"])


def test_new_tables_and_figures_are_written(report: dict[str, Any]) -> None:
    for name in ("meaning_task_language", "meaning_o4_control"):
        assert (report["out"] / "figures" / f"{name}.png").stat().st_size > 0
    for name in (
        "meaning_confidence_literal_pooled",
        "meaning_parenthetical_accuracy",
        "meaning_matrix_hook",
        "meaning_examples",
        "meaning_corpus_steps",
    ):
        assert (report["out"] / "tables" / f"{name}.csv").exists(), name
    hook = {(r["model"], r["row"]): r for r in _rows(report, "meaning_matrix_hook")}
    # fake-lit picks the literal everywhere: LAR 1 in both cells with and without the hook
    # the fixture's literal glosses share no word with their idioms: every item is hook-absent
    assert int(hook[(LIT, "LAR bn")]["n_hook"]) == 0
    assert float(hook[(LIT, "LAR bn")]["no_hook"]) == float(hook[(LIT, "LAR en")]["no_hook"]) == 1.0
    assert float(hook[(LIT, "gap, hook-absent items")]["gap"]) == 0.0
    assert float(hook[(LIT, "gap, all items")]["gap"]) == 0.0
    steps = {r["step"]: r for r in _rows(report, "meaning_corpus_steps")}
    assert (
        int(steps["loaded"]["count"])
        == int(steps["usable"]["count"]) + int(steps["usable"]["removed"] or 0)
        or steps["usable"]["removed"] == "0"
    )
    examples = _rows(report, "meaning_examples")
    e1 = [r for r in examples if r["experiment"] == "e1" and r["model"] == LIT]
    assert {r["role"] for r in e1} >= {"gold", "literal", "distractor"}
    assert all(r["choice"] for r in e1)


def test_a_model_contrast_without_shared_items_is_listed_as_skipped(
    report: dict[str, Any], tmp_path: Path
) -> None:
    """Two arms on disjoint items (different corpora): no contrast can be paired, and every
    family's contrast is listed as skipped with its reason instead of vanishing."""
    records = [bagdhara_record(i) | {"id": 1000 + i} for i in range(24)]
    other = tmp_path / "other.jsonl"
    other.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    (run,) = run_meaning(
        ["fake"],
        out=tmp_path / "other",
        corpus=f"bagdhara:{other}",
        n_items=12,
        n_order_items=3,
        embedder="none",
        scorer_options={"fake": SCORERS["fake-d"]},
    )
    lit = load_run(report["runs"][0]).arm()
    analysis = analyse_meaning_runs([lit, load_run(run).arm()], n_resamples=20)
    assert analysis.model_contrasts == ()
    skipped = [str(s) for s in analysis.skipped if s.analysis.startswith("model contrast")]
    families = {f for f in ("d-rand", "d-lit") if any(f"({f}, correct)" in s for s in skipped)}
    assert families == {"d-rand", "d-lit"}
    assert all("share no item" in s for s in skipped)
    assert any("(d-lit, captured)" in s for s in skipped)


def test_unit_integrity_variants_without_intact_rows_are_listed_as_skipped(
    report: dict[str, Any],
) -> None:
    """An E3 variant that cannot be paired with the intact (v0) answer — here the v0 rows of
    every item are missing, as in an interrupted run — has no contrast, and says so."""
    import dataclasses

    arm = load_run(report["runs"][0]).arm()
    e3 = [q.meta.get("condition") for q, _ in arm.rows if q.meta.get("experiment") == "e3"]
    variants = sorted({str(c) for c in e3} - {"v0"})
    assert variants and "v0" in e3
    full = analyse_meaning_runs([arm], n_resamples=20)
    assert full.arms[0].analysis is not None and full.arms[0].analysis.e3 is not None
    assert full.arms[0].analysis.e3.not_contrasted == {}
    assert not [s for s in full.skipped if "unit integrity" in s.analysis]
    cut = dataclasses.replace(
        arm,
        rows=tuple(
            (q, d)
            for q, d in arm.rows
            if not (q.meta.get("experiment") == "e3" and q.meta.get("condition") == "v0")
        ),
    )
    analysis = analyse_meaning_runs([cut], n_resamples=20)
    e3_result = analysis.arms[0].analysis.e3  # type: ignore[union-attr]
    assert e3_result is not None and e3_result.contrast_vs_intact == {}
    reasons = set(e3_result.not_contrasted)
    excluded = {v for v, n in e3_result.n_identity_excluded.items() if n}
    assert reasons | excluded >= set(variants) and reasons
    skipped = [s for s in analysis.skipped if "unit integrity" in s.analysis]
    assert sorted(s.analysis.split()[-3] for s in skipped) == sorted(reasons)
    assert all(s.reason == "no intact (v0) rows to contrast with" for s in skipped)


def test_every_audit_has_a_per_item_csv_matching_the_analysis(report: dict[str, Any]) -> None:
    analysis = analyse_runs(report["runs"])[0]
    assert isinstance(analysis, MeaningAnalysis)
    order = _rows(report, "meaning_items_order", folder="items")
    lit = next(a for a in analysis.arms if a.display == LIT).analysis
    assert lit is not None and lit.e7 is not None and lit.e7.items is not None
    mine = [r for r in order if r["model"] == LIT and r["keys"] == "slot"]
    assert [r["item_id"] for r in mine] == list(lit.e7.items.column("item_id"))
    assert [float(r["travel"]) for r in mine] == list(lit.e7.items.column("travel"))
    assert len(mine) == lit.e7.n_items == 3
    # fake-lit follows slot A wherever the gloss is: every item chooses 4 distinct glosses
    assert {r["distinct_choices"] for r in mine} == {"4"}
    distinct = _rows(report, "meaning_distinct_choices")
    slot = {
        r["distinct_choices"]: r["n_items"]
        for r in distinct
        if r["model"] == LIT and r["keys"] == "slot"
    }
    assert slot == {"1": "0", "2": "0", "3": "0", "4": "3"}
    for name, audit in (("surface", lit.e2), ("unit", lit.e3), ("ablation", lit.e6)):
        rows = _rows(report, f"meaning_items_{name}", folder="items")
        assert audit is not None and audit.items is not None
        assert len([r for r in rows if r["model"] == LIT]) == len(audit.items) > 0, name
    unit = [r for r in _rows(report, "meaning_items_unit", folder="items") if r["model"] == LIT]
    # under d-lit fake-lit always takes the literal (canonical 1), intact or perturbed
    assert {(r["choice_intact"], r["choice_variant"], r["agree"]) for r in unit} == {
        ("1", "1", "1.0")
    }
    assert "items/meaning_items_order.csv" in report["index"].read_text(encoding="utf-8")
    audit_rows = _rows(report, "meaning_permutation_audit")
    assert {r["sum_tolerance"] for r in audit_rows} == {"0.02"}


def test_descriptives_table_lays_out_the_analysis(report: dict[str, Any]) -> None:
    analysis = analyse_runs(report["runs"])[0]
    assert isinstance(analysis, MeaningAnalysis)
    lit = next(a for a in analysis.arms if a.display == LIT).analysis
    assert lit is not None and lit.descriptives is not None
    construction = lit.descriptives.construction
    assert construction is not None
    rows = [r for r in _rows(report, "meaning_descriptives") if r["model"] == LIT]
    cells = {(r["measure"], r["cell"]): r["value"] for r in rows}
    assert float(cells[("mean characters: literal", "d-lit")]) == construction.mean_literal_chars
    # every bagdhara literal gloss here carries "(literal plain sense …)": longer than the gold
    assert construction.share_literal_longer_than_gold == 1.0
    assert ("share hook (literal shares a content word with the state)", "matrix bn") in cells


def test_a_family_sharing_no_item_with_d_rand_is_left_out_and_the_report_written(
    report: dict[str, Any], tmp_path: Path
) -> None:
    """Runs of different plans can leave a ladder family with no item in common with d-rand:
    that one contrast is left out with its reason (and not counted in the Bonferroni
    correction); every other figure and table is still written."""
    import dataclasses

    arm = load_run(report["runs"][0]).arm()
    e1 = [q for q, _ in arm.rows if q.meta.get("experiment") == "e1"]
    items = sorted({q.meta["item_id"] for q in e1})
    keep = {"d-rand": set(items[::2]), "d-lit": set(items[1::2])}  # disjoint halves

    def kept(q: Any) -> bool:
        family = q.meta.get("family")
        return q.meta.get("experiment") != "e1" or q.meta["item_id"] in keep.get(family, items)

    cut = dataclasses.replace(arm, rows=tuple((q, d) for q, d in arm.rows if kept(q)))
    analysis = analyse_meaning_runs([cut], n_resamples=20)
    e1_result = analysis.arms[0].analysis.e1  # type: ignore[union-attr]
    assert e1_result is not None and "d-lit" not in e1_result.contrast_vs_d_rand
    assert e1_result.not_contrasted == {"d-lit": "the two cells share no item"}
    assert [s.reason for s in analysis.skipped if "d-rand − d-lit" in s.analysis] == [
        "the two cells share no item"
    ]
    out = build_report([analysis], out=tmp_path / "report")
    assert (tmp_path / "report" / "index.html").exists() and out is not None
