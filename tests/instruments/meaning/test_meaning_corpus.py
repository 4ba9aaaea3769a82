"""Corpus loaders: Bagdhara (19-field schema, JSONL/CSV) and idioms-en (englishidioms)."""

from __future__ import annotations

import csv
import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from choiceaudit.errors import InputError
from choiceaudit.instruments.meaning import Corpus, CorpusError, load_bagdhara
from choiceaudit.instruments.meaning._bagdhara import BAGDHARA_FIELDS
from choiceaudit.instruments.meaning._idioms_en import parse_senses
from choiceaudit.instruments.meaning._text import (
    english_parenthetical,
    has_latin,
    jaccard,
    words,
)

# -- text helpers -------------------------------------------------------------------------------


def test_words_keep_bengali_marks_and_drop_punctuation() -> None:
    assert words("খুব চালাক লোক; সুচতুর ব্যক্তি") == ["খুব", "চালাক", "লোক", "সুচতুর", "ব্যক্তি"]
    assert words("one’s (own) self-made") == ["one", "s", "own", "self", "made"]


def test_english_parenthetical_follows_appendix_j() -> None:
    assert (
        english_parenthetical("প্রথম বাংলা বর্ণমালার অক্ষরসমূহ (the first letters of the Bengali alphabet)")
        == "the first letters of the Bengali alphabet"
    )
    assert english_parenthetical("হাঁসের দলে বক (হাঁসের দলের মধ্যে একটি বক)") is None  # Bengali aside
    assert english_parenthetical("দুই (12) জন (ab)") is None  # numerals; only two letters
    assert english_parenthetical("x (a1 b2 c3 d4)") is None  # 4 letters of 11 chars < 60%
    assert english_parenthetical("x (ab1 cd2 efg)") == "ab1 cd2 efg"  # 7/11 ≥ 60%
    assert english_parenthetical("x (বক) y (fire strength)") == "fire strength"  # first English one


def test_jaccard_and_script() -> None:
    assert jaccard("The cat sat", "the CAT ran") == pytest.approx(2 / 4)
    assert jaccard("", "") == 0.0
    assert has_latin("অগ্নিবল (fire)") and not has_latin("অগ্নিবল ১২৩")


# -- Bagdhara ------------------------------------------------------------------------------------


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def test_sample_rows_load_with_every_field(shared_data: Path) -> None:
    corpus = load_bagdhara(shared_data / "bagdhara" / "sample_3rows.jsonl")
    assert [e.id for e in corpus.entries] == [1, 1000, 10003]
    first = corpus.entries[0]
    assert first.expression == "অ আ ক খ"
    assert first.gold == "বর্ণজ্ঞান; বর্ণমালা"
    assert first.literal.startswith("প্রথম বাংলা বর্ণমালার অক্ষরসমূহ")
    assert first.literal_other == "the first letters of the Bengali alphabet"
    assert first.alternatives == ("ক খ",)
    assert first.tags == ("basics", "alphabet", "education", "children")
    assert first.equivalents_other == ("Learning the ABCs",)
    assert len(first.carriers) == 2 and first.carriers[1] == "স্কুলে প্রথমে অ আ ক খ শেখানো হয়।"
    assert corpus.entries[2].literal_other is None  # its parenthetical is Bengali
    report = corpus.report
    assert [s for s, _ in report.steps][:4] == ["loaded", "normalised", "deduplicated", "usable"]
    assert report.count("loaded") == 3 and report.count("usable") == 3
    assert report.count("with_alt") == 1 and report.count("with_en_parenthetical") == 1


def test_nfc_strip_dedupe_lowest_id_and_filter(
    tmp_path: Path, sample_rows: list[dict[str, Any]]
) -> None:
    base = sample_rows[1]
    decomposed = unicodedata.normalize("NFD", "বোকা লোক")
    assert decomposed != "বোকা লোক"
    rows = [
        {**base, "id": 50, "idiom": "  " + decomposed + " "},  # same idiom as id 7 once NFC'd
        {**base, "id": 7, "idiom": "বোকা লোক"},
        {**base, "id": 9, "idiom": "নতুন", "figurative_meaning_bn": "   "},
        {**base, "id": 11, "idiom": "আরেক", "literal_meaning": None},
        {**base, "id": 12, "idiom": "", "literal_meaning": "x"},
        {**base, "id": 3, "idiom": "রাখা"},
    ]
    corpus = load_bagdhara(write_jsonl(tmp_path / "c.jsonl", rows))
    assert [e.id for e in corpus.entries] == [3, 7]
    assert corpus.entries[1].expression == "বোকা লোক"
    report = corpus.report.to_dict()
    assert [s["count"] for s in report["steps"][:4]] == [6, 6, 4, 2]
    assert report["dropped"] == {
        "duplicate_idiom": 1,
        "missing_figurative_meaning_bn": 1,
        "missing_idiom": 1,
        "missing_literal_meaning": 1,
    }
    assert report["examples"]["duplicate_idiom"] == [50]  # the higher id is the one dropped


