"""Nothing silent in the scoring loop — no write before the checks pass, a manifest
that never goes stale, parts stamped with their writer, temporaries cleaned, a way out of a
corrupt part, and skipped input lines recorded one by one."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from choiceaudit import Query
from choiceaudit.audit import repair_run, run_scoring
from choiceaudit.cli import app
from choiceaudit.errors import ScorerError, StoreError
from choiceaudit.scorers import FakeScorer
from choiceaudit.store import RunStore, write_queries


def _queries(n: int) -> list[Query]:
    return [
        Query(state=f"state {i}", options=(f"a{i}", f"b{i}", f"c{i}"), meta={"item_id": str(i)})
        for i in range(n)
    ]


def _marker(directory: Path) -> None:
    (directory / "beside.txt").write_text("written after the checks", encoding="utf-8")


def test_a_refused_session_writes_nothing_into_the_run(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run_scoring(FakeScorer(), _queries(4), run, config={"n": 4}, on_accepted=_marker)
    (run / "beside.txt").write_text("the first session's file", encoding="utf-8")
    before = (run / "manifest.json").read_bytes()
    with pytest.raises(StoreError, match="different configuration"):
        run_scoring(FakeScorer(), _queries(2), run, config={"n": 2}, on_accepted=_marker)
    with pytest.raises(StoreError, match="scored by"):
        run_scoring(
            FakeScorer(name="other"), _queries(4), run, config={"n": 4}, on_accepted=_marker
        )
    with RunStore(run).lock(), pytest.raises(StoreError, match="another process"):
        run_scoring(FakeScorer(), _queries(4), run, config={"n": 4}, on_accepted=_marker)
    assert (run / "beside.txt").read_text(encoding="utf-8") == "the first session's file"
    assert (run / "manifest.json").read_bytes() == before


class _Boom(FakeScorer):
    def __init__(self, fail_on_call: int) -> None:
        super().__init__()
        self.fail_on_call = fail_on_call
        self.batches = 0

    def score(self, queries):  # type: ignore[no-untyped-def]
        self.batches += 1
        if self.batches == self.fail_on_call:
            raise ScorerError("the backend fell over")
        return super().score(queries)


def test_an_error_exit_records_failed_with_the_reason_and_the_count(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with pytest.raises(ScorerError, match="fell over"):
        run_scoring(_Boom(fail_on_call=3), _queries(10), run, chunk_size=2)
    manifest = RunStore(run).read_manifest()
    assert manifest["status"] == "failed"
    assert manifest["failure"] == "ScorerError: the backend fell over"
    session = manifest["sessions"][0]
    assert session["outcome"] == "failed" and session["scored"] == 4 and manifest["rows"] == 4
    summary = run_scoring(FakeScorer(), _queries(10), run, chunk_size=2)
    assert summary.scored == 6 and summary.already_done == 4
    manifest = RunStore(run).read_manifest()
    assert manifest["status"] == "complete" and "failure" not in manifest


def test_parts_carry_their_writer_so_a_lost_manifest_adopts_nothing(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run_scoring(FakeScorer(name="first"), _queries(6), run, chunk_size=3, config={"c": 1})
    (run / "manifest.json").unlink()
    with pytest.raises(StoreError, match="was written by scorer"):
        run_scoring(FakeScorer(name="second"), _queries(6), run, config={"c": 1})
    with pytest.raises(StoreError, match="another configuration"):
        run_scoring(FakeScorer(name="first"), _queries(6), run, config={"c": 2})
    summary = run_scoring(FakeScorer(name="first"), _queries(6), run, config={"c": 1})
    assert summary.scored == 0 and summary.already_done == 6
    stamp = pq.read_schema(RunStore(run).part_paths()[0]).metadata
    assert b"choiceaudit.scorer_identity" in stamp


def test_manifest_temporaries_of_a_killed_write_are_cleaned(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run_scoring(FakeScorer(), _queries(2), run)
    (run / ".manifest.json.x1y2.tmp").write_text("{half", encoding="utf-8")
    (run / "decisions" / ".part-00009.parquet.zz.tmp").write_bytes(b"PAR")
    run_scoring(FakeScorer(), _queries(2), run)
    assert not list(run.glob(".manifest.json.*.tmp"))
    assert RunStore(run).read_manifest()["sessions"][-1]["stale_partial_files_removed"] == 2


def test_a_corrupt_part_names_itself_and_repair_rescores_exactly_its_rows(
    tmp_path: Path,
) -> None:
    queries = _queries(9)
    run, clean = tmp_path / "run", tmp_path / "clean"
    run_scoring(FakeScorer(), queries, run, chunk_size=3)
    run_scoring(FakeScorer(), queries, clean, chunk_size=3)
    bad = RunStore(run).part_paths()[1]
    bad.write_bytes(bad.read_bytes()[:40])  # truncated
    with pytest.raises(StoreError, match=rf"{bad.name}.*choiceaudit repair"):
        run_scoring(FakeScorer(), queries, run, chunk_size=3)
    report = repair_run(run)
    assert [p for p, _ in report.moved] == [f"quarantine/{bad.name}"]
    manifest = RunStore(run).read_manifest()
    assert manifest["repairs"][0]["moved"][0]["part"] == f"quarantine/{bad.name}"
    assert manifest["rows"] == 6
    summary = run_scoring(FakeScorer(), queries, run, chunk_size=3)
    assert summary.scored == 3 and summary.already_done == 6
    got = RunStore(run).read_table().to_pylist()
    want = RunStore(clean).read_table().to_pylist()
    assert got == want


def test_repair_from_the_command_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run_scoring(FakeScorer(), _queries(4), run, chunk_size=2)
    part = RunStore(run).part_paths()[0]
    part.write_bytes(b"not parquet")
    result = CliRunner().invoke(app, ["repair", str(run)])
    assert result.exit_code == 0, result.output
    assert "1 unreadable part(s) moved aside" in result.output


def test_skip_invalid_records_every_line_and_reason(tmp_path: Path) -> None:
    qfile = tmp_path / "q.jsonl"
    write_queries(qfile, _queries(2))
    with qfile.open("a", encoding="utf-8") as handle:
        handle.write("{not json\n")
        handle.write(json.dumps({"state": "s", "options": []}) + "\n")
    result = CliRunner().invoke(
        app,
        ["score", str(qfile), "--model", "fake", "--out", str(tmp_path / "r"), "--skip-invalid"],
    )
    assert result.exit_code == 0, result.output
    session = RunStore(tmp_path / "r").read_manifest()["sessions"][0]
    lines = session["skipped_input_lines"]
    assert [entry["line"] for entry in lines] == [3, 4]
    assert lines[0]["field"] == "json" and lines[1]["field"] == "options"
    assert session["skipped_input"] == {"invalid_input_line": 2}
    record = session["skipped_input_file"]
    written = (tmp_path / "r" / record["file"]).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in written] == lines and record["count"] == 2


def test_skipped_lines_are_written_once_and_the_manifest_lists_twenty(tmp_path: Path) -> None:
    qfile = tmp_path / "q.jsonl"
    write_queries(qfile, _queries(2))
    with qfile.open("a", encoding="utf-8") as handle:
        handle.write("{not json\n" * 500)
    result = CliRunner().invoke(
        app,
        ["score", str(qfile), "--model", "fake", "--out", str(tmp_path / "r"), "--skip-invalid"],
    )
    assert result.exit_code == 0, result.output
    session = RunStore(tmp_path / "r").read_manifest()["sessions"][0]
    assert len(session["skipped_input_lines"]) == 20
    record = session["skipped_input_file"]
    assert record["count"] == 500 and record["file"] == "skipped-input-0.jsonl"
    assert len((tmp_path / "r" / record["file"]).read_text(encoding="utf-8").splitlines()) == 500
