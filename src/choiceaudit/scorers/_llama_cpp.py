"""The ``llama-cpp`` scorer: a GGUF causal LM run in process by llama.cpp (llama-cpp-python),
scored by option log-probability exactly as ``hf`` scores it.

``llama-cpp:<file.gguf>`` loads the file with ``Llama(model_path, logits_all=True)``, so the
logits of every position are kept. Each string (prompt + option, and neutral prompt + option
for PMI) is tokenized by llama.cpp's own tokenizer (the GGUF's, BOS added as the model
declares), evaluated once, and token ``i`` gets ``log_softmax(logits[i − 1])[token i]`` in
float64 — the log-probability given every token before it. The character span of each token
comes from its detokenized bytes (a byte token inside a multi-byte character gets that
character's span), and the scored tokens, ``sum``, ``mean``, ``pmi`` and ``probs`` follow by the
in-place rule of :mod:`._openai_rows`, the same as for ``hf`` and ``openai``.

Consecutive strings of a query share its prompt, so by default (``reuse_prefix=True``) a string
is evaluated only from the first token where it differs from the string evaluated before it:
the logits of the shared tokens and their KV-cache entries are kept, the rest of the cache is
removed first (``llama_memory_seq_rm``), and where llama.cpp cannot remove that part of the cache
(a sliding-window or recurrent cache may refuse) the string is evaluated whole instead, so a
stale cache never scores a token. ``reuse_prefix=False`` evaluates every string whole.

Where llama.cpp was built with its AMX kernels (``AMX_INT8 = 1`` in its system info), loading
first evaluates three tokens of the file (two in one batch, then one) in a child process: those
kernels can kill the process with a segmentation fault on quantized files (seen on this
project's machine with Q4_1 and Q4_K_M, in ``ggml_backend_amx_mul_mat``; others have reported
the same fault to llama.cpp), and a crash in a child is a refusal with the reason and the fix,
where a crash in the audit would lose it without a word. ``-o crash_probe=false`` skips the
child; the result is in ``describe()``.

``describe()`` also records how the loaded llama.cpp computes GELU (``ggml_gelu``), read by
running ggml's GELU op on four inputs: a stock build rounds GELU's input and output to float16
through a table (``GGML_GELU_FP16``), which on a GELU model such as Gemma 3 moves token
log-probabilities by up to ~6e-3 against ``hf`` on the same F32 file, where a build without it
agrees within ~7e-5 (docs/guides/servers.md: the agreement table).

This is the CPU path for GGUF files as they are quantized: ``hf`` dequantizes a GGUF to
float32, llama.cpp executes the quantized types. The optional extra is ``llama-cpp``
(``pip install 'choiceaudit[llama-cpp]'``; llama-cpp-python builds llama.cpp from source where
no wheel matches the platform).
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import math
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from choiceaudit.files import sha256_file
from choiceaudit.scorers._openai_rows import decision_from_tokens, query_strings
from choiceaudit.scorers._openai_wire import Tokens
from choiceaudit.scorers._protocol import MissingBackendError, ScorerError
from choiceaudit.types import Decision, Query

__all__ = [
    "LlamaCppScorer",
    "amx_in_build",
    "forget_after",
    "ggml_gelu_mode",
    "probe_in_child",
    "shared_prefix",
    "token_spans",
]

PIP = "pip install 'choiceaudit[llama-cpp]'"
GGML_TYPE_F32 = 0
#: ggml's type numbers for the KV cache types offered
KV_TYPES = {"f32": GGML_TYPE_F32, "f16": 1}


def token_spans(text: str, pieces: Sequence[bytes]) -> tuple[tuple[int, int], ...]:
    """Character spans of tokens whose detokenized bytes are ``pieces``, in order: a token
    covers the characters its bytes touch; a token of no bytes (a BOS) is zero-width."""
    data = text.encode("utf-8")
    if b"".join(pieces) != data:
        raise ScorerError(f"llama.cpp's tokens do not reproduce {text[:60]!r} byte for byte")
    char_at = np.zeros(len(data) + 1, dtype=np.int64)  # byte offset -> index of its character
    offset = 0
    for index, ch in enumerate(text):
        width = len(ch.encode("utf-8"))
        char_at[offset : offset + width] = index
        offset += width
    char_at[len(data)] = len(text)
    spans, cursor = [], 0
    for piece in pieces:
        if not piece:
            start = int(char_at[cursor])
            spans.append((start, start))
            continue
        end_byte = cursor + len(piece)
        start = int(char_at[cursor])
        end = int(char_at[end_byte - 1]) + 1
        spans.append((start, end))
        cursor = end_byte
    return tuple(spans)


#: what the child of :func:`probe_in_child` runs: load the file as the scorer does, evaluate two
#: tokens and then one more (ggml's AMX code has one path for a batch of one row and another
#: for several; the scorer's prefix reuse runs both), exit 0
_PROBE = """
import sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], logits_all=True, n_ctx=64, n_threads=1, n_threads_batch=1,
            type_k=int(sys.argv[2]), type_v=int(sys.argv[2]), verbose=False)
