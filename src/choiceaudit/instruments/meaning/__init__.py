"""The meaning-choice instrument (arXiv 2610.22526): literal attraction in decision models."""

from choiceaudit.instruments.meaning._bagdhara import BAGDHARA_FIELDS, load_bagdhara
from choiceaudit.instruments.meaning._corpus import (
    Corpus,
    CorpusError,
    IdiomEntry,
    LoaderReport,
    normalise_text,
)
from choiceaudit.instruments.meaning._idioms_en import (
    find_phrases_json,
    load_idioms_en,
    parse_senses,
)

__all__ = [
    "BAGDHARA_FIELDS",
    "Corpus",
    "CorpusError",
    "IdiomEntry",
    "LoaderReport",
    "find_phrases_json",
    "load_bagdhara",
    "load_idioms_en",
    "normalise_text",
    "parse_senses",
]
