"""The ``things`` norms bundle: THINGS concepts, THINGSplus property and size ratings, SPoSE.

File formats (paper §I-B, §I-C; the THINGS and THINGSplus releases):

* THINGS ``things_concepts.tsv`` — tab-separated, CRLF line endings, one row per concept with
  ``Word``, ``uniqueID``, ``Concreteness (M)``, ``SUBTLEX freq``, ``Dominant Part of Speech``.
* THINGSplus property ratings — comma-separated, per concept a mean and a rater SD for each
  dimension. The early release names them ``<dim>_mean`` / ``<dim>_sd`` (``be.moved_mean``); the
  final release capitalises and re-spells them (``Manmade_mean``, ``manmade_SD``,
  ``mean_manmade``, ``be_moved (SD)``, …). Both are accepted: column names are compared after
  lower-casing and folding every run of non-alphanumerics to ``_``.
* THINGSplus size ratings — semicolon-separated, ``meanSize`` / ``stdSize`` on the 0–520 slider;
  its ``uniqueID`` spells multi-word concepts with spaces where THINGS uses underscores.
* SPoSE — whitespace-separated 1,854 × 66 matrix in THINGS order, with optional
  ``unique_id.txt`` and ``labels_66.txt``.

What the sources promise, and what :func:`load_things` checks: THINGS has
:data:`THINGS_CONCEPTS` (1,854) concepts; the property ratings, the size ratings and SPoSE have
one row per THINGS concept; SPoSE rows are in THINGS order. Rows in the wrong order are an error.
A concept missing from any file (or a row for a concept THINGS does not list) is a loss: it is
always reported (``NormsBundle.loss``, and a warning), and more than :data:`MAX_CONCEPT_LOSS`
lost concepts is a :class:`NormsFormatError` unless the caller passes ``allow_loss=True``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from choiceaudit.instruments.signalling._cells import (
    REFETCH,
    fold,
    number,
    read_rows,
    read_text,
    require,
)
from choiceaudit.instruments.signalling._norms import (
    Dimension,
    NormsBundle,
    NormsFormatError,
    SourceLoss,
)
from choiceaudit.types import BoolArray, FloatArray

__all__ = [
    "LIKERT_SCALE",
    "MAX_CONCEPT_LOSS",
    "PROPERTY_DIMENSIONS",
    "SIZE_SCALE",
    "THINGS_CONCEPTS",
    "PropertyRatings",
    "SizeRatings",
    "Spose",
    "ThingsConcepts",
    "load_things",
    "read_property_ratings",
    "read_size_ratings",
    "read_spose",
    "read_things_concepts",
    "things_loss",
]

#: THINGSplus property dimensions, in the early release's spelling.
PROPERTY_DIMENSIONS: tuple[str, ...] = (
    "manmade",
    "precious",
    "lives",
    "heavy",
    "natural",
    "moves",
    "grasp",
    "hold",
    "be.moved",
    "pleasant",
    "arousing",
)
#: The nominal range of the THINGSplus Likert items (§I-C: "bin on the nominal 1 to 7 range").
LIKERT_SCALE = (1.0, 7.0)
#: The THINGSplus size slider.
SIZE_SCALE = (0.0, 520.0)
#: THINGS lists 1,854 object concepts (Hebart et al. 2019); every other file has one row each.
THINGS_CONCEPTS = 1854
#: The most of those concepts the files may disagree on (missing from a file, or named by a row
#: THINGS does not list) before :func:`load_things` refuses without ``allow_loss=True``: 9, half
#: a percent — room for a release that respells a handful of ids, never for a cut file (a
#: THINGS table cut at a row boundary lost 742). The shared data and the canonical OSF files
#: lose none.
MAX_CONCEPT_LOSS = 9

_THINGS_FILES = {
    "concepts": ("things", "things_concepts.tsv"),
    "properties": ("thingsplus", "property_ratings_animacy.csv"),
    "size": ("thingsplus", "size_ratings_size_fixed.csv"),
    "spose": ("spose", "spose_embedding_66d_sorted.txt"),
    "spose_ids": ("spose", "unique_id.txt"),
    "spose_labels": ("spose", "labels_66.txt"),
}


@dataclass(frozen=True)
class ThingsConcepts:
    """The THINGS concept table, in file order."""

    unique_ids: tuple[str, ...]
    words: tuple[str, ...]
    concreteness: FloatArray
    frequency: FloatArray
    part_of_speech: tuple[str | None, ...]


def read_things_concepts(path: str | Path) -> ThingsConcepts:
    """Read ``things_concepts.tsv`` (tab-separated, CRLF or LF)."""
    path = Path(path)
    header, rows = read_rows(path, "\t")
    need = ["Word", "uniqueID", "Concreteness (M)", "SUBTLEX freq", "Dominant Part of Speech"]
    require(path, header, need)
    ids: list[str] = []
    words: list[str] = []
    conc: list[float] = []
    freq: list[float] = []
    pos: list[str | None] = []
    for i, row in enumerate(rows, start=2):
        uid = (row.get("uniqueID") or "").strip()
        word = (row.get("Word") or "").strip()
        if not uid:
            raise NormsFormatError(path, "empty concept id", row=i, field="uniqueID")
        if not word:
            raise NormsFormatError(path, "empty word", row=i, field="Word")
        ids.append(uid)
        words.append(word)
        conc.append(number(path, i, "Concreteness (M)", row.get("Concreteness (M)")))
        freq.append(number(path, i, "SUBTLEX freq", row.get("SUBTLEX freq")))
        tag = (row.get("Dominant Part of Speech") or "").strip()
        pos.append(None if tag in ("", "#N/A", "NA") else tag)
    if len(set(ids)) != len(ids):
        dup = sorted({u for u in ids if ids.count(u) > 1})[:5]
        raise NormsFormatError(path, f"duplicate uniqueID values {dup}", field="uniqueID")
    return ThingsConcepts(tuple(ids), tuple(words), np.array(conc), np.array(freq), tuple(pos))


@dataclass(frozen=True)
class PropertyRatings:
    """THINGSplus property ratings keyed by concept id: ``means[dim]``/``sds[dim]`` aligned with
    ``unique_ids``; dimension names in the early release's spelling."""

    unique_ids: tuple[str, ...]
    means: dict[str, FloatArray]
    sds: dict[str, FloatArray]


