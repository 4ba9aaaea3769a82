"""Optional similarity sources (paper §I-B, §I-D, §I-K conditions 2 and 3): SWOW-EN association
strengths and ConceptNet assertions, read from the user's own copies in their published formats.

* SWOW-EN strengths (De Deyne et al. 2019; CC BY-NC-ND, never redistributed): the tab-separated
  ``strength.SWOW-EN.R123.csv`` (or ``.R1.csv``) written by the SWOWEN-2018 scripts, header
  ``cue  response  R123  N  R123.Strength`` — per cue, the count of each response, the cue's
  total and their ratio.
* ConceptNet 5 assertions (CC BY-SA 4.0): ``conceptnet-assertions-5.x.csv[.gz]``, tab-separated
  without a header: assertion URI, relation (``/r/IsA``), start and end concept URIs
  (``/c/en/hammer/n``), and a JSON object with ``weight``. Only edges with both ends in the
  requested language are kept; every other row is counted by reason.

:func:`swow_coverage` gives the pool's ``swow`` coverage source: exact-case string equality
between the THINGS word and a SWOW cue — no lemmatising, stemming or case folding (§I-B).
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from choiceaudit.errors import InputError
from choiceaudit.instruments.signalling._norms import NormsBundle, NormsFormatError
from choiceaudit.types import BoolArray

__all__ = [
    "AssociationStrengths",
    "ConceptNetEdges",
    "conceptnet_coverage",
    "read_conceptnet_assertions",
    "read_swow_strengths",
    "swow_coverage",
    "with_coverage",
]


@dataclass(frozen=True)
class AssociationStrengths:
    """SWOW strengths: ``strength[cue][response] = count / N`` (a row-stochastic cue graph)."""

    strength: dict[str, dict[str, float]]
    response_set: str
    #: rows with no response (empty or ``NA``: the participant gave none), read and not counted
    #: as associations; recorded so a build shows them
    n_missing_responses: int = 0

    @property
    def cues(self) -> frozenset[str]:
        return frozenset(self.strength)

    def __len__(self) -> int:
        return len(self.strength)


def read_swow_strengths(
    path: str | Path, *, response_set: str | None = None
) -> AssociationStrengths:
    """Read a SWOW-EN strength table. ``response_set`` (``"R123"`` or ``"R1"``) is detected from
    the header when omitted. Every row is validated: count ≤ N, strength = count/N."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"SWOW strength file not found: {path}")
    with path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = list(reader.fieldnames or [])
        if response_set is None:
            found = [c for c in header if c.endswith(".Strength")]
            if len(found) != 1:
                raise NormsFormatError(path, f"cannot find one '<set>.Strength' column in {header}")
            response_set = found[0].removesuffix(".Strength")
        need = ["cue", "response", response_set, "N", f"{response_set}.Strength"]
        missing = [c for c in need if c not in header]
        if missing:
            raise NormsFormatError(path, f"missing column(s) {missing}; header is {header}")
        table: dict[str, dict[str, float]] = {}
        n_missing = 0
        for i, row in enumerate(reader, start=2):
            cue, response = row["cue"], row["response"]
            if not cue:
                raise NormsFormatError(path, "empty cue", row=i, field="cue")
            if not response or response == "NA":
                # a missing response is no association (the published strength tables have
                # dropped them already); counted, and the build records the count
                n_missing += 1
                continue
            try:
                count = int(row[response_set])
                total = int(row["N"])
                strength = float(row[f"{response_set}.Strength"])
            except (TypeError, ValueError):
                raise NormsFormatError(
                    path, "count, N or strength is not a number", row=i
                ) from None
            if not 0 < count <= total or not math.isclose(strength, count / total, rel_tol=1e-3):
                raise NormsFormatError(
                    path,
                    f"strength {strength} != {count}/{total}",
                    row=i,
                    field=f"{response_set}.Strength",
                )
            table.setdefault(cue, {})[response] = strength
    return AssociationStrengths(table, response_set, n_missing_responses=n_missing)


def swow_coverage(norms: NormsBundle, swow: AssociationStrengths) -> BoolArray:
    """True where the concept's word is a SWOW cue, by exact-case string equality (§I-B)."""
    cues = swow.cues
    return np.array([w in cues for w in norms.words], dtype=bool)


def conceptnet_coverage(norms: NormsBundle, edges: ConceptNetEdges) -> BoolArray:
    """True where the concept's word is a ConceptNet term (exact string, after the loader's
    ``_`` → space mapping of the URI)."""
    terms = edges.terms
    return np.array([w in terms for w in norms.words], dtype=bool)


def with_coverage(
    norms: NormsBundle, source: str, mask: BoolArray, *, origin: str = ""
) -> NormsBundle:
    """A copy of ``norms`` with one more coverage source (the pool intersects all of them)."""
    mask = np.asarray(mask, dtype=bool)
    coverage = {**norms.coverage, source: mask}
    sources = {**norms.sources, source: origin} if origin else dict(norms.sources)
    return dataclasses.replace(norms, coverage=coverage, sources=sources)


@dataclass(frozen=True)
class ConceptNetEdges:
    """ConceptNet edges between terms of one language: parallel lists plus skip counts."""

    start: list[str] = field(default_factory=list)
    end: list[str] = field(default_factory=list)
    relation: list[str] = field(default_factory=list)
    weight: list[float] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.start)

    @property
    def terms(self) -> frozenset[str]:
        return frozenset(self.start) | frozenset(self.end)


def _term(uri: str, language: str) -> str | None:
    """``/c/en/ice_cream/n`` → ``"ice cream"``; ``None`` for another language or a bad URI."""
    parts = uri.split("/")
    if len(parts) < 4 or parts[0] != "" or parts[1] != "c" or not parts[3]:
        raise ValueError(uri)
    if parts[2] != language:
        return None
    return parts[3].replace("_", " ")


def _lines(path: Path) -> Iterator[str]:
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8", newline="") as text:
            yield from text
    else:
        with path.open(encoding="utf-8", newline="") as text:
            yield from text


def read_conceptnet_assertions(path: str | Path, *, language: str = "en") -> ConceptNetEdges:
    """Read a ConceptNet assertions dump (plain or gzipped), keeping ``language`` edges."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"ConceptNet assertions not found: {path}")
    edges = ConceptNetEdges()
    for i, line in enumerate(_lines(path), start=1):
        line = line.rstrip("\r\n")
        if not line:
            continue
        cols = line.split("\t")
        if len(cols) != 5:
            raise NormsFormatError(path, f"{len(cols)} tab-separated fields, expected 5", row=i)
        _, relation, start_uri, end_uri, info = cols
        try:
            start, end = _term(start_uri, language), _term(end_uri, language)
        except ValueError as exc:
            raise NormsFormatError(path, f"malformed concept URI {exc}", row=i) from None
        if start is None or end is None:
            edges.skipped["other language"] = edges.skipped.get("other language", 0) + 1
            continue
        try:
            weight = float(json.loads(info)["weight"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            raise NormsFormatError(
                path, "JSON info without a numeric weight", row=i, field="info"
            ) from None
        edges.start.append(start)
        edges.end.append(end)
        edges.relation.append(relation)
        edges.weight.append(weight)
    return edges