def test_csv_matches_jsonl(tmp_path: Path, sample_rows: list[dict[str, Any]]) -> None:
    path = tmp_path / "c.csv"
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(BAGDHARA_FIELDS))
        writer.writeheader()
        for i, row in enumerate(sample_rows):
            out = {}
            for k, v in row.items():
                if isinstance(v, list):  # one JSON array, one Python literal, one bare cell
                    v = json.dumps(v, ensure_ascii=False) if i == 0 else (repr(v) if i == 1 else v)
                    if i == 2:
                        v = row[k][0] if len(row[k]) == 1 else repr(row[k])
                out[k] = "" if v is None else v
            writer.writerow(out)
    from_csv = load_bagdhara(path)
    from_jsonl = load_bagdhara(write_jsonl(tmp_path / "c.jsonl", sample_rows))
    for a, b in zip(from_csv.entries, from_jsonl.entries, strict=True):
        assert (a.id, a.expression, a.gold, a.literal, a.tags, a.alternatives, a.carriers) == (
            b.id,
            b.expression,
            b.gold,
            b.literal,
            b.tags,
            b.alternatives,
            b.carriers,
        )


def test_bad_rows_name_file_row_and_field(
    tmp_path: Path, sample_rows: list[dict[str, Any]]
) -> None:
    good = sample_rows[0]
    missing = {k: v for k, v in good.items() if k != "tags"}
    path = write_jsonl(tmp_path / "m.jsonl", [good, missing])
    with pytest.raises(CorpusError, match=r"m\.jsonl, row 2, field 'tags': missing field"):
        load_bagdhara(path)
    path = write_jsonl(tmp_path / "i.jsonl", [{**good, "id": "x7"}])
    with pytest.raises(CorpusError, match=r"row 1, field 'id': id must be an integer"):
        load_bagdhara(path)
    path = write_jsonl(tmp_path / "t.jsonl", [{**good, "tags": "basics"}])
    with pytest.raises(CorpusError, match=r"field 'tags': expected a list of strings"):
        load_bagdhara(path)
    path = write_jsonl(tmp_path / "d.jsonl", [good, {**good, "idiom": "অন্য"}])
    with pytest.raises(CorpusError, match=r"row 2, field 'id': id 1 is also used by row 1"):
        load_bagdhara(path)
    bad_json = tmp_path / "j.jsonl"
    bad_json.write_text(json.dumps(good) + "\n{oops\n", "utf-8")
    with pytest.raises(CorpusError, match=r"j\.jsonl, row 2: not valid JSON"):
        load_bagdhara(bad_json)
    with pytest.raises(CorpusError, match="file not found"):
        load_bagdhara(tmp_path / "absent.jsonl")


def _csv_lines(rows: list[dict[str, Any]]) -> list[list[str]]:
    out = []
    for row in rows:
        cells = []
        for name in BAGDHARA_FIELDS:
            value = row[name]
            if isinstance(value, list):
                value = json.dumps(value, ensure_ascii=False)
            cells.append("" if value is None else str(value))
        out.append(cells)
    return out