ids = llm.tokenize(b"probe the kernels", add_bos=True)
llm.eval(ids[:2])
llm.eval(ids[2:3])
"""
#: the build-time switch that leaves ggml's AMX kernels out (a native build on an AMX CPU has them)
NO_AMX = (
    "CMAKE_ARGS='-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON "
    "-DGGML_AVX512=ON' pip install --force-reinstall --no-cache-dir llama-cpp-python"
)


def probe_in_child(path: str, kv_type: int, *, timeout: float = 300.0) -> str:
    """Evaluate three tokens of the GGUF file ``path`` in a child process; ``"passed"`` or a
    :class:`ScorerError` naming the signal that killed the child and what to do."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, path, str(kv_type)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise ScorerError(
            f"llama-cpp:{path}: crash probe: three tokens did not finish in {timeout:.0f} s in a "
            "child process; -o crash_probe=false skips the probe"
        ) from None
    if done.returncode == 0:
        return "passed"
    if done.returncode < 0:
        try:
            name = signal.Signals(-done.returncode).name
        except ValueError:
            name = f"signal {-done.returncode}"
        raise ScorerError(
            f"llama-cpp:{path}: crash probe: llama.cpp died of {name} evaluating three tokens "
            "of this file in a child process. This build runs ggml's AMX kernels (AMX_INT8 = 1 in "
            "llama_cpp.llama_print_system_info()), which crash on quantized files on some "
            "machines (a segfault in ggml_backend_amx_mul_mat, also reported to llama.cpp). "
            "Rebuild llama-cpp-python without them: "
            f"{NO_AMX}; or -o crash_probe=false to load it in this process anyway"
        )
    tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
    raise ScorerError(
        f"llama-cpp:{path}: crash probe: loading the file and evaluating three tokens in a child "
        f"process failed (exit {done.returncode}): {tail[0][:300]}"
    )


def amx_in_build() -> bool:
    """Whether the loaded llama.cpp reports ggml's AMX int8 kernels."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info()
    text = info.decode("utf-8", "replace") if isinstance(info, bytes) else str(info)
    return "AMX_INT8 = 1" in text


class _InitParams(ctypes.Structure):
    """``struct ggml_init_params``: a context's memory pool."""

    _fields_ = [
        ("mem_size", ctypes.c_size_t),
        ("mem_buffer", ctypes.c_void_p),
        ("no_alloc", ctypes.c_bool),
    ]


#: inputs with full float32 mantissas (none is a float16 value)
_GELU_PROBES = (1.0001237, -0.7503419, 2.3331577, 0.0123457)


def _gelu_f32(x: float) -> float:
    """ggml's GELU formula (tanh form), evaluated in float64."""
    return 0.5 * x * (1.0 + math.tanh(0.7978845608028654 * x * (1.0 + 0.044715 * x * x)))


def ggml_gelu_mode() -> str:
    """How the loaded llama.cpp's CPU backend computes GELU: ``"float16 table"`` (ggml's
    default, ``GGML_GELU_FP16``: the input rounded to float16 indexes a table of float16
    values) or ``"float32"``, read by running ggml's own GELU op on a few inputs; ``"unknown"``
    where the library does not export what that needs."""
    import llama_cpp.llama_cpp as binding

    lib = binding._lib  # libllama; dlsym on it also searches the ggml libraries it links
    try:
        init, free = lib.ggml_init, lib.ggml_free
        new_1d, gelu, data = lib.ggml_new_tensor_1d, lib.ggml_gelu, lib.ggml_get_data_f32
        new_graph, expand = lib.ggml_new_graph, lib.ggml_build_forward_expand
        compute = lib.ggml_graph_compute_with_ctx
    except AttributeError:
        return "unknown"
    init.argtypes, init.restype = [_InitParams], ctypes.c_void_p
    free.argtypes, free.restype = [ctypes.c_void_p], None
    new_1d.argtypes, new_1d.restype = (
        [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64],
        ctypes.c_void_p,
    )
    gelu.argtypes, gelu.restype = [ctypes.c_void_p, ctypes.c_void_p], ctypes.c_void_p
    data.argtypes, data.restype = [ctypes.c_void_p], ctypes.POINTER(ctypes.c_float)
    new_graph.argtypes, new_graph.restype = [ctypes.c_void_p], ctypes.c_void_p
    expand.argtypes, expand.restype = [ctypes.c_void_p, ctypes.c_void_p], None
    compute.argtypes, compute.restype = (
        [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int],
        ctypes.c_int,
    )
    ctx = init(_InitParams(16 << 20, None, False))
    if not ctx:
        return "unknown"
    try:
        n = len(_GELU_PROBES)
        x = new_1d(ctx, GGML_TYPE_F32, n)
        xs = data(x)
        for i, v in enumerate(_GELU_PROBES):
            xs[i] = v
        y = gelu(ctx, x)
        graph = new_graph(ctx)
        expand(graph, y)
        if compute(ctx, graph, 1) != 0:
            return "unknown"
        ys = data(y)
        got = [float(ys[i]) for i in range(n)]
    finally:
        free(ctx)
    return gelu_mode_of(got)


