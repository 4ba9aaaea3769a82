"""``choiceaudit meaning run`` end to end with the fake decision model on a synthetic
Bagdhara-schema corpus (passed as ``--corpus bagdhara:<path>``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from bagdhara_synthetic import bagdhara_record as _record
from choiceaudit.audit import (
    QUERIES_FILE,
    load_meaning_corpus,
    meaning_run_dir,
    resolve_embedder,
)
from choiceaudit.cli import app
from choiceaudit.cli._meaning import meaning_summary
from choiceaudit.store import RunStore, read_queries

runner = CliRunner()


@pytest.fixture
def corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "bagdhara.jsonl"
    lines = [json.dumps(_record(i), ensure_ascii=False) for i in range(16)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _run(out: Path, corpus_file: Path, *extra: str) -> Any:
    args = [
        "run",
        "meaning",
        "--model",
        "fake",
        "--corpus",
        f"bagdhara:{corpus_file}",
        "--out",
        str(out),
        "--experiments",
        "e1,e7",
        "--n-items",
        "6",
        "--n-order-items",
        "2",
        "--embedder",
        "none",
        *extra,
    ]
    return runner.invoke(app, args)


def test_meaning_run_scores_resumes_and_summarises(tmp_path: Path, corpus_file: Path) -> None:
    out = tmp_path / "runs"
    result = _run(out, corpus_file, "-o", "position_bias=[0, 0, 0, 50]")
    assert result.exit_code == 0, result.output
    run_dir = meaning_run_dir(out, "fake")
    assert run_dir == out / "meaning-fake"
    manifest = RunStore(run_dir).read_manifest()
    # 6 items x 5 families (tags give d-sem) + 2 items x 24 orderings, slot-bound keys only by
    # default (the paper's E7)
    assert manifest["rows"] == 6 * 5 + 2 * 24 == manifest["config"]["n_queries"]
    assert manifest["config"]["instrument"] == "meaning"
    assert manifest["config"]["families"] == ["d-rand", "d-surf", "d-sem", "d-lit", "d-hard"]
    assert manifest["config"]["skipped_experiments"] == []
    assert manifest["scorer"]["position_bias"] == [0, 0, 0, 50]
    assert "LAR d-lit" in result.output and "d-hard" in result.output
    assert "fake [bn]" in result.output  # the summary names the test language
    # a bias of 50 on slot D outweighs any hashed content score: accuracy = share of gold at D
    queries = read_queries(run_dir / QUERIES_FILE).queries
    (summary,) = meaning_summary([run_dir])
    for family in ("d-rand", "d-lit"):
        metas = [
            q.meta for q in queries if q.meta["family"] == family and q.meta["experiment"] == "e1"
        ]
        assert summary[family] == pytest.approx(np.mean([m["gold_slot"] == 3 for m in metas]))
        if family == "d-lit":
            expected = np.mean([m["literal_slot"] == 3 for m in metas])
            assert summary["LAR d-lit"] == pytest.approx(expected)
    # a second identical call resumes and scores nothing
    again = _run(out, corpus_file, "-o", "position_bias=[0, 0, 0, 50]")
    assert again.exit_code == 0, again.output
    sessions = RunStore(run_dir).read_manifest()["sessions"]
    assert len(sessions) == 2 and sessions[-1]["scored"] == 0


def test_meaning_run_reports_bad_input(tmp_path: Path, corpus_file: Path) -> None:
    result = runner.invoke(
        app, ["run", "meaning", "--model", "fake", "--corpus", "nope", "--out", str(tmp_path)]
    )
    assert result.exit_code == 1
    assert "unknown corpus 'nope'" in result.output
    bad = _run(tmp_path / "r", corpus_file, "--experiments", "e1,e9")
    assert bad.exit_code == 1 and "unknown experiments ['e9']" in bad.output
    missing = runner.invoke(
        app,
        [
            "run",
            "meaning",
            "--model",
            "fake",
            "--corpus",
            f"bagdhara:{tmp_path}/x.jsonl",
            "--out",
            str(tmp_path),
        ],
    )
    assert missing.exit_code == 1 and "file not found" in missing.output


def test_meaning_run_help_and_helpers() -> None:
    result = runner.invoke(app, ["run", "meaning", "--help"])
    assert result.exit_code == 0 and "--n-order-items" in result.output
    assert resolve_embedder("none") == (None, "none")
    with pytest.raises(ValueError, match="unknown embedder"):
        resolve_embedder("glove")
    with pytest.raises(ValueError, match="bagdhara:<path"):
        load_meaning_corpus("bagdhara:")
    assert meaning_run_dir(Path("r"), "lm-choice:smollm2") == Path("r/meaning-lm-choice-smollm2")


def test_bagdhara_needs_data(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["run", "meaning", "--model", "fake", "--corpus", "bagdhara", "--out", str(tmp_path)]
    )
    assert result.exit_code == 1 and "--data FILE" in result.output


def test_causal_lm_arm_scores_glosses_as_continuations() -> None:
    from choiceaudit import Query
    from choiceaudit.audit import queries_for

    q = Query(
        state="break the ice",
        options=("a", "b", "c", "d"),
        answer_format="key",
        perm=(1, 0, 2, 3),
        meta={"item_id": "7"},
    )
    (text,) = queries_for("smollm2", [q])
    assert text.answer_format == "text" and text.continuations() == (" a", " b", " c", " d")
    assert text.perm == q.perm and text.meta == q.meta and text.id != q.id
    assert queries_for("sparrow", [q]) == [q] and queries_for("lm-choice:smollm2", [q]) == [q]


def test_a_refused_run_leaves_the_queries_file_as_it_was(tmp_path: Path, corpus_file: Path) -> None:
    out = tmp_path / "runs"
    assert _run(out, corpus_file).exit_code == 0
    queries = meaning_run_dir(out, "fake") / QUERIES_FILE
    before = queries.read_bytes()
    refused = _run(out, corpus_file, "--n-items", "3")  # another plan into the same run
    assert refused.exit_code == 1 and "different configuration" in refused.output
    assert queries.read_bytes() == before
    with RunStore(meaning_run_dir(out, "fake")).lock():
        locked = _run(out, corpus_file, "--n-items", "3")
    assert locked.exit_code == 1 and "another process" in locked.output
    assert queries.read_bytes() == before


def test_design_preset_builds_the_commercial_arms_blocks(tmp_path: Path) -> None:
    """``--design jev`` builds the commercial arm's blocks with the contract's English seeds, and
    every summary line names its test language."""
    path = tmp_path / "bagdhara.jsonl"
    records = []
    for i in range(40):
        rec = _record(i)
        rec["literal_meaning"] = f"আক্ষরিক{i} অর্থ (plain literal sense {i})"
        rec["similar_in_english"] = [f"english equivalent {i}"]
        rec["figurative_meaning_en"] = f"figurative english gloss {i}"
        records.append(json.dumps(rec, ensure_ascii=False))
    path.write_text("\n".join(records) + "\n", encoding="utf-8")
    args = [
        "run",
        "meaning",
        "--model",
        "fake",
        "--corpus",
        f"bagdhara:{path}",
        "--out",
        str(tmp_path / "runs"),
        "--design",
        "jev",
        "--experiments",
        "e1,e6",
        "--embedder",
        "none",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    config = RunStore(meaning_run_dir(tmp_path / "runs", "fake")).read_manifest()["config"]
    assert config["design"] == "jev"
    blocks = {b["block"]: b for b in config["blocks"]}
    assert list(blocks) == ["j2_lit_en", "j3_ceiling_en", "j4_bn_control", "j5_options_en"]
    assert {b["seed_base"] for b in blocks.values()} == {12000, 11000, 14000, 16000}
    assert blocks["j2_lit_en"]["n_items"] == blocks["j3_ceiling_en"]["n_items"] == 40
    assert blocks["j5_options_en"]["n_items"] == 4  # the 10% subset
    models = [r["model"] for r in meaning_summary([meaning_run_dir(tmp_path / "runs", "fake")])]
    assert models == ["fake [en, j2_lit_en]", "fake [en, j3_ceiling_en]", "fake [bn]"]


def test_a_dry_run_prints_every_block_and_writes_nothing(tmp_path: Path) -> None:
    from choiceaudit.audit import build_meaning_plan

    # the commercial arm's blocks ask items with an English equivalent idiom
    corpus_file = tmp_path / "bagdhara.jsonl"
    records = [{**_record(i), "similar_in_english": [f"an english idiom {i}"]} for i in range(40)]
    corpus_file.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    out = tmp_path / "never"
    args = [
        "run",
        "meaning",
        "--model",
        "fake",
        "--model",
        "other",
        "--corpus",
        f"bagdhara:{corpus_file}",
        "--out",
        str(out),
        "--design",
        "jev",
        "--embedder",
        "none",
        "--dry-run",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert not out.exists()
    _, plan, _ = build_meaning_plan(
        f"bagdhara:{corpus_file}", design="jev", n_items=None, embedder="none"
    )
    rows = {name: len(build.queries) for name, build in plan.builds.items()}
    assert rows["j1_order"] > 0 and rows["j4_bn_control"] > 0
    main = sum(n for name, n in rows.items() if name != "matrix")
    text = " ".join(result.output.split())
    for name in rows:
        assert name in text
    # j1_order: 24 slot-bound orderings per item, never the travelling keys unless asked
    assert rows["j1_order"] == 24 * len(
        {q.meta["item_id"] for q in plan.builds["j1_order"].queries}
    )
    assert (
        f"total: {main:,} rows without the capture matrix + {rows.get('matrix', 0):,} "
        f"capture-matrix rows = {sum(rows.values()):,} rows; {2 * sum(rows.values()):,} calls "
        "over 2 model(s)"
    ) in text


@pytest.mark.parametrize("n_rows", [0, 1, 3])
def test_a_corpus_too_small_for_one_slate_is_one_error(tmp_path: Path, n_rows: int) -> None:
    from bagdhara_synthetic import write_bagdhara

    corpus = write_bagdhara(tmp_path / "b.jsonl", n_rows) if n_rows else tmp_path / "b.jsonl"
    if not n_rows:
        corpus.write_bytes(b"")  # a 0-byte file
    for embedder in ("none", "auto"):
        result = runner.invoke(
            app,
            [
                "run",
                "meaning",
                "-m",
                "fake",
                "--corpus",
                "bagdhara",
                "--data",
                str(corpus),
                "--embedder",
                embedder,
                "--out",
                str(tmp_path / "runs"),
            ],
        )
        assert result.exit_code == 1, result.output
        assert "Traceback" not in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        text = " ".join(result.output.split())
        assert f"error: {corpus}: {n_rows} usable idiom(s)" in text, text
        assert "so at least 4" in text
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--design", "jev", "--n-items", "-1"], "error: n_items: must be 0 (every usable"),
        (["--n-items", "-3"], "error: n_items: must be 0 (every usable item) or more, got -3"),
        (["--n-matrix-items", "-1"], "error: matrix_items: must be 0 (every usable item) or"),
        (["--n-order-items", "0"], "error: n_order_items: must be 1 or more, got 0"),
        (["--design", "jev", "--languages", "xx"], "error: languages: --design jev fixes each"),
        (["--design", "jev"], "error: design: --design jev plans no row on corpus idioms-en"),
    ],
)
def test_meaning_plan_arguments_it_cannot_honour_are_one_error(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    for dry in ([], ["--dry-run"]):
        result = runner.invoke(
            app,
            [
                "run",
                "meaning",
                "-m",
                "fake",
                "--embedder",
                "none",
                *args,
                *dry,
                "--out",
                str(tmp_path / "runs"),
            ],
        )
        assert result.exit_code == 1, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert " ".join(result.output.split()).startswith(expected), result.output
    assert not (tmp_path / "runs").exists()


def test_the_library_reads_zero_items_as_every_item_like_the_command(corpus_file: Path) -> None:
    from choiceaudit.audit import build_meaning_plan

    every = build_meaning_plan(f"bagdhara:{corpus_file}", n_items=None, embedder="none")[1]
    zero = build_meaning_plan(f"bagdhara:{corpus_file}", n_items=0, embedder="none")[1]
    assert [q.id for q in zero.queries()] == [q.id for q in every.queries()]
