"""Signalling item sets built and checked before any model runs.

:func:`build_instrument` freezes an item set (``freeze_instrument``: items, prompts, tiles, fit
family, pool, rendering and analysis battery, with a content hash); :func:`check_signalling` is
the model-free conformance check over several item-set seeds.
"""

from __future__ import annotations

from pathlib import Path

from choiceaudit.errors import InputError
from choiceaudit.instruments.signalling import (
    FrozenInstrument,
    RobustnessConfig,
    build_signalling_items,
    candidate_columns,
    check_conformance,
    freeze_instrument,
)
from choiceaudit.instruments.signalling.conformance import (
    MIN_SEEDS,
    SeedConformanceReport,
    conformance_over_seeds,
)
from choiceaudit.instruments.signalling.frozen import INSTRUMENT_FILE

__all__ = ["DEFAULT_SEED", "build_instrument", "check_counts", "check_signalling"]

DEFAULT_SEED = 20260901


def _n_candidates(n_items: int) -> int:
    # The paper draws 200,000 candidates for 1,000 items; smaller sets keep the same ratio.
    return 200_000 if n_items >= 1000 else max(20_000, 200 * n_items)


def build_instrument(
    norms: str,
    *,
    out: Path | str,
    data: Path | str | None = None,
    seed: int = DEFAULT_SEED,
    n_items: int = 1000,
    n_candidates: int | None = None,
    tiles: str | None = None,
    allow_loss: bool = False,
    swow: Path | str | None = None,
    override_tile_screen: bool = False,
    filters: RobustnessConfig | None = None,
) -> FrozenInstrument:
    """Build the item set from the norms and freeze it into ``out``, with every generated
    candidate (selected or not) in ``candidates.parquet``. A THINGS loader that loses more
    concepts than its threshold refuses unless ``allow_loss``; any loss is warned about and
    recorded in the frozen configuration (``pool.norms_loss``). ``swow`` enters the pool
    intersection (§I-B); a tile file the §I-C screen disagrees with is refused unless
    ``override_tile_screen`` (recorded); ``filters`` are optional selection filters (none by
    default; recorded).

    >>> import pathlib, tempfile
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> frozen = build_instrument("lancaster", out=tmp / "items", n_items=8, n_candidates=2000)
    >>> len(frozen.items.items), (tmp / "items" / "instrument.json").exists()
    (8, True)
    """
    if norms not in ("things", "lancaster"):
        raise InputError(f"unknown norms {norms!r}; use things or lancaster")
    check_counts(n_items, n_candidates)
    if (Path(out) / INSTRUMENT_FILE).exists():  # refuse before spending the build
        raise InputError(
            f"{out} already holds a frozen instrument; amend it (--amend) or use a new --out"
        )
    result = build_signalling_items(
        norms,  # type: ignore[arg-type]
        seed=seed,
        data=data,
        tiles=tiles,
        n_candidates=n_candidates or _n_candidates(n_items),
        n_items=n_items,
        allow_loss=allow_loss,
        swow=swow,
        override_tile_screen=override_tile_screen,
        robustness=filters,
    )
    return freeze_instrument(result.items, out, candidates=candidate_columns(result.selection))


def check_counts(n_items: int, n_candidates: int | None) -> None:
    """Refuse item and candidate counts no build can meet, before the norms are read."""
    if n_items < 1:
        raise InputError(
            f"must be at least 1 (paper: 1000, split evenly over tiles and conflict/control), "
            f"got {n_items}",
            field="n_items",
        )
    if n_candidates is not None and n_candidates < 1:
        raise InputError(f"must be at least 1, got {n_candidates}", field="n_candidates")


def check_signalling(
    norms: str = "things",
    *,
    data: Path | str | None = None,
    seed: int = DEFAULT_SEED,
    n_candidates: int = 200_000,
    n_items: int = 1000,
    swow: Path | str | None = None,
    allow_loss: bool = False,
    seeds: int = 20,
) -> SeedConformanceReport:
    """The model-free conformance check (``choiceaudit check signalling``): build the paper's
    design (200,000 candidates, 1,000 items by default) under ``seeds`` item-set seeds
    (``seed``, ``seed + 1``, …) and report every number the paper gives that needs no model as
    a distribution over those draws beside the paper's value.

    >>> report = check_signalling("lancaster", n_items=8, n_candidates=2000, seeds=10)
    >>> report.by_quantity("pool step: noun filter").mean
    4094.0
    """
    if seeds < MIN_SEEDS:
        raise InputError(
            f"must be at least {MIN_SEEDS}, got {seeds}: every tolerance is a multiple of the SD "
            "the draws measure, and the SD of fewer draws is too uncertain to hold a number to",
            field="--seeds",
        )
    reports = []
    for s in range(seed, seed + seeds):
        result = build_signalling_items(
            norms,  # type: ignore[arg-type]
            seed=s,
            data=data,
            n_candidates=n_candidates,
            n_items=n_items,
            allow_loss=allow_loss,
            swow=swow,
        )
        reports.append(check_conformance(result, seed=s))
    return conformance_over_seeds(reports)
