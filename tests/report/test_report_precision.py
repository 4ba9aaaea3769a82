"""A report on runs scored in a reduced precision opens each section with what their precision
gate measured, and marks every row of such a run with its noise floor and flip rate; rows of
other runs stay unmarked, and a name two runs share is never marked with the other's floor."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from choiceaudit import api
from choiceaudit.report import ReportTable, Section
from choiceaudit.report._precision import precision_notes, with_precision
from choiceaudit.types import Manifest
from report_docs import undocumented
from tiny_llama import save_tiny_llama, tiny_tokenizer


def _record(dtype: str = "bfloat16", **overrides: Any) -> dict[str, Any]:
    floor = [
        {"rule": "probs", "flips": 0, "flip_rate": 0.0, "max_abs": 0.01},
        {"rule": "sum", "median_abs": 0.04, "p95_abs": 0.15, "max_abs": 0.181, "flip_rate": 0.02},
    ]
    record = {
        "gated": True,
        "dtype": dtype,
        "n_queries": 50,
        "floor": floor,
        "n_reference": 8,
        "reference_max_abs": 2.5e-5,
        "largest_flip_rate": 0.02,
        "largest_flip_rule": "sum",
        "max_flip_rate": 0.05,
        "accepted_flips": False,
    }
    return {**record, **overrides}


def _manifest(model: str, gate: dict[str, Any] | None) -> Manifest:
    return Manifest(config={"model": model}, scorer={"model": model}, precision_gate=gate)


def _section(runs: list[tuple[str, Manifest]]) -> Section:
    table = ReportTable(
        "cells",
        "cells",
        ("tile", "model", "value"),
        (("size", "smollm2", 0.4), ("size", "bayes", 0.9)),
    )
    return Section("signalling", "Signalling", "method", tables=[table], runs=runs)


def test_a_section_opens_with_the_gate_and_marks_the_models_rows() -> None:
    section = with_precision(
        _section([("runs/smollm2", _manifest("smollm2", _record())), ("runs/bayes", Manifest())])
    )
    gate, cells = section.tables
    assert gate.name == "precision-signalling" and gate.computed is not None
    (row,) = gate.records()
    assert (row["model"], row["run"], row["dtype"], row["floor_max_abs"]) == (
        "smollm2",
        "smollm2",
        "bfloat16",
        0.181,
    )
    assert (row["largest_flip_rate"], row["flip_rule"], row["fp32_vs_fp64_max_abs"]) == (
        0.02,
        "sum",
        2.5e-5,
    )
    assert cells.columns == ("tile", "model", "precision", "value")
    assert [r["precision"] for r in cells.records()] == [
        "bfloat16: |Δ sum| ≤ 0.181, flips 2.0%",
        None,
    ]
    assert undocumented([replace(section, tables=[gate])]) == []


def test_an_opted_out_run_is_marked_not_gated_and_accepted_flips_are_said() -> None:
    runs = [
        (
            "a/smollm2",
            _manifest("smollm2", {"gated": False, "dtype": "float16", "opted_out": True}),
        ),
        ("a/gemma", _manifest("gemma", _record(accepted_flips=True))),
    ]
    notes = precision_notes(runs)
    assert notes["smollm2"] == "float16: not gated"
    assert notes["gemma"].endswith("flips 2.0%, accepted")
    assert with_precision(_section(runs)).tables[0].records()[0]["dtype"] == "float16"


def test_a_name_two_runs_share_is_not_marked() -> None:
    runs = [("x/fp16", _manifest("smollm2", _record())), ("x/fp32", _manifest("smollm2", None))]
    assert precision_notes(runs) == {"fp16": "bfloat16: |Δ sum| ≤ 0.181, flips 2.0%"}
    section = with_precision(_section(runs))
    assert "precision" not in section.tables[1].columns


def test_a_section_without_reduced_precision_is_unchanged() -> None:
    section = _section([("runs/smollm2", _manifest("smollm2", None))])
    assert with_precision(section) is section


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("report-precision")
    model = save_tiny_llama(root / "tiny", tiny_tokenizer(), seed=29, context=256)
    lines = [
        {"state": f"the capital {i}", "options": ["paris", "lyon", "the sea"], "meta": {"gold": 0}}
        for i in range(6)
    ]
    queries = root / "q.jsonl"
    queries.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    gate = api.PrecisionGate(n_queries=4, n_reference=2)
    options = {"dtype": "float16"}
    api.score_file(
        queries, f"hf:{model}", out=root / "f16", scorer_options=options, precision_gate=gate
    )
    api.score_file(queries, "fake", out=root / "fake")
    return root / "f16", root / "fake"


def test_the_report_of_a_float16_run_carries_its_gate(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    f16, fake = runs
    api.build_report(api.analyse_runs([f16, fake]), out=tmp_path / "report")
    tables = tmp_path / "report" / "tables"
    (gate_file,) = tables.glob("precision-*.csv")
    (row,) = list(csv.DictReader(io.StringIO(gate_file.read_text(encoding="utf-8"))))
    assert (row["run"], row["dtype"], row["gated"], row["n_sample"]) == (
        "f16",
        "float16",
        "True",
        "4",
    )
    assert float(row["floor_max_abs"]) > 0 and float(row["fp32_vs_fp64_max_abs"]) < 1e-4
    accuracy = list(csv.DictReader(io.StringIO((tables / "accuracy.csv").read_text("utf-8"))))
    marked = {r["model"]: r["precision"] for r in accuracy}
    assert marked["fake"] == "" and marked[f"hf:{f16.parent / 'tiny'}"].startswith(
        "float16: |Δ sum| ≤ "
    )
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert "Precision gate: the noise floor" in page


def test_a_model_without_a_summed_log_probability_shows_its_first_rule() -> None:
    record = _record(
        floor=[{"rule": "probs", "median_abs": 0.001, "max_abs": 0.004, "flip_rate": 0.0}],
        largest_flip_rate=0.0,
        largest_flip_rule="probs",
        n_reference=0,
        reference_max_abs=None,
    )
    runs = [("m/lm-choice-smollm2", _manifest("lm-choice:smollm2", record))]
    assert precision_notes(runs)["lm-choice:smollm2"] == "bfloat16: |Δ probs| ≤ 0.004, flips 0.0%"
    (row,) = with_precision(_section(runs)).tables[0].records()
    assert (row["floor_rule"], row["floor_max_abs"], row["fp32_vs_fp64_max_abs"]) == (
        "probs",
        0.004,
        None,
    )
