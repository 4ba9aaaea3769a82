"""``choiceaudit gate`` and ``choiceaudit import lm-eval|inspect`` on the command line: the same
results as the library, the thresholds file and the report, and one-line errors."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from typer.testing import CliRunner

from choiceaudit.audit import gate_runs, run_scoring
from choiceaudit.cli import app
from choiceaudit.gate import GateSpec
from choiceaudit.store import open_run
from choiceaudit.types import Decision, Query

runner = CliRunner()
HARNESS = Path(__file__).resolve().parents[1] / "fixtures" / "harness"


class _MetaScorer:
    name = "meta"

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        return [
            Decision(q.id, np.array(q.meta["probs"]), aux={"conf_head": q.meta["head"]})
            for q in queries
        ]

    def describe(self) -> dict[str, Any]:
        return {"backend": "meta", "model": "model-x"}


def _run(tmp: Path) -> Path:
    rng = np.random.default_rng(1)
    queries = []
    for family in ("d-rand", "d-lit"):
        for i in range(60):
            conf = float(rng.uniform(0.3, 0.95))
            right = rng.random() < (conf if family == "d-rand" else 1.1 - conf)
            probs = [(1 - conf) / 3] * 4
            probs[0 if right else 1] = conf
            queries.append(
                Query(
                    state=f"{family} {i}",
                    options=("w", "x", "y", "z"),
                    meta={
                        "item_id": f"{family}-{i}",
                        "gold": 0,
                        "family": family,
                        "probs": probs,
                        "head": conf / 2,
                    },
                )
            )
    run_scoring(_MetaScorer(), queries, tmp / "run", config={"kind": "score"})
    return tmp / "run"


def test_gate_cli_equals_the_library_and_writes_thresholds_and_report(tmp_path: Path) -> None:
    run = _run(tmp_path)
    args = [
        "gate",
        str(run),
        "--fit",
        "d-rand",
        "--target-accuracy",
        "0.75",
        "--out",
        str(tmp_path / "t.json"),
        "--report",
        str(tmp_path / "report"),
        "--n-resamples",
        "200",
        "--repeats",
        "2",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "d-lit" in result.output and "missed" in result.output
    doc = json.loads((tmp_path / "t.json").read_text("utf-8"))
    assert doc["schema"] == "choiceaudit.gate/1" and doc["command"][0] == "choiceaudit"
    assert [g["definition"] for g in doc["gates"]] == ["maxprob", "conf_head", "margin", "entropy"]
    spec = GateSpec(
        objective="target_accuracy", value=0.75, fit="d-rand", n_resamples=200, repeats=2
    )  # type: ignore[arg-type]
    lib_gates = gate_runs([run], spec).document["gates"]
    assert isinstance(lib_gates, list)
    assert [g["cut_point"] for g in doc["gates"]] == [g["cut_point"] for g in lib_gates]
    assert doc["gates"] == lib_gates
    # one definition of "met": the fit slice's printed status is the out-of-sample target's
    for g in doc["gates"]:
        fit, met = g["evidence"]["fit"], g["evidence"]["out_of_sample"]["target_met"]
        assert (fit["status"] == "met") == met, (fit["status"], met)
        assert f"{fit['status']}" in " ".join(result.output.split())
    html = (tmp_path / "report" / "index.html").read_text("utf-8")
    assert "Confidence gate fitted on family=d-rand" in html and "MISSED" in html
    assert (tmp_path / "report" / "figures" / "gate_risk_coverage_model-x.png").is_file()
    assert (tmp_path / "report" / "tables" / "gate_definitions_side_by_side.csv").is_file()


def test_gate_cli_objectives_and_definitions(tmp_path: Path) -> None:
    run = _run(tmp_path)
    base = [
        "gate",
        str(run),
        "--fit",
        "family=d-rand",
        "--out",
        str(tmp_path / "t.json"),
        "--n-resamples",
        "50",
        "--repeats",
        "1",
    ]
    ok = runner.invoke(app, [*base, "--cost-ratio", "4", "--confidence", "margin"])
    assert ok.exit_code == 0, ok.output
    doc = json.loads((tmp_path / "t.json").read_text("utf-8"))
    assert [g["definition"] for g in doc["gates"]] == ["margin"]
    assert (
        doc["objective"]["kind"] == "cost_ratio" and doc["objective"]["required_accuracy"] == 0.75
    )
    assert doc["gates"][0]["evidence"]["fit"]["cost"] is not None
    none = runner.invoke(app, base)
    assert none.exit_code == 1 and "exactly one of" in none.output
    two = runner.invoke(app, [*base, "--max-risk", "0.1", "--target-accuracy", "0.9"])
    assert two.exit_code == 1 and "exactly one of" in two.output
    bad = runner.invoke(app, [*base, "--max-risk", "0.1", "--confidence", "logit"])
    assert bad.exit_code == 1 and "definitions" in bad.output
    where = runner.invoke(app, [*base, "--max-risk", "0.1", "--where", "nokey"])
    assert where.exit_code == 1 and "not key=value" in where.output


def test_import_cli_lm_eval_and_inspect(tmp_path: Path) -> None:
    lm = runner.invoke(
        app, ["import", "lm-eval", str(HARNESS / "lm_eval"), "--out", str(tmp_path / "lm")]
    )
    assert lm.exit_code == 0, lm.output
    assert "8 row(s) imported from lm-eval 0.4.13" in lm.output
    assert "fields not mapped" in lm.output and "resps" in lm.output
    assert open_run(tmp_path / "lm").manifest.command[0] == "choiceaudit"
    ins = runner.invoke(
        app,
        [
            "import",
            "inspect",
            str(HARNESS / "inspect" / "letters.json"),
            "--out",
            str(tmp_path / "in"),
            "--model-name",
            "mock",
        ],
    )
    assert ins.exit_code == 0, ins.output
    assert "7 row(s) imported from inspect 0.3.285 for model mock" in ins.output
    assert "not imported: 1 row(s): no answer letter in the output" in ins.output
    assert open_run(tmp_path / "in").label == "mock"
    zstd = runner.invoke(
        app,
        [
            "import",
            "inspect",
            str(HARNESS / "inspect" / "logprobs.eval"),
            "--out",
            str(tmp_path / "z"),
        ],
    )
    assert zstd.exit_code == 1 and "inspect log convert" in zstd.output
    report = runner.invoke(
        app, ["report", str(tmp_path / "lm"), str(tmp_path / "in"), "--out", str(tmp_path / "rep")]
    )
    assert report.exit_code == 0, report.output
    html = (tmp_path / "rep" / "index.html").read_text("utf-8")
    assert "Selective prediction: AURC and AUGRC against the random gate" in html
    assert "Calibration of the reported distributions" in html