def _write_csv(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(BAGDHARA_FIELDS)
        writer.writerows(rows)
    return path


def test_csv_row_with_too_few_or_too_many_cells_names_file_row_and_field(
    tmp_path: Path, sample_rows: list[dict[str, Any]]
) -> None:
    good, second = _csv_lines(sample_rows[:2])
    assert (
        load_bagdhara(_write_csv(tmp_path / "ok.csv", [good, second])).report.count("loaded") == 2
    )
    # Row 3 of the file stops after 'frequency': its last seven fields have no cell.
    short = second[: BAGDHARA_FIELDS.index("frequency") + 1]
    path = _write_csv(tmp_path / "short.csv", [good, short])
    with pytest.raises(
        CorpusError,
        match=r"short\.csv, row 3, field 'sentiment': row has 12 cells but the header has 19 "
        r"columns; no cell for 'sentiment' or the 6 field\(s\) after it",
    ) as info:
        load_bagdhara(path)
    assert (info.value.row, info.value.field_name) == (3, "sentiment")
    # One missing trailing cell is enough (it used to load as an empty 'history').
    path = _write_csv(tmp_path / "one.csv", [good[:-1]])
    with pytest.raises(CorpusError, match=r"row 2, field 'history': row has 18 cells"):
        load_bagdhara(path)
    path = _write_csv(tmp_path / "long.csv", [good, [*second, "stray", "cells"]])
    with pytest.raises(
        CorpusError,
        match=r"long\.csv, row 3, field 'history': row has 21 cells but the header has 19 "
        r"columns; cells beyond the last column 'history': \['stray', 'cells'\]",
    ):
        load_bagdhara(path)


def test_three_rows_are_too_few_for_four_options(shared_data: Path) -> None:
    from choiceaudit.instruments.meaning._items import build_ladder

    corpus = load_bagdhara(shared_data / "bagdhara" / "sample_3rows.jsonl")
    # an input error (the command line prints one error: line), still a ValueError
    with pytest.raises(InputError, match=r"3 usable idiom\(s\) .* so at least 4"):
        build_ladder(corpus, families=("d-rand",))


# -- idioms-en -----------------------------------------------------------------------------------


def test_parse_senses_on_a_real_definition() -> None:
    definition = (
        "1. Lit. [for a plant] to burst into flower. _ All the trees blossomed forth at the same "
        "time. _ Each spring my tulips blossom forth in all their glory. 2. Fig. [for someone or a "
        "concept] to develop or grow quickly. (Jocular.) _ A wonderful idea blossomed forth and "
        "caught on quickly. _ That summer she suddenly blossomed forth into a young woman on "
        "January 16. See also bloom."
    )
    (m1, g1, e1), (m2, g2, e2) = parse_senses(definition)
    assert (m1, g1) == ("lit", "to burst into flower")
    assert (m2, g2) == ("fig", "to develop or grow quickly")
    assert e1 == [
        "All the trees blossomed forth at the same time.",
        "Each spring my tulips blossom forth in all their glory.",
    ]
    assert e2[1].endswith("on January 16. See also bloom.")  # "16." is not a sense number


def test_parse_senses_markers() -> None:
    assert [s[0] for s in parse_senses("Lit. or Fig. to sweat. _ x")] == ["both"]
    assert [s[0] for s in parse_senses("Lit. to kick. _ x 2. Fig. to expel. _ y")] == ["lit", "fig"]
    assert [s[0] for s in parse_senses("1. Inf. Lit. to fork. 2. Fig. to pay.")] == ["lit", "fig"]


def test_idioms_en_counts(idioms_en_corpus: Corpus) -> None:
    report = idioms_en_corpus.report
    assert report.count("loaded") == 21866
    assert report.count("lit_and_fig_marked") == 1135
    assert report.count("grouped_by_definition") == 990
    assert report.count("usable") == len(idioms_en_corpus) == 983
    assert report.dropped["same_definition_as_lower_id"] == 145
    assert report.count("with_alt") == 176
    assert all(e.carriers for e in idioms_en_corpus.entries)
    assert len({e.expression for e in idioms_en_corpus.entries}) == len(idioms_en_corpus)


def test_idioms_en_real_entries(idioms_en_corpus: Corpus) -> None:
    by_id = idioms_en_corpus.by_id()
    breathe = by_id[0]
    assert breathe.expression == "able to breathe easily again"
    assert breathe.literal == "able to breathe clean, fresh air with no restriction or obstruction"
    assert (
        breathe.gold
        == "able to relax and recover from a busy or stressful time; able to catch one’s breath"
    )
    assert breathe.alternatives[:2] == ("able to breathe freely again", "able to breathe again")
    assert breathe.carriers == ("Final exams are over, so I can breathe easily again.",)
    assert 1 not in by_id  # id 1 shares id 0's definition: an alternative form, not an item
    boot = by_id[394]  # definition without "1.": "Lit. … 2. Fig. …"
    assert boot.gold == "to force someone or something to leave some place"
    assert boot.alternatives == ("kick someone or an animal out",)
    # dictionary noise: a nested remark, an unopened remark, an example printed without "_"
    assert by_id[8257].gold == "to tell someone what is going on"
    assert by_id[6008].gold == "recovered from an illness and out of one’s sickbed"
    assert by_id[18222].gold == "to embezzle or steal something a little at a time"
    fold = by_id[10151]
    assert fold.expression == "fold something up"
    assert fold.gold == "to put an end to something; to close a money-losing enterprise"
    assert fold.alternatives == ()  # variable phrase: its pattern "fold up" is not a surface form
