"""Converted GGUF tokenizers are the model's own, token id for token id.

The hub is out of reach, so "the model's own" is encoded from sources checkable offline:

* SmolLM2: its published ``tokenizer.json`` declares a byte-level BPE with ``pre_tokenizer =
  Sequence[Digits(individual_digits=true), ByteLevel(add_prefix_space=false, trim_offsets=true,
  use_regex=true)]``, no normalizer. The reference is built here from ``tokenizers`` components
  exactly so, over the GGUF's own vocabulary and merges (which are the published ones).
* Gemma 3: its published ``tokenizer.json`` declares ``Replace(' ', '▁')``, ``Split(' ',
  MergedWithPrevious)`` and BPE with byte fallback, converted from its sentencepiece model; the
  reference is sentencepiece's (and llama.cpp's) own BPE algorithm run here over the GGUF's
  pieces and scores: whole user-defined/control pieces first, then repeatedly merge the adjacent
  pair whose merged piece scores highest (leftmost on ties), bytes for what is not a piece.

A handful of id sequences derived that way are pinned, so a change in either side shows.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

pytest.importorskip("tokenizers")

from choiceaudit.scorers import ScorerError
from choiceaudit.scorers._gguf_tokenizer import (
    TOKENIZER_REVISION,
    GGUFValue,
    honour_pre_tokenizer,
    pre_tokenizer_for,
    read_gguf_metadata,
)

_T = TypeVar("_T")

#: digits, repeated spaces before digits, newlines, non-ASCII, emoji, a chat turn, prompt/option
#: joins (plain "Answer:" + " 12", and a chat template's generation prompt + option).
BATTERY = (
    "Answer:  3",
    "x  12 apples",
    "2026-12-01 cost $1,234.56",
    "1234567890",
    "a\n\nb\n",
    "  leading  spaces   ",
    "a    b\n\n\n\n\n\nc",
    "tab\tsep",
    "naïve café 日本語",
    "emoji 🙂👍🏽 🫩",
    "Question: which? Answer: 42",
    "Answer: 12",
    "The capital of France is Paris",
    "<|im_start|>user\nHow many?<|im_end|>\n<|im_start|>assistant\n3 apples",
    "<start_of_turn>user\nHow many?<end_of_turn>\n<start_of_turn>model\n3 apples",
)


def _gguf_bytes(fields: dict[str, Any]) -> bytes:
    """A GGUF v3 header with string, uint32, bool and string-array values and no tensors."""

    def string(s: str) -> bytes:
        data = s.encode()
        return struct.pack("<Q", len(data)) + data

    out = b"GGUF" + struct.pack("<IQQ", 3, 0, len(fields))
    for key, value in fields.items():
        out += string(key)
        if isinstance(value, bool):
            out += struct.pack("<I?", 7, value)
        elif isinstance(value, int):
            out += struct.pack("<II", 4, value)
        elif isinstance(value, str):
            out += struct.pack("<I", 8) + string(value)
        else:
            out += struct.pack("<IIQ", 9, 8, len(value)) + b"".join(string(v) for v in value)
    return out


def test_read_gguf_metadata_reads_scalars_and_counts_arrays(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(
        _gguf_bytes(
            {
                "tokenizer.ggml.model": "gpt2",
                "tokenizer.ggml.tokens": ["a", "b", "ab"],
                "tokenizer.ggml.pre": "smollm",
                "tokenizer.ggml.bos_token_id": 7,
                "tokenizer.ggml.add_bos_token": False,
            }
        )
    )
    meta = read_gguf_metadata(path)
    assert meta == {
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.tokens": 3,
        "tokenizer.ggml.pre": "smollm",
        "tokenizer.ggml.bos_token_id": 7,
        "tokenizer.ggml.add_bos_token": False,
    }
    assert read_gguf_metadata(path, ("tokenizer.ggml.tokens",))["tokenizer.ggml.tokens"] == [
        "a",
        "b",
        "ab",
    ]


def test_read_gguf_metadata_refuses_a_file_that_is_not_gguf(tmp_path: Path) -> None:
    path = tmp_path / "x.gguf"
    path.write_bytes(b"PK\x03\x04 not a gguf")
    with pytest.raises(ScorerError, match="not a GGUF file"):
        read_gguf_metadata(path)


def test_pre_tokenizer_for_each_name() -> None:
    smollm_pre = pre_tokenizer_for("gpt2", "smollm", "m.gguf")
    assert smollm_pre is not None
    smollm = json.loads(smollm_pre.__getstate__())
    assert smollm == {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {
                "type": "ByteLevel",
                "add_prefix_space": False,
                "trim_offsets": True,
                "use_regex": True,
            },
        ],
    }
    gpt2_pre = pre_tokenizer_for("gpt2", "gpt-2", "m.gguf")
    assert gpt2_pre is not None
    gpt2 = json.loads(gpt2_pre.__getstate__())
    assert gpt2["type"] == "ByteLevel" and gpt2["use_regex"] is True
    # a sentencepiece vocabulary has nothing to honour; transformers' own table is trusted
    assert pre_tokenizer_for("llama", "default", "m.gguf") is None
    assert pre_tokenizer_for("gpt2", "llama-bpe", "m.gguf") is None
    with pytest.raises(ScorerError, match=r"m\.gguf: tokenizer\.ggml\.pre = 'mystery-bpe'"):
        pre_tokenizer_for("gpt2", "mystery-bpe", "m.gguf")


def test_honour_pre_tokenizer_splits_digits_on_a_byte_level_tokenizer(tmp_path: Path) -> None:
    """The SmolLM2 fault in miniature: plain ByteLevel puts the space before a number with the
    number ('Ġ' 'Ġ' '12'), the published SmolLM2 split takes the digits first, so the two spaces
    merge and the digits stand alone ('ĠĠ' '1' '2'); and the record says what was done."""
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers

    chars = ["1", "2", "x", "Ġ"]
    vocab = {c: i for i, c in enumerate([*chars, "12", "ĠĠ"])}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[("1", "2"), ("Ġ", "Ġ")]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    # transformers declares the fast tokenizer's constructor without annotations
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok)  # type: ignore[no-untyped-call]
    assert fast.convert_ids_to_tokens(fast("x  12")["input_ids"]) == ["x", "Ġ", "Ġ", "12"]
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(_gguf_bytes({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "smollm"}))
    record = honour_pre_tokenizer(fast, gguf)
    assert fast.convert_ids_to_tokens(fast("x  12")["input_ids"]) == ["x", "ĠĠ", "1", "2"]
    assert record == {
        "tokenizer_model": "gpt2",
        "pre": "smollm",
        "pre_tokenizer": "set by choiceaudit",
        "revision": TOKENIZER_REVISION,
    }


# --- the built-in models ------------------------------------------------------------------


def _converted(name: str) -> tuple[Any, Path]:
    """The converted ``tokenizer.json`` of a built-in model (converting once if needed), as the
    ``tokenizers`` object transformers wraps (loading it through ``AutoTokenizer`` takes 20 s
    for Gemma's 262k pieces and adds nothing to what is compared), and the GGUF."""
    pytest.importorskip("transformers")
    from tokenizers import Tokenizer

    from choiceaudit.scorers import resolve_causal_lm
    from choiceaudit.scorers._loading import _materialise_gguf, convert_gguf

    try:
        source = resolve_causal_lm(name)
    except ScorerError as exc:  # the model package is absent
        pytest.skip(str(exc))
    gguf, sha = _materialise_gguf(source)
    directory = convert_gguf(gguf, sha)
    assert directory.name == f"{sha}-tok{TOKENIZER_REVISION}"  # old conversions never reused
    return Tokenizer.from_file(str(directory / "tokenizer.json")), gguf


def _list_of(value: GGUFValue, kind: type[_T]) -> list[_T]:
    """A GGUF array narrowed to its element type (the reference tokenizers index it)."""
    assert isinstance(value, list) and all(isinstance(v, kind) for v in value)
    return [v for v in value if isinstance(v, kind)]


def _smollm2_reference(gguf: Path) -> Callable[[str], list[int]]:
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    keys = ("tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type")
    meta = read_gguf_metadata(gguf, keys)
    tokens = _list_of(meta["tokenizer.ggml.tokens"], str)
    merges = [
        (a, b) for a, b in (m.split(" ") for m in _list_of(meta["tokenizer.ggml.merges"], str))
    ]
    ref = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, merges))
    ref.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
        ]
    )
    control = [
        t
        for t, ty in zip(tokens, _list_of(meta["tokenizer.ggml.token_type"], int), strict=True)
        if ty == 3
    ]
    ref.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in control])
    return lambda text: list(ref.encode(text, add_special_tokens=False).ids)


