"""In-place tokenization: the scored tokens are located by character offsets, never by the
length of a separately tokenized context."""

from __future__ import annotations

import pytest

from choiceaudit.scorers import ScorerError
from choiceaudit.scorers._tokenize import InPlace, _locate


def test_tokens_after_the_context_are_scored() -> None:
    # "Answer:" (0–7) + " yes" (7–11), tokenized "Answer" ":" " yes"
    got = _locate([5, 6, 7], [(0, 6), (6, 7), (7, 11)], 7, "q")
    assert got == InPlace(ids=(5, 6, 7), first_scored=2, crosses_join=False)
    assert got.n_scored == 1


def test_a_token_crossing_the_join_is_the_first_scored_token() -> None:
    # "Answer" ": yes": the second token covers the last context character and the option.
    got = _locate([5, 9], [(0, 6), (6, 11)], 7, "q")
    assert got.first_scored == 1 and got.crosses_join and got.n_scored == 1


def test_bos_is_context_and_trailing_special_tokens_are_dropped() -> None:
    # <s> (0,0) "answer" ":" " yes" </s> (0,0)
    got = _locate([1, 5, 6, 7, 2], [(0, 0), (0, 6), (6, 7), (7, 11), (0, 0)], 7, "q")
    assert got.ids == (1, 5, 6, 7) and got.first_scored == 3 and got.n_scored == 1


def test_byte_fallback_pieces_of_one_character_are_all_scored() -> None:
    # A multi-byte character split into three byte tokens that share its offsets.
    got = _locate([5, 6, 200, 201, 202], [(0, 6), (6, 7), (7, 9), (7, 9), (7, 9)], 7, "q")
    assert got.first_scored == 2 and got.n_scored == 3


def test_an_option_covering_no_token_is_an_error() -> None:
    with pytest.raises(ScorerError, match=r"option 3 .* tokenizes to nothing"):
        _locate([1, 5, 6, 2], [(0, 0), (0, 6), (6, 7), (0, 0)], 7, "query abc option 3 ('~')")


def test_an_option_with_no_context_before_it_is_an_error() -> None:
    with pytest.raises(ScorerError, match="no context to condition"):
        _locate([7], [(0, 4)], 0, "q")
