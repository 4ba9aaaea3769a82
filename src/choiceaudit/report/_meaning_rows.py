"""A meaning run's stored rows back as :class:`~choiceaudit.instruments.meaning.MeaningRows`.

The query meta written by the instrument (``make_query`` / ``render_query``) carries everything the
analyses need beside the row's own columns: item id, experiment, family, condition, language, the
gold and literal slots and the permutation. A row missing one of them is an error naming the run
directory, the row and the field; nothing is dropped.
"""

from __future__ import annotations

from typing import Any

from choiceaudit.instruments.meaning import MeaningRows
from choiceaudit.store import Run

__all__ = ["MEANING_META_FIELDS", "meaning_rows"]

#: Meta keys every meaning row must carry (``literal_slot`` may be null: no literal gloss).
MEANING_META_FIELDS = (
    "item_id",
    "experiment",
    "family",
    "condition",
    "language",
    "gold_slot",
    "literal_slot",
    "perm",
)


def meaning_rows(run: Run) -> MeaningRows:
    """Rebuild the analysis columns from a run's rows (see the module docstring)."""
    records: list[dict[str, Any]] = []
    for index, row in enumerate(run.rows):
        meta = row.meta
        missing = [key for key in MEANING_META_FIELDS if key not in meta]
        if missing:
            raise ValueError(
                f"{run.path}: row {index} (query {row.query.id}): meta lacks "
                f"field(s) {missing}; not a meaning run?"
            )
        records.append(
            {
                **{key: meta[key] for key in MEANING_META_FIELDS},
                "state": row.query.state,
                "options": list(row.query.options),
                "probs": row.decision.probs.tolist(),
                "conf_head": row.conf_head,
            }
        )
    return MeaningRows.from_records(records)
