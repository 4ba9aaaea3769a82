"""A run in a reduced precision gates itself before its first row: the noise floor and the
float64 check on an evenly spaced sample of its own queries, stored in the manifest (outside the
configuration), kept by a resume, recorded when opted out; an engine bug that survives float32
stops the run before anything is written; a flip rate above the threshold is refused unless
accepted, from Python and from the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from choiceaudit.audit import (
    MAX_FLIP_RATE,
    PrecisionGate,
    PrecisionGateError,
    PrecisionReport,
    gate_summary,
    precision_summaries,
    score_file,
)
from choiceaudit.cli import app
from choiceaudit.errors import InputError
from choiceaudit.metrics import RuleShift
from choiceaudit.scorers import sequence_logprobs
from choiceaudit.store import RunStore
from choiceaudit.types import Query
from tiny_llama import save_tiny_llama, tiny_tokenizer

MEASURE = "choiceaudit.audit._precision_gate.measure_precision"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("gate")
    model = save_tiny_llama(root / "tiny", tiny_tokenizer(), seed=23, context=256)
    lines = [
        {"state": f"the capital {i}", "options": ["paris", "lyon", "the sea"]} for i in range(9)
    ]
    queries = root / "q.jsonl"
    queries.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return f"hf:{model}", queries


def _manifest(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    return data


def test_the_sample_is_spread_evenly_over_the_run() -> None:
    from choiceaudit.audit._precision_gate import gate_sample

    queries = [Query(state=str(i), options=("a", "b")) for i in range(10)]
    assert [q.state for q in gate_sample(queries, 4)] == ["0", "3", "6", "9"]
    assert [q.state for q in gate_sample(queries, 1)] == ["0"]
    assert len(gate_sample(queries, 64)) == 10


def test_a_float16_run_stores_its_gate_outside_the_configuration(
    tiny: tuple[str, Path], tmp_path: Path
) -> None:
    model, queries = tiny
    gate = PrecisionGate(n_queries=5, n_reference=2)
    result = score_file(
        queries,
        model,
        out=tmp_path / "run",
        scorer_options={"dtype": "float16"},
        precision_gate=gate,
    )
    stored = _manifest(tmp_path / "run")
    record = stored["precision_gate"]
    assert result.summary.manifest.precision_gate == record
    assert record["gated"] and record["dtype"] == "float16" and record["against"] == "float32"
    assert (record["n_queries"], record["n_reference"]) == (5, 2)
    assert record["sample"] == "5 of the run's 9 queries, evenly spaced"
    assert [r["rule"] for r in record["floor"]] == ["probs", "sum", "mean"]
    assert max(r["max_abs"] for r in record["floor"]) > 0  # float16 moves scores
    assert record["reference_ok"] and record["reference_max_abs"] < 1e-4
    assert record["max_flip_rate"] == MAX_FLIP_RATE and record["accepted_flips"] is False
    assert "precision_gate" not in json.dumps(stored["config"])
    # the float32 run of the same queries has the same configuration, and no gate
    score_file(queries, model, out=tmp_path / "fp32")
    assert "precision_gate" not in _manifest(tmp_path / "fp32")
    assert _manifest(tmp_path / "fp32")["config"] == stored["config"]


def test_a_resumed_run_keeps_the_gate_of_its_first_session(
    tiny: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, queries = tiny
    options = {"dtype": "float16"}
    gate = PrecisionGate(n_queries=3, n_reference=1)
    score_file(queries, model, out=tmp_path / "run", scorer_options=options, precision_gate=gate)
    first = _manifest(tmp_path / "run")["precision_gate"]

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a resumed run measured its precision again")

    monkeypatch.setattr(MEASURE, never)
    again = score_file(
        queries, model, out=tmp_path / "run", scorer_options=options, precision_gate=gate
    )
    assert again.summary.already_done == 9
    assert _manifest(tmp_path / "run")["precision_gate"] == first


def test_opting_out_is_recorded(tiny: tuple[str, Path], tmp_path: Path) -> None:
    model, queries = tiny
    options = {"dtype": "bfloat16"}
    score_file(queries, model, out=tmp_path / "run", scorer_options=options, precision_gate=None)
    assert _manifest(tmp_path / "run")["precision_gate"] == {
        "gated": False,
        "dtype": "bfloat16",
        "opted_out": True,
    }


def test_an_engine_bug_stops_the_run_before_anything_is_written(
    tiny: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deliberate bug: every packed row's last scored token is moved by 0.05 (a position
    or mask error would move it by more). Float32 carries it at full magnitude, so the float64
    check must catch it, whatever the reduced precision's own floor."""
    model, queries = tiny

    def shifted(*args: Any, **kwargs: Any) -> Any:
        rows = sequence_logprobs(*args, **kwargs)
        return [[np.concatenate([x[:-1], x[-1:] + 0.05]) for x in group] for group in rows]

    monkeypatch.setattr("choiceaudit.scorers._hf.sequence_logprobs", shifted)
    with pytest.raises(PrecisionGateError, match="bug in the scoring path") as caught:
        score_file(
            queries,
            model,
            out=tmp_path / "run",
            scorer_options={"dtype": "float16"},
            precision_gate=PrecisionGate(n_queries=4, n_reference=2),
        )
    assert caught.value.record["reference_ok"] is False
    assert caught.value.record["reference_max_abs"] > 0.04
    assert not (tmp_path / "run").exists()