def _sentencepiece_bpe_reference(gguf: Path) -> Callable[[str], list[int]]:
    keys = ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type")
    meta = read_gguf_metadata(gguf, keys)
    pieces = _list_of(meta[keys[0]], str)
    scores = [float(x) for x in _list_of(meta[keys[1]], float)]
    types = _list_of(meta[keys[2]], int)
    ids: dict[str, int] = {}
    for i, piece in enumerate(pieces):
        ids.setdefault(piece, i)
    whole = sorted({p for p, t in zip(pieces, types, strict=True) if t in (3, 4)}, key=len)[::-1]

    def normal(piece: str) -> int | None:
        i = ids.get(piece)
        return i if i is not None and types[i] == 1 else None

    def fragment(text: str) -> list[int]:
        symbols = list(text.replace(" ", "▁"))
        while True:
            best: tuple[float, int] | None = None
            for j in range(len(symbols) - 1):
                k = normal(symbols[j] + symbols[j + 1])
                if k is not None and (best is None or scores[k] > best[0]):
                    best = (scores[k], j)
            if best is None:
                break
            j = best[1]
            symbols[j : j + 2] = [symbols[j] + symbols[j + 1]]
        out: list[int] = []
        for s in symbols:
            k = normal(s)
            out.extend([k] if k is not None else [ids[f"<0x{b:02X}>"] for b in s.encode()])
        return out

    def encode(text: str) -> list[int]:
        out: list[int] = []
        start = i = 0
        while i < len(text):
            hit = next((w for w in whole if text.startswith(w, i)), None)
            if hit is None:
                i += 1
                continue
            out += fragment(text[start:i]) if i > start else []
            out.append(ids[hit])
            i = start = i + len(hit)
        return out + (fragment(text[start:]) if start < len(text) else [])

    return encode


