"""A corrupt lm-eval ``results_<time>.json`` beside the samples is a warning: the samples are
imported, the warning is recorded in the run's manifest and printed by the CLI, and nothing ends
in a traceback (the results file carries only the version, model name and task settings)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from choiceaudit.audit import import_lm_eval
from choiceaudit.cli import app
from choiceaudit.store import open_run

LM_EVAL = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "lm_eval"


def _copy(tmp_path: Path) -> tuple[Path, Path]:
    target = tmp_path / "lm_eval"
    shutil.copytree(LM_EVAL, target)
    (results,) = sorted(target.glob("results_*.json"))
    return target, results


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b'{"lm_eval_version": "0.4', "not valid JSON"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b"[1, 2, 3]", "holds a JSON list"),
    ],
)
def test_a_corrupt_results_file_is_a_recorded_warning(
    tmp_path: Path, content: bytes, said: str
) -> None:
    source, results = _copy(tmp_path)
    results.write_bytes(content)
    result = import_lm_eval([source], out=tmp_path / "run")
    assert result.mapped == 8  # every sample still imported
    assert result.version is None
    (warning,) = result.warnings
    assert warning.startswith(f"{results}: {said}")
    assert "version, model name and task configuration are unknown" in warning
    config = open_run(tmp_path / "run").manifest.config
    assert config["warnings"] == [warning]
    assert config["tasks"]["choiceaudit_mc"]["output_type"] is None


def test_a_readable_results_file_gives_no_warning(tmp_path: Path) -> None:
    source, _ = _copy(tmp_path)
    result = import_lm_eval([source], out=tmp_path / "run")
    assert result.warnings == ()
    assert result.version == "0.4.13"
    assert open_run(tmp_path / "run").manifest.config["warnings"] == []


def test_results_fields_of_the_wrong_type_are_read_as_absent(tmp_path: Path) -> None:
    source, results = _copy(tmp_path)
    results.write_text('{"configs": [1], "config": "x", "versions": 3}', encoding="utf-8")
    result = import_lm_eval([source], out=tmp_path / "run")
    assert result.mapped == 8 and result.warnings == ()
    assert open_run(tmp_path / "run").manifest.config["tasks"]["choiceaudit_mc"]["version"] is None


def test_the_cli_prints_the_warning_and_succeeds(tmp_path: Path) -> None:
    source, results = _copy(tmp_path)
    results.write_bytes(b"{not json")
    outcome = CliRunner().invoke(
        app, ["import", "lm-eval", str(source), "--out", str(tmp_path / "r")]
    )
    assert outcome.exit_code == 0, outcome.output
    assert "Traceback" not in outcome.output
    lines = [line for line in outcome.output.splitlines() if line.startswith("warning:")]
    assert len(lines) == 1 and str(results.name) in lines[0], outcome.output
    assert "8 row(s) imported" in " ".join(outcome.output.split())
