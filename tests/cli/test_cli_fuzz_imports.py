"""Fuzzing the imports and the arguments of the commands that analyse: ``import decisions``
(CSV, JSONL, Parquet, with and without a mapping file), ``import lm-eval``, ``import inspect``,
and the arguments of ``run meaning --dry-run``, ``check signalling`` and ``gate``. Whatever the
input, a command exits 0 having stored only rows it can justify — no value read as another type
(a boolean as a number, a text as a list) — or exits 1 with exactly one ``error:`` line; never a
traceback (a value the command line cannot parse at all, such as a number option given a word,
is the framework's usage error, exit 2). The default suite runs 40 derandomized examples in
all; the ``_many`` variants, marked slow, run more."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from typer.testing import Result

from choiceaudit.cli import app
from choiceaudit.store import open_run
from cli.fuzz_helpers import MANY, fresh, fuzz, holds_the_rule, json_values, runner


def _holds_the_rule(args: list[str]) -> Result:
    """The fuzz rule, a value the command line cannot parse at all accepted as its usage
    error (exit 2)."""
    return holds_the_rule(args, usage_errors=True)


HARNESS = Path(__file__).resolve().parents[1] / "fixtures" / "harness"

# -- import decisions -----------------------------------------------------------------------------

_DECISION_FIELDS = [
    "item_id",
    "experiment",
    "condition",
    "language",
    "state",
    "options",
    "probs",
    "gold_position",
    "literal_position",
    "keys",
    "perm",
    "conf_head",
    "identity_perturbation",
    "gold_key",
    "predicted_key",
]


def _decision_row(i: int) -> dict[str, Any]:
    return {
        "item_id": f"i{i}",
        "experiment": "e1",
        "condition": "d-rand",
        "language": "en",
        "state": f"idiom {i}",
        "options": [f"gold {i}", f"literal {i}", f"x{i}", f"y{i}"],
        "probs": [0.7, 0.1, 0.1, 0.1],
        "gold_position": 0,
        "literal_position": 1,
    }


_decision_change = st.tuples(
    st.integers(0, 3), st.sampled_from(_DECISION_FIELDS), json_values, st.booleans()
)
_mapping_file = st.none() | st.dictionaries(
    st.sampled_from(["map", "values", "other"]), json_values, max_size=3
)


def _write_decisions(root: Path, rows: list[dict[str, Any]], form: str) -> Path:
    if form == "jsonl":
        path = root / "d.jsonl"
        path.write_text("".join(json.dumps(r, allow_nan=True) + "\n" for r in rows), "utf-8")
        return path
    if form == "csv":
        import csv

        path = root / "d.csv"
        names = list(dict.fromkeys(k for r in rows for k in r))
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(names)
            for r in rows:
                writer.writerow(
                    [
                        json.dumps(r[k])
                        if isinstance(r.get(k), list | dict)
                        else ("" if r.get(k) is None else r[k])
                        for k in names
                    ]
                )
        return path
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = root / "d.parquet"
    try:
        pq.write_table(pa.Table.from_pylist(rows), path)
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        assume(False)  # a column Arrow cannot type is not a Parquet file anyone can hand us
    return path


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_decisions(
    scratch: Path, changes: list[tuple[int, str, Any, bool]], form: str, mapping: Any
) -> None:
    root = fresh(scratch)
    rows = [_decision_row(i) for i in range(4)]
    for index, name, value, delete in changes:
        if delete:
            rows[index].pop(name, None)
        else:
            rows[index][name] = value
    source = _write_decisions(root, rows, form)
    args = ["import", "decisions", str(source), "--out", str(root / "run")]
    if mapping is not None:
        (root / "m.json").write_text(json.dumps(mapping, allow_nan=True), encoding="utf-8")
        args += ["--mapping", str(root / "m.json")]
    if _holds_the_rule(args).exit_code != 0:
        return
    # every row stored is one the file justifies, its numbers the file's own
    # the id as the file holds it: a CSV cell is the text written (a list as its JSON)
    by_id = {
        json.dumps(r.get("item_id"))
        if isinstance(r.get("item_id"), list | dict)
        else str(r.get("item_id")).strip(): r
        for r in rows
    }
    for row in open_run(root / "run").rows:
        given_row = by_id[str(row.meta["item_id"])]
        probs = given_row["probs"]
        if form != "csv":
            assert isinstance(probs, list) and all(_is_number(p) for p in probs), given_row
            assert not isinstance(given_row["item_id"], bool | float | dict | list)
            assert row.decision.scores["prob"].tolist() == [float(p) for p in probs]
        assert all(math.isfinite(p) and 0 <= p <= 1 for p in row.decision.scores["prob"])


_decision_changes = st.lists(_decision_change, min_size=1, max_size=3)
_forms = st.sampled_from(["jsonl", "csv", "parquet"])


@fuzz(12)
@given(changes=_decision_changes, form=_forms, mapping=_mapping_file)
def test_import_decisions(
    scratch: Path, changes: list[tuple[int, str, Any, bool]], form: str, mapping: Any
) -> None:
    _check_decisions(scratch, changes, form, mapping)


@pytest.mark.slow
@fuzz(MANY)
@given(changes=_decision_changes, form=_forms, mapping=_mapping_file)
def test_import_decisions_many(
    scratch: Path, changes: list[tuple[int, str, Any, bool]], form: str, mapping: Any
) -> None:
    _check_decisions(scratch, changes, form, mapping)


# -- import lm-eval and import inspect ------------------------------------------------------------

_LM_EVAL_FIELDS = [
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "filter",
    "metrics",
    "acc",
]


def _check_lm_eval(scratch: Path, changes: list[tuple[int, str, Any]]) -> None:
    root = fresh(scratch)
    (samples,) = sorted((HARNESS / "lm_eval").glob("samples_*.jsonl"))
    lines = [json.loads(x) for x in samples.read_text("utf-8").splitlines() if x]
    for index, name, value in changes:
        lines[index % len(lines)][name] = value
    target = root / samples.name
    target.write_text("".join(json.dumps(x, allow_nan=True) + "\n" for x in lines), "utf-8")
    args = ["import", "lm-eval", str(target), "--out", str(root / "run")]
    _holds_the_rule(args)
    if (root / "run").exists():
        for row in open_run(root / "run").rows:
            assert (row.decision.scores["sum"] <= 0).all()  # log-probabilities only


_lm_changes = st.lists(
    st.tuples(st.integers(0, 20), st.sampled_from(_LM_EVAL_FIELDS), json_values),
    min_size=1,
    max_size=2,
)


@fuzz(6)
@given(changes=_lm_changes)
def test_import_lm_eval(scratch: Path, changes: list[tuple[int, str, Any]]) -> None:
    _check_lm_eval(scratch, changes)


@pytest.mark.slow
@fuzz(MANY)
@given(changes=_lm_changes)
def test_import_lm_eval_many(scratch: Path, changes: list[tuple[int, str, Any]]) -> None:
    _check_lm_eval(scratch, changes)


_INSPECT_FIELDS = [
    "id",
    "epoch",
    "input",
    "choices",
    "target",
    "output",
    "scores",
    "metadata",
    "error",
]


def _check_inspect(scratch: Path, changes: list[tuple[int, str, Any]]) -> None:
    root = fresh(scratch)
    log = json.loads((HARNESS / "inspect" / "letters.json").read_text("utf-8"))
    log = copy.deepcopy(log)
    for index, name, value in changes:
        samples = log.get("samples") or []
        if samples:
            samples[index % len(samples)][name] = value
    target = root / "log.json"
    target.write_text(json.dumps(log, allow_nan=True), encoding="utf-8")
    _holds_the_rule(["import", "inspect", str(target), "--out", str(root / "run")])


_inspect_changes = st.lists(
    st.tuples(st.integers(0, 20), st.sampled_from(_INSPECT_FIELDS), json_values),
    min_size=1,
    max_size=2,
)


@fuzz(4)
@given(changes=_inspect_changes)
def test_import_inspect(scratch: Path, changes: list[tuple[int, str, Any]]) -> None:
    _check_inspect(scratch, changes)


@pytest.mark.slow
@fuzz(MANY)
@given(changes=_inspect_changes)
def test_import_inspect_many(scratch: Path, changes: list[tuple[int, str, Any]]) -> None:
    _check_inspect(scratch, changes)


# -- arguments ------------------------------------------------------------------------------------

_number_text = (
    st.integers(-(2**40), 2**40).map(str)
    | st.floats(allow_nan=True, allow_infinity=True).map(repr)
    | st.sampled_from(["", "x", "0", "-1", "1e3", "nan", "inf"])
)
_meaning_args = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "--n-items",
                "--n-order-items",
                "--n-matrix-items",
                "--design",
                "--languages",
                "--experiments",
                "--e7-keys",
                "--embedder",
            ]
        ),
        _number_text
        | st.sampled_from(
            [
                "laya",
                "lod",
                "jev",
                "bn,en",
                "xx",
                "e1",
                "e9,e1",
                "slot,travelling",
                "none",
                "minilm",
            ]
        ),
    ),
    max_size=3,
)


def _check_meaning_args(scratch: Path, pairs: list[tuple[str, str]]) -> None:
    root = fresh(scratch)
    args = [
        "run",
        "meaning",
        "-m",
        "fake",
        "--dry-run",
        "--embedder",
        "none",
        "--out",
        str(root / "m"),
    ]
    for option, value in pairs:
        if option == "--n-items" and value.lstrip("-").isdigit() and int(value) > 50:
            value = "50"  # a dry run plans every item it is asked for: keep it short
        args += [option, value]
    _holds_the_rule(args)
    assert not (root / "m").exists()  # a dry run writes nothing


@fuzz(8)
@given(pairs=_meaning_args)
def test_run_meaning_arguments(scratch: Path, pairs: list[tuple[str, str]]) -> None:
    _check_meaning_args(scratch, pairs)


@pytest.mark.slow
@fuzz(MANY)
@given(pairs=_meaning_args)
def test_run_meaning_arguments_many(scratch: Path, pairs: list[tuple[str, str]]) -> None:
    _check_meaning_args(scratch, pairs)


_check_args = st.fixed_dictionaries(
    {
        "--seeds": st.integers(-3, 12).map(str) | _number_text,
        "--n-items": st.integers(-3, 6).map(str) | _number_text,
        "--n-candidates": st.integers(-3, 400).map(str) | _number_text,
    }
)


def _check_check_args(values: dict[str, str]) -> None:
    for name in ("--n-items", "--n-candidates", "--seeds"):  # keep a valid build small
        text = values[name]
        if (
            text.lstrip("-").isdigit()
            and int(text) > {"--n-items": 6, "--n-candidates": 400, "--seeds": 12}[name]
        ):
            values[name] = "2"
    args = ["check", "signalling", "--norms", "lancaster"]
    for name, value in values.items():
        args += [name, value]
    _holds_the_rule(args)


@fuzz(4)
@given(values=_check_args)
def test_check_signalling_arguments(values: dict[str, str]) -> None:
    _check_check_args(values)


@pytest.mark.slow
@fuzz(MANY)
@given(values=_check_args)
def test_check_signalling_arguments_many(values: dict[str, str]) -> None:
    _check_check_args(values)


@pytest.fixture(scope="module")
def gold_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gate-fuzz")
    lines = [
        {
            "state": f"s{i}",
            "options": [f"a{i}", f"b{i}", f"c{i}"],
            "meta": {"item_id": str(i), "gold": i % 3, "family": "d-rand" if i % 2 else "d-lit"},
        }
        for i in range(24)
    ]
    (root / "q.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    result = runner.invoke(
        app, ["score", str(root / "q.jsonl"), "-m", "fake", "--out", str(root / "run")]
    )
    assert result.exit_code == 0, result.output
    return root / "run"


_gate_args = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "--target-accuracy",
                "--max-risk",
                "--cost-ratio",
                "--fit",
                "--confidence",
                "--where",
                "--n-resamples",
                "--repeats",
                "--folds",
                "--seed",
            ]
        ),
        _number_text
        | st.sampled_from(
            ["d-rand", "family=d-lit", "maxprob", "margin", "nope", "family=zz", "x=y=z"]
        ),
    ),
    max_size=4,
)


def _check_gate_args(scratch: Path, run: Path, pairs: list[tuple[str, str]]) -> None:
    root = fresh(scratch)
    args = ["gate", str(run), "--out", str(root / "t.json")]
    given_options = {o for o, _ in pairs}
    if "--fit" not in given_options:
        args += ["--fit", "d-rand"]
    for option, value in pairs:
        if option in ("--n-resamples", "--repeats", "--folds") and value.isdigit():
            value = str(min(int(value), 50))  # a valid count, kept quick
        args += [option, value]
    _holds_the_rule(args)


@fuzz(6)
@given(pairs=_gate_args)
def test_gate_arguments(scratch: Path, gold_run: Path, pairs: list[tuple[str, str]]) -> None:
    _check_gate_args(scratch, gold_run, pairs)


@pytest.mark.slow
@fuzz(MANY)
@given(pairs=_gate_args)
def test_gate_arguments_many(scratch: Path, gold_run: Path, pairs: list[tuple[str, str]]) -> None:
    _check_gate_args(scratch, gold_run, pairs)
