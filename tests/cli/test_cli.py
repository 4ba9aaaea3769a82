from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from choiceaudit.cli import app, parse_options
from choiceaudit.store import RunStore

runner = CliRunner()


def _commands(
    group: Any = None, prefix: tuple[str, ...] = ()
) -> list[tuple[str, ...]]:  # every command path, nested groups included
    import typer.main

    click_app = typer.main.get_command(app) if group is None else group
    out: list[tuple[str, ...]] = []
    for name, cmd in getattr(click_app, "commands", {}).items():
        out.append((*prefix, name))
        out.extend(_commands(cmd, (*prefix, name)))
    return out


def test_every_command_has_help() -> None:
    commands = _commands()
    assert ("models",) in commands and ("score",) in commands
    for path in commands:
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage" in result.output


def test_models_lists_installed_state_as_json() -> None:
    result = runner.invoke(app, ["models", "--json"])
    assert result.exit_code == 0
    rows = {row["name"]: row for row in json.loads(result.output)}
    assert rows["sparrow"]["installed"] is True


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


GOOD = json.dumps({"state": "s", "options": ["a", "b"], "meta": {"item_id": "1"}})


def test_bad_lines_reported_with_line_and_field(tmp_path: Path) -> None:
    qfile = write_lines(
        tmp_path / "q.jsonl",
        [
            GOOD,
            "",
            json.dumps({"state": "s"}),  # line 3: options missing
            json.dumps({"state": "s", "options": ["a", "a"]}),  # line 4: not distinct
            "{not json",  # line 5
            json.dumps({"state": "s", "options": ["a", "b"], "colour": "red"}),  # line 6: unknown
            json.dumps({"state": "s", "options": ["a", "b"], "perm": "00"}),  # line 7
        ],
    )
    result = runner.invoke(
        app, ["score", str(qfile), "--model", "fake", "--out", str(tmp_path / "run")]
    )
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert "5 invalid line(s)" in text
    assert f"{qfile}:3: options: required field 'options' is missing" in text
    assert f"{qfile}:4: options: Query.options are not distinct" in text
    assert f"{qfile}:5: json:" in text
    assert f"{qfile}:6: colour: unknown field 'colour'" in text
    assert f"{qfile}:7: perm:" in text
    assert not (tmp_path / "run").exists()  # nothing scored from a bad file


def test_skip_invalid_scores_the_rest_and_counts_the_skips(tmp_path: Path) -> None:
    qfile = write_lines(tmp_path / "q.jsonl", [GOOD, json.dumps({"state": "s"})])
    result = runner.invoke(
        app,
        ["score", str(qfile), "--model", "fake", "--out", str(tmp_path / "run"), "--skip-invalid"],
    )
    assert result.exit_code == 0, result.output
    store = RunStore(tmp_path / "run")
    assert store.read_table().num_rows == 1
    assert store.read_manifest()["sessions"][0]["skipped_input"] == {"invalid_input_line": 1}


def test_unknown_model_is_reported_without_a_traceback(tmp_path: Path) -> None:
    qfile = write_lines(tmp_path / "q.jsonl", [GOOD])
    result = runner.invoke(
        app, ["score", str(qfile), "--model", "nope", "--out", str(tmp_path / "r")]
    )
    assert result.exit_code == 1
    assert "unknown model 'nope'" in result.output and "Traceback" not in result.output


def test_parse_options() -> None:
    assert parse_options(["batch_size=8", "dtype=bfloat16", "bias=[1, 2]"]) == {
        "batch_size": 8,
        "dtype": "bfloat16",
        "bias": [1, 2],
    }
    import typer

    with pytest.raises(typer.BadParameter):
        parse_options(["novalue"])
