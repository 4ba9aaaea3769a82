"""Norms bundles: the concept universe and its property ratings (paper §I-A, §I-B, §I-C).

A :class:`NormsBundle` is what every later stage reads: one row per concept, aligned arrays for
each rated dimension (mean, and the per-concept rater SD where the norms publish one), the
coverage of every similarity source, the part of speech and homograph flags the pool filters on,
and the covariates items carry (concreteness, word frequency). Loaders (``things``,
``lancaster``) build one; nothing downstream knows which.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from choiceaudit.errors import InputError
from choiceaudit.instruments.signalling._build_records import LossRecord
from choiceaudit.types import BoolArray, FloatArray

__all__ = ["Dimension", "NormsBundle", "NormsFormatError", "SourceLoss"]


class NormsFormatError(InputError):
    """A norms file is malformed; the message names the file, row and field."""

    def __init__(self, path: object, message: str, *, row: int | None = None, field: str = ""):
        where = f"{path}"
        if row is not None:
            where += f", row {row}"
        if field:
            where += f", field {field!r}"
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class SourceLoss:
    """What a loader could not carry into the bundle, measured against what its sources promise.

    ``expected`` is the number of concepts the source promises (THINGS: 1,854); ``usable`` are
    the concepts every file lists; ``lost`` counts the promised concepts missing from at least
    one file. ``reasons`` gives the count behind each kind of disagreement (file: what), with a
    few concept ids each in ``examples``. ``threshold`` is the most lost concepts a load accepts
    without ``allowed`` (the caller's explicit flag).
    """

    source: str
    expected: int
    usable: int
    lost: int
    threshold: int
    allowed: bool
    reasons: Mapping[str, int] = field(default_factory=dict)
    examples: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def over_threshold(self) -> bool:
        return self.lost > self.threshold

    def lines(self) -> list[str]:
        """What to print: the total, then one line per non-zero reason."""
        if not self.lost and not any(self.reasons.values()):
            return []
        head = (
            f"{self.source}: {self.lost} of the {self.expected:,} concepts are missing from at "
            f"least one file; {self.usable:,} are in every file (threshold {self.threshold}"
            f"{', exceeded by explicit permission' if self.allowed and self.over_threshold else ''})"
        )
        body = [
            f"  {reason}: {n}"
            + (f" (e.g. {', '.join(self.examples[reason])})" if self.examples.get(reason) else "")
            for reason, n in self.reasons.items()
            if n
        ]
        return [head, *body]

    def to_dict(self) -> LossRecord:
        return {
            "source": self.source,
            "expected": self.expected,
            "usable": self.usable,
            "lost": self.lost,
            "threshold": self.threshold,
            "allowed": self.allowed,
            "reasons": dict(self.reasons),
            "examples": {k: list(v) for k, v in self.examples.items()},
        }


@dataclass(frozen=True)
class Dimension:
    """One rated property: per-concept means and (where published) per-concept rater SDs.

    ``scale`` is the rating instrument's nominal range (1–7 for THINGSplus Likert items, the
    0–520 size slider, 0–5 for Lancaster perceptual strength): tiles bin on it, never on the pool.
    ``sds`` is ``None`` when the norms publish no per-rater spread, in which case the
    rater-disagreement ratio (§I-C) is unavailable rather than zero.
    """

    name: str
    means: FloatArray
    scale: tuple[float, float]
    sds: FloatArray | None = None

    def __post_init__(self) -> None:
        means = np.asarray(self.means, dtype=np.float64)
        if means.ndim != 1:
            raise ValueError(f"dimension {self.name}: means must be a vector")
        object.__setattr__(self, "means", means)
        if self.sds is not None:
            sds = np.asarray(self.sds, dtype=np.float64)
            if sds.shape != means.shape:
                raise ValueError(f"dimension {self.name}: sds shape {sds.shape} != {means.shape}")
            object.__setattr__(self, "sds", sds)
        lo, hi = float(self.scale[0]), float(self.scale[1])
        if not lo < hi:
            raise ValueError(f"dimension {self.name}: scale {self.scale} is empty")
        object.__setattr__(self, "scale", (lo, hi))


@dataclass(frozen=True)
class NormsBundle:
    """A concept universe with aligned per-concept arrays.

    ``coverage[source]`` is True where a source (property ratings, size ratings, SPoSE triplets,
    SWOW cues, …) can score the concept; the pool (§I-B) intersects every enabled source before
    any filtering. ``artifact`` marks artifacts against natural kinds for the Appendix A retention
    report (``None`` when the bundle cannot tell). ``skipped`` counts rows a loader could not use,
    keyed by reason, so nothing is silently dropped; ``loss`` (where the source promises a
    concept count, as THINGS does) measures the bundle against that promise.
    """

    name: str
    concepts: tuple[str, ...]
    words: tuple[str, ...]
    dimensions: Mapping[str, Dimension]
    coverage: Mapping[str, BoolArray] = field(default_factory=dict)
    noun: BoolArray | None = None
    homograph: BoolArray | None = None
    artifact: BoolArray | None = None
    covariates: Mapping[str, FloatArray] = field(default_factory=dict)
    skipped: Mapping[str, int] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)
    loss: SourceLoss | None = None

    def __post_init__(self) -> None:
        n = len(self.concepts)
        if len(self.words) != n:
            raise ValueError(f"norms {self.name}: {len(self.words)} words for {n} concepts")
        if len(set(self.concepts)) != n:
            raise ValueError(f"norms {self.name}: concept ids are not unique")
        for name, dim in self.dimensions.items():
            if dim.means.shape != (n,):
                raise ValueError(
                    f"norms {self.name}: dimension {name} has {dim.means.shape[0]} rows"
                )
        for label, arrays in (("coverage", self.coverage), ("covariates", self.covariates)):
            for key, arr in arrays.items():
                if np.asarray(arr).shape != (n,):
                    raise ValueError(f"norms {self.name}: {label}[{key!r}] is not aligned")
        for label, flag in (("noun", self.noun), ("homograph", self.homograph)):
            if flag is not None and np.asarray(flag).shape != (n,):
                raise ValueError(f"norms {self.name}: {label} flags are not aligned")
        if self.artifact is not None and np.asarray(self.artifact).shape != (n,):
            raise ValueError(f"norms {self.name}: artifact flags are not aligned")

    def __len__(self) -> int:
        return len(self.concepts)

    def index(self, concept: str) -> int:
        """Row of a concept id (raises ``KeyError`` naming the bundle)."""
        try:
            return self.concepts.index(concept)
        except ValueError:
            raise KeyError(f"concept {concept!r} is not in norms {self.name}") from None
