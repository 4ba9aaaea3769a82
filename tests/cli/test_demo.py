from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from choiceaudit.cli import app

runner = CliRunner()


def test_demo_runs_both_instruments_and_writes_the_report(tmp_path: Path):
    out = tmp_path / "demo"
    args = [
        "demo",
        "--size",
        "small",
        "--lm",
        "fake",
        "--decision-model",
        "fake",
        "--out",
        str(out),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "signalling coordinates" in text and "accuracy by distractor family" in text
    # the first table's time, then where the time went, printed and written beside the runs
    assert text.index("first table after") < text.index("accuracy by distractor family")
    assert "time by phase" in text and "by kind:" in text
    timing = json.loads((out / "timing.json").read_text())
    names = [p["name"] for p in timing["phases"]]
    assert "signalling · fake: scoring" in names and names[-1] == "report: tables, figures, HTML"
    scored = {p["name"]: p["rows"] for p in timing["phases"] if p["kind"] == "score"}
    assert scored["signalling · fake: scoring"] == 128  # 16 items, 8 queries each
    html = (out / "report" / "index.html").read_text()
    assert 'id="signalling' in html and 'id="meaning' in html
    runs = {p.parent.relative_to(out).as_posix() for p in out.glob("*/*/manifest.json")}
    expected = {"signalling/fake", "signalling/uniform", "signalling/salience", "signalling/bayes"}
    assert expected | {"meaning/meaning-fake"} <= runs
    manifest = json.loads((out / "meaning" / "meaning-fake" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["config"]["instrument"] == "meaning"
    # A second demo resumes every run and scores nothing new.
    again = runner.invoke(app, args)
    assert again.exit_code == 0
    manifest = json.loads((out / "meaning" / "meaning-fake" / "manifest.json").read_text())
    assert manifest["sessions"][-1]["scored"] == 0


def test_demo_sizes_split_evenly_over_tiles_and_conflict():
    # Signalling selection balances 4 tiles × conflict/control, so item counts must divide by 8.
    from choiceaudit.cli._demo import DEMO_SIZES

    for size in DEMO_SIZES.values():
        assert size.signalling_items % 8 == 0
