"""Candidate items (paper §I-F): generation, exact scoring and the separate robustness pass.

A candidate shows ``M`` Means and ``C`` Clues — disjoint lists of distinct pool concepts — and
one tile; its target ``h*`` is one (Means, Clue) pairing. Candidates are generated tile-balanced
(the same count per tile) and scored by the oracle under both decay families. Concepts whose
name is a substring of any option phrase of a tile (the §I-G leak test: a pure, case-insensitive
substring test that deliberately over-fires) are never drawn for that tile; the count excluded
per tile is reported.

Determinism: candidates come in blocks of ``BLOCK`` per tile, and each block draws from its own
generator seeded by ``(experiment seed, crc32(tile name), block index)``, so candidate ``j`` of a
tile is the same on any machine, whatever other tiles or counts are requested.

Robustness is a separate, declared pass over the scored candidates (so a threshold change never
forces regeneration, §I-F). It *reports* per candidate — is the conflict status the same under
the exponential and Gaussian families, how much fit a conflict item gives up, by what relative
margin the Bayes choice leads the best option outside its exact-tie class — and it removes
nothing by default: the paper keeps items whose salience–Bayes separation is 0.028 (its lowest
``fit_cost`` decile), so a fit-cost floor, a margin floor or a decay-agreement requirement is
not the paper's selection. A user may add any of them (:class:`RobustnessConfig`); the filters
applied are recorded in the frozen item set. The one requirement that always applies is
definitional: an item whose target fit or posterior is flat across its options has no
coordinate (eqs. 5–6 divide by the span), so it cannot be scored; such candidates are counted.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from choiceaudit.errors import InputError
from choiceaudit.instruments.signalling._norms import NormsBundle
from choiceaudit.instruments.signalling._oracle import OracleResult, run_oracle
from choiceaudit.instruments.signalling._pool import Pool
from choiceaudit.instruments.signalling._tiles import Tile
from choiceaudit.types import BoolArray, IntArray

__all__ = [
    "BLOCK",
    "CandidateBlock",
    "RobustnessConfig",
    "assess_robustness",
    "generate_candidates",
    "leaking_concepts",
]


#: Candidates per generator block (per tile).
BLOCK = 10_000


@dataclass(frozen=True)
class CandidateBlock:
    """All candidates of one tile, over the bundle ``norms``: ``concepts[:, :M]`` are the Means and ``concepts[:, M:]``
    the Clues (bundle row indices); ``target`` is (Means position, Clue position);
    ``oracle``/``oracle_gaussian`` score them under the two decay families."""

    tile: Tile
    norms: NormsBundle
    concepts: IntArray
    target: IntArray
    n_means: int
    oracle: OracleResult
    oracle_gaussian: OracleResult
    excluded_by_leak: tuple[str, ...]

    def __len__(self) -> int:
        return int(self.concepts.shape[0])

    def ids(self, rows: Sequence[int] | IntArray | None = None) -> list[str]:
        """Stable candidate ids ``<tile>-<index>``."""
        idx = range(len(self)) if rows is None else rows
        return [f"{self.tile.name}-{int(j):06d}" for j in idx]


def leaking_concepts(pool: Pool, tile: Tile) -> BoolArray:
    """True for pool concepts whose name occurs (case-insensitively) inside an option phrase."""
    phrases = [o.lower() for o in tile.options]
    return np.array([any(w.lower() in p for p in phrases) for w in pool.words], dtype=bool)


def _tile_key(tile: Tile) -> int:
    return zlib.crc32(tile.name.encode("utf-8"))


def _draw_distinct(rng: np.random.Generator, n: int, k: int, population: int) -> IntArray:
    """``n`` rows of ``k`` distinct draws from ``range(population)``: draw with replacement and
    redraw the rows that repeat (vectorised rejection; deterministic given the generator)."""
    if k > population:
        raise ValueError(f"cannot draw {k} distinct concepts from {population}")
    out = rng.integers(0, population, size=(n, k))
    while True:
        s = np.sort(out, axis=1)
        bad = np.flatnonzero(np.any(s[:, 1:] == s[:, :-1], axis=1))
        if bad.size == 0:
            return out.astype(np.int64)
        out[bad] = rng.integers(0, population, size=(bad.size, k))


def _generate_tile(
    pool: Pool, tile: Tile, n: int, seed: int, m: int, c: int
) -> tuple[IntArray, IntArray, tuple[str, ...]]:
    leak = leaking_concepts(pool, tile)
    eligible = pool.indices[~leak]
    concepts = np.empty((n, m + c), dtype=np.int64)
    target = np.empty((n, 2), dtype=np.int64)
    for b, start in enumerate(range(0, n, BLOCK)):
        rng = np.random.default_rng([seed, _tile_key(tile), b])
        stop = min(start + BLOCK, n)
        # Every block draws a full BLOCK so candidate j never depends on n.
        draws = _draw_distinct(rng, BLOCK, m + c, eligible.size)
        tg = np.stack([rng.integers(0, m, BLOCK), rng.integers(0, c, BLOCK)], axis=1)
        concepts[start:stop] = eligible[draws[: stop - start]]
        target[start:stop] = tg[: stop - start]
    excluded = tuple(w for w, flag in zip(pool.words, leak, strict=True) if flag)
    return concepts, target, excluded


def generate_candidates(
    pool: Pool,
    tiles: Sequence[Tile],
    *,
    n_candidates: int = 200_000,
    seed: int,
    n_means: int = 10,
    n_clues: int = 10,
) -> list[CandidateBlock]:
    """Generate ``n_candidates`` tile-balanced candidates and score each with the oracle under
    both decay families (one :class:`CandidateBlock` per tile, in ``tiles`` order)."""
    if n_candidates < len(tiles):
        raise InputError(f"{n_candidates} candidates cannot cover {len(tiles)} tiles")
    per_tile = [n_candidates // len(tiles)] * len(tiles)
    for i in range(n_candidates % len(tiles)):
        per_tile[i] += 1
    blocks = []
    for tile, n in zip(tiles, per_tile, strict=True):
        if tile.dimension not in pool.norms.dimensions:
            raise KeyError(f"tile {tile.name}: dimension {tile.dimension!r} not in the norms")
        concepts, target, excluded = _generate_tile(pool, tile, n, seed, n_means, n_clues)
        values = pool.norms.dimensions[tile.dimension].means[concepts]
        if not np.all(np.isfinite(values)):
            raise ValueError(f"tile {tile.name}: pool concept without a {tile.dimension} rating")
        means, clues = values[:, :n_means], values[:, n_means:]
        blocks.append(
            CandidateBlock(
                tile=tile,
                norms=pool.norms,
                concepts=concepts,
                target=target,
                n_means=n_means,
                oracle=run_oracle(means, clues, target, tile, "exponential"),
                oracle_gaussian=run_oracle(means, clues, target, tile, "gaussian"),
                excluded_by_leak=excluded,
            )
        )
    return blocks


@dataclass(frozen=True)
class RobustnessConfig:
    """Optional selection filters (item properties only, never model output). Every default
    is off: the paper's selection draws from every candidate with a defined coordinate. A
    filter a user sets is applied and recorded (:meth:`filters`)."""

    min_fit_cost: float | None = None
    min_bayes_margin: float | None = None
    require_decay_agreement: bool = False

    def filters(self) -> dict[str, float | bool]:
        """The filters in force (empty by default), as recorded in the frozen item set."""
        out: dict[str, float | bool] = {}
        if self.min_fit_cost is not None:
            out["min_fit_cost"] = float(self.min_fit_cost)
        if self.min_bayes_margin is not None:
            out["min_bayes_margin"] = float(self.min_bayes_margin)
        if self.require_decay_agreement:
            out["require_decay_agreement"] = True
        return out


def assess_robustness(
    block: CandidateBlock, config: RobustnessConfig | None = None
) -> dict[str, BoolArray]:
    """Per-candidate robustness flags (see module docstring). ``"defined"`` marks candidates
    with a coordinate; ``"decay_agrees"``, ``"fit_cost_ok"`` and ``"margin_ok"`` are reported
    whatever the config (``fit_cost_ok``/``margin_ok`` are all True when that filter is off);
    ``"selectable"`` is ``defined`` and every filter the config turns on."""
    config = config if config is not None else RobustnessConfig()
    ex, ga = block.oracle, block.oracle_gaussian
    defined = np.isfinite(ex.fit_norm()).all(axis=1) & np.isfinite(ex.post_norm()).all(axis=1)
    decay_agrees = ex.conflict == ga.conflict
    n = len(block)
    fit_cost_ok = (
        ~ex.conflict | (ex.fit_cost >= config.min_fit_cost)
        if config.min_fit_cost is not None
        else np.ones(n, dtype=bool)
    )
    margin_ok = (
        ex.bayes_margin >= config.min_bayes_margin
        if config.min_bayes_margin is not None
        else np.ones(n, dtype=bool)
    )
    selectable = defined & fit_cost_ok & margin_ok
    if config.require_decay_agreement:
        selectable &= decay_agrees
    return {
        "defined": defined,
        "decay_agrees": decay_agrees,
        "fit_cost_ok": fit_cost_ok,
        "margin_ok": margin_ok,
        "selectable": selectable,
    }
