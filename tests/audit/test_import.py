"""The lm-eval and inspect importers on real files those harnesses wrote
(``tests/fixtures/harness``, made by ``make_fixtures.py`` there): rows, gold, probabilities and
the harness's own scores agree; the manifest records source, version, unmapped fields and
refused rows; every generic analysis applies to the imported run."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from choiceaudit.audit import analyse_runs, gate_runs, import_inspect, import_lm_eval
from choiceaudit.errors import InputError
from choiceaudit.gate import GateSpec
from choiceaudit.instruments.scoring import ScoringAnalysis
from choiceaudit.store import open_run

HARNESS = Path(__file__).resolve().parents[1] / "fixtures" / "harness"
LM_EVAL = HARNESS / "lm_eval"
INSPECT = HARNESS / "inspect"


def _samples() -> Path:
    (path,) = sorted(LM_EVAL.glob("samples_*.jsonl"))
    return path


def _lines() -> list[dict[str, Any]]:
    return [json.loads(line) for line in _samples().read_text("utf-8").splitlines() if line]


def test_lm_eval_rows_agree_with_the_harness(tmp_path: Path) -> None:
    result = import_lm_eval([LM_EVAL], out=tmp_path / "run")
    assert (result.source, result.version, result.mapped) == ("lm-eval", "0.4.13", 8)
    assert result.unmappable == {}
    run = open_run(tmp_path / "run")
    assert run.label == result.model
    lines = {(line["doc_id"]): line for line in _lines()}
    for row in run.rows:
        q, d = row.query, row.decision
        line = lines[q.meta["doc_id"]]
        ll = np.array([float(r[0]) for r in line["filtered_resps"]])
        assert d.scores["sum"] == pytest.approx(ll)
        assert d.probs == pytest.approx(np.exp(ll - ll.max()) / np.exp(ll - ll.max()).sum())
        assert list(q.options) == line["doc"]["choices"]  # display order = the harness's
        # gold is canonical: the displayed gold option is the document's answer
        assert q.perm is not None
        assert (
            q.options[q.perm.index(q.meta["gold"])] == line["doc"]["choices"][line["doc"]["answer"]]
        )
        # our correctness (argmax of the log-likelihoods) is lm-eval's acc
        assert (
            float(q.canonical(d.choice()[0]) == q.meta["gold"])
            == line["acc"]
            == q.meta["metric.acc"]
        )
        assert q.meta["doc.category"] == line["doc"]["category"]
        assert (
            q.prompt() + q.continuations()[0]
            == line["arguments"]["gen_args_0"]["arg_0"] + line["arguments"]["gen_args_0"]["arg_1"]
        )
    config = run.manifest.config
    assert config["source"] == "lm-eval" and config["source_version"] == "0.4.13"
    assert config["files"][0]["name"] == _samples().name and len(config["files"][0]["sha256"]) == 64
    assert {"resps", "doc_hash", "prompt_hash", "target_hash", "doc.choices"} <= set(
        config["unmapped_fields"]
    )
    assert config["unmapped_fields"]["resps"] == 8
    assert config["tasks"]["choiceaudit_mc"]["output_type"] == "multiple_choice"
    assert run.manifest.scorer["backend"] == "import:lm-eval"


def test_items_under_two_orderings_are_one_item_with_two_renderings(tmp_path: Path) -> None:
    import_lm_eval([_samples()], out=tmp_path / "run")
    run = open_run(tmp_path / "run")
    by_item: dict[str, list[Any]] = {}
    for row in run.rows:
        by_item.setdefault(row.meta["item_id"], []).append(row.query)
    assert sorted(len(v) for v in by_item.values()) == [1, 1, 1, 1, 2, 2]
    for renderings in by_item.values():
        golds = {q.options[q.perm.index(q.meta["gold"])] for q in renderings}
        assert len(golds) == 1  # one gold option whatever the order
    (analysis,) = analyse_runs([tmp_path / "run"])
    assert isinstance(analysis, ScoringAnalysis)
    (audit,) = analysis.order_audit
    assert (audit.items, audit.orderings) == (2, 2)
    # accuracy under each rule the rows store, labelled: probs (and the summed
    # log-likelihood, the same argmax) is lm-eval's acc, char_mean its acc_norm
    accuracy = {c.rule: c for c in analysis.accuracy}
    assert list(accuracy) == ["probs", "char_mean", "sum"]
    acc = accuracy["probs"]
    assert acc.accuracy == pytest.approx(np.mean([line["acc"] for line in _lines()]))
    assert accuracy["sum"].accuracy == acc.accuracy
    assert accuracy["char_mean"].accuracy == pytest.approx(
        np.mean([line["acc_norm"] for line in _lines()])
    )
    assert acc.items == 6
    assert {c.cell for c in analysis.calibration} == {"all"}
    assert {c.definition for c in analysis.selective} == {"maxprob", "margin", "entropy"}


def test_lm_eval_rows_that_cannot_be_mapped_are_counted_with_reasons(tmp_path: Path) -> None:
    lines = _lines()
    bad_target = {**lines[0], "target": "7"}
    generate = {
        **lines[1],
        "filtered_resps": ["some text"],
        "arguments": {"gen_args_0": {"arg_0": "q", "arg_1": {"until": ["\n"]}}},
    }
    several = {**lines[2], "target": [0, 1]}
    folder = tmp_path / "in"
    folder.mkdir()
    name = _samples().name
    text = (
        "\n".join(json.dumps(x) for x in [*lines[3:], bad_target, generate, several]) + "\n{oops\n"
    )
    (folder / name).write_text(text, encoding="utf-8")  # no results file beside it
    result = import_lm_eval([folder / name], out=tmp_path / "run")
    assert result.mapped == 5 and result.version is None
    assert result.unmappable == {
        "target index 7 is out of range for 4 choices": 1,
        "requests are not (context, continuation) strings (not a multiple-choice task)": 1,
        "several gold choices (target is a list)": 1,
        "invalid JSON (Expecting property name enclosed in double quotes)": 1,
    }
    manifest = open_run(tmp_path / "run").manifest
    assert manifest.config["unmappable_rows"] == result.unmappable
    assert {r["row"] for r in manifest.config["unmappable_listed"]} == {6, 7, 8, 9}
    assert manifest.sessions[-1]["skipped_input"] == result.unmappable
    assert any("version unknown" in note for note in manifest.config["notes"])


def test_reimporting_the_same_files_adds_nothing(tmp_path: Path) -> None:
    import_lm_eval([LM_EVAL], out=tmp_path / "run")
    again = import_lm_eval([LM_EVAL], out=tmp_path / "run")
    assert again.summary.scored == 0 and again.summary.already_done == 8


def test_inspect_rows_agree_with_the_harness(tmp_path: Path) -> None:
    result = import_inspect([INSPECT / "logprobs.json"], out=tmp_path / "run")
    assert (result.source, result.version, result.model, result.mapped) == (
        "inspect",
        "0.3.285",
        "mockllm/model",
        8,
    )
    log = json.loads((INSPECT / "logprobs.json").read_text("utf-8"))
    samples = {s["id"]: s for s in log["samples"]}
    run = open_run(tmp_path / "run")
    for row in run.rows:
        q, d = row.query, row.decision
        s = samples[q.meta["sample_id"]]
        tops = {
            t["token"]: t["logprob"]
            for t in s["output"]["choices"][0]["logprobs"]["content"][-1]["top_logprobs"]
        }
        assert d.scores["letter_logprob"] == pytest.approx([tops[k] for k in "ABCD"])
        assert d.probs.sum() == pytest.approx(1.0)
        assert list(q.options) == s["choices"] and q.keys == ("A", "B", "C", "D")
        assert q.perm is not None
        assert q.options[q.perm.index(q.meta["gold"])] == s["choices"]["ABCD".index(s["target"])]
        chosen = "ABCD"[d.choice()[0]]
        assert chosen == s["scores"]["choice"]["answer"]
        assert (q.canonical(d.choice()[0]) == q.meta["gold"]) == (
            s["scores"]["choice"]["value"] == "C"
        )
        assert q.meta["metadata.category"] == s["metadata"]["category"]
        assert d.aux["confidence_source"] == "letter log-probabilities"
    config = run.manifest.config
    assert config["source_version"] == "0.3.285"
    assert {"events", "messages", "model_usage", "log.results"} <= set(config["unmapped_fields"])
    (analysis,) = analyse_runs([tmp_path / "run"])
    assert analysis.order_audit and analysis.order_audit[0].items == 2  # type: ignore[union-attr]


def test_a_deflate_eval_archive_gives_the_same_rows_as_the_json_log(tmp_path: Path) -> None:
    import_inspect([INSPECT / "logprobs.json"], out=tmp_path / "json")
    import_inspect([INSPECT / "logprobs-deflate.eval"], out=tmp_path / "eval")
    a = [(r.query.id, r.decision.probs.tolist()) for r in open_run(tmp_path / "json").rows]
    b = [(r.query.id, r.decision.probs.tolist()) for r in open_run(tmp_path / "eval").rows]
    assert a == b


def test_a_zstd_eval_archive_names_the_conversion(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="inspect log convert"):
        import_inspect([INSPECT / "logprobs.eval"], out=tmp_path / "run")


def test_inspect_without_logprobs_is_a_hard_choice_and_unparsed_answers_are_counted(
    tmp_path: Path,
) -> None:
    result = import_inspect([INSPECT / "letters.json"], out=tmp_path / "run")
    assert result.mapped == 7 and result.unmappable == {"no answer letter in the output": 1}
    run = open_run(tmp_path / "run")
    for row in run.rows:
        assert sorted(row.decision.probs.tolist()) == [0.0, 0.0, 0.0, 1.0]
        assert row.decision.aux["confidence_source"] == "none (hard choice)"
    log = json.loads((INSPECT / "letters.json").read_text("utf-8"))
    graded = [
        s["scores"]["choice"]["value"] == "C"
        for s in log["samples"]
        if s["scores"]["choice"]["answer"]
    ]
    (analysis,) = analyse_runs([tmp_path / "run"])
    assert analysis.accuracy[0].accuracy == pytest.approx(np.mean(graded))  # type: ignore[union-attr]
    listed = run.manifest.config["unmappable_listed"]
    assert listed == [
        {
            "file": "letters.json",
            "row": "sample 3 epoch 1",
            "reason": "no answer letter in the output",
        }
    ]


def test_inspect_directory_and_errors(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(INSPECT / "logprobs.json", folder / "a.json")
    log = json.loads((INSPECT / "logprobs.json").read_text("utf-8"))
    log["samples"][0]["error"] = {"message": "boom"}
    log["samples"][1]["choices"] = None
    log["samples"][2]["target"] = ["A", "B"]
    log["eval"]["task"] = "other"
    (folder / "b.json").write_text(json.dumps(log), encoding="utf-8")
    result = import_inspect([folder], out=tmp_path / "run")
    assert result.mapped == 13
    assert result.unmappable == {
        "the sample errored: boom": 1,
        "the sample has no choices (not a multiple-choice task)": 1,
        "several gold choices (target lists several letters)": 1,
    }
    with pytest.raises(InputError, match="no such file"):
        import_inspect([tmp_path / "missing.json"], out=tmp_path / "run2")
    (tmp_path / "notalog.json").write_text("{}", encoding="utf-8")
    with pytest.raises(InputError, match="not an inspect eval log"):
        import_inspect([tmp_path / "notalog.json"], out=tmp_path / "run3")


def test_the_gate_runs_on_imported_rows(tmp_path: Path) -> None:
    import_lm_eval([LM_EVAL], out=tmp_path / "run")
    spec = GateSpec(
        objective="target_accuracy",
        value=0.5,
        fit="doc.category=geography",
        n_resamples=100,
        repeats=2,
    )  # type: ignore[arg-type]
    result = gate_runs([tmp_path / "run"], spec, out=tmp_path / "t.json")
    doc = json.loads((tmp_path / "t.json").read_text("utf-8"))
    assert doc["fit_slice"] == {"key": "doc.category", "value": "geography"}
    assert {g["definition"] for g in doc["gates"]} == {"maxprob", "margin", "entropy"}
    assert all(
        s.value in ("geography", "arithmetic") for g in result.analysis.gates for s in g.slices
    )
    assert not math.isnan(result.analysis.gates[0].fit.coverage.estimate)


def test_samples_are_read_line_by_line_and_located(tmp_path: Path) -> None:
    folder = tmp_path / "lm"
    folder.mkdir()
    lines = _samples().read_text("utf-8").splitlines()
    first = json.loads(lines[0])
    first["doc"]["note"] = "a\u2028b"  # JSON allows a raw line separator inside a string
    text = json.dumps(first, ensure_ascii=False) + "\n" + "\n".join(lines[1:]) + "\n"
    (folder / _samples().name).write_text(text, encoding="utf-8")
    result = import_lm_eval([folder], out=tmp_path / "run")
    assert result.mapped == 8 and result.unmappable == {}
    # a byte that is not UTF-8 is named with its file and line
    (folder / _samples().name).write_bytes(text.encode("utf-8").replace(b"\n", b"\n\xff", 1))
    with pytest.raises(InputError, match=r"samples_.*\.jsonl:2: not UTF-8"):
        import_lm_eval([folder], out=tmp_path / "run2")