def _find_column(folded: dict[str, str], dim: str, stat: str) -> str | None:
    d = fold(dim)
    synonyms = {"mean": ("mean", "m", "avg"), "sd": ("sd", "std", "stdev")}[stat]
    for s in synonyms:
        for candidate in (f"{d}_{s}", f"{s}_{d}", f"{d}{s}"):
            if candidate in folded:
                return folded[candidate]
    return None


def read_property_ratings(
    path: str | Path, *, dimensions: Sequence[str] = PROPERTY_DIMENSIONS
) -> PropertyRatings:
    """Read THINGSplus property ratings in either column convention (see module docstring)."""
    path = Path(path)
    delimiter = "\t" if path.suffix.lower() in (".tsv", ".txt") else ","
    header, rows = read_rows(path, delimiter)
    folded = {fold(h): h for h in header}
    id_col = next((folded[k] for k in ("uniqueid", "unique_id", "concept_id") if k in folded), None)
    if id_col is None:
        raise NormsFormatError(path, f"no uniqueID column; header is {header}")
    cols: dict[str, tuple[str, str]] = {}
    for dim in dimensions:
        mean_col = _find_column(folded, dim, "mean")
        sd_col = _find_column(folded, dim, "sd")
        if mean_col is None or sd_col is None:
            raise NormsFormatError(
                path, f"no mean/SD columns for dimension {dim!r}; header is {header}"
            )
        cols[dim] = (mean_col, sd_col)
    ids = []
    means: dict[str, list[float]] = {d: [] for d in dimensions}
    sds: dict[str, list[float]] = {d: [] for d in dimensions}
    for i, row in enumerate(rows, start=2):
        uid = (row.get(id_col) or "").strip()
        if not uid:
            raise NormsFormatError(path, "empty concept id", row=i, field=id_col)
        ids.append(uid)
        for dim, (mc, sc) in cols.items():
            means[dim].append(number(path, i, mc, row.get(mc)))
            sds[dim].append(number(path, i, sc, row.get(sc)))
    if len(set(ids)) != len(ids):
        raise NormsFormatError(path, "duplicate concept ids", field=id_col)
    return PropertyRatings(
        tuple(ids),
        {d: np.array(v) for d, v in means.items()},
        {d: np.array(v) for d, v in sds.items()},
    )


