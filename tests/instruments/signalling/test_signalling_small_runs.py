"""Small and degenerate signalling runs end in a report with typed skips, never a traceback:
``run_signalling`` → ``analyse_runs`` → ``build_report`` at 1, 4 and 8 items, with a model that
has the battery's three scoring rules (so the §IV-C correlation and the slopes are attempted)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from choiceaudit.audit import analyse_runs, run_signalling
from choiceaudit.instruments.signalling import SignallingAnalysis
from choiceaudit.report import build_report
from choiceaudit.types import Decision, Query


def _h(text: str) -> float:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


class ThreeRuleLM:
    """A deterministic stand-in for a causal LM: PMI, sum and mean scores per option from a
    hash of the item's text and the option, so choices depend on the item."""

    name = "three-rule-lm"

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        out = []
        for q in queries:
            base = np.array([_h(q.state + o) for o in q.options])
            scores = {"pmi": base, "sum": base[::-1].copy(), "mean": np.roll(base, 1)}
            z = np.exp(base - base.max())
            out.append(Decision(query_id=q.id, probs=z / z.sum(), scores=scores))
        return out

    def describe(self) -> dict[str, Any]:
        return {"backend": "test", "model": "three-rule-lm"}


@pytest.mark.parametrize("n_items", [1, 4, 8])
def test_small_runs_report_skips_not_tracebacks(n_items: int, tmp_path: Path) -> None:
    runs = run_signalling(
        [ThreeRuleLM()],
        ["uniform", "salience", "bayes"],
        out=tmp_path / "runs",
        norms="lancaster",
        n_items=n_items,
        formats=("V",),
    )
    (analysis,) = [a for a in analyse_runs(runs) if isinstance(a, SignallingAnalysis)]
    index = build_report([analysis], out=tmp_path / "report")
    assert index.is_file()
    assert len({c.chooser for c in analysis.cells}) == 4
    # three model x rule cells; a correlation over them is attempted, and whatever cannot be
    # computed on this few items is a typed skip with its reason
    assert sum(c.kind == "model" for c in analysis.cells) == 3
    skipped = " | ".join(str(s) for s in analysis.skipped)
    if n_items < 4:
        assert "fit_cost" in skipped
    # too few items for an interval against random: no cell is tested, each says why
    for c in analysis.cells:
        assert c.n_items < 6
        assert c.delta_excludes_zero is None and c.delta_excludes_zero_bonferroni is None
        assert np.isnan(c.delta_low) and np.isnan(c.delta_high)
        assert f"interval of delta vs random for {c.chooser}/{c.rule}" in skipped
    assert analysis.random_comparison == ()
    r = analysis.excess_r
    assert r is not None and r.n_cells == 3
    if r.estimate is None:
        assert "r between excess and distance from random" in skipped


def test_one_item_through_the_command_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from choiceaudit.cli import app

    runner = CliRunner()
    out = tmp_path / "runs"
    args = ["run", "signalling", "--norms", "lancaster", "--n-items", "1", "--model", "fake"]
    result = runner.invoke(app, [*args, "--chooser", "uniform", "--format", "V", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.exception is None
    report = runner.invoke(
        app, ["report", str(out / "fake"), str(out / "uniform"), "--out", str(tmp_path / "rep")]
    )
    assert report.exit_code == 0 and report.exception is None, report.output
    assert (tmp_path / "rep" / "index.html").is_file()


def test_uneven_item_counts_are_as_balanced_as_possible() -> None:
    from choiceaudit.instruments.signalling._selection import cell_counts

    counts = cell_counts(5, ["a", "b"])
    assert counts == {
        ("a", "conflict"): 2,
        ("b", "conflict"): 1,
        ("a", "control"): 1,
        ("b", "control"): 1,
    }
    assert cell_counts(1, ["a", "b"])[("a", "conflict")] == 1
    assert sum(cell_counts(8, ["a", "b", "c", "d"]).values()) == 8
    assert set(cell_counts(8, ["a", "b", "c", "d"]).values()) == {1}  # even counts unchanged
