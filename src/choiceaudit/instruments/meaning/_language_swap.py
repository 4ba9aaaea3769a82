"""E4 from two ladder blocks: the task language swapped with the family fixed (§5.7, Appendix K).

The open arms ask E4 as its own experiment (one distractor draw asked in both languages). The
commercial arm has no E4 block: its E4 (+0.230, McNemar p < 0.001) is read from two of its
ladder blocks on the same items — the Bengali control (``j4_bn_control``, d-rand) and the
English ceiling's d-rand (``j3_ceiling_en``), 8,761 items. :func:`ladder_language_rows` builds
those rows as E4 rows (condition = language, family d-rand) for any run whose ladder has d-rand
in two languages and no E4 of its own; where the other language has several ladder blocks with
d-rand, a block whose ladder carries no literal-bearing family is preferred (the ceiling, not
the literal pool's ``j2_lit_en``: E4 has no literal gloss anywhere, Appendix K), then the one
sharing the most items with the corpus language's, then the first in the run. The two cells keep their own
distractor draws (different seed namespaces), as the paper's do. Only items present in both
cells are kept, so the contrast is paired on one item set.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import numpy.typing as npt

from choiceaudit.instruments.meaning._rows import MeaningRows

__all__ = ["ladder_language_rows"]


def ladder_language_rows(
    rows: MeaningRows, home: str
) -> tuple[MeaningRows, tuple[str, str]] | None:
    """The run's d-rand ladder rows of ``home`` and of one other language on their shared items,
    relabelled as E4 (see the module docstring), and the two blocks they come from; ``None``
    when the run has E4 rows, or no d-rand ladder in two languages on shared items."""
    if (rows.experiment == "e4").any():
        return None
    d_rand = rows.select((rows.experiment == "e1") & (rows.family == "d-rand"))
    home_rows = d_rand.where(language=home)
    if not len(home_rows):
        return None
    home_block = str(home_rows.blocks[0])
    home_rows = home_rows.where(block=home_block)
    home_items = set(home_rows.item_id.tolist())
    ladder = rows.where(experiment="e1")
    best: tuple[tuple[bool, int], str, str] | None = None
    for language in dict.fromkeys(d_rand.language.tolist()):
        if language == home:
            continue
        cell = d_rand.where(language=language)
        for block in dict.fromkeys(cell.blocks.tolist()):
            shared = len(home_items & set(cell.where(block=block).item_id.tolist()))
            # a ceiling (no literal-bearing family in the block) before a literal ladder
            plain = not (ladder.where(block=block).literal_slot >= 0).any()
            if shared and (best is None or (plain, shared) > best[0]):
                best = ((plain, shared), language, block)
    if best is None:
        return None
    _, language, block = best
    other = d_rand.where(language=language, block=block)
    shared_items = home_items & set(other.item_id.tolist())
    both = [part.select(np.isin(part.item_id, sorted(shared_items))) for part in (home_rows, other)]
    records = []
    for part in both:
        n = len(part)
        records.append(
            dataclasses.replace(
                part,
                experiment=np.full(n, "e4", dtype=np.str_),
                condition=part.language.copy(),
                block=np.full(n, "e4", dtype=np.str_),
            )
        )
    return _concat(records), (home_block, block)


def _concat(parts: list[MeaningRows]) -> MeaningRows:
    columns: dict[str, npt.NDArray[Any]] = {
        f.name: np.concatenate([getattr(p, f.name) for p in parts])
        for f in dataclasses.fields(MeaningRows)
        if f.name != "options"
    }
    return MeaningRows(options=tuple(o for p in parts for o in p.options), **columns)