def _flipping(flips: int, n: int = 20) -> Any:
    """A gate measurement whose ``sum`` rule flipped ``flips`` of ``n`` choices."""

    def measure(model: str, sample: Any, **kwargs: Any) -> PrecisionReport:
        shift = RuleShift("sum", n, 3 * n, 0.01, 0.05, 0.2, flips)
        ok = RuleShift("sum", 2, 6, 1e-7, 1e-7, 2e-7, 0)
        return PrecisionReport(
            model, kwargs["dtype"], kwargs["source"], n, (shift,), 2, (ok,), 1e-3
        )

    return measure


def test_a_flip_rate_above_the_threshold_is_refused_unless_accepted(
    tiny: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, queries = tiny
    monkeypatch.setattr(MEASURE, _flipping(3))  # 15% of the choices
    options = {"dtype": "bfloat16"}
    with pytest.raises(PrecisionGateError, match=r"flips 3 of 20 choices \(15.0%\) under the sum"):
        score_file(queries, model, out=tmp_path / "run", scorer_options=options)
    assert not (tmp_path / "run").exists()
    score_file(
        queries,
        model,
        out=tmp_path / "run",
        scorer_options=options,
        precision_gate=PrecisionGate(accept_flips=True),
    )
    record = _manifest(tmp_path / "run")["precision_gate"]
    assert record["accepted_flips"] is True and record["largest_flip_rate"] == 0.15
    assert record["largest_flip_rule"] == "sum"
    # a threshold above the rate lets it through without acceptance
    score_file(
        queries,
        model,
        out=tmp_path / "other",
        scorer_options=options,
        precision_gate=PrecisionGate(max_flip_rate=0.2),
    )


def test_the_command_line_refuses_then_accepts(
    tiny: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, queries = tiny
    monkeypatch.setattr(MEASURE, _flipping(2))
    args = ["score", str(queries), "-m", model, "--out", str(tmp_path / "run")]
    args += ["-o", "dtype=float16"]
    refused = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert refused.exit_code == 1
    assert "precision gate:" in refused.output and "--accept-precision-flips" in refused.output
    done = CliRunner().invoke(app, [*args, "--accept-precision-flips"], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    assert _manifest(tmp_path / "run")["precision_gate"]["accepted_flips"] is True
    # the terminal says what the gate measured, as the manifest stores it
    said = " ".join(done.output.split())
    assert "precision gate (the noise floor against float32" in said
    assert "run: float16 on 20 queries: |Δ sum| median 0.01, p95 0.05, max 0.2" in said
    assert "flips 10.0% (sum), threshold 5.0%, accepted; float32 against float64 2e-07 on 2" in said
    skipped = CliRunner().invoke(
        app, [*args[:-3], str(tmp_path / "off"), "-o", "dtype=float16", "--no-precision-gate"]
    )
    assert skipped.exit_code == 0, skipped.output
    assert _manifest(tmp_path / "off")["precision_gate"]["opted_out"] is True
    assert "off: float16: not gated (opted out)" in " ".join(skipped.output.split())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_queries": 2, "n_reference": 3}, "n_reference <= n_queries"),
        ({"max_flip_rate": 1.5}, "--max-flip-rate"),
        ({"tolerance": 0.0}, "above 0"),
    ],
)
def test_bad_gate_settings_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        PrecisionGate(**kwargs)


def test_a_run_in_float32_or_of_a_model_without_dtype_runs_no_gate(tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"state": "s", "options": ["a", "b"]}\n', encoding="utf-8")
    score_file(queries, "fake", out=tmp_path / "run")
    assert RunStore(tmp_path / "run").manifest().precision_gate is None
    assert precision_summaries([tmp_path / "run"]) == []
    printed = CliRunner().invoke(
        app, ["score", str(queries), "-m", "fake", "--out", str(tmp_path / "cli")]
    )
    assert printed.exit_code == 0 and "precision gate" not in printed.output


def test_the_gate_summary_says_what_the_record_holds() -> None:
    from choiceaudit.audit._precision_gate import precision_record

    floor = (
        RuleShift("sum", 64, 256, 0.073, 0.301, 0.499, 2),
        RuleShift("pmi", 64, 256, 0.09, 0.345, 0.726, 14),
    )
    reference = (RuleShift("sum", 4, 16, 1e-6, 2e-5, 3.2e-5, 0),)
    report = PrecisionReport("smollm2", "bfloat16", "s", 64, floor, 4, reference, 1e-3)
    accepted = precision_record(report, PrecisionGate(accept_flips=True))
    assert gate_summary(accepted) == (
        "bfloat16 on 64 queries: |Δ sum| median 0.073, p95 0.301, max 0.499; flips 21.9% (pmi), "
        "threshold 5.0%, accepted; float32 against float64 3.2e-05 on 4"
    )
    skipped = PrecisionReport(
        "lm-choice:m", "bfloat16", "s", 64, floor[1:], 0, (), 1e-3, reference_skipped="no path"
    )
    line = gate_summary(precision_record(skipped, PrecisionGate(max_flip_rate=0.5)))
    assert "|Δ pmi| median 0.09" in line and "threshold 50.0%;" in line
    assert line.endswith("float32 against float64 no float64 path")
    assert gate_summary({"gated": False, "dtype": "float16", "opted_out": True}) == (
        "float16: not gated (opted out)"
    )


def test_a_skipped_float64_check_is_stored_as_not_measured() -> None:
    from choiceaudit.audit._precision_gate import precision_record

    floor = (RuleShift("probs", 4, 12, 0.001, 0.004, 0.005, 0),)
    report = PrecisionReport(
        "lm-choice:m", "bfloat16", "s", 4, floor, 0, (), 1e-3, reference_skipped="no path"
    )
    record = precision_record(report, PrecisionGate())
    assert record["reference_max_abs"] is None and record["reference_ok"] is True
    assert record["reference_skipped"] == "no path"
