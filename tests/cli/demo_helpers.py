"""What the demo tests share: the command line, the run directories it wrote, and the check of
its printed phases and timing record (the fast tests run a cut-down plan, the slow one the real
``--size small``, so only the number of signalling rows differs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["assert_phases_printed_and_timed", "demo_args", "manifests"]


def demo_args(out: Path) -> list[str]:
    models = ["--lm", "fake", "--decision-model", "fake"]
    return ["demo", "--size", "small", *models, "--out", str(out)]


def manifests(out: Path) -> dict[str, dict[str, Any]]:
    """Every run directory under ``out`` (``instrument/run``) with its manifest."""
    return {
        p.parent.relative_to(out).as_posix(): json.loads(p.read_text())
        for p in out.glob("*/*/manifest.json")
    }


def assert_phases_printed_and_timed(out: Path, text: str, signalling_rows: int) -> None:
    """Both summaries printed, the first table's time before meaning's, where the time went
    printed and written beside the runs, and the fake model's signalling rows scored."""
    assert "signalling coordinates" in text and "accuracy by distractor family" in text
    assert text.index("first table after") < text.index("accuracy by distractor family")
    assert "time by phase" in text and "by kind:" in text
    timing = json.loads((out / "timing.json").read_text())
    names = [p["name"] for p in timing["phases"]]
    assert "signalling · fake: scoring" in names and names[-1] == "report: tables, figures, HTML"
    scored = {p["name"]: p["rows"] for p in timing["phases"] if p["kind"] == "score"}
    assert scored["signalling · fake: scoring"] == signalling_rows
