"""The concept pool (paper §I-B) and the natural-kind retention report (Appendix A).

The universe is the intersection, computed before any filtering, of every enabled source: all
coverage sources of the bundle, non-null ratings on every dimension the tiles use, and non-null
covariates. Only then are homographs removed (a cue shared by two concepts blends both senses)
and the part-of-speech (noun) filter applied. Matching between sources is exact-case — the
loaders never case-fold. Every step's count is reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from choiceaudit.instruments.signalling._build_records import RetentionBlock, RetentionReport
from choiceaudit.instruments.signalling._norms import NormsBundle
from choiceaudit.types import BoolArray

__all__ = ["Pool", "build_pool", "retention_report"]


@dataclass(frozen=True)
class Pool:
    """Concepts the instrument may use: ``indices`` into the bundle, in bundle order.

    ``steps`` lists ``(step, concepts remaining)`` from the full bundle to the pool, so the
    report shows where concepts left; ``in_universe`` marks the pre-filter intersection.
    """

    norms: NormsBundle
    indices: npt.NDArray[np.int64]
    in_universe: BoolArray
    steps: tuple[tuple[str, int], ...]
    sources: tuple[str, ...]
    dimensions: tuple[str, ...]

    def __len__(self) -> int:
        return int(self.indices.size)

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(self.norms.words[i] for i in self.indices)

    def values(self, dimension: str) -> npt.NDArray[np.float64]:
        """Mean rating of every pool concept on ``dimension``."""
        return self.norms.dimensions[dimension].means[self.indices]

    @property
    def mask(self) -> BoolArray:
        out = np.zeros(len(self.norms), dtype=bool)
        out[self.indices] = True
        return out


def build_pool(
    norms: NormsBundle,
    *,
    dimensions: Sequence[str] | None = None,
    sources: Sequence[str] | None = None,
    covariates: Sequence[str] | None = None,
    exclude_homographs: bool = True,
    nouns_only: bool = True,
) -> Pool:
    """Intersect every enabled source, then drop homographs, then keep nouns (§I-B).

    ``dimensions`` defaults to every dimension of the bundle, ``sources`` to every coverage
    source and ``covariates`` to every covariate; a name the bundle lacks is an error.
    """
    dims = tuple(dimensions) if dimensions is not None else tuple(norms.dimensions)
    srcs = tuple(sources) if sources is not None else tuple(norms.coverage)
    covs = tuple(covariates) if covariates is not None else tuple(norms.covariates)
    for label, names, have in (
        ("dimension", dims, norms.dimensions),
        ("source", srcs, norms.coverage),
        ("covariate", covs, norms.covariates),
    ):
        missing = [n for n in names if n not in have]
        if missing:
            raise KeyError(f"norms {norms.name} has no {label} {missing}; it has {sorted(have)}")
    n = len(norms)
    steps: list[tuple[str, int]] = [("concepts in the norms", n)]
    universe = np.ones(n, dtype=bool)
    for s in srcs:
        universe &= np.asarray(norms.coverage[s], dtype=bool)
    for d in dims:
        universe &= np.isfinite(norms.dimensions[d].means)
    for c in covs:
        universe &= np.isfinite(norms.covariates[c])
    steps.append(
        (f"intersection of sources {list(srcs)}, ratings and covariates", int(universe.sum()))
    )
    keep = universe.copy()
    if exclude_homographs:
        if norms.homograph is None:
            raise ValueError(f"norms {norms.name} carries no homograph flags")
        keep &= ~np.asarray(norms.homograph, dtype=bool)
        steps.append(("homographs excluded", int(keep.sum())))
    if nouns_only:
        if norms.noun is None:
            raise ValueError(f"norms {norms.name} carries no part-of-speech flags")
        keep &= np.asarray(norms.noun, dtype=bool)
        steps.append(("noun filter", int(keep.sum())))
    return Pool(
        norms=norms,
        indices=np.flatnonzero(keep).astype(np.int64),
        in_universe=universe,
        steps=tuple(steps),
        sources=srcs,
        dimensions=dims,
    )


def _rate(mask: BoolArray, kept: BoolArray) -> float:
    total = int(mask.sum())
    return float((mask & kept).sum() / total) if total else float("nan")


def retention_report(pool: Pool, kept: BoolArray | None = None) -> RetentionReport:
    """Appendix A: retention of natural kinds vs artifacts over all concepts of the norms, for
    the membership ``kept`` (default: the final pool).

    Reported unconditionally, among single-word concepts (no space or underscore), within the
    rarest quartile of word frequency and per frequency quartile (where the bundle has a
    ``frequency`` covariate). Gaps are in percentage points (natural − artifact). Bundles
    without artifact flags get ``{"available": False, "reason": ...}``.
    """
    norms = pool.norms
    if norms.artifact is None:
        return {
            "available": False,
            "reason": f"norms {norms.name} has no natural-kind/artifact flags",
        }
    artifact = np.asarray(norms.artifact, dtype=bool)
    natural = ~artifact
    kept = pool.mask if kept is None else np.asarray(kept, dtype=bool)

    def block(where: BoolArray) -> RetentionBlock:
        nat, art = _rate(natural & where, kept), _rate(artifact & where, kept)
        return {
            "natural_kinds": int((natural & where).sum()),
            "artifacts": int((artifact & where).sum()),
            "natural_retention": nat,
            "artifact_retention": art,
            "gap_pp": 100.0 * (nat - art),
        }

    everyone = np.ones(len(norms), dtype=bool)
    single = np.array([(" " not in w) and ("_" not in w) for w in norms.words])
    everything, single_words = block(everyone), block(single)
    out: RetentionReport = {"available": True, "all": everything, "single_word": single_words}
    freq = norms.covariates.get("frequency")
    if freq is not None:
        finite = np.isfinite(freq)
        q1 = float(np.quantile(freq[finite], 0.25))
        out["rarest_frequency_quartile"] = block(finite & (freq <= q1))
        out["rarest_quartile_threshold"] = q1
        edges = np.quantile(freq[finite], [0.25, 0.5, 0.75])
        stratum = np.searchsorted(edges, np.where(finite, freq, 0.0), side="left")
        out["frequency_quartiles"] = [block(finite & (stratum == q)) for q in range(4)]
    base = everything["gap_pp"]
    if base:
        out["share_of_gap_explained_by_multiword"] = (base - single_words["gap_pp"]) / base
    return out
