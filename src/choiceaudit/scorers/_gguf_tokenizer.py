"""A GGUF's tokenizer as the model's own: the pre-tokenizer that ``tokenizer.ggml.pre`` names.

A GGUF carries no ``tokenizer.json``: only the vocabulary, the merges and the *name* of the
pre-tokenizer its converter detected (``tokenizer.ggml.pre``), which llama.cpp maps to its own
split rules. transformers rebuilds a byte-level tokenizer from the vocabulary and knows some of
those names, not all; a name it does not know silently falls back to plain ``ByteLevel``. For
SmolLM2 (``smollm``) that drops the digit split of its published tokenizer
(``Sequence[Digits(individual_digits=true), ByteLevel(add_prefix_space=false,
trim_offsets=true, use_regex=true)]``), which llama.cpp applies too: ``"Answer:  3"`` became
``':' 'Ġ' 'Ġ' '3'`` instead of the model's ``':' 'ĠĠ' '3'``.

:func:`honour_pre_tokenizer` sets the pre-tokenizer the name stands for, for every name of the
models this toolkit ships or documents, and refuses a byte-level GGUF whose name it cannot
vouch for (a guessed split would change tokens silently). A sentencepiece vocabulary
(``tokenizer.ggml.model = llama``, as Gemma 3) has no pre-tokenizer to honour: llama.cpp ignores
the name there, and transformers' Gemma tokenizer already declares what Gemma's published
``tokenizer.json`` does (normalizer ``Replace(' ', '▁')``, pre-tokenizer ``Split(' ',
MergedWithPrevious)``, BPE with byte fallback).

:func:`read_gguf_metadata` reads the key/value header only (no tensors): what the conversion
needs to decide this before loading anything.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, BinaryIO

from typing_extensions import TypedDict

from choiceaudit.scorers._protocol import ScorerError

__all__ = [
    "BYTE_LEVEL_PRE_TOKENIZERS",
    "TOKENIZER_REVISION",
    "GGUFValue",
    "PreTokenizerRecord",
    "honour_pre_tokenizer",
    "pre_tokenizer_for",
    "read_gguf_metadata",
]

#: Bumped whenever the conversion changes a converted tokenizer's tokens, so a cached
#: conversion made before is not reused (it is part of the cache key).
TOKENIZER_REVISION = 2

_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9


def _read(f: BinaryIO, fmt: str) -> Any:
    size = struct.calcsize(fmt)
    data = f.read(size)
    if len(data) != size:
        raise ScorerError(f"{getattr(f, 'name', 'GGUF')}: truncated GGUF header")
    return struct.unpack(fmt, data)[0]


def _string(f: BinaryIO) -> str:
    n = _read(f, "<Q")
    return f.read(n).decode("utf-8", errors="replace")


#: A GGUF metadata value: a scalar, a string, or an array of values (given as its length
#: unless the caller asks for its items).
GGUFValue = str | int | float | bool | list["GGUFValue"]


class PreTokenizerRecord(TypedDict):
    """What the conversion did about ``tokenizer.ggml.pre`` (kept in its conversion record)."""

    tokenizer_model: str
    pre: GGUFValue | None
    pre_tokenizer: str
    revision: int


def _value(f: BinaryIO, vtype: int, keep: bool) -> GGUFValue:
    if vtype == _STRING:
        return _string(f)
    if vtype in _SCALARS:
        scalar: int | float | bool = _read(f, _SCALARS[vtype])
        return scalar
    if vtype != _ARRAY:
        raise ScorerError(f"{getattr(f, 'name', 'GGUF')}: unknown GGUF value type {vtype}")
    itype: int = _read(f, "<I")
    count: int = _read(f, "<Q")
    if itype in _SCALARS and not keep:
        f.seek(count * struct.calcsize(_SCALARS[itype]), 1)
        return count
    items = [_value(f, itype, keep) for _ in range(count)]
    return items if keep else count


def read_gguf_metadata(path: Path | str, arrays: Collection[str] = ()) -> dict[str, GGUFValue]:
    """The GGUF's key/value metadata; arrays are given as their length unless named in ``arrays``."""
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise ScorerError(f"{path} is not a GGUF file (no GGUF magic)")
        version = _read(f, "<I")
        if version < 2:
            raise ScorerError(f"{path}: GGUF version {version} is not supported (need ≥ 2)")
        _read(f, "<Q")  # tensor count
        n_kv = _read(f, "<Q")
        out: dict[str, GGUFValue] = {}
        for _ in range(n_kv):
            key = _string(f)
            out[key] = _value(f, _read(f, "<I"), key in arrays)
        return out


def _byte_level() -> Any:
    from tokenizers import pre_tokenizers

    return pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)


def _smollm() -> Any:
    from tokenizers import pre_tokenizers

    return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), _byte_level()])


#: ``tokenizer.ggml.pre`` → the pre-tokenizer of the model's published ``tokenizer.json``, for
#: byte-level (``gpt2``) vocabularies. ``gpt-2`` and ``default`` are GPT-2's own regex split
#: (what llama.cpp runs for them); ``smollm`` is SmolLM/SmolLM2's digit split before it.
BYTE_LEVEL_PRE_TOKENIZERS: dict[str, Callable[[], Any]] = {
    "default": _byte_level,
    "gpt-2": _byte_level,
    "smollm": _smollm,
}


def _transformers_splits() -> Collection[str]:
    """The names transformers' GGUF loader itself maps to a split regex (it sets those right)."""
    try:
        from transformers.integrations.gguf.gguf_tokenizer_mapping import (
            GGUF_PRE_TOKENIZER_SPLITS,
        )
    except ImportError:
        return ()
    return tuple(GGUF_PRE_TOKENIZER_SPLITS)


def pre_tokenizer_for(tokenizer_model: str, pre: str | None, where: str) -> Any | None:
    """The pre-tokenizer to set, ``None`` to keep transformers' own, or a :class:`ScorerError`.

    ``tokenizer_model`` and ``pre`` are the GGUF's ``tokenizer.ggml.model`` and
    ``tokenizer.ggml.pre``; ``where`` names the file in the error.
    """
    if tokenizer_model != "gpt2":
        return None  # sentencepiece / unigram vocabularies: llama.cpp ignores the name too
    name = pre or "default"
    if name in BYTE_LEVEL_PRE_TOKENIZERS:
        return BYTE_LEVEL_PRE_TOKENIZERS[name]()
    if name in _transformers_splits():
        return None
    raise ScorerError(
        f"{where}: tokenizer.ggml.pre = {name!r} names a pre-tokenizer choiceaudit cannot "
        "reproduce from a GGUF, so the converted tokenizer would not be the model's own; load "
        "the model from a directory with its published tokenizer.json instead (hf:<dir>)"
    )


def honour_pre_tokenizer(tokenizer: Any, gguf: Path) -> PreTokenizerRecord:
    """Set the pre-tokenizer ``tokenizer.ggml.pre`` stands for on a tokenizer transformers built
    from ``gguf``; return what was done (for the conversion record)."""
    meta = read_gguf_metadata(gguf)
    model = str(meta.get("tokenizer.ggml.model", ""))
    pre = meta.get("tokenizer.ggml.pre")
    chosen = pre_tokenizer_for(model, None if pre is None else str(pre), str(gguf))
    if chosen is not None:
        tokenizer.backend_tokenizer.pre_tokenizer = chosen
    return {
        "tokenizer_model": model,
        "pre": pre,
        "pre_tokenizer": "set by choiceaudit" if chosen is not None else "as transformers built it",
        "revision": TOKENIZER_REVISION,
    }
