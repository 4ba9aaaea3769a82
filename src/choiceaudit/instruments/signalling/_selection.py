"""Item selection (paper §I-F): by item properties only, tile-balanced, half conflict and half
control, with the unselected distribution reported beside the selected one.

Selection never sees a model: within each (tile, conflict) cell it draws uniformly among the
selectable candidates (every candidate with a defined coordinate, minus what any user filter of
:class:`RobustnessConfig` removes; by default none) with a generator seeded by ``(experiment seed, crc32(tile), cell)``. Each
selected item gets two stored permutations of its options from a generator seeded by
``(experiment seed, crc32(item id))``; the second is redrawn until it differs from the first
(an identical pair would make permutation consistency trivially perfect).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NotRequired

import numpy as np
import numpy.typing as npt
from typing_extensions import TypedDict

from choiceaudit.errors import InputError
from choiceaudit.instruments.signalling._items import (
    CandidateBlock,
    RobustnessConfig,
    assess_robustness,
)
from choiceaudit.instruments.signalling._oracle import OracleResult
from choiceaudit.instruments.signalling._ties import (
    TieReadings,
    pooled_tie_readings,
    tie_readings,
)
from choiceaudit.types import IntArray, Item, ItemSet, format_perm

__all__ = [
    "CANDIDATE_FIELDS",
    "SUMMARY_FIELDS",
    "CellSelection",
    "Quantiles",
    "Selection",
    "SelectionStats",
    "TieReport",
    "TileSelection",
    "build_item_set",
    "candidate_columns",
    "cell_counts",
    "conflict_rates",
    "item_permutations",
    "select_items",
]


#: Item properties whose selected/unselected distributions are reported.
SUMMARY_FIELDS: tuple[str, ...] = (
    "fit_cost",
    "competition_ratio",
    "posterior_ratio",
    "posterior_gap",
    "bayes_margin",
    "tie",
)


class Quantiles(TypedDict):
    """Mean and the 10th, 50th and 90th percentiles of one property."""

    mean: float
    p10: float
    median: float
    p90: float


class SelectionStats(TypedDict):
    """``n`` candidates and, when there are any, the quantiles of every summary field."""

    n: int
    fit_cost: NotRequired[Quantiles]
    competition_ratio: NotRequired[Quantiles]
    posterior_ratio: NotRequired[Quantiles]
    posterior_gap: NotRequired[Quantiles]
    bayes_margin: NotRequired[Quantiles]
    tie: NotRequired[Quantiles]


class CellSelection(TypedDict):
    """One (tile, conflict) cell: the selected candidates beside the unselected ones."""

    selected: SelectionStats
    unselected: SelectionStats


class TileSelection(TypedDict):
    """One tile's conflict and control cells."""

    conflict: CellSelection
    control: CellSelection


class TieReport(TypedDict):
    """The tie readings per tile and pooled over tiles."""

    per_tile: dict[str, TieReadings]
    pooled: TieReadings


def _quantiles(values: npt.ArrayLike, which: npt.NDArray[np.bool_]) -> Quantiles:
    v = np.asarray(values, dtype=np.float64)[which]
    q10, q50, q90 = np.quantile(v, [0.1, 0.5, 0.9])
    return {"mean": float(v.mean()), "p10": float(q10), "median": float(q50), "p90": float(q90)}


def _stats(o: OracleResult, which: npt.NDArray[np.bool_]) -> SelectionStats:
    # every field is read through the same mask, so all have values or none does
    n = int(which.sum())
    if not n:
        return {"n": n}
    return {
        "n": n,
        "fit_cost": _quantiles(o.fit_cost, which),
        "competition_ratio": _quantiles(o.competition_ratio, which),
        "posterior_ratio": _quantiles(o.posterior_ratio, which),
        "posterior_gap": _quantiles(o.posterior_gap, which),
        "bayes_margin": _quantiles(o.bayes_margin, which),
        "tie": _quantiles(o.tie, which),
    }


def _cell(
    o: OracleResult, chosen: npt.NDArray[np.bool_], mask: npt.NDArray[np.bool_]
) -> CellSelection:
    return {"selected": _stats(o, chosen & mask), "unselected": _stats(o, ~chosen & mask)}