def gelu_mode_of(got: Sequence[float]) -> str:
    """What ggml's GELU outputs ``got`` on :data:`_GELU_PROBES` say about how it computes."""
    near = all(
        abs(g - _gelu_f32(float(ctypes.c_float(v).value))) < 1e-3 * max(abs(g), 1e-3)
        for g, v in zip(got, _GELU_PROBES, strict=True)
    )
    if not near:
        return "unknown"  # not GELU at all (an uninitialised table gives zeros)
    # a table of float16 entries returns float16 values; float32 arithmetic on inputs with
    # full mantissas essentially never lands on one (about 1 in 8192 per input)
    return "float16 table" if all(float(np.float16(g)) == g for g in got) else "float32"


def forget_after(llm: Any, keep: int) -> bool:
    """Remove ``llm``'s KV-cache entries from position ``keep`` on; whether llama.cpp could."""
    import llama_cpp

    # releases before llama.cpp's memory API have neither function: evaluate whole there
    get_memory = getattr(llama_cpp, "llama_get_memory", None)
    seq_rm = getattr(llama_cpp, "llama_memory_seq_rm", None)
    if get_memory is None or seq_rm is None:
        return False
    memory = get_memory(llm.ctx)
    return memory is not None and bool(seq_rm(memory, -1, keep, -1))


def shared_prefix(done: Sequence[int], ids: Sequence[int]) -> int:
    """How many leading tokens of ``ids`` were evaluated already (``done``), leaving at least
    the last token of ``ids`` to evaluate."""
    n = 0
    for a, b in zip(done, ids[:-1], strict=False):
        if a != b:
            break
        n += 1
    return n