@dataclass(frozen=True)
class SizeRatings:
    """THINGSplus size ratings: mean and rater SD of the rated size on the 0–520 slider."""

    unique_ids: tuple[str, ...]
    means: FloatArray
    sds: FloatArray


def read_size_ratings(path: str | Path) -> SizeRatings:
    """Read the semicolon-separated size ratings; ids are normalised to THINGS spelling."""
    path = Path(path)
    header, rows = read_rows(path, ";")
    folded = {fold(h): h for h in header}
    id_col = folded.get("uniqueid")
    mean_col = folded.get("meansize") or folded.get("size_mean")
    sd_col = folded.get("stdsize") or folded.get("size_sd") or folded.get("sdsize")
    if id_col is None or mean_col is None or sd_col is None:
        raise NormsFormatError(
            path, f"need uniqueID, meanSize and stdSize columns; header is {header}"
        )
    ids, means, sds = [], [], []
    for i, row in enumerate(rows, start=2):
        uid = (row.get(id_col) or "").strip().replace(" ", "_")
        if not uid:
            raise NormsFormatError(path, "empty concept id", row=i, field=id_col)
        ids.append(uid)
        means.append(number(path, i, mean_col, row.get(mean_col)))
        sds.append(number(path, i, sd_col, row.get(sd_col)))
    if len(set(ids)) != len(ids):
        raise NormsFormatError(path, "duplicate concept ids", field=id_col)
    return SizeRatings(tuple(ids), np.array(means), np.array(sds))


@dataclass(frozen=True)
class Spose:
    """SPoSE: a human-derived similarity embedding fit to odd-one-out triplets (§I-C)."""

    unique_ids: tuple[str, ...]
    matrix: FloatArray
    labels: tuple[str, ...]