@dataclass(frozen=True)
class Selection:
    """Chosen candidate rows per tile: ``conflict[tile]`` and ``control[tile]``."""

    blocks: tuple[CandidateBlock, ...]
    conflict: Mapping[str, IntArray]
    control: Mapping[str, IntArray]
    robustness: Mapping[str, Mapping[str, npt.NDArray[np.bool_]]]
    config: RobustnessConfig

    def rows(self, tile: str) -> IntArray:
        return np.sort(np.concatenate([self.conflict[tile], self.control[tile]]))

    def summary(self) -> dict[str, TileSelection]:
        """Per tile and cell, ``n``, mean and quantiles (10/50/90) of every summary field for
        the selected candidates and for the unselected ones (robust or not)."""
        out: dict[str, TileSelection] = {}
        for block in self.blocks:
            name = block.tile.name
            o = block.oracle
            chosen = np.zeros(len(block), dtype=bool)
            chosen[self.rows(name)] = True
            out[name] = {
                "conflict": _cell(o, chosen, o.conflict),
                "control": _cell(o, chosen, ~o.conflict),
            }
        return out


#: Columns of the candidate table written beside the selected items (§I-F: "the unselected
#: distribution is published alongside the selected one").
CANDIDATE_FIELDS: tuple[str, ...] = (
    "candidate",
    "tile",
    "selected",
    "conflict",
    "conflict_gaussian",
    "defined",
    "decay_agrees",
    "selectable",
    "o_fit",
    "o_bayes",
    "fit_cost",
    "competition_ratio",
    "posterior_ratio",
    "posterior_gap",
    "bayes_margin",
    "tie",
    "geometric_tie",
    "means_ids",
    "clues_ids",
    "target_means",
    "target_clue",
    "option_ids",
)


def candidate_columns(selection: Selection) -> dict[str, list[Any]]:
    """Every generated candidate, one row each (selected or not), as columns: the item
    properties selection could see, the per-candidate robustness report, ``selected``, and
    what regenerating the candidate needs (concept ids of the Means and Clues lists, target
    positions, option ids ``<tile>:<canonical index>`` of the frozen tile file)."""
    cols: dict[str, list[Any]] = {f: [] for f in CANDIDATE_FIELDS}
    for block in selection.blocks:
        o, ga = block.oracle, block.oracle_gaussian
        flags = selection.robustness[block.tile.name]
        chosen = np.zeros(len(block), dtype=bool)
        chosen[selection.rows(block.tile.name)] = True
        cols["candidate"].extend(block.ids())
        cols["tile"].extend([block.tile.name] * len(block))
        cols["selected"].extend(chosen.tolist())
        cols["conflict"].extend(o.conflict.tolist())
        cols["conflict_gaussian"].extend(ga.conflict.tolist())
        for f in ("defined", "decay_agrees", "selectable"):
            cols[f].extend(flags[f].tolist())
        for f in ("o_fit", "o_bayes"):
            cols[f].extend(np.asarray(getattr(o, f)).astype(int).tolist())
        for f in ("fit_cost", "competition_ratio", "posterior_ratio", "posterior_gap"):
            cols[f].extend(np.asarray(getattr(o, f), dtype=np.float64).tolist())
        cols["bayes_margin"].extend(np.asarray(o.bayes_margin, dtype=np.float64).tolist())
        cols["tie"].extend(o.tie.tolist())
        cols["geometric_tie"].extend(o.geometric_tie.tolist())
        # what regenerating a candidate needs: the norms' concept ids of both lists, the target
        # positions and the canonical options (the tile's option ids, ``<tile>:<index>``)
        ids = np.asarray(block.norms.concepts, dtype=object)[block.concepts]
        m = block.n_means
        cols["means_ids"].extend(ids[:, :m].tolist())
        cols["clues_ids"].extend(ids[:, m:].tolist())
        cols["target_means"].extend(block.target[:, 0].astype(int).tolist())
        cols["target_clue"].extend(block.target[:, 1].astype(int).tolist())
        options = [f"{block.tile.name}:{k}" for k in range(block.tile.n_options)]
        cols["option_ids"].extend([options] * len(block))
    return cols


