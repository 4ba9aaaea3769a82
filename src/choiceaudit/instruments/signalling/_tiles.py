"""Property tiles (paper §I-C): editable definitions, the rater-disagreement ratio and the
redundancy clusters that choose which dimensions become tiles.

A tile is one rated dimension cut into equal-width bins on the rating instrument's own range,
with one option phrase per bin. Definitions live in TOML files shipped in
``choiceaudit/instruments/signalling/tiles/`` (``things.toml``, ``lancaster.toml``) or in a file
the user supplies; :func:`tiles_hash` is the content hash a frozen item set records.
"""

from __future__ import annotations

import hashlib
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

from choiceaudit.errors import InputError
from choiceaudit.instruments.signalling._build_records import DimensionChoice, TileRecord
from choiceaudit.instruments.signalling._norms import NormsBundle
from choiceaudit.types import FloatArray

__all__ = [
    "Tile",
    "load_tiles",
    "rater_disagreement_ratio",
    "redundancy_clusters",
    "select_tile_dimensions",
    "tiles_hash",
    "tiles_text",
]


@dataclass(frozen=True)
class Tile:
    """One tile: option ``k`` is the closed interval ``[edges[k], edges[k+1]]`` of ``dimension``.

    ``width`` is the common bin width, the denominator of the fit function (§I-D).
    """

    name: str
    dimension: str
    question: str
    edges: tuple[float, ...]
    options: tuple[str, ...]

    def __post_init__(self) -> None:
        edges = tuple(float(e) for e in self.edges)
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "options", tuple(self.options))
        if len(edges) < 3:
            raise InputError(f"tile {self.name}: needs at least two bins (three edges)")
        if len(self.options) != len(edges) - 1:
            raise InputError(
                f"tile {self.name}: {len(self.options)} options for {len(edges) - 1} bins"
            )
        widths = np.diff(edges)
        if np.any(widths <= 0):
            raise InputError(f"tile {self.name}: edges {list(edges)} are not increasing")
        if not np.allclose(widths, widths[0], rtol=1e-9, atol=0.0):
            raise InputError(
                f"tile {self.name}: bins must share one width (end bins included), got {widths.tolist()}"
            )
        if len(set(self.options)) != len(self.options) or any(not o.strip() for o in self.options):
            raise InputError(f"tile {self.name}: option phrases must be distinct and non-empty")

    @property
    def n_options(self) -> int:
        return len(self.options)

    @property
    def width(self) -> float:
        return (self.edges[-1] - self.edges[0]) / self.n_options

    @property
    def lows(self) -> FloatArray:
        return np.asarray(self.edges[:-1], dtype=np.float64)

    @property
    def highs(self) -> FloatArray:
        return np.asarray(self.edges[1:], dtype=np.float64)

    def to_dict(self) -> TileRecord:
        return {
            "name": self.name,
            "dimension": self.dimension,
            "question": self.question,
            "edges": list(self.edges),
            "options": list(self.options),
        }


def tiles_text(source: str | Path) -> tuple[str, str]:
    """(text, label) of a tile file: a shipped name (``"things"``) or a path to a TOML file."""
    path = Path(source)
    if isinstance(source, Path) or path.suffix == ".toml" or len(path.parts) > 1:
        if not path.is_file():
            raise InputError(f"tile file not found: {path}")
        return path.read_text(encoding="utf-8"), str(path)
    ref = resources.files("choiceaudit.instruments.signalling") / "tiles" / f"{source}.toml"
    if not ref.is_file():
        raise InputError(f"no shipped tile file named {source!r} (tiles/{source}.toml)")
    return ref.read_text(encoding="utf-8"), f"tiles/{source}.toml"


def tiles_hash(source: str | Path) -> str:
    """sha256 of a tile file's bytes as UTF-8 text (what a frozen item set records)."""
    text, _ = tiles_text(source)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_tiles(
    source: str | Path, *, norms: NormsBundle | None = None, check_scale: bool = True
) -> tuple[Tile, ...]:
    """Read tiles from a shipped name or a TOML path; with ``norms``, check every dimension
    exists and (``check_scale``) that the bins lie on the dimension's instrument range."""
    text, label = tiles_text(source)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{label}: not valid TOML ({exc})") from None
    entries = data.get("tile")
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{label}: no [[tile]] tables")
    tiles = []
    for i, entry in enumerate(entries):
        where = f"{label}, tile #{i + 1}"
        for key in ("name", "dimension", "question", "edges", "options"):
            if key not in entry:
                raise InputError(f"{where}: missing field {key!r}")
        try:
            tile = Tile(
                name=str(entry["name"]),
                dimension=str(entry["dimension"]),
                question=str(entry["question"]),
                edges=tuple(entry["edges"]),
                options=tuple(str(o) for o in entry["options"]),
            )
        except (ValueError, TypeError) as exc:
            raise InputError(f"{where}: {exc}") from None
        if norms is not None:
            if tile.dimension not in norms.dimensions:
                raise InputError(
                    f"{where}: dimension {tile.dimension!r} is not in norms {norms.name}"
                )
            lo, hi = norms.dimensions[tile.dimension].scale
            if check_scale and (tile.edges[0] < lo or tile.edges[-1] > hi):
                raise InputError(
                    f"{where}: bins {tile.edges[0]}–{tile.edges[-1]} leave the instrument range {lo}–{hi}"
                )
        tiles.append(tile)
    names = [t.name for t in tiles]
    if len(set(names)) != len(names):
        raise InputError(f"{label}: duplicate tile names {names}")
    return tuple(tiles)


