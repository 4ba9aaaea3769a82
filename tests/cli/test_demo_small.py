"""``choiceaudit demo --size small`` as a user runs it (MiniLM loaded for cosine and d-sem), run
twice. Its own module, so no other test's cut-down plan or patched figures are in force."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from choiceaudit.cli import app
from cli.demo_helpers import assert_phases_printed_and_timed, demo_args, manifests

runner = CliRunner()


@pytest.mark.slow  # the real --size small twice, MiniLM loaded for cosine and d-sem
def test_demo_runs_both_instruments_and_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result = runner.invoke(app, demo_args(out))
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert_phases_printed_and_timed(out, text, 128)  # 16 items, 8 queries each
    html = (out / "report" / "index.html").read_text()
    assert 'id="signalling' in html and 'id="meaning' in html
    runs = set(manifests(out))
    expected = {"signalling/fake", "signalling/uniform", "signalling/salience", "signalling/bayes"}
    assert expected | {"meaning/meaning-fake"} <= runs
    manifest = json.loads((out / "meaning" / "meaning-fake" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["config"]["instrument"] == "meaning"
    # A second demo resumes every run and scores nothing new.
    again = runner.invoke(app, demo_args(out))
    assert again.exit_code == 0
    manifest = json.loads((out / "meaning" / "meaning-fake" / "manifest.json").read_text())
    assert manifest["sessions"][-1]["scored"] == 0