def conflict_rates(blocks: Sequence[CandidateBlock]) -> dict[str, dict[str, float]]:
    """Per tile over all candidates: conflict rate, exact-tie rate, share of ties that are the
    geometric case, and the median local competition ratio among conflict candidates."""
    out = {}
    for b in blocks:
        o = b.oracle
        n_tie = int(o.tie.sum())
        out[b.tile.name] = {
            "candidates": float(len(b)),
            "conflict_rate": float(o.conflict.mean()),
            "conflict_rate_gaussian": float(b.oracle_gaussian.conflict.mean()),
            "tie_rate": float(o.tie.mean()),
            "geometric_share_of_ties": float(o.geometric_tie.sum() / n_tie) if n_tie else 0.0,
            "median_competition_ratio_conflict": float(np.median(o.competition_ratio[o.conflict]))
            if o.conflict.any()
            else float("nan"),
        }
    return out


def cell_counts(n_items: int, tiles: Sequence[str]) -> dict[tuple[str, str], int]:
    """Items per (tile, "conflict" | "control"): ``n_items // (2 k)`` each, and the remainder
    one each to the conflict cells in tile order, then to the control cells."""
    cells = [(t, "conflict") for t in tiles] + [(t, "control") for t in tiles]
    base, extra = divmod(n_items, len(cells))
    return {cell: base + (i < extra) for i, cell in enumerate(cells)}


def select_items(
    blocks: Sequence[CandidateBlock],
    *,
    n_items: int = 1000,
    seed: int,
    config: RobustnessConfig | None = None,
) -> Selection:
    """Select ``n_items`` candidates, equal per tile, half conflict and half control, among
    those with a defined coordinate (``config``: optional filters, default none).

    A count that does not split evenly over tiles x conflict/control (a small trial run) is
    as balanced as it can be (:func:`cell_counts`: the remainder goes one item each to the
    conflict cells in tile order, then the control cells), so any count from 1 builds."""
    config = config if config is not None else RobustnessConfig()
    if n_items < 1:
        raise InputError(f"n_items must be at least 1, got {n_items}")
    counts = cell_counts(n_items, [b.tile.name for b in blocks])
    conflict: dict[str, IntArray] = {}
    control: dict[str, IntArray] = {}
    robustness = {}
    for block in blocks:
        name = block.tile.name
        flags = assess_robustness(block, config)
        robustness[name] = flags
        key = zlib.crc32(name.encode("utf-8"))
        for cell, (mask, store) in enumerate(
            ((block.oracle.conflict, conflict), (~block.oracle.conflict, control))
        ):
            pool = np.flatnonzero(flags["selectable"] & mask)
            label = "conflict" if cell == 0 else "control"
            per_cell = counts[(name, label)]
            if pool.size < per_cell:
                raise InputError(
                    f"tile {name}: only {pool.size} selectable {label} candidates for {per_cell} "
                    "items; ask for fewer items (--n-items), generate more candidates "
                    "(--n-candidates) or drop a selection filter",
                    field="n_items",
                )
            rng = np.random.default_rng([seed, key, cell])
            store[name] = np.sort(rng.choice(pool, size=per_cell, replace=False)).astype(np.int64)
    return Selection(tuple(blocks), conflict, control, robustness, config)


def _tie_report(blocks: Sequence[CandidateBlock]) -> TieReport:
    per_tile = {b.tile.name: tie_readings(b) for b in blocks}
    return {"per_tile": per_tile, "pooled": pooled_tie_readings(per_tile)}


def item_permutations(item_id: str, n_options: int, seed: int) -> tuple[str, str]:
    """The two stored permutations of an item (display slot → canonical option), distinct."""
    rng = np.random.default_rng([seed, zlib.crc32(item_id.encode("utf-8"))])
    first = rng.permutation(n_options)
    second = rng.permutation(n_options)
    while n_options > 1 and np.array_equal(first, second):
        second = rng.permutation(n_options)
    return format_perm(first.tolist()), format_perm(second.tolist())


def _floats(x: npt.NDArray[np.generic]) -> list[float]:
    return [float(v) for v in x]


