"""Token strings that hold part of a character, read under the rules servers write them by
(:mod:`choiceaudit.scorers._byte_align`): every way of cutting a text's bytes into tokens gives
strings, under current vLLM's rule and under decode-each-token-alone, whose true character
spans the aligner finds, and the in-place rule picks the true scored tokens or refuses."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from choiceaudit.scorers import ScorerError
from choiceaudit.scorers._byte_align import (
    ALONE,
    EMPTY_THEN_WHOLE,
    align_partial_tokens,
    has_partial_tokens,
)
from choiceaudit.scorers._tokenize import _locate

R = "\ufffd"


def lossy(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def alone(pieces: list[bytes]) -> list[str]:
    return [lossy(p) for p in pieces]


def vllm(pieces: list[bytes]) -> list[str]:
    """Current vLLM's rule over byte pieces (its decode is the lossy UTF-8 of the ids' bytes)."""
    out = []
    for k, piece in enumerate(pieces):
        text = lossy(piece)
        if text.endswith(R):
            text = ""
            before = pieces[:k]
            for n_ctx in range(1, min(len(before), 4) + 1):
                context = before[-n_ctx:]
                full = lossy(b"".join([*context, piece]))
                if full.endswith(R):
                    continue
                clean = len(context)
                while clean and lossy(context[clean - 1]).endswith(R):
                    clean -= 1
                prefix = lossy(b"".join(context[:clean]))
                text = full[len(prefix) :] if full.startswith(prefix) else full
                break
        out.append(text)
    return out


def true_spans(text: str, pieces: list[bytes]) -> list[tuple[int, int]]:
    char_of = [k for k, ch in enumerate(text) for _ in ch.encode()]
    spans, at = [], 0
    for p in pieces:
        spans.append((char_of[at], char_of[at + len(p) - 1] + 1))
        at += len(p)
    return spans


def test_current_vllm_writes_nothing_until_the_character_completes() -> None:
    text = "Answer: 日本"
    pieces = [
        b"Answer",
        b":",
        " 日".encode()[:2],
        "日".encode()[1:2],
        "日".encode()[2:],
        "本".encode(),
    ]
    tokens = vllm(pieces)
    assert tokens == ["Answer", ":", "", "", " 日", "本"]
    assert has_partial_tokens(tokens)
    options, rules = align_partial_tokens(text, tokens)
    assert rules == (EMPTY_THEN_WHOLE,)
    assert [o[0] for o in options] == true_spans(text, pieces) and all(len(o) == 1 for o in options)
    # the option " 日本" after "Answer:" is scored from its first byte token on, as in process
    located = _locate(list(range(6)), [o[0] for o in options], 7, "q", options)
    assert located.first_scored == 2 and located.n_scored == 4


def test_tokens_decoded_alone_are_placed_by_their_bytes() -> None:
    text = "x 🙂 €"
    pieces = [b"x", b" \xf0", b"\x9f\x99", b"\x82", " €".encode()]
    tokens = alone(pieces)
    assert tokens == ["x", " " + R, R + R, R, " €"]  # each continuation byte alone is one
    options, rules = align_partial_tokens(text, tokens)
    assert ALONE in rules
    assert [o[0] for o in options] == true_spans(text, pieces)


def test_whole_tokens_and_special_tokens_are_not_partial() -> None:
    assert not has_partial_tokens(["<s>", "Answer", ":", " yes", ""])
    assert not has_partial_tokens(["", "Answer"])
    assert has_partial_tokens(["Answer", "", " yes"])


def test_strings_no_rule_writes_are_refused() -> None:
    # every byte of 日 written "" and the character never written (llama-cpp-python)
    with pytest.raises(ValueError, match=r"does not match|cover"):
        align_partial_tokens("a 日 b", ["a", " ", "", "", "", " b"])


def test_a_join_inside_an_ambiguous_run_is_refused_not_guessed() -> None:
    # U+FFFD can stand for one byte or two: which token holds the option's first character
    # is open, so the option cannot be located
    options = [((0, 1),), ((1, 2), (2, 3)), ((2, 3), (3, 4)), ((3, 4),)]
    with pytest.raises(ScorerError, match="leave open"):
        _locate([0, 1, 2, 3], [o[0] for o in options], 2, "q", options)
    # away from the join the same openness does not matter
    located = _locate([0, 1, 2, 3], [o[0] for o in options], 0, "q", [((0, 0),), *options[1:]])
    assert located.first_scored == 1


TEXTS = st.text(alphabet=list("ab :?\n日本ঘোড়🙂€₹\u0301é"), min_size=1, max_size=14)


@st.composite
def cut_texts(draw: st.DrawFn) -> tuple[str, list[bytes]]:
    text = draw(TEXTS)
    data = text.encode()
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(data) - 1)), max_size=len(data))))
    bounds = [0, *[c for c in cuts if 0 < c < len(data)], len(data)]
    return text, [data[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=300, deadline=None)
@given(cut_texts(), st.sampled_from(["vllm", "alone"]))
def test_every_cut_under_either_rule_keeps_its_true_spans(
    case: tuple[str, list[bytes]], rule: str
) -> None:
    text, pieces = case
    tokens = vllm(pieces) if rule == "vllm" else alone(pieces)
    if not has_partial_tokens(tokens):
        return  # whole strings: the plain aligner's case
    options, _ = align_partial_tokens(text, tokens)
    truth = true_spans(text, pieces)
    assert all(t in o for t, o in zip(truth, options, strict=True))
    # wherever the in-place rule decides, it decides what the true spans give
    for n_ctx in range(1, len(text)):
        try:
            got = _locate(list(range(len(tokens))), [o[0] for o in options], n_ctx, "q", options)
        except ScorerError:
            continue
        want = _locate(list(range(len(tokens))), truth, n_ctx, "q")
        assert got == want
