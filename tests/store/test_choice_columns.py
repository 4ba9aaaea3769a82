"""A run read as columns is the run read as rows: every column equals what the rows give, the
scoring analysis and the gate read the same numbers from either, a stored row the rows would
refuse is refused by the columns too, and the scoring analysis never builds the rows."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from choiceaudit.audit import analyse_runs, run_scoring
from choiceaudit.errors import StoreError
from choiceaudit.instruments.scoring import analyse_scoring_runs
from choiceaudit.metrics import gold_rows
from choiceaudit.store import RunStore, open_run, read_choice_columns, stored_arm
from choiceaudit.types import ChoiceColumns, Decision, Query


class VariedScorer:
    """Probabilities from a seeded generator; the rows with a gold and some others carry score
    rules, some a confidence head, some exact ties; a -inf score on some rows."""

    name = "varied"

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        out = []
        for q in queries:
            rng = np.random.default_rng(int(q.meta["seed"]))
            k = q.n_options
            probs = rng.dirichlet(np.ones(k))
            if q.meta["seed"] % 9 == 0:
                probs = np.full(k, 1.0 / k)  # every option tied
            scores: dict[str, Any] = {}
            if "gold" in q.meta or q.meta["seed"] % 2 == 0:
                scores["sum"] = np.log(probs) - 1.0
                scores["pmi"] = rng.normal(size=k)
            if q.meta["seed"] % 11 == 0:
                scores["sum"] = np.array([-np.inf] + [0.0] * (k - 1))
                scores["pmi"] = rng.normal(size=k)
            aux = {"conf_head": float(rng.uniform())} if q.meta["seed"] % 3 == 0 else {}
            out.append(Decision(query_id=q.id, probs=probs, scores=scores, aux=aux))
        return out

    def describe(self) -> dict[str, Any]:
        return {"backend": "varied", "model": "varied-model"}


def queries() -> list[Query]:
    out = []
    seed = 0
    for item in range(40):
        k = 3 if item % 2 else 4
        perms = list(itertools.permutations(range(k)))[: 6 if k == 3 else 4]
        for perm in perms if item % 5 else [None]:
            seed += 1
            order = perm or tuple(range(k))
            meta: dict[str, Any] = {
                "item_id": f"i{item}",
                "seed": seed,
                "condition": "ab"[item % 2],
                "task": f"t{item % 3}",
            }
            if item % 7:
                meta["gold"] = item % k
            out.append(
                Query(
                    state=f"item {item}",
                    options=tuple(f"option {c} of {item}" for c in order),
                    perm=perm,
                    meta=meta,
                )
            )
    return out


@pytest.fixture
def run(tmp_path: Path) -> Path:
    run_scoring(VariedScorer(), queries(), tmp_path / "run", chunk_size=7)
    return tmp_path / "run"


def assert_same(a: ChoiceColumns, b: ChoiceColumns) -> None:
    assert list(a.query_id) == list(b.query_id)
    np.testing.assert_array_equal(a.n_options, b.n_options)
    np.testing.assert_array_equal(a.probs, b.probs)
    np.testing.assert_array_equal(a.perm, b.perm)
    np.testing.assert_array_equal(a.has_perm, b.has_perm)
    assert sorted(a.scores) == sorted(b.scores) == ["pmi", "sum"]
    for rule in a.scores:
        np.testing.assert_array_equal(a.scores[rule], b.scores[rule])
        np.testing.assert_array_equal(a.has_score[rule], b.has_score[rule])
    np.testing.assert_array_equal(a.conf_head, b.conf_head)
    assert list(a.meta) == list(b.meta)


def test_the_columns_read_from_the_parts_are_the_columns_of_the_rows(run: Path) -> None:
    from_rows = ChoiceColumns.from_rows(open_run(run).arm().rows)
    assert_same(read_choice_columns(RunStore(run)), from_rows)
    assert from_rows.has_perm.any() and not from_rows.has_perm.all()
    assert np.isnan(from_rows.conf_head).any() and not np.isnan(from_rows.conf_head).all()


def test_the_scoring_analysis_and_gold_rows_read_the_same_from_either(run: Path) -> None:
    rows_arm, column_arm = open_run(run).arm(), stored_arm(run)
    expected = analyse_scoring_runs([rows_arm], n_resamples=200)
    got = analyse_scoring_runs([column_arm], n_resamples=200)
    assert repr(got) == repr(expected)
    assert {c.rule for c in got.accuracy} == {"probs", "pmi", "sum"}
    assert got.order_audit and got.calibration
    (a,), (b,) = gold_rows([rows_arm]), gold_rows([column_arm])
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
        elif f.name == "meta":
            assert list(x) == list(y) and x.values("run") == [run.name] * len(x)
        else:
            assert x == y


def test_the_scoring_analysis_never_builds_the_rows(
    run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_rows(self: RunStore, **kw: Any) -> Any:
        raise AssertionError("the rows were loaded as objects")

    expected = analyse_runs([run])
    monkeypatch.setattr(RunStore, "load", no_rows)
    assert repr(analyse_runs([run])) == repr(expected)


def rewrite_first_part(run: Path, column: str, values: list[Any]) -> None:
    part = RunStore(run).part_paths()[0]
    table = pq.read_table(part)
    index = table.schema.get_field_index(column)
    table = table.set_column(index, column, pa.array(values, type=table.schema.field(column).type))
    pq.write_table(table, part)


@pytest.mark.parametrize(
    ("column", "change"),
    [
        ("probs", lambda p: [[0.5, 0.6, *p[0][2:]], *p[1:]]),  # sums to more than 1
        ("probs", lambda p: [[float("nan"), *p[0][1:]], *p[1:]]),
        ("perm", lambda p: ["0000", *p[1:]]),  # not a permutation
        ("meta", lambda p: [json.dumps({**json.loads(p[0]), "gold": 1.5}), *p[1:]]),
        ("meta", lambda p: [json.dumps({**json.loads(p[0]), "x": float("nan")}), *p[1:]]),
    ],
)
def test_a_stored_row_the_rows_refuse_is_refused_by_the_columns(
    run: Path, column: str, change: Any
) -> None:
    part = RunStore(run).part_paths()[0]
    rewrite_first_part(run, column, change(pq.read_table(part).column(column).to_pylist()))
    with pytest.raises(StoreError, match="not a valid stored row"):
        open_run(run)
    with pytest.raises(StoreError, match="not a valid stored row"):
        read_choice_columns(RunStore(run))


def test_an_arm_of_a_run_with_no_parts_is_refused(tmp_path: Path) -> None:
    run_scoring(VariedScorer(), queries()[:3], tmp_path / "run")
    for part in RunStore(tmp_path / "run").part_paths():
        part.unlink()
    with pytest.raises(StoreError, match="has no decisions yet"):
        stored_arm(tmp_path / "run")