def build_item_set(selection: Selection, *, seed: int, name: str = "signalling") -> ItemSet:
    """The selected items as an :class:`~choiceaudit.types.ItemSet` in canonical option order.

    ``config`` records the seed, the norms, the list sizes, candidates and leak exclusions per
    tile, the per-tile conflict rates, the selection rule and any user filters, the tile definitions and the
    selected-beside-unselected summary (§I-F: the unselected distribution is published).

    ``meta`` carries everything downstream needs without the norms: tile, the bare-word Means
    and Clues lists (and the norms' concept ids behind them), the target positions and words, per-option ``fit`` and ``posterior`` under
    both decay families, ``o_fit``, ``o_bayes``, the tie class, conflict, ``fit_cost``, the
    competition ratio, both stored permutations, and the concreteness and word-frequency
    covariates of both target concepts (NaN → ``None``).
    """
    items: list[Item] = []
    for block in selection.blocks:
        tile = block.tile
        o = block.oracle  # exponential: the primary family
        ga = block.oracle_gaussian
        bundle = block.norms
        for row in selection.rows(tile.name):
            cand_id = block.ids([row])[0]
            item_id = f"sig-{cand_id}"
            concepts = block.concepts[row]
            words = [bundle.words[i] for i in concepts]
            ids = [bundle.concepts[i] for i in concepts]
            m = block.n_means
            ti, tj = (int(x) for x in block.target[row])
            covs: dict[str, float | None] = {}
            for cov, values in bundle.covariates.items():
                for role, idx in (("means", concepts[ti]), ("clue", concepts[m + tj])):
                    v = float(values[idx])
                    covs[f"target_{role}_{cov}"] = v if np.isfinite(v) else None
            perm_a, perm_b = item_permutations(item_id, tile.n_options, seed)
            meta = {
                "tile": tile.name,
                "dimension": tile.dimension,
                "question": tile.question,
                "candidate": cand_id,
                "means": words[:m],
                "clues": words[m:],
                "means_ids": ids[:m],
                "clues_ids": ids[m:],
                "target": [ti, tj],
                "target_words": [words[ti], words[m + tj]],
                "conflict": bool(o.conflict[row]),
                "fit": _floats(o.fit[row]),
                "posterior": _floats(o.posterior[row]),
                "o_fit": int(o.o_fit[row]),
                "o_bayes": int(o.o_bayes[row]),
                "bayes_tied": [bool(x) for x in o.bayes_tied[row]],
                "fit_cost": float(o.fit_cost[row]),
                "competition_ratio": float(o.competition_ratio[row]),
                "bayes_margin": float(o.bayes_margin[row]),
                "decay_agrees": bool(o.conflict[row] == ga.conflict[row]),
                "fit_gaussian": _floats(ga.fit[row]),
                "posterior_gaussian": _floats(ga.posterior[row]),
                "o_bayes_gaussian": int(ga.o_bayes[row]),
                "conflict_gaussian": bool(ga.conflict[row]),
                "perms": [perm_a, perm_b],
                **covs,
            }
            items.append(Item(id=item_id, options=tile.options, gold=None, meta=meta))
    first = selection.blocks[0]
    config = {
        "seed": seed,
        "norms": first.norms.name,
        "fit_family_primary": "exponential",
        "n_means": first.n_means,
        "n_clues": int(first.concepts.shape[1] - first.n_means),
        "candidates_per_tile": {b.tile.name: len(b) for b in selection.blocks},
        "leak_excluded_per_tile": {b.tile.name: len(b.excluded_by_leak) for b in selection.blocks},
        "conflict_rates": conflict_rates(selection.blocks),
        "tie_readings": _tie_report(selection.blocks),
        "selection_summary": selection.summary(),
        "selection_filters": selection.config.filters(),
        "selection_rule": (
            "uniform within each (tile, conflict) cell among candidates with a defined "
            "coordinate"
            + (", after the recorded selection_filters" if selection.config.filters() else "")
        ),
        "undefined_candidates_per_tile": {
            b.tile.name: int((~selection.robustness[b.tile.name]["defined"]).sum())
            for b in selection.blocks
        },
        "tiles": [b.tile.to_dict() for b in selection.blocks],
    }
    return ItemSet(name=name, items=tuple(items), config=config)