def read_spose(
    path: str | Path, *, unique_ids: str | Path | Sequence[str], labels: str | Path | None = None
) -> Spose:
    """Read the SPoSE matrix; ``unique_ids`` is the row-id file or the ids themselves."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"norms file not found: {path}")
    if isinstance(unique_ids, (str, Path)):
        ids = tuple(read_text(Path(unique_ids)).split())
    else:
        ids = tuple(unique_ids)
    rows: list[list[float]] = []
    width = None
    for i, line in enumerate(read_text(path).splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if width is None:
            width = len(parts)
        elif len(parts) != width:
            raise NormsFormatError(path, f"{len(parts)} values, expected {width}", row=i)
        # an embedding has no missing cells: every one must be a finite number
        rows.append([number(path, i, f"dim {j}", p, missing=False) for j, p in enumerate(parts)])
    matrix = np.array(rows, dtype=np.float64)
    if matrix.shape[0] != len(ids):
        raise NormsFormatError(path, f"{matrix.shape[0]} rows but {len(ids)} unique ids")
    names: tuple[str, ...] = ()
    if labels is not None:
        names = tuple(x.strip() for x in read_text(Path(labels)).splitlines() if x.strip())
        if len(names) != matrix.shape[1]:
            raise NormsFormatError(labels, f"{len(names)} labels for {matrix.shape[1]} dimensions")
    return Spose(ids, matrix, names)


def _locate(data_dir: Path, key: str) -> Path:
    sub, name = _THINGS_FILES[key]
    for candidate in (data_dir / sub / name, data_dir / name):
        if candidate.is_file():
            return candidate
    raise NormsFormatError(
        data_dir,
        f"{name} not found (looked in {sub}/ and the top level); {REFETCH}",
    )


def _align(ids: Sequence[str], source_ids: Sequence[str], values: FloatArray) -> FloatArray:
    pos = {u: i for i, u in enumerate(source_ids)}
    out = np.full(len(ids), np.nan)
    for i, u in enumerate(ids):
        j = pos.get(u)
        if j is not None:
            out[i] = values[j]
    return out


def _examples(ids: set[str], order: Sequence[str]) -> tuple[str, ...]:
    return tuple(u for u in order if u in ids)[:5] if ids else ()


def _check_spose_order(path: Path, spose_ids: Sequence[str], things_ids: Sequence[str]) -> None:
    """SPoSE rows are in THINGS order; ids both list must appear in the same relative order."""
    common = set(spose_ids) & set(things_ids)
    a = [u for u in spose_ids if u in common]
    b = [u for u in things_ids if u in common]
    for row, (x, y) in enumerate(zip(a, b, strict=True), start=1):
        if x != y:
            raise NormsFormatError(
                path,
                f"SPoSE rows are not in THINGS order: concept {row} of those both list is "
                f"{x!r} here and {y!r} in THINGS",
            )


def things_loss(
    things_ids: Sequence[str],
    others: Sequence[tuple[str, Sequence[str]]],
    *,
    source: str,
    allow_loss: bool = False,
    threshold: int = MAX_CONCEPT_LOSS,
) -> SourceLoss:
    """Measure the files against THINGS's promise (module docstring): ``others`` are
    ``(file label, concept ids in file order)``."""
    things = set(things_ids)
    reasons: dict[str, int] = {}
    examples: dict[str, tuple[str, ...]] = {}
    reason = f"THINGS concept table: concepts short of the {THINGS_CONCEPTS:,}"
    reasons[reason] = max(0, THINGS_CONCEPTS - len(things))
    seen = set(things)
    every = set(things)
    for label, ids in others:
        have = set(ids)
        absent, unknown = things - have, have - things
        reasons[f"{label}: THINGS concepts without a row"] = len(absent)
        examples[f"{label}: THINGS concepts without a row"] = _examples(absent, things_ids)
        reasons[f"{label}: rows for concepts THINGS does not list"] = len(unknown)
        examples[f"{label}: rows for concepts THINGS does not list"] = _examples(unknown, ids)
        seen |= have
        every &= have
    lost = len(seen - every) + max(0, THINGS_CONCEPTS - len(seen))
    return SourceLoss(
        source=source,
        expected=THINGS_CONCEPTS,
        usable=len(every),
        lost=lost,
        threshold=threshold,
        allowed=allow_loss,
        reasons=reasons,
        examples={k: v for k, v in examples.items() if v},
    )


def _dimensions(
    ids: Sequence[str], props: PropertyRatings, size: SizeRatings
) -> dict[str, Dimension]:
    """The eleven THINGSplus properties (1–7) and size (0–520), aligned to the THINGS order."""
    dims = {
        d: Dimension(
            d,
            _align(ids, props.unique_ids, props.means[d]),
            LIKERT_SCALE,
            _align(ids, props.unique_ids, props.sds[d]),
        )
        for d in PROPERTY_DIMENSIONS
    }
    dims["size"] = Dimension(
        "size",
        _align(ids, size.unique_ids, size.means),
        SIZE_SCALE,
        _align(ids, size.unique_ids, size.sds),
    )
    return dims


def load_things(
    data_dir: str | Path, *, spose: bool = True, allow_loss: bool = False
) -> NormsBundle:
    """Assemble the ``things`` bundle from a directory laid out as ``choiceaudit data fetch things``
    writes it.

    Dimensions: the eleven THINGSplus properties on 1–7 and ``size`` on 0–520, each with its
    per-concept rater SD. Coverage sources: ``property_ratings``, ``size_ratings`` and (with
    ``spose``) ``spose`` triplet coverage. Homographs are THINGS words listed under more than one
    concept (exact case); artifacts are concepts rated above the manmade midpoint (4 on 1–7).
    Rating rows whose concept THINGS does not list are counted in ``skipped``.

    The files are checked against what they promise (module docstring): SPoSE rows out of
    THINGS order are an error; the concepts lost between the files are measured in
    ``NormsBundle.loss``, warned about when there are any, and more than
    :data:`MAX_CONCEPT_LOSS` of them raise :class:`NormsFormatError` unless ``allow_loss``.
    """
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise NormsFormatError(
            data_dir,
            "no such directory; give --data the directory holding things/, thingsplus/ and "
            "spose/ (`choiceaudit data fetch things --dest DIR` makes one)",
        )
    things = read_things_concepts(_locate(data_dir, "concepts"))
    ids = things.unique_ids
    props = read_property_ratings(_locate(data_dir, "properties"))
    size = read_size_ratings(_locate(data_dir, "size"))
    known = set(ids)
    skipped = {
        "property rating rows for concepts not in THINGS": sum(
            u not in known for u in props.unique_ids
        ),
        "size rating rows for concepts not in THINGS": sum(u not in known for u in size.unique_ids),
    }
    dims = _dimensions(ids, props, size)
    prop_cov: BoolArray = np.all([np.isfinite(dims[d].means) for d in PROPERTY_DIMENSIONS], axis=0)
    coverage: dict[str, BoolArray] = {
        "property_ratings": prop_cov,
        "size_ratings": np.isfinite(dims["size"].means),
    }
    sources = {"things": str(_locate(data_dir, "concepts"))}
    others: list[tuple[str, Sequence[str]]] = [
        ("property ratings", props.unique_ids),
        ("size ratings", size.unique_ids),
    ]
    if spose:
        sp = read_spose(
            _locate(data_dir, "spose"),
            unique_ids=_locate(data_dir, "spose_ids"),
            labels=_locate(data_dir, "spose_labels"),
        )
        _check_spose_order(_locate(data_dir, "spose_ids"), sp.unique_ids, ids)
        have = set(sp.unique_ids)
        coverage["spose"] = np.array([u in have for u in ids])
        skipped["SPoSE rows for concepts not in THINGS"] = sum(
            u not in known for u in sp.unique_ids
        )
        sources["spose"] = str(_locate(data_dir, "spose"))
        others.append(("SPoSE", sp.unique_ids))
    loss = things_loss(ids, others, source="THINGS norms", allow_loss=allow_loss)
    if loss.over_threshold and not allow_loss:
        raise NormsFormatError(
            data_dir,
            "\n".join(loss.lines())
            + f"\nmore than the {loss.threshold} lost concepts a load accepts; check the files "
            "(`choiceaudit data fetch things` records their sha256), or pass allow_loss=True "
            f"to build from the {loss.usable:,} concepts every file lists",
        )
    if loss.lost:
        warnings.warn(f"{data_dir}: " + "\n".join(loss.lines()), stacklevel=2)
    words = things.words
    counts: dict[str, int] = {}
    for w in words:
        counts[w] = counts.get(w, 0) + 1
    manmade = dims["manmade"].means
    return NormsBundle(
        name="things",
        concepts=ids,
        words=words,
        dimensions=dims,
        coverage=coverage,
        noun=np.array([p == "Noun" for p in things.part_of_speech]),
        homograph=np.array([counts[w] > 1 for w in words]),
        artifact=np.where(np.isfinite(manmade), manmade > 4.0, False),
        covariates={"concreteness": things.concreteness, "frequency": things.frequency},
        skipped=skipped,
        sources=sources,
        loss=loss,
    )
