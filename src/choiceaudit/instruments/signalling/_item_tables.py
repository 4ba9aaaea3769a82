"""Item and prompt tables of a frozen signalling item set (flat rows of the items and of their
renderings), plus the item-set content hash (paper "What is pre-registered": the item set, its
selection and the rendering are fixed before any model runs).

These are pure functions returning JSON-ready rows; writing them (Parquet, the run store) is the
caller's job. :func:`item_set_hash` is a sha256 over the canonical JSON of the whole item set —
items, canonical options, meta (oracle values, permutations, covariates) and config (seed, tile
definitions, robustness thresholds) — so any change to the instrument changes the hash, and a
run can record the hash it used.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from choiceaudit.files import canonical_json, sha256_bytes
from choiceaudit.types import ItemSet, Query, format_perm

__all__ = ["item_rows", "item_set_hash", "prompt_rows"]


def _canonical(payload: Any) -> bytes:
    try:
        text = canonical_json(payload, allow_nan=False)
    except ValueError as exc:
        raise ValueError(f"item set is not canonical JSON (NaN or infinity?): {exc}") from None
    return text.encode("utf-8")


def item_set_hash(item_set: ItemSet) -> str:
    """sha256 (hex) of the item set's canonical JSON; identical on any machine."""
    payload = {
        "name": item_set.name,
        "config": dict(item_set.config),
        "items": [
            {"id": i.id, "options": list(i.options), "gold": i.gold, "meta": dict(i.meta)}
            for i in item_set.items
        ],
    }
    return sha256_bytes(_canonical(payload))


def item_rows(item_set: ItemSet) -> list[dict[str, Any]]:
    """One row per item: id, tile, conflict flag, both permutations, the lists, the target and
    the oracle summary (``o_fit``, ``o_bayes``, ``fit_cost``, competition ratio)."""
    rows = []
    for item in item_set.items:
        m = item.meta
        perm_a, perm_b = m["perms"]
        rows.append(
            {
                "item_id": item.id,
                "tile": m["tile"],
                "conflict": bool(m["conflict"]),
                "perm_0": perm_a,
                "perm_1": perm_b,
                "options": list(item.options),
                "means": list(m["means"]),
                "clues": list(m["clues"]),
                "target_means": m["target_words"][0],
                "target_clue": m["target_words"][1],
                "o_fit": int(m["o_fit"]),
                "o_bayes": int(m["o_bayes"]),
                "fit_cost": float(m["fit_cost"]),
                "competition_ratio": float(m["competition_ratio"]),
            }
        )
    return rows


def prompt_rows(queries: Iterable[Query]) -> list[dict[str, Any]]:
    """One row per rendering with the exact prompt and neutral prompt a causal LM reads."""
    rows = []
    for q in queries:
        rows.append(
            {
                "query_id": q.id,
                "item_id": q.meta.get("item_id"),
                "condition": q.meta.get("condition"),
                "format": q.meta.get("format"),
                "label_form": q.meta.get("label_form"),
                "perm_index": q.meta.get("perm_index"),
                "perm": format_perm(q.perm) if q.perm is not None else None,
                "options": list(q.options),
                "keys": list(q.keys),
                "continuations": list(q.continuations()),
                "prompt": q.prompt(),
                "neutral_prompt": q.prompt(neutral=True) if q.neutral_state is not None else None,
            }
        )
    return rows
