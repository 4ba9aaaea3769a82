"""A meaning run counts, over every stored row, the rows whose returned choice is not the argmax
of the returned vector (a decision model may report both)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from choiceaudit.audit._meaning import record_choice_check
from choiceaudit.store import RunStore
from choiceaudit.types import Decision, Query


def test_choice_not_argmax_is_counted_in_the_manifest(tmp_path: Path) -> None:
    """Every row whose returned choice is not the argmax of the returned vector
    is counted in the run's manifest (resume-proof: counted over all stored rows)."""
    store = RunStore(tmp_path / "run")
    store.write_manifest({"config": {}, "sessions": []})
    rows = []
    for i, choice in enumerate(["B", "A", "C", None]):
        query = Query(state=f"s{i}", options=("w", "x", "y", "z"), meta={"item_id": str(i)})
        raw = np.array([0.1, 0.6, 0.3, 0.0])
        aux = {} if choice is None else {"reported_choice": choice}
        rows.append(
            (i, query, Decision(query_id=query.id, probs=raw, scores={"prob": raw}, aux=aux))
        )
    store.write_part(rows)
    assert record_choice_check(store) == 2
    manifest = store.read_manifest()
    assert manifest["choice_not_argmax_rows"] == 2 and manifest["rows_with_choice"] == 3
