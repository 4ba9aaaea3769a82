"""The order audit of plain scoring runs when items have menus of different sizes.

Orderings are compared within one option count: a run whose items have 3- and 4-option menus
gets one audit per size; an item shown with different option counts under its orderings is
refused by name. Never a traceback (the report once died building a ragged array here).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from typer.testing import CliRunner

from choiceaudit.cli import app
from choiceaudit.instruments.scoring import analyse_scoring_runs
from choiceaudit.types import Query
from scoring_helpers import arm_of

runner = CliRunner()


def _rendered(item: str, canonical: list[str], perm: str, probs: list[float]) -> Query:
    """``canonical`` options shown in the order ``perm``; the decision will be ``probs``."""
    return Query(
        state=f"state {item}",
        options=tuple(canonical[int(c)] for c in perm),
        perm=tuple(int(c) for c in perm),
        meta={"item_id": item, "gold": 0, "probs": probs},
    )


def test_each_menu_size_gets_its_own_audit(tmp_path: Path) -> None:
    three = ["a", "b", "c"]
    four = ["w", "x", "y", "z"]
    queries = [
        # item 3: slot 0 always wins, so the answer follows the ordering (instability 1)
        _rendered("i3", three, "012", [0.6, 0.3, 0.1]),
        _rendered("i3", three, "102", [0.6, 0.3, 0.1]),
        # item 4: the canonical option 0 wins wherever it is shown (instability 0)
        _rendered("i4", four, "0123", [0.7, 0.1, 0.1, 0.1]),
        _rendered("i4", four, "1023", [0.1, 0.7, 0.1, 0.1]),
    ]
    analysis = analyse_scoring_runs([arm_of(tmp_path, queries)])
    by_k = {c.k: c for c in analysis.order_audit}
    assert sorted(by_k) == [3, 4]
    assert (by_k[3].items, by_k[3].orderings, by_k[3].answer_instability) == (1, 2, 1.0)
    assert (by_k[4].items, by_k[4].orderings, by_k[4].answer_instability) == (1, 2, 0.0)
    # gold is option 0: its probability is 0.6 then 0.3 for item 3, 0.7 in both for item 4
    assert by_k[3].mean_gold_prob_range == 0.6 - 0.3
    assert by_k[4].mean_gold_prob_range == 0.0
    assert not [s for s in analysis.skipped if s.analysis == "order audit"]


def test_an_item_shown_with_different_option_counts_is_refused_by_name(tmp_path: Path) -> None:
    queries = [
        _rendered("mixed", ["a", "b", "c"], "012", [0.5, 0.3, 0.2]),
        _rendered("mixed", ["a", "b", "c", "d"], "1023", [0.4, 0.3, 0.2, 0.1]),
        _rendered("ok", ["a", "b"], "01", [0.8, 0.2]),
        _rendered("ok", ["a", "b"], "10", [0.8, 0.2]),
    ]
    analysis = analyse_scoring_runs([arm_of(tmp_path, queries)])
    assert [(c.k, c.items) for c in analysis.order_audit] == [(2, 1)]
    (refused,) = [s for s in analysis.skipped if s.analysis == "order audit"]
    assert "item 'mixed' is shown with [3, 4] options" in refused.reason


def test_report_on_a_four_line_query_file_with_mixed_option_counts(tmp_path: Path) -> None:
    lines = [
        {"state": "Pick.", "options": ["a", "b", "c"], "perm": "012", "meta": {"item_id": "i1"}},
        {"state": "Pick.", "options": ["b", "a", "c"], "perm": "102", "meta": {"item_id": "i1"}},
        {
            "state": "Two.",
            "options": ["w", "x", "y", "z"],
            "perm": "0123",
            "meta": {"item_id": "i2"},
        },
        {
            "state": "Two.",
            "options": ["x", "w", "y", "z"],
            "perm": "1023",
            "meta": {"item_id": "i2"},
        },
    ]
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(line) + "\n" for line in lines))
    scored = runner.invoke(
        app, ["score", str(qfile), "--model", "fake", "--out", str(tmp_path / "run")]
    )
    assert scored.exit_code == 0, scored.output
    result = runner.invoke(app, ["report", str(tmp_path / "run"), "--out", str(tmp_path / "rep")])
    assert result.exit_code == 0, result.output
    with open(tmp_path / "rep" / "tables" / "order_audit.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["k"], r["items"], r["orderings"]) for r in rows] == [
        ("3", "1", "2"),
        ("4", "1", "2"),
    ]
