"""A corrupt store through every command that opens one: a study's ``responses.sqlite``
(``serve-human`` reopening the study, ``import human``, ``withdraw-human``) and a run's
``manifest.json`` or Parquet part (``score`` resuming, ``report``, ``gate``, ``repair``). Each is
one ``error:`` line naming the file and what to do, exit 1, and no traceback."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from choiceaudit.cli import app
from choiceaudit.human import DB_FILE, ResponsesDB, open_study, parse_study_file
from choiceaudit.store import RunStore, write_queries
from choiceaudit.types import Query
from human.human_helpers import frozen_items, study_file

runner = CliRunner()


def _one_error(args: list[str]) -> str:
    result = runner.invoke(app, args)
    text = result.output
    assert result.exit_code == 1, text
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in text
    lines = text.splitlines()
    assert sum(line.startswith("error:") for line in lines) == 1, text
    assert not any(line.startswith("serving") for line in lines), text
    return " ".join(text.split())


def _study(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(items, study file, study directory) of a study that has its responses file."""
    items, toml = frozen_items(tmp_path), study_file(tmp_path)
    study = tmp_path / "study"
    _, _, secret = open_study(items, study, parse_study_file(toml))
    ResponsesDB(study / DB_FILE, secret=secret).close()
    return items, toml, study


def _garbage(db: Path) -> None:
    db.write_bytes(b"this is not a database" * 200)


def _truncated(db: Path) -> None:
    """A real SQLite file cut after its header page: SQLite opens it, then finds it malformed."""
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=DELETE")
    con.execute("CREATE TABLE filler (x TEXT)")
    con.executemany("INSERT INTO filler VALUES (?)", [("x" * 500,)] * 200)
    con.commit()
    con.close()
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])


@pytest.mark.parametrize("damage", [_garbage, _truncated], ids=["garbage", "truncated"])
def test_a_corrupt_responses_file_is_one_error_from_every_study_command(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    items, _, study = _study(tmp_path)
    db = study / DB_FILE
    for suffix in ("-wal", "-shm"):
        (study / (DB_FILE + suffix)).unlink(missing_ok=True)
    damage(db)
    commands = {
        "serve-human": ["serve-human", str(items), "--out", str(study), "--port", "0"],
        "import human": ["import", "human", str(study), "--out", str(tmp_path / "people")],
        "withdraw-human": ["withdraw-human", str(study), "C001"],
    }
    for name, args in commands.items():
        text = _one_error(args)
        assert f"{db}: not a readable SQLite responses database" in text, (name, text)
        assert "restore it from a backup" in text, (name, text)
    assert not (tmp_path / "people").exists()


def _scored(tmp_path: Path) -> tuple[Path, Path]:
    qfile = tmp_path / "q.jsonl"
    queries = [
        Query(state=f"s{i}", options=("a", "b"), meta={"item_id": str(i), "gold": 0})
        for i in range(4)
    ]
    write_queries(qfile, queries)
    run = tmp_path / "run"
    result = runner.invoke(
        app, ["score", str(qfile), "-m", "fake", "--out", str(run), "--chunk-size", "2"]
    )
    assert result.exit_code == 0, result.output
    return qfile, run


def _run_commands(qfile: Path, run: Path, tmp_path: Path) -> dict[str, list[str]]:
    return {
        "score (resume)": ["score", str(qfile), "-m", "fake", "--out", str(run)],
        "report": ["report", str(run), "--out", str(tmp_path / "rep")],
        "gate": [
            "gate",
            str(run),
            "--fit",
            "item_id=1",
            "--out",
            str(tmp_path / "t.json"),
            "--target-accuracy",
            "0.9",
        ],
        "repair": ["repair", str(run)],
    }


@pytest.mark.parametrize(
    "content", [b'{"config": {', b"\xff\xfe\x00", b"[1, 2, 3]", b'{"rows": "four"}']
)
def test_a_corrupt_manifest_is_one_error_from_every_run_command(
    tmp_path: Path, content: bytes
) -> None:
    qfile, run = _scored(tmp_path)
    manifest = run / "manifest.json"
    manifest.write_bytes(content)
    for name, args in _run_commands(qfile, run, tmp_path).items():
        text = _one_error(args)
        assert f"{manifest}:" in text, (name, text)
        assert "choiceaudit repair" in text or "--rebuild-manifest" in text, (name, text)
    assert manifest.read_bytes() == content  # no command rewrote it


def test_a_corrupt_part_is_one_error_naming_it_and_repair_unblocks_it(tmp_path: Path) -> None:
    qfile, run = _scored(tmp_path)
    part = RunStore(run).part_paths()[0]
    part.write_bytes(part.read_bytes()[:50])
    commands = _run_commands(qfile, run, tmp_path)
    for name in ("score (resume)", "report", "gate"):
        text = _one_error(commands[name])
        assert f"{part}: unreadable Parquet part" in text, (name, text)
        assert f"choiceaudit repair {run}" in text, (name, text)
    result = runner.invoke(app, commands["repair"])
    assert result.exit_code == 0, result.output
    assert "1 unreadable part(s) moved aside" in result.output
