"""One Parquet row per (query, decision): the per-item output a user can re-read.

Rows hold everything needed to analyse a run without the code that made it: the query's content
and meta, the permutation, the per-option arrays (probs, each rule's raw scores, token counts),
and the chosen option(s) in display and canonical order. Nothing machine- or time-dependent is
in a row, so an interrupted-and-resumed run writes exactly the rows of an uninterrupted one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from choiceaudit.types import Decision, Query, format_perm

__all__ = ["SCORE_PREFIX", "rows_to_table"]

#: Raw per-option scores by rule are stored as ``score_<rule>`` list columns.
SCORE_PREFIX = "score_"

_BASE_SCHEMA = pa.schema(
    [
        ("row", pa.int64()),
        ("query_id", pa.string()),
        ("item_id", pa.string()),
        ("condition", pa.string()),
        ("experiment", pa.string()),
        ("perm", pa.string()),
        ("state", pa.string()),
        ("instruction", pa.string()),
        ("neutral_state", pa.string()),
        ("template", pa.string()),
        ("answer_format", pa.string()),
        ("options", pa.list_(pa.string())),
        ("keys", pa.list_(pa.string())),
        ("probs", pa.list_(pa.float64())),
        ("n_tokens", pa.list_(pa.int64())),
        ("choice", pa.list_(pa.int64())),
        ("choice_canonical", pa.list_(pa.int64())),
        ("conf_head", pa.float64()),
        ("aux", pa.string()),
        ("meta", pa.string()),
    ]
)


def _meta_str(meta: Any, key: str) -> str | None:
    value = meta.get(key)
    return None if value is None else str(value)


def rows_to_table(rows: Sequence[tuple[int, Query, Decision]]) -> pa.Table:
    """Build the Parquet table for ``(input row index, query, decision)`` triples."""
    columns: dict[str, list[Any]] = {name: [] for name in _BASE_SCHEMA.names}
    rules = sorted({rule for _, _, d in rows for rule in d.scores})
    score_cols: dict[str, list[Any]] = {rule: [] for rule in rules}
    for index, query, decision in rows:
        decision.check_against(query)
        choice = list(decision.choice())
        aux = dict(decision.aux)
        conf = aux.get("conf_head")
        columns["row"].append(index)
        columns["query_id"].append(query.id)
        columns["item_id"].append(_meta_str(query.meta, "item_id"))
        columns["condition"].append(_meta_str(query.meta, "condition"))
        columns["experiment"].append(_meta_str(query.meta, "experiment"))
        columns["perm"].append(format_perm(query.perm) if query.perm is not None else None)
        columns["state"].append(query.state)
        columns["instruction"].append(query.instruction)
        columns["neutral_state"].append(query.neutral_state)
        columns["template"].append(query.template)
        columns["answer_format"].append(query.answer_format)
        columns["options"].append(list(query.options))
        columns["keys"].append(list(query.keys))
        columns["probs"].append(decision.probs.tolist())
        columns["n_tokens"].append(
            list(decision.n_tokens) if decision.n_tokens is not None else None
        )
        columns["choice"].append(choice)
        columns["choice_canonical"].append(sorted(query.canonical(s) for s in choice))
        columns["conf_head"].append(float(conf) if conf is not None else None)
        columns["aux"].append(json.dumps(aux, sort_keys=True, ensure_ascii=False))
        columns["meta"].append(json.dumps(dict(query.meta), sort_keys=True, ensure_ascii=False))
        for rule in rules:
            values = decision.scores.get(rule)
            score_cols[rule].append(values.tolist() if values is not None else None)
    arrays = [pa.array(columns[f.name], type=f.type) for f in _BASE_SCHEMA]
    fields = list(_BASE_SCHEMA)
    for rule in rules:
        arrays.append(pa.array(score_cols[rule], type=pa.list_(pa.float64())))
        fields.append(pa.field(SCORE_PREFIX + rule, pa.list_(pa.float64())))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
