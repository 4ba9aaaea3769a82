"""Where llama.cpp and transformers part on the same F32 GGUF: every intermediate, op by op.

``bench_llama_cpp.py`` measures how far ``llama-cpp:`` and ``hf`` are apart per token; this
says where the distance comes from. It evaluates one string in llama.cpp with an eval callback
(``cb_eval``) that copies every named float32 tensor of the graph (``attn_norm-3``,
``ffn_out-3``, ``l_out-3``, ...), runs the transformers model on the same token ids with hooks
on the matching modules, and prints, per op and layer, two relative errors (max |Δ| over
max |reference|):

* **carried**: transformers' own value against llama.cpp's, each runtime fed by itself, so the
  error of every op before it is included;
* **local**: the transformers module fed llama.cpp's own input for it (a forward pre-hook swaps
  the input), against llama.cpp's output, so only that op's arithmetic differs. An op whose
  local error is at float32 rounding (~1e-7 relative) computes what transformers computes; one
  far above it is where the two runtimes differ.

The last line gives the per-token log-probability differences between llama.cpp, the
transformers model in float32 and the same model in float64: what float32 rounding alone moves.

``--gelu-f16`` gives the transformers MLPs ggml's float16 GELU table (``bench_llama_cpp``'s
``gelu_as_ggml``), so the MLP's local error shows what is left once that one rounding is the
same in both. Needs llama-cpp-python and the ``hf`` extra::

    PYTHONPATH=src HF_HUB_OFFLINE=1 python benchmarks/llama_cpp_layers.py --model gemma3-270m

The names it matches are those of Gemma 3's graph in llama.cpp and its modules in transformers
(post-attention and post-feed-forward norms; ``--model`` takes another Gemma 3 file).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import idiom_queries, signalling_queries
from bench_llama_cpp import gelu_as_ggml, texts_of, write_f32_gguf

GGML_TYPE_F32 = 0


class GgmlTensor(ctypes.Structure):
    """``struct ggml_tensor`` of the ggml that llama-cpp-python 0.3.x vendors (``ggml.h``)."""

    _fields_ = [
        ("type", ctypes.c_int),
        ("buffer", ctypes.c_void_p),
        ("ne", ctypes.c_int64 * 4),
        ("nb", ctypes.c_size_t * 4),
        ("op", ctypes.c_int),
        ("op_params", ctypes.c_int32 * 16),
        ("flags", ctypes.c_int32),
        ("src", ctypes.c_void_p * 10),
        ("view_src", ctypes.c_void_p),
        ("view_offs", ctypes.c_size_t),
        ("data", ctypes.c_void_p),
        ("name", ctypes.c_char * 64),
        ("extra", ctypes.c_void_p),
        ("padding", ctypes.c_char * 8),
    ]


#: llama.cpp's name of an intermediate -> (the transformers module it belongs to, whether it is
#: that module's output or its input, the llama.cpp name of the module's input for the local
#: comparison: None where llama.cpp names no tensor there, "l_in" for the layer's input)
OPS: dict[str, tuple[str, str, str | None]] = {
    "attn_norm": ("input_layernorm", "output", "l_in"),
    "kqv_out": ("self_attn.o_proj", "input", "attn_norm"),  # attention before its output matmul
    "attn_post_norm": ("post_attention_layernorm", "output", "kqv_out"),  # o_proj, then the norm
    "ffn_norm": ("pre_feedforward_layernorm", "output", "sa_out"),
    "ffn_out": ("mlp", "output", "ffn_norm"),
    "ffn_post_norm": ("post_feedforward_layernorm", "output", "ffn_out"),
    "l_out": ("", "output", "l_in"),  # the whole decoder layer: the two residual adds
}
#: where each local input goes in: the module fed llama.cpp's tensor of that name
FEEDS = {
    "l_in": ["input_layernorm", ""],
    "attn_norm": ["self_attn"],
    "kqv_out": ["self_attn.o_proj"],
    "sa_out": ["pre_feedforward_layernorm"],
    "ffn_norm": ["mlp"],
    "ffn_out": ["post_feedforward_layernorm"],
}
LAYER_NAME = re.compile(r"^([a-z_]+)-(\d+)$")


def dump_llama_cpp(path: Path, ids: list[int], threads: int) -> dict[str, np.ndarray]:
    """Every named contiguous float32 tensor llama.cpp computes for ``ids`` (one evaluation)."""
    import llama_cpp
    import llama_cpp.llama_cpp as lib

    seen: dict[str, np.ndarray] = {}

    def callback(t: int, ask: bool, _user: int) -> bool:
        tensor = ctypes.cast(t, ctypes.POINTER(GgmlTensor)).contents
        name = tensor.name.decode(errors="replace")
        wanted = bool(LAYER_NAME.match(name)) or name in {
            "inp_scaled",
            "result_norm",
            "result_output",
        }
        if ask:
            return wanted
        if wanted and tensor.type == GGML_TYPE_F32 and tensor.data:
            shape = [int(n) for n in tensor.ne]
            n = int(np.prod(shape))
            rows_packed = tensor.nb[1] == 4 * shape[0]
            if rows_packed and (shape[2] == 1 or tensor.nb[2] == tensor.nb[1] * shape[1]):
                buf = (ctypes.c_float * n).from_address(tensor.data)
                seen[name] = np.ctypeslib.as_array(buf).copy().reshape(tuple(reversed(shape)))
        return True

    keep = lib.ggml_backend_sched_eval_callback(callback)
    default = lib.llama_context_default_params

    def params() -> Any:
        p = default()
        p.cb_eval = keep
        return p

    lib.llama_context_default_params = params
    try:
        llm = llama_cpp.Llama(
            model_path=str(path),
            logits_all=True,
            n_ctx=2048,
            n_threads=threads,
            n_threads_batch=threads,
            type_k=0,
            type_v=0,
            verbose=False,
        )
        llm.eval(ids)
        logits = np.asarray(llm.scores[: len(ids)], dtype=np.float32).copy()
    finally:
        lib.llama_context_default_params = default
    seen["logits"] = logits

    # ggml's leading dimensions of one (a single sequence) dropped: (tokens, features)
    def squeezed(v: np.ndarray) -> np.ndarray:
        first = next(i for i, n in enumerate(v.shape) if n > 1 or i == v.ndim - 2)
        return v.reshape(v.shape[first:])

    return {k: squeezed(v) for k, v in seen.items()}


@contextlib.contextmanager
def hooks(model: Any, cpp: dict[str, np.ndarray], local: bool) -> Iterator[dict[str, Any]]:
    """Hooks on every decoder layer's modules of ``model`` that record their outputs by
    llama.cpp's names; with ``local`` each module gets llama.cpp's own input for it."""
    import torch

    out: dict[str, Any] = {}
    handles = []
    layers = model.model.layers

    def pre(name: str) -> Any:
        def hook(_m: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            if name not in cpp:
                return None
            value = torch.from_numpy(cpp[name]).reshape(1, *cpp[name].shape[-2:])
            if args:
                return (value, *args[1:]), kwargs
            return args, {**kwargs, "hidden_states": value}

        return hook

    def post(name: str) -> Any:
        def hook(_m: Any, _args: Any, output: Any) -> None:
            value = output[0] if isinstance(output, tuple) else output
            out[name] = value.detach()[0].double().numpy()

        return hook

    def record_input(name: str) -> Any:
        def hook(_m: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            value = args[0] if args else kwargs["hidden_states"]
            out[name] = value.detach()[0].double().numpy()

        return hook

    for il, layer in enumerate(layers):
        for op, (module_name, where, _) in OPS.items():
            module = layer.get_submodule(module_name) if module_name else layer
            if where == "output":
                handles.append(module.register_forward_hook(post(f"{op}-{il}")))
            else:
                handles.append(
                    module.register_forward_pre_hook(record_input(f"{op}-{il}"), with_kwargs=True)
                )
        if local:
            for input_name, targets in FEEDS.items():
                source = f"{input_name}-{il}"
                if input_name == "l_in":
                    source = "inp_scaled" if il == 0 else f"l_out-{il - 1}"
                for module_name in targets:
                    module = layer.get_submodule(module_name) if module_name else layer
                    handles.append(module.register_forward_pre_hook(pre(source), with_kwargs=True))
    try:
        yield out
    finally:
        for h in handles:
            h.remove()


def rel(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def compare(hf_model: Any, cpp: dict[str, np.ndarray], ids: list[int], gelu: bool) -> list[str]:
    import copy

    import torch

    lines = []
    wide = copy.deepcopy(hf_model).double()  # the float64 reference both runtimes round from
    with torch.no_grad(), contextlib.ExitStack() as stack:
        if gelu:
            stack.enter_context(gelu_as_ggml(hf_model))
            stack.enter_context(gelu_as_ggml(wide))
        with hooks(hf_model, cpp, local=False) as carried:
            logits = hf_model(torch.tensor([ids])).logits[0].double().numpy()
        with hooks(hf_model, cpp, local=True) as local:
            hf_model(torch.tensor([ids]))
        logits64 = wide(torch.tensor([ids])).logits[0].numpy()
    n_layers = len(hf_model.model.layers)
    lines.append(f"{'op':16s} " + " ".join(f"{il:>8d}" for il in range(n_layers)))
    for op in OPS:
        for label, got in (("carried", carried), ("local", local)):
            cells = []
            for il in range(n_layers):
                key = f"{op}-{il}"
                cells.append(
                    f"{rel(got[key], cpp[key]):8.1e}" if key in got and key in cpp else f"{'-':>8s}"
                )
            lines.append(f"{op + ' ' + label:16s} " + " ".join(cells))
    cpp_logits = cpp["logits"].astype(np.float64)

    def logprobs(x: np.ndarray) -> np.ndarray:
        top = x.max(1, keepdims=True)
        lse = np.log(np.exp(x - top).sum(1, keepdims=True)) + top
        picked: np.ndarray = (x - lse)[np.arange(len(ids) - 1), ids[1:]]
        return picked

    cpp_lp, hf_lp, wide_lp = (logprobs(x[:-1]) for x in (cpp_logits, logits, logits64))
    lines.append(
        f"logits relative {rel(logits, cpp_logits):.2e}; per-token log-prob max |Δ|: "
        f"llama.cpp vs hf {np.abs(cpp_lp - hf_lp).max():.2e}, llama.cpp vs hf float64 "
        f"{np.abs(cpp_lp - wide_lp).max():.2e}, hf vs hf float64 "
        f"{np.abs(hf_lp - wide_lp).max():.2e}"
    )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="gemma3-270m", help="a built-in model")
    parser.add_argument(
        "--workload", choices=["idiom-like", "signalling-like"], default="idiom-like"
    )
    parser.add_argument("--string", type=int, default=0, help="which string of the workload")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--gelu-f16", action="store_true", help="hf MLPs with ggml's f16 GELU")
    args = parser.parse_args(argv)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    from choiceaudit.scorers import cache_dir, load_scorer, resolve_causal_lm

    torch.set_num_threads(args.threads)
    load_scorer(args.model)
    shipped = Path(resolve_causal_lm(args.model).location)
    f32 = write_f32_gguf(shipped, cache_dir() / "gguf-f32" / f"{shipped.stem}.F32.gguf")
    queries = idiom_queries(1) if args.workload == "idiom-like" else signalling_queries(1)
    text = texts_of(queries)[args.string]
    cpp_scorer: Any = load_scorer(f"llama-cpp:{f32}", n_threads=args.threads)
    ids = list(cpp_scorer.llm.tokenize(text.encode("utf-8"), add_bos=True, special=False))
    del cpp_scorer
    cpp = dump_llama_cpp(f32, ids, args.threads)
    hf: Any = load_scorer(f"hf:{f32}")
    model = hf.lm.model.float().eval()
    print(
        f"{args.model} F32 GGUF, {args.workload} string {args.string}: {len(ids)} tokens; "
        f"{len(cpp)} llama.cpp tensors; hf GELU {'ggml f16 table' if args.gelu_f16 else 'float32'}"
    )
    for line in compare(model, cpp, ids, args.gelu_f16):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