class LlamaCppScorer:
    """Causal LM option scorer over llama.cpp in process (rules ``sum``, ``mean``, ``pmi``);
    see the module docstring. ``llm`` is a ``llama_cpp.Llama`` made with ``logits_all=True``
    (or anything with its ``tokenize``, ``detokenize``, ``reset``, ``eval``, ``scores``,
    ``n_ctx``, ``n_tokens`` and ``input_ids``); ``forget`` removes its KV cache from a position
    on and says whether it could (:func:`forget_after` for a real ``Llama``)."""

    def __init__(
        self,
        llm: Any,
        *,
        name: str,
        path: str | None = None,
        reuse_prefix: bool = True,
        forget: Callable[[Any, int], bool] = forget_after,
    ) -> None:
        self.llm = llm
        self.name = name
        self.path = path
        self.reuse_prefix = reuse_prefix
        self._forget = forget
        self._sha256: str | None = None
        self.kv_type: str | None = None  # set by load(); unknown for a Llama passed in
        #: the child-process crash probe's result, set by load()
        self.crash_probe: str | None = None
        #: how the loaded llama.cpp computes GELU (:func:`ggml_gelu_mode`), set by load()
        self.ggml_gelu: str | None = None
        #: tokens evaluated from a kept prefix and whole, over this scorer's life
        self.reused_tokens = 0
        self.evaluated_tokens = 0

    @classmethod
    def load(
        cls,
        path: str,
        *,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        reuse_prefix: bool = True,
        kv_type: str = "f32",
        crash_probe: bool = True,
    ) -> LlamaCppScorer:
        """Load the GGUF file ``path`` (``llama-cpp:<path>``). ``kv_type`` is the KV cache's
        type: llama.cpp's default is f16, which rounds every key and value and moves an F32
        model's log-probabilities by ~1e-2, so choiceaudit keeps it in f32 unless asked."""
        try:
            from llama_cpp import Llama
        except ImportError:
            raise MissingBackendError(f"llama-cpp needs llama-cpp-python; run: {PIP}") from None
        if not Path(path).is_file():
            raise ScorerError(f"llama-cpp:{path}: no such GGUF file")
        # prompt evaluation runs on n_threads_batch (llama-cpp-python defaults it to every
        # core), so one n_threads sets both: more threads than cores spin and run ~4x slower
        if kv_type not in KV_TYPES:
            raise ScorerError(f"kv_type must be one of {sorted(KV_TYPES)}, got {kv_type!r}")
        if not isinstance(crash_probe, bool):
            raise ScorerError(f"crash_probe must be true or false, got {crash_probe!r}")
        if not crash_probe:
            probed = "skipped (crash_probe=false)"
        elif amx_in_build():
            probed = probe_in_child(path, KV_TYPES[kv_type])
        else:
            probed = "not needed (no AMX kernels in this llama.cpp build)"
        llm = Llama(
            model_path=path,
            logits_all=True,
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            type_k=KV_TYPES[kv_type],
            type_v=KV_TYPES[kv_type],
            verbose=False,
        )
        if not isinstance(reuse_prefix, bool):
            raise ScorerError(f"reuse_prefix must be true or false, got {reuse_prefix!r}")
        scorer = cls(llm, name=f"llama-cpp:{path}", path=path, reuse_prefix=reuse_prefix)
        scorer.kv_type = kv_type
        scorer.crash_probe = probed
        scorer.ggml_gelu = ggml_gelu_mode()
        return scorer

    def describe(self) -> dict[str, Any]:
        if self.path is not None and self._sha256 is None:
            self._sha256 = sha256_file(Path(self.path))
        try:
            version = importlib.metadata.version("llama-cpp-python")
        except importlib.metadata.PackageNotFoundError:
            version = None
        return {
            "backend": "llama-cpp",
            "name": self.name,
            "model": self.name,
            "model_id": None if self.path is None else Path(self.path).name,
            "weights_sha256": self._sha256,
            "rules": ["sum", "mean", "pmi"],
            "probs": "softmax of sum over the menu",
            "scored_tokens": "in place: first token ending after the prompt, to the end",
            "logprobs": "log_softmax(logits[i-1]) of token i, float64",
            "context_window": int(self.llm.n_ctx()),
            "reuse_prefix": self.reuse_prefix,
            "kv_type": self.kv_type,
            "crash_probe": self.crash_probe,
            # a GELU model (Gemma) moves by up to ~6e-3 per token against hf under the table
            "ggml_gelu": self.ggml_gelu,
            "libraries": {"llama-cpp-python": version},
        }

    def _tokens(self, text: str, label: str) -> Tokens:
        ids = list(self.llm.tokenize(text.encode("utf-8"), add_bos=True, special=False))
        if len(ids) > int(self.llm.n_ctx()):
            raise ScorerError(
                f"{label}: {len(ids)} tokens, longer than the context window of "
                f"{self.llm.n_ctx()} (choiceaudit never truncates a prompt; pass -o n_ctx=)"
            )
        pieces = [bytes(self.llm.detokenize([t])) for t in ids]
        if ids and ids[0] == self.llm.token_bos() and not text.encode().startswith(pieces[0]):
            pieces[0] = b""  # the BOS is not in the text
        spans = token_spans(text, pieces)
        self._evaluate(ids)
        logits = np.asarray(self.llm.scores[: len(ids)], dtype=np.float64)
        shifted = logits[:-1]
        top = shifted.max(axis=1, keepdims=True)
        lse = (top + np.log(np.exp(shifted - top).sum(axis=1, keepdims=True)))[:, 0]
        values = shifted[np.arange(len(ids) - 1), ids[1:]] - lse
        return Tokens(spans, (None, *(float(v) for v in values)), "offsets")

    def _evaluate(self, ids: list[int]) -> None:
        """Leave the logits of every position of ``ids`` in ``llm.scores``, evaluating only
        what differs from the previous string when the cache can be cut there."""
        keep = 0
        if self.reuse_prefix:
            keep = shared_prefix(self.llm.input_ids[: self.llm.n_tokens].tolist(), ids)
            if keep and not self._forget(self.llm, keep):
                keep = 0
        if keep:
            self.llm.n_tokens = keep
        else:
            self.llm.reset()
        self.llm.eval(ids[keep:])
        self.reused_tokens += keep
        self.evaluated_tokens += len(ids) - keep

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        out = []
        for query in queries:
            strings, n_context, labels = query_strings(query)
            tokens = [self._tokens(t, lb) for t, lb in zip(strings, labels, strict=True)]
            out.append(decision_from_tokens(query, n_context, labels, tokens))
        return out
