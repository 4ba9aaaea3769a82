"""Conditions 1–3, 6 and 7 and the two reference choosers by name (paper §I-K), so the command
line and the Python API build the same chooser.

| name | condition | chooser |
|---|---|---|
| ``cosine`` | 1 | embedding cosine, no pragmatics (needs an embedder) |
| ``swow`` | 2 | SWOW random walk (needs a SWOW-EN strength file) |
| ``conceptnet`` | 3 | ConceptNet path (needs a ConceptNet assertions dump) |
| ``rsa:swow``, ``rsa:conceptnet`` | 6 | the RSA layer over that base |
| ``rsa:cosine``, ``rsa:<model>`` | 6 | refused, with the reason (§IV-H1) |
| ``bayes`` | 7 | the exact oracle |
| ``uniform``, ``salience`` | reference | uniform random selection, the fit-maximising pole |

Conditions 4 and 5 are language models under the two renderings (``--model``), never choosers.
Conditions 1–3 share the word-level aggregation of :func:`option_content_words` (the tile's
shared frame stripped, best content word) and the pair minimum.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from choiceaudit.errors import InputError
from choiceaudit.instruments.signalling._association_choosers import (
    ConceptNetPathChooser,
    SwowWalkChooser,
)
from choiceaudit.instruments.signalling._associations import (
    read_conceptnet_assertions,
    read_swow_strengths,
)
from choiceaudit.instruments.signalling._choosers import (
    BayesOracleChooser,
    CosineChooser,
    SalienceChooser,
    UniformChooser,
)
from choiceaudit.instruments.signalling._rsa import INELIGIBLE_BASES, IneligibleBaseError
from choiceaudit.instruments.signalling._rsa_chooser import RSAChooser
from choiceaudit.scorers import Embedder, Scorer
from choiceaudit.types import Item

__all__ = ["CHOOSER_CONDITIONS", "chooser_condition", "signalling_chooser"]

#: Chooser name → the paper's condition number ("reference" for uniform and salience).
CHOOSER_CONDITIONS: dict[str, str] = {
    "cosine": "1",
    "swow": "2",
    "conceptnet": "3",
    "rsa:swow": "6",
    "rsa:conceptnet": "6",
    "bayes": "7",
    "uniform": "reference",
    "salience": "reference",
}


def chooser_condition(name: str) -> str:
    """The condition of a chooser name (``rsa:...`` is 6; an LM is 4 or 5 by rendering)."""
    if name.startswith("rsa"):
        return "6"
    return CHOOSER_CONDITIONS.get(name, "reference")


def signalling_chooser(
    name: str,
    items: Iterable[Item],
    *,
    embed: Callable[[], Embedder] | None = None,
    embed_model: str = "",
    swow: str | Path | None = None,
    conceptnet: str | Path | None = None,
) -> Scorer:
    """The chooser ``name`` over ``items`` (see module docstring). ``embed`` is called only
    for ``cosine``; ``swow`` / ``conceptnet`` are files in their published formats. An RSA
    layer over an ineligible base raises :class:`IneligibleBaseError` with the reason."""
    items = list(items)
    if name.startswith("rsa:"):
        base = name.removeprefix("rsa:")
        if base == "cosine":
            raise IneligibleBaseError(
                f"RSA over a cosine base is refused: {INELIGIBLE_BASES['cosine']}"
            )
        if base not in ("swow", "conceptnet"):
            raise IneligibleBaseError(
                f"RSA over {base!r} is refused: {INELIGIBLE_BASES['prompted-lm']}"
                if base not in CHOOSER_CONDITIONS
                else f"RSA over {base!r} is refused: it supplies no literal semantics over the "
                "hypothesis space"
            )
        inner = signalling_chooser(base, items, swow=swow, conceptnet=conceptnet)
        return RSAChooser(inner)
    if name == "uniform":
        return UniformChooser()
    if name == "salience":
        return SalienceChooser(items)
    if name == "bayes":
        return BayesOracleChooser(items)
    if name == "cosine":
        if embed is None:
            raise InputError("the cosine chooser (condition 1) needs an embedder")
        return CosineChooser(items, embed(), model=embed_model)
    if name == "swow":
        if swow is None:
            raise InputError(
                "the swow chooser (condition 2) needs a SWOW-EN strength file (--swow FILE)"
            )
        return SwowWalkChooser(items, read_swow_strengths(swow))
    if name == "conceptnet":
        if conceptnet is None:
            raise InputError(
                "the conceptnet chooser (condition 3) needs a ConceptNet assertions dump "
                "(--conceptnet FILE)"
            )
        return ConceptNetPathChooser(items, read_conceptnet_assertions(conceptnet))
    raise InputError(
        f"unknown chooser {name!r}; use one of {', '.join(CHOOSER_CONDITIONS)} (rsa:<base> for "
        "condition 6)"
    )
