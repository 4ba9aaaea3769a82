"""The precision gate: a reduced precision's noise floor against float32 and float32's
agreement with the float64 reference, on a tiny model built in the test; a reference that
disagrees makes the command exit 1 and say why; bad arguments are refused by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import choiceaudit.scorers as scorers
from choiceaudit.audit import REFERENCE_TOLERANCE, check_precision
from choiceaudit.cli import app
from choiceaudit.errors import InputError
from tiny_llama import save_tiny_llama, tiny_tokenizer


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("precision")
    model = save_tiny_llama(root / "tiny", tiny_tokenizer(), seed=17, context=256)
    lines = [
        {"state": f"the capital {i}", "options": ["paris", "lyon", "the sea"], "meta": {"gold": 0}}
        for i in range(6)
    ]
    lines.append({"state": "is it", "options": ["yes", "no"], "neutral_state": "it"})
    queries = root / "q.jsonl"
    queries.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return f"hf:{model}", queries


def test_the_gate_measures_the_floor_and_checks_float32(tiny: tuple[str, Path]) -> None:
    model, queries = tiny
    report = check_precision(model, dtype="float16", queries=queries, n_queries=7, n_reference=3)
    assert (report.n_queries, report.n_reference) == (7, 3)
    assert [s.rule for s in report.floor] == ["probs", "sum", "mean"]  # pmi: not on every query
    assert all(0 <= s.flips <= 7 and s.max_abs >= s.p95_abs >= s.median_abs for s in report.floor)
    assert max(s.max_abs for s in report.floor) > 0  # float16 moves scores
    assert report.reference_ok and report.reference_max_abs < 1e-4
    assert report.tolerance == REFERENCE_TOLERANCE


def test_a_reference_that_disagrees_exits_1_naming_a_bug(
    tiny: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    model, queries = tiny
    real = scorers.reference_scores

    def off(scorer: Any, sample: Any) -> Any:
        return [{k: v + 0.5 for k, v in r.items()} for r in real(scorer, sample)]

    monkeypatch.setattr(scorers, "reference_scores", off)
    args = ["check", "precision", model, "--queries", str(queries), "--n", "4"]
    done = CliRunner().invoke(app, [*args, "--n-reference", "2"], env={"COLUMNS": "120"})
    assert done.exit_code == 1, done.output
    assert (
        "ABOVE the tolerance 0.001" in done.output
        and "a bug, not a precision effect" in done.output
    )
    assert np.isclose(float(done.output.split("largest |Δ| ")[1].split(",")[0]), 0.5, atol=1e-3)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dtype": "float32"}, "use bfloat16 or float16"),
        ({"n_queries": 2, "n_reference": 3}, "--n-reference"),
        ({"scorer_options": {"dtype": "float16"}}, "not -o dtype="),
        ({"tolerance": 0.0}, "--tolerance must be above 0"),
    ],
)
def test_bad_arguments_are_refused(
    tiny: tuple[str, Path], kwargs: dict[str, Any], message: str
) -> None:
    model, queries = tiny
    with pytest.raises(InputError, match=message):
        check_precision(model, queries=queries, **kwargs)


def test_a_backend_without_a_float64_path_is_measured_and_says_so(
    tiny: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend the float64 reference does not re-compute (a causal LM asked for a key reads
    another distribution than the engine's option log-probabilities): its floor is measured,
    its float64 check is skipped with the reason, and that is not a bug."""
    model, queries = tiny
    monkeypatch.setattr(scorers, "has_reference", lambda scorer: False)
    report = check_precision(model, dtype="float16", queries=queries, n_queries=3, n_reference=1)
    assert report.floor and report.reference == () and report.n_reference == 0
    assert "no float64 reference path" in report.reference_skipped and report.reference_ok
