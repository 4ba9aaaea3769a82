"""Batch size 1 against batched scoring (paper §I-K): the batch-1 arm of a model is read beside
its batched run, as a flip rate per rule and tile, and never as a model cell of its own."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from choiceaudit.instruments.signalling._analysed_arm import AnalysedArm
from choiceaudit.instruments.signalling._results import BatchFlip
from choiceaudit.types import Skipped, tied_argmax

__all__ = ["batch_flip_records", "is_batch_one"]


def is_batch_one(a: AnalysedArm) -> bool:
    """A model scored a second time one query per forward pass (``--batch-one``): it is
    reported beside its batched model (flip rate, largest score change), never as a cell."""
    return bool(a.arm.config.batch_of)


def batch_flip_records(group: Sequence[AnalysedArm]) -> tuple[list[BatchFlip], list[Skipped]]:
    """For every model arm scored at batch size 1 (``config["batch_of"]`` names the batched
    run's model), the flip rate against that batched arm per scoring rule and tile, on the
    renderings both hold (exact ties are sets: a flip is a changed tied set). A batch-1 arm
    whose batched run is not in ``group``, or that shares no rendering or rule with it, comes
    back as a ``Skipped``."""
    by_model = {
        str(a.arm.config.model): a for a in group if a.kind == "model" and not a.arm.config.batch_of
    }
    records: list[BatchFlip] = []
    skipped: list[Skipped] = []
    for single in group:
        base_name = single.arm.config.batch_of
        if not base_name:
            continue  # not a batch-1 arm
        what = f"batch-1 flips of {single.label}"
        if str(base_name) not in by_model:
            skipped.append(
                Skipped(what, f"the batched run of {base_name} is not among the runs analysed")
            )
            continue
        batched = by_model[str(base_name)]
        theirs = {q.id: (q, d) for q, d in batched.arm.rows}
        rules = [r for r in single.rules if r in batched.rules]
        if not rules or not any(q.id in theirs for q, _ in single.arm.rows):
            skipped.append(
                Skipped(what, f"no rendering and scoring rule shared with the run of {base_name}")
            )
            continue
        for rule in rules:
            cells: dict[str, list[tuple[bool, float]]] = {}
            for query, decision in single.arm.rows:
                if query.id not in theirs:
                    continue
                other = theirs[query.id][1]
                mine = decision.probs if rule == "probs" else decision.scores[rule]
                their = other.probs if rule == "probs" else other.scores[rule]
                a = sorted(query.canonical(s) for s in tied_argmax(mine))
                b = sorted(query.canonical(s) for s in tied_argmax(their))
                change = float(np.max(np.abs(np.asarray(mine) - np.asarray(their))))
                cells.setdefault(str(query.meta.get("tile")), []).append((a != b, change))
            for tile, values in cells.items():
                flipped = sum(1 for f, _ in values if f)
                records.append(
                    BatchFlip(
                        model=str(base_name),
                        rule=rule,
                        tile=tile,
                        n=len(values),
                        flipped=flipped,
                        flip_rate=flipped / len(values),
                        max_abs_score_change=max(c for _, c in values),
                    )
                )
    return records, skipped
