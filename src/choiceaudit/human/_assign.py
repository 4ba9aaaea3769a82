"""Seeded, balanced assignment of items to participants.

Participant ``k`` (0-based, in order of consent) is given, for each block the study file
declares and in that order:

* **classification** — the same ``n_items`` conflict items for everyone: the first ``n_items``
  of the block's pool after a shuffle seeded by the study seed. Everyone sees them so that each
  person is classified on identical items; the rendering alternates, item ``j`` under rendering
  ``(k + j) mod R`` (``R``: the item's renderings, the two stored permutations for
  signalling), so every rendering of every item is seen equally often.
* **population** — ``n_items`` items round-robin over the pool (what classification did not
  take), shuffled once by the study seed: participant ``k`` takes positions
  ``k·n … k·n + n − 1`` (mod the pool size), so after every full pass each item has been shown
  equally often. The item at pool position ``p`` is shown on pass ``m`` under rendering
  ``(m + p) mod R``, so every item cycles through its renderings across showings and
  neighbouring slots alternate. With ``n`` no larger than the pool, no item repeats within a
  participant.

The order within each block is a shuffle seeded by (study seed, panel id), and
``attention_checks`` instructed-response trials are placed at positions drawn from the same
seed (never first). Everything is a pure function of (study seed, k, panel id), so an
assignment is reproducible from the study file alone; the server stores it at consent anyway so
a restart never re-derives it.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass

from choiceaudit.human._study import BlockSpec, StudyItem, StudyItems, StudySpec

__all__ = ["Trial", "assign", "block_pool", "classification_items"]


@dataclass(frozen=True)
class Trial:
    """One page of a participant's session: an item rendering, or an attention check
    (``query_id`` None; ``check_option`` is the option the participant is told to pick)."""

    position: int
    block: str
    item_id: str | None
    query_id: str | None
    perm_index: int | None
    check_option: int | None = None


def _rng(*parts: object) -> random.Random:
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def block_pool(spec: BlockSpec, items: StudyItems, taken: Sequence[str]) -> list[StudyItem]:
    """The items a block draws from, in item order (``taken``: ids another block uses). The
    classification block draws conflict items of the frozen analysis set (signalling)."""
    skip = set(taken)
    if spec.name == "classification" and items.instrument == "signalling":
        pool = [i for i in items.items if i.in_analysis_set and i.conflict]
    elif spec.pool == "analysis_set":
        pool = [i for i in items.items if i.in_analysis_set]
    else:
        pool = list(items.items)
    return [i for i in pool if i.item_id not in skip]


def classification_items(spec: StudySpec, items: StudyItems) -> list[StudyItem]:
    """The classification block's items (the same for every participant)."""
    for b in spec.blocks:
        if b.name == "classification":
            pool = block_pool(b, items, [])
            _rng(spec.seed, "classification").shuffle(pool)
            return pool[: b.n_items]
    return []


def assign(spec: StudySpec, items: StudyItems, k: int, panel_id: str) -> list[Trial]:
    """The trials of participant ``k`` (see the module docstring)."""
    shared = classification_items(spec, items)
    taken = [i.item_id for i in shared]
    trials: list[tuple[str, StudyItem, int]] = []
    for b in spec.blocks:
        chosen: list[tuple[StudyItem, int]]
        if b.name == "classification":
            chosen = [(item, (k + j) % len(item.renderings)) for j, item in enumerate(shared)]
        else:
            pool = block_pool(b, items, taken)
            _rng(spec.seed, "population").shuffle(pool)
            chosen = []
            for j in range(b.n_items):
                slot = k * b.n_items + j
                n_pass, p = divmod(slot, len(pool))
                item = pool[p]
                chosen.append((item, (n_pass + p) % len(item.renderings)))
        order = _rng(spec.seed, panel_id, b.name)
        order.shuffle(chosen)
        trials.extend((b.name, item, perm) for item, perm in chosen)
    out: list[Trial] = []
    rng = _rng(spec.seed, panel_id, "attention")
    n = len(trials)
    checks = sorted(rng.sample(range(1, n + 1), min(spec.attention_checks, n))) if n else []
    n_opts = {q.id: q.n_options for _, i, _ in trials for q in i.renderings}
    position = 0
    for j, (block, item, perm) in enumerate(trials):
        while checks and checks[0] == j:
            checks.pop(0)
            out.append(_check(position, out[-1], n_opts[out[-1].query_id or ""], rng))
            position += 1
        perm_index = perm
        q = item.renderings[perm_index]
        out.append(Trial(position, block, item.item_id, q.id, perm_index))
        position += 1
    while checks:
        checks.pop(0)
        out.append(_check(position, out[-1], n_opts[out[-1].query_id or ""], rng))
        position += 1
    return out


def _check(position: int, previous: Trial, n_options: int, rng: random.Random) -> Trial:
    # an instructed-response trial on the menu just seen: "choose <option in slot s>"
    return Trial(
        position,
        "attention",
        previous.item_id,
        previous.query_id,
        previous.perm_index,
        rng.randrange(n_options),
    )