def rater_disagreement_ratio(
    norms: NormsBundle,
    dimension: str,
    *,
    concepts: Sequence[int] | npt.NDArray[np.int64] | None = None,
) -> float:
    """Mean within-concept rater SD divided by the SD (ddof=1) of concept means (§I-C).

    Over all concepts with finite mean and SD, or over the given concept rows. Returns NaN when
    the norms publish no per-rater SD (the screen is then reported as unavailable).
    """
    dim = norms.dimensions[dimension]
    if dim.sds is None:
        return math.nan
    idx = np.arange(len(norms)) if concepts is None else np.asarray(concepts, dtype=np.int64)
    means, sds = dim.means[idx], dim.sds[idx]
    ok = np.isfinite(means) & np.isfinite(sds)
    if ok.sum() < 2:
        raise InputError(f"dimension {dimension}: fewer than two rated concepts")
    return float(sds[ok].mean() / means[ok].std(ddof=1))


def redundancy_clusters(
    norms: NormsBundle,
    dimensions: Sequence[str] | None = None,
    *,
    threshold: float = 0.7,
    concepts: Sequence[int] | npt.NDArray[np.int64] | None = None,
) -> tuple[tuple[str, ...], ...]:
    """Clusters of mutually redundant dimensions: complete linkage on |r| (Pearson, across
    concepts rated on all of them), merging while every pair across the two clusters has
    |r| > ``threshold``. Complete linkage keeps a cluster a set of pairwise-redundant
    dimensions, so a chain (size–heavy–hold) does not join dimensions that are not redundant.
    Clusters are returned sorted by their first member's position in ``dimensions``.
    """
    names = list(dimensions) if dimensions is not None else list(norms.dimensions)
    idx = np.arange(len(norms)) if concepts is None else np.asarray(concepts, dtype=np.int64)
    matrix = np.array([norms.dimensions[d].means[idx] for d in names])
    ok = np.all(np.isfinite(matrix), axis=0)
    r = np.abs(np.corrcoef(matrix[:, ok]))
    clusters: list[list[int]] = [[i] for i in range(len(names))]
    while True:
        best, pair = threshold, None
        for a in range(len(clusters)):
            for b in range(a + 1, len(clusters)):
                link = float(r[np.ix_(clusters[a], clusters[b])].min())
                if link > best:
                    best, pair = link, (a, b)
        if pair is None:
            break
        a, b = pair
        clusters[a] = sorted(clusters[a] + clusters[b])
        del clusters[b]
    clusters.sort(key=lambda c: c[0])
    return tuple(tuple(names[i] for i in c) for c in clusters)


def select_tile_dimensions(
    clusters: Sequence[Sequence[str]],
    ratios: Mapping[str, float],
    *,
    max_ratio: float = 1.0,
) -> DimensionChoice:
    """Choose one dimension per redundancy cluster: the lowest rater-disagreement ratio (§I-C).

    Dimensions whose ratio is at least ``max_ratio`` (within-concept SD not below
    between-concept SD: the bins would sort rater noise) are excluded first. File order is not
    a criterion. Returns ``{"selected": [...], "excluded": {dim: reason}}``; with any ratio
    unavailable (NaN) the screen cannot run and ``selected`` is empty, with the reason.
    """
    if any(math.isnan(ratios[d]) for c in clusters for d in c):
        return {
            "selected": [],
            "excluded": {},
            "unavailable": "rater-disagreement ratio unavailable (the norms publish no rater SD)",
        }
    selected: list[str] = []
    excluded: dict[str, str] = {}
    for cluster in clusters:
        eligible = [d for d in cluster if ratios[d] < max_ratio]
        for d in cluster:
            if ratios[d] >= max_ratio:
                excluded[d] = (
                    f"ratio {ratios[d]:.3f} >= {max_ratio}: within-concept SD exceeds between"
                )
        if eligible:
            pick = min(eligible, key=lambda d: ratios[d])
            selected.append(pick)
            for d in eligible:
                if d != pick:
                    excluded[d] = f"redundant with {pick} (cluster {list(cluster)}), higher ratio"
    return {"selected": selected, "excluded": excluded}
