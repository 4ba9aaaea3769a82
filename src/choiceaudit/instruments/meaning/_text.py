"""String measures the meaning instrument needs: words, Jaccard, the English parenthetical, script.

Words are what the paper's E6 tokenizer produces: split on punctuation and whitespace, rejoin on
spaces (Table 11 caption: "splits on punctuation and rejoins on spaces"). Unicode combining marks
(Bengali vowel signs, virama) are word characters, so a Bengali word is never split inside.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping

__all__ = [
    "ENGLISH_PARENTHETICAL_MIN_ASCII_SHARE",
    "ENGLISH_PARENTHETICAL_MIN_LETTERS",
    "STOPWORDS",
    "content_words",
    "english_parenthetical",
    "has_latin",
    "jaccard",
    "option_key",
    "strip_parentheticals",
    "words",
]

#: Appendix J: a parenthesised span is English if it has at least three ASCII letters …
ENGLISH_PARENTHETICAL_MIN_LETTERS = 3
#: … and at least 60% of its characters are ASCII letters (spaces count as characters).
ENGLISH_PARENTHETICAL_MIN_ASCII_SHARE = 0.60

_PAREN = re.compile(r"\(([^()]*)\)")


def _is_word_char(ch: str) -> bool:
    cat = unicodedata.category(ch)
    return cat[0] in ("L", "N", "M")


def words(text: str) -> list[str]:
    """Maximal runs of letters, digits and combining marks, in order (punctuation dropped)."""
    out: list[str] = []
    current: list[str] = []
    for ch in text:
        if _is_word_char(ch):
            current.append(ch)
        elif current:
            out.append("".join(current))
            current = []
    if current:
        out.append("".join(current))
    return out


def jaccard(a: str, b: str, *, tokenize: Callable[[str], list[str]] | None = None) -> float:
    """Jaccard similarity of the case-folded word sets of ``a`` and ``b`` (0 when both empty);
    words are ``tokenize``'s (default :func:`words`)."""
    split = words if tokenize is None else tokenize
    sa = {w.casefold() for w in split(a)}
    sb = {w.casefold() for w in split(b)}
    union = sa | sb
    return len(sa & sb) / len(union) if union else 0.0


def english_parenthetical(text: str) -> str | None:
    """The first parenthesised span that is English by the Appendix J rule, stripped; else None.

    The rule: at least :data:`ENGLISH_PARENTHETICAL_MIN_LETTERS` ASCII letters and at least
    :data:`ENGLISH_PARENTHETICAL_MIN_ASCII_SHARE` of the span's characters ASCII letters, which
    excludes Bengali asides and bare numerals.
    """
    for match in _PAREN.finditer(text):
        span = match.group(1).strip()
        if not span:
            continue
        letters = sum(1 for ch in span if ch.isascii() and ch.isalpha())
        if (
            letters >= ENGLISH_PARENTHETICAL_MIN_LETTERS
            and letters / len(span) >= ENGLISH_PARENTHETICAL_MIN_ASCII_SHARE
        ):
            return span
    return None


def strip_parentheticals(text: str) -> str:
    """``text`` with every parenthesised span removed and whitespace collapsed."""
    return " ".join(_PAREN.sub(" ", text).split())


def has_latin(text: str) -> bool:
    """True when ``text`` contains a Latin-script letter (the §5.6 script cue)."""
    return any(ch.isalpha() and "LATIN" in unicodedata.name(ch, "") for ch in text)


#: Function words excluded from surface matching (d-surf) and the content-word hook (Appendix J
#: (iv)). The paper does not publish its list; these are short, documented, and editable.
STOPWORDS: dict[str, frozenset[str]] = {
    "en": frozenset(
        [
            "a",
            "an",
            "the",
            "of",
            "to",
            "in",
            "on",
            "at",
            "by",
            "for",
            "from",
            "with",
            "without",
            "into",
            "onto",
            "up",
            "down",
            "out",
            "off",
            "over",
            "under",
            "and",
            "or",
            "but",
            "nor",
            "not",
            "no",
            "so",
            "as",
            "than",
            "then",
            "that",
            "this",
            "these",
            "those",
            "it",
            "its",
            "is",
            "are",
            "was",
            "were",
            "be",
            "been",
            "being",
            "am",
            "do",
            "does",
            "did",
            "has",
            "have",
            "had",
            "one",
            "one's",
            "someone",
            "something",
            "somebody",
            "someone's",
            "oneself",
            "s",
            "i",
            "you",
            "he",
            "she",
            "we",
            "they",
            "me",
            "him",
            "her",
            "us",
            "them",
            "my",
            "your",
            "his",
            "our",
            "their",
            "what",
            "which",
            "who",
            "whom",
            "whose",
            "very",
            "too",
            "also",
            "just",
            "only",
            "about",
        ]
    ),
    "bn": frozenset(
        [
            "ও",
            "এবং",
            "বা",
            "না",
            "নয়",
            "কি",
            "কী",
            "যে",
            "যা",
            "যার",
            "যাকে",
            "সে",
            "তার",
            "তা",
            "এ",
            "এই",
            "ওই",
            "সেই",
            "একটি",
            "একটা",
            "এক",
            "কোনো",
            "কোন",
            "করা",
            "করে",
            "হয়",
            "হওয়া",
            "থেকে",
            "দিয়ে",
            "জন্য",
            "মতো",
            "মত",
            "মধ্যে",
            "সঙ্গে",
            "সাথে",
            "উপর",
            "আর",
            "খুব",
            "ভাবে",
        ]
    ),
}


def content_words(
    text: str, language: str, stopwords: Mapping[str, frozenset[str]] | None = None
) -> set[str]:
    """Case-folded words of ``text`` minus the language's stopwords (``stopwords``, default
    :data:`STOPWORDS`; none for a language the mapping lacks)."""
    stop = (STOPWORDS if stopwords is None else stopwords).get(language, frozenset())
    return {w for w in (w.casefold() for w in words(text)) if w not in stop}


def option_key(text: str) -> str:
    """The identity used to de-duplicate a slate: case-folded, whitespace-collapsed, trailing
    punctuation stripped, so "To faint." and "to faint" count as one option."""
    return " ".join(text.casefold().split()).rstrip(" .;:,।")
