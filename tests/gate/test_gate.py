"""The confidence gate on runs built in the test (see ``scoring_helpers``): the cut-point rule,
the three objectives, ties, the interval, the out-of-sample estimate, every slice flagged where
it misses, the four definitions and the thresholds file."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from choiceaudit import stats
from choiceaudit.errors import InputError
from choiceaudit.gate import GATE_SCHEMA, GateSpec, analyse_gate, thresholds_document
from choiceaudit.metrics import CONFIDENCE_DEFINITIONS, confidence_values
from choiceaudit.types import Arm
from scoring_helpers import arm_of, correct_probs, query, shifted_queries

FAST: dict[str, Any] = {"n_resamples": 200, "repeats": 3}


def _arm(rows_conf_correct: list[tuple[float, bool]], tmp: Path, family: str = "a") -> Arm:
    qs = [
        query(f"i{n}", correct_probs(c, 0, r), 0, family=family)
        for n, (c, r) in enumerate(rows_conf_correct)
    ]
    return arm_of(tmp, qs)


def _cut(arm: Arm, **spec: object) -> float | None:
    s = GateSpec(fit="family=a", definitions=("maxprob",), **{**FAST, **spec})  # type: ignore[arg-type]
    (g,) = analyse_gate([arm], s).gates
    return g.cut_point


def test_target_accuracy_takes_the_largest_coverage_that_meets_it(tmp_path: Path) -> None:
    arm = _arm([(0.9, True), (0.8, True), (0.7, False), (0.6, True)], tmp_path)
    # accepted-set accuracies from the top: 1, 1, 2/3, 3/4
    assert _cut(arm, objective="target_accuracy", value=0.75) == pytest.approx(0.6)
    assert _cut(arm, objective="target_accuracy", value=0.9) == pytest.approx(0.8)
    assert _cut(arm, objective="target_accuracy", value=1.0) == pytest.approx(0.8)
    # max risk R is target accuracy 1 - R
    assert _cut(arm, objective="max_risk", value=0.25) == pytest.approx(0.6)
    assert _cut(arm, objective="max_risk", value=0.1) == pytest.approx(0.8)


def test_an_unreachable_target_accepts_nothing(tmp_path: Path) -> None:
    arm = _arm([(0.9, False), (0.8, True), (0.7, False)], tmp_path)
    s = GateSpec(objective="target_accuracy", value=0.95, fit="a", **FAST)  # type: ignore[arg-type]
    analysis = analyse_gate([arm], s)
    g = analysis.gates[0]
    assert g.cut_point is None and g.cut_point_interval is None
    assert g.fit.coverage.estimate == 0.0 and g.fit.accuracy is None
    assert g.fit.status == "nothing accepted"
    doc = thresholds_document(analysis)
    assert doc["gates"][0]["cut_point"] is None and doc["gates"][0]["accept"] == "none"


def test_a_tie_block_is_accepted_whole(tmp_path: Path) -> None:
    # the two 0.9 rows hold one error: accepting one of them alone is not a cut-point
    arm = _arm([(0.9, True), (0.9, False), (0.5, True)], tmp_path)
    assert _cut(arm, objective="target_accuracy", value=0.6) == pytest.approx(0.5)
    assert _cut(arm, objective="target_accuracy", value=0.9) is None


def test_cost_ratio_minimises_the_mean_cost(tmp_path: Path) -> None:
    arm = _arm([(0.9, True), (0.8, True), (0.7, False), (0.6, False)], tmp_path)
    # C = 3: accept none 1.0; top 1 0.75; top 2 0.5; top 3 1.0; all 1.5
    assert _cut(arm, objective="cost_ratio", value=3.0) == pytest.approx(0.8)
    # errors are cheap: accept everything; errors very dear and none avoidable: accept top 2
    assert _cut(arm, objective="cost_ratio", value=0.5) == pytest.approx(0.6)
    assert _cut(arm, objective="cost_ratio", value=1000.0) == pytest.approx(0.8)
    bad = _arm([(0.9, False), (0.8, False)], tmp_path / "bad")
    assert _cut(bad, objective="cost_ratio", value=2.0) is None  # escalate all: cost 1 < 2


def test_the_result_does_not_depend_on_row_order(tmp_path: Path) -> None:
    qs = shifted_queries(60)
    spec = GateSpec(objective="target_accuracy", value=0.7, fit="d-rand", **FAST)  # type: ignore[arg-type]
    a = analyse_gate([arm_of(tmp_path / "a", qs)], spec)
    b = analyse_gate([arm_of(tmp_path / "b", list(reversed(qs)))], spec)
    assert [g.cut_point for g in a.gates] == [g.cut_point for g in b.gates]
    assert [s.accuracy for g in a.gates for s in g.slices] == [
        s.accuracy for g in b.gates for s in g.slices
    ]


def test_a_gate_fit_where_confidence_works_misses_under_the_shift(tmp_path: Path) -> None:
    arm = arm_of(tmp_path, shifted_queries(150))
    spec = GateSpec(objective="target_accuracy", value=0.75, fit="d-rand", n_resamples=400)  # type: ignore[arg-type]
    analysis = analyse_gate([arm], spec)
    assert (analysis.fit_key, analysis.fit_value) == ("family", "d-rand")
    assert {g.definition for g in analysis.gates} == set(CONFIDENCE_DEFINITIONS)
    for g in analysis.gates:
        fit, lit = g.slices
        assert fit.is_fit and fit.value == "d-rand" and lit.value == "d-lit"
        assert fit.accuracy is not None and fit.accuracy.estimate >= 0.75
        # in sample the cut-point reaches the target by construction (0.753); "met" is the
        # out-of-sample estimate's (0.741 here), the one definition gate.json records too
        oos = g.out_of_sample
        assert oos is not None and oos.accuracy < 0.75 and not oos.target_met
        assert fit.status == "missed (out of sample)" and fit.missed
        # the cut-point still accepts d-lit rows, and there they are mostly wrong
        assert lit.coverage.estimate > 0.1
        assert lit.accuracy is not None and lit.accuracy.estimate < 0.5
        assert lit.status == "missed (interval below target)" and lit.missed
        assert g.n_missed == 1
        # the paper's reading: a useful gate on d-rand, an inverted one on d-lit
        assert fit.advantage > 1.0 > lit.advantage
        assert fit.aurc_random == pytest.approx(1.0 - fit.accuracy_all)
        assert fit.augrc_random == pytest.approx(fit.aurc_random / 2)
        ci = g.cut_point_interval
        assert ci is not None and ci.low <= g.cut_point <= ci.high  # type: ignore[operator]
        assert ci.n_resamples == 400
        oos = g.out_of_sample
        assert oos is not None and oos.folds == 5 and "cross-fitting" in oos.method
        assert oos.accuracy_min <= oos.accuracy <= oos.accuracy_max
        assert 0.0 < oos.coverage <= 1.0


def test_slices_report_exact_coverage_and_accuracy(tmp_path: Path) -> None:
    rows = [
        query("a1", correct_probs(0.9, 0, True), 0, family="a"),
        query("a2", correct_probs(0.8, 0, True), 0, family="a"),
        query("a3", correct_probs(0.4, 0, False), 0, family="a"),
        query("b1", correct_probs(0.95, 0, False), 0, family="b"),
        query("b2", correct_probs(0.85, 0, True), 0, family="b"),
        query("b3", correct_probs(0.5, 0, True), 0, family="b"),
    ]
    spec = GateSpec(
        objective="target_accuracy", value=1.0, fit="a", definitions=("maxprob",), **FAST
    )  # type: ignore[arg-type]
    (g,) = analyse_gate([arm_of(tmp_path, rows)], spec).gates
    assert g.cut_point == pytest.approx(0.8)
    a, b = g.slices
    assert a.coverage.estimate == pytest.approx(2 / 3) and a.accuracy.estimate == 1.0  # type: ignore[union-attr]
    assert b.coverage.estimate == pytest.approx(2 / 3) and b.accuracy.estimate == 0.5  # type: ignore[union-attr]
    assert b.coverage_shift == pytest.approx(0.0)
    assert b.status.startswith("missed")
    conf = np.array([0.95, 0.85, 0.5])
    assert b.aurc == pytest.approx(stats.aurc(conf, [0, 1, 1]))
    assert b.augrc == pytest.approx(stats.augrc(conf, [0, 1, 1]))
    curve = g.curves[1]
    assert curve.operating_coverage == pytest.approx(2 / 3)
    assert curve.operating_risk == pytest.approx(0.5)


def test_items_are_the_resampling_unit(tmp_path: Path) -> None:
    # one item rendered three times and one rendered once: two clusters
    rows = [
        query("x", correct_probs(0.9, 0, True), 0, family="a", rendering=r) for r in range(3)
    ] + [query("y", correct_probs(0.6, 0, False), 0, family="a")]
    spec = GateSpec(
        objective="target_accuracy", value=0.5, fit="a", definitions=("maxprob",), **FAST
    )  # type: ignore[arg-type]
    (g,) = analyse_gate([arm_of(tmp_path, rows)], spec).gates
    assert g.fit.n_items == 2 and g.fit.n_rows == 4
    # resamples are {x,x}, {x,y}, {y,y}: coverage is 1 or 3/4 or 1 — never anything else
    assert g.fit.coverage.low >= 0.75 - 1e-12
    assert g.out_of_sample is not None and g.out_of_sample.folds == 2


def test_the_four_confidence_definitions() -> None:
    p = [np.array([0.6, 0.3, 0.1, 0.0])]
    assert confidence_values("maxprob", p)[0] == pytest.approx(0.6)  # type: ignore[index]
    assert confidence_values("margin", p)[0] == pytest.approx(0.3)  # type: ignore[index]
    h = -(0.6 * math.log(0.6) + 0.3 * math.log(0.3) + 0.1 * math.log(0.1)) / math.log(4)
    assert confidence_values("entropy", p)[0] == pytest.approx(1 - h)  # type: ignore[index]
    assert confidence_values("conf_head", p, np.array([0.42]))[0] == pytest.approx(0.42)  # type: ignore[index]
    assert confidence_values("conf_head", p, np.array([math.nan])) is None
    with pytest.raises(ValueError, match="unknown confidence definition"):
        confidence_values("logit", p)


def test_conf_head_is_skipped_where_the_model_has_none(tmp_path: Path) -> None:
    rows = [
        query(f"i{n}", correct_probs(0.5 + n / 20, 0, n % 2 == 0), 0, family="a") for n in range(6)
    ]
    spec = GateSpec(objective="target_accuracy", value=0.5, fit="a", **FAST)  # type: ignore[arg-type]
    analysis = analyse_gate([arm_of(tmp_path, rows)], spec)
    assert [g.definition for g in analysis.gates] == ["maxprob", "margin", "entropy"]
    assert any("conf_head" in s.analysis and "0 of 6" in s.reason for s in analysis.skipped)


def test_slice_resolution(tmp_path: Path) -> None:
    arm = arm_of(tmp_path, shifted_queries(20))
    spec = dict(objective="target_accuracy", value=0.5, definitions=("maxprob",), **FAST)
    assert analyse_gate([arm], GateSpec(fit="language=bn", **spec)).fit_key == "language"  # type: ignore[arg-type]
    assert analyse_gate([arm], GateSpec(fit="bn", **spec)).fit_key == "language"  # type: ignore[arg-type]
    run_fit = analyse_gate([arm], GateSpec(fit=f"run={tmp_path.name}", **spec))  # type: ignore[arg-type]
    assert run_fit.gates[0].fit.n_rows == 40
    with pytest.raises(InputError, match="no meta field"):
        analyse_gate([arm], GateSpec(fit="zz", **spec))  # type: ignore[arg-type]
    both = [query("i", correct_probs(0.7, 0, True), 0, colour="x", shade="x")]
    with pytest.raises(InputError, match="several meta fields"):
        analyse_gate([arm_of(tmp_path / "b", both)], GateSpec(fit="x", **spec))  # type: ignore[arg-type]


def test_where_filters_before_slicing(tmp_path: Path) -> None:
    arm = arm_of(tmp_path, shifted_queries(40))
    spec = GateSpec(
        objective="target_accuracy",
        value=0.5,
        fit="d-rand",
        where=(("language", "bn"),),
        definitions=("maxprob",),
        **FAST,
    )  # type: ignore[arg-type]
    (g,) = analyse_gate([arm], spec).gates
    assert [s.n_rows for s in g.slices] == [20, 20]


def test_spec_validation() -> None:
    with pytest.raises(InputError):
        GateSpec(objective="target_accuracy", value=1.5, fit="a")
    with pytest.raises(InputError):
        GateSpec(objective="max_risk", value=1.0, fit="a")
    with pytest.raises(InputError):
        GateSpec(objective="cost_ratio", value=0.0, fit="a")
    with pytest.raises(InputError, match="definitions"):
        GateSpec(objective="target_accuracy", value=0.9, fit="a", definitions=("logit",))
    assert GateSpec(objective="cost_ratio", value=4, fit="a").required_accuracy == 0.75


def test_thresholds_document_is_loadable_json(tmp_path: Path) -> None:
    arm = arm_of(tmp_path, shifted_queries(40))
    spec = GateSpec(objective="target_accuracy", value=0.7, fit="d-rand", **FAST)  # type: ignore[arg-type]
    analysis = analyse_gate([arm], spec)
    doc = json.loads(json.dumps(thresholds_document(analysis), allow_nan=False))
    assert doc["schema"] == GATE_SCHEMA
    assert doc["fit_slice"] == {"key": "family", "value": "d-rand"}
    assert set(doc["definitions"]) == set(CONFIDENCE_DEFINITIONS)
    gates = {(g["model"], g["definition"]): g for g in doc["gates"]}
    g = gates[("model-x", "maxprob")]
    assert g["slice"] == "family=d-rand"
    assert g["interval"]["low"] <= g["cut_point"] <= g["interval"]["high"]
    assert g["evidence"]["fit"]["fit"] is True
    assert [s["slice"] for s in g["evidence"]["slices"]] == ["family=d-lit"]
    assert g["evidence"]["slices_missed"] == ["family=d-lit"]
    assert g["evidence"]["out_of_sample"]["method"].startswith("split-by-item cross-fitting")
    # a service applying the cut-point to the fit rows gets the stated coverage
    conf = [max(q.meta["probs"]) for q, _ in arm.rows if q.meta["family"] == "d-rand"]
    accepted = np.mean([c >= g["cut_point"] for c in conf])
    assert accepted == pytest.approx(g["evidence"]["fit"]["coverage"]["estimate"])


def test_two_models_are_gated_separately(tmp_path: Path) -> None:
    qs = shifted_queries(30)
    a = arm_of(tmp_path / "a", qs, label="alpha")
    b = arm_of(tmp_path / "b", qs[:30], label="beta")  # d-rand only
    spec = GateSpec(
        objective="target_accuracy", value=0.6, fit="d-rand", definitions=("maxprob",), **FAST
    )  # type: ignore[arg-type]
    analysis = analyse_gate([a, b], spec)
    assert [g.model for g in analysis.gates] == ["alpha", "beta"]
    assert [len(g.slices) for g in analysis.gates] == [2, 1]


def test_rows_without_the_fit_field_are_counted(tmp_path: Path) -> None:
    rows = [
        query("a", correct_probs(0.9, 0, True), 0, family="a"),
        query("b", correct_probs(0.8, 0, True), 0, family="a"),
        query("c", correct_probs(0.7, 0, True), 0),
        query("d", correct_probs(0.7, 0, True), None),  # type: ignore[arg-type]
    ]
    spec = GateSpec(
        objective="target_accuracy", value=0.5, fit="a", definitions=("maxprob",), **FAST
    )  # type: ignore[arg-type]
    analysis = analyse_gate([arm_of(tmp_path, rows)], spec)
    assert analysis.excluded["model-x"] == {
        "no gold option in meta": 1,
        "no meta field 'family' (in no slice)": 1,
    }
    assert [s.n_rows for s in analysis.gates[0].slices] == [2]