@pytest.mark.models
def test_smollm2_converted_tokenizer_is_the_published_one() -> None:
    tokenizer, gguf = _converted("smollm2")
    reference = _smollm2_reference(gguf)
    for text in BATTERY:
        assert tokenizer.encode(text, add_special_tokens=False).ids == reference(text), text
    pinned = {
        "Answer:  3": [21350, 42, 256, 35],  # ':' 'ĠĠ' '3', not ':' 'Ġ' 'Ġ' '3'
        "x  12 apples": [104, 256, 33, 34, 13855],  # 'x' 'ĠĠ' '1' '2' 'Ġapples'
    }
    for text, ids in pinned.items():
        assert reference(text) == ids
    assert tokenizer.encode("Answer: 12").ids == reference("Answer: 12")  # adds no BOS


@pytest.mark.models
def test_gemma3_converted_tokenizer_is_its_sentencepiece_model() -> None:
    tokenizer, gguf = _converted("gemma3-270m")
    reference = _sentencepiece_bpe_reference(gguf)
    for text in BATTERY:
        assert tokenizer.encode(text, add_special_tokens=False).ids == reference(text), text
    pinned = {
        "Answer:  3": [7925, 236787, 138, 236800],  # 'Answer' ':' '  ' '3'
        "naïve café 日本語": [1789, 238527, 560, 33443, 33375, 238582],
        "emoji 🙂👍🏽 🫩": [67906, 57235, 240493, 242713, 236743, 478, 397, 409, 407],
    }
    for text, ids in pinned.items():
        assert reference(text) == ids
    assert tokenizer.encode("hi").ids == [2, *reference("hi")]  # <bos> in front
    declared = json.loads(tokenizer.to_str())
    assert declared["normalizer"] == {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}
    assert declared["pre_tokenizer"]["behavior"] == "MergedWithPrevious"
    assert declared["model"]["byte_fallback"] is True
