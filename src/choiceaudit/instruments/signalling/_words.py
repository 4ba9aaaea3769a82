"""Word-level aggregation shared by conditions 1–3 (paper §I-K: "Conditions 1 to 3 hold pair
aggregation and word-level aggregation constant"): an option phrase is reduced to its content
words — lower-cased alphabetic tokens, minus a short stopword list and minus the words every
option of the tile shares (the tile's frame, e.g. "about the size of a") — and relates to a
concept through its best content word."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["STOPWORDS", "option_content_words"]

#: Function words never used to relate an option to a concept.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "by",
        "is",
        "are",
        "be",
        "it",
        "its",
        "and",
        "or",
        "for",
        "in",
        "on",
        "at",
        "as",
        "with",
        "from",
        "can",
        "very",
    ]
)


def option_content_words(options: Sequence[str]) -> list[tuple[str, ...]]:
    """Content words of each option phrase (see module docstring), in phrase order."""
    tokens = [re.findall(r"[a-z]+", o.lower()) for o in options]
    shared = set.intersection(*(set(t) for t in tokens)) if len(tokens) > 1 else set()
    out = []
    for toks in tokens:
        words = tuple(dict.fromkeys(t for t in toks if t not in STOPWORDS and t not in shared))
        out.append(words)
    return out
