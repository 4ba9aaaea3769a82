"""``choiceaudit repair`` on blocked runs: it says what blocks the run and what to do, and
rebuilds a corrupt or deleted manifest from intact parts on request (``--rebuild-manifest``),
after which the run reads back, resumes and ends with the rows a clean run has. Parts that
cannot rebuild it (written before they carried the configuration, or by two writers) are named
with the reason, and nothing is changed."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from typer.testing import CliRunner

from choiceaudit import Query
from choiceaudit.audit import repair_run, run_scoring
from choiceaudit.cli import app
from choiceaudit.scorers import FakeScorer
from choiceaudit.store import RunStore, open_run

runner = CliRunner()
CONFIG = {"kind": "test", "n": 6, "nested": {"a": [1, 2]}}


def _queries(n: int) -> list[Query]:
    return [
        Query(state=f"state {i}", options=("yes", "no", "maybe"), meta={"item_id": str(i)})
        for i in range(n)
    ]


def _run(tmp_path: Path, name: str = "run", n: int = 4) -> Path:
    """A run of 4 of the 6 queries in parts of 2 (so a resume has 2 left to score)."""
    run = tmp_path / name
    run_scoring(FakeScorer(), _queries(6)[:n], run, chunk_size=2, config=CONFIG)
    return run


def _cli(args: list[str], code: int) -> tuple[str, list[str]]:
    result = runner.invoke(app, args)
    text = result.output
    assert result.exit_code == code, text
    assert "Traceback" not in text
    assert sum(line.startswith("error:") for line in text.splitlines()) == (code != 0), text
    return " ".join(text.split()), text.splitlines()


def test_a_corrupt_manifest_is_named_with_the_way_to_rebuild_it(tmp_path: Path) -> None:
    run = _run(tmp_path)
    (run / "manifest.json").write_text('{"config": {', encoding="utf-8")
    text, lines = _cli(["repair", str(run)], 1)
    blocked = [line for line in lines if line.startswith("blocked:")]
    assert len(blocked) == 1, lines
    assert f"{run / 'manifest.json'}: not valid UTF-8 JSON" in text
    assert "it can be rebuilt from the parts" in text
    assert f"choiceaudit repair {run} --rebuild-manifest" in text
    assert f"error: {run}: still blocked (1 problem(s) above)" in text
    assert (run / "manifest.json").read_text(encoding="utf-8") == '{"config": {'  # untouched


def test_rebuilding_a_corrupt_manifest_lets_the_run_resume_to_the_clean_rows(
    tmp_path: Path,
) -> None:
    run, clean = _run(tmp_path), _run(tmp_path, "clean", n=6)
    (run / "manifest.json").write_bytes(b"\xff\xfe garbage")
    text, _ = _cli(["repair", str(run), "--rebuild-manifest"], 0)
    assert f"rebuilt {run / 'manifest.json'} from the parts" in text
    assert "nothing else blocks it" in text
    assert (run / "quarantine" / "manifest.json").read_bytes() == b"\xff\xfe garbage"
    manifest = RunStore(run).read_manifest()
    assert manifest["config"] == CONFIG
    assert manifest["scorer"]["backend"] == "fake"
    assert (manifest["rows"], manifest["parts"], manifest["status"]) == (4, 2, "incomplete")
    assert manifest["rebuilt_from_parts"]["previous_manifest"] == "quarantine/manifest.json"
    assert manifest["repairs"][-1]["manifest_rebuilt"] is True
    assert len(open_run(run).rows) == 4  # the run reads back
    summary = run_scoring(FakeScorer(), _queries(6), run, chunk_size=2, config=CONFIG)
    assert (summary.already_done, summary.scored) == (4, 2)
    assert RunStore(run).read_manifest()["status"] == "complete"
    assert RunStore(run).read_table().to_pylist() == RunStore(clean).read_table().to_pylist()


def test_a_deleted_manifest_offers_rebuild_or_resume_and_rebuilds(tmp_path: Path) -> None:
    run = _run(tmp_path)
    (run / "manifest.json").unlink()
    report = repair_run(run)
    (blocker,) = report.blocked
    assert blocker.startswith(f"{run / 'manifest.json'} is missing; it can be rebuilt")
    report = repair_run(run, rebuild_manifest=True)
    assert report.manifest_rebuilt and report.blocked == ()
    assert RunStore(run).read_manifest()["rebuilt_from_parts"]["previous_manifest"] is None
    assert not (run / "quarantine").exists()


def _strip_config(part: Path) -> None:
    """Rewrite ``part`` as parts were written before they carried the configuration."""
    table = pq.read_table(part)
    meta = {k: v for k, v in (table.schema.metadata or {}).items() if k != b"choiceaudit.config"}
    pq.write_table(table.replace_schema_metadata(meta), part)


def test_parts_without_the_configuration_say_to_restore_the_manifest(tmp_path: Path) -> None:
    run = _run(tmp_path)
    _strip_config(RunStore(run).part_paths()[0])
    (run / "manifest.json").write_text("[1, 2, 3]", encoding="utf-8")
    text, _ = _cli(["repair", str(run), "--rebuild-manifest"], 1)
    assert "a manifest is a JSON object, this file holds a list" in text
    assert "it cannot be rebuilt from the parts: 1 part(s) (part-00000.parquet)" in text
    assert "were written before parts carried the run's configuration" in text
    assert "Restore manifest.json from a backup" in text
    assert (run / "manifest.json").read_text(encoding="utf-8") == "[1, 2, 3]"


def test_parts_of_two_writers_are_named(tmp_path: Path) -> None:
    run, other = _run(tmp_path), tmp_path / "other"
    run_scoring(FakeScorer(), _queries(6)[4:], other, chunk_size=2, config={"kind": "other"})
    stray = RunStore(run).parts_dir / "part-00009.parquet"
    RunStore(other).part_paths()[0].replace(stray)
    report = repair_run(run, rebuild_manifest=True)
    assert not report.manifest_rebuilt  # the manifest is fine; nothing to rebuild
    (blocker,) = report.blocked
    assert "written by 2 different scorers or configurations" in blocker
    assert "the odd ones out: part-00009.parquet" in blocker


def test_a_healthy_run_is_not_blocked(tmp_path: Path) -> None:
    run = _run(tmp_path)
    before = (run / "manifest.json").read_bytes()
    text, _ = _cli(["repair", str(run)], 0)
    assert "0 unreadable part(s) moved aside, 0 temporary file(s) removed" in text
    assert "nothing else blocks it" in text
    assert (run / "manifest.json").read_bytes() == before
    assert json.loads(before)["config"] == CONFIG
