"""The ``llama-cpp`` scorer against ``hf`` on the same GGUF file: agreement and speed.

For each built-in model (SmolLM2 135M, GGUF Q4_1; Gemma 3 270M, GGUF Q4_K_M) and for an F32
GGUF written from the same file (every tensor dequantized to float32 with the ``gguf`` package,
metadata copied unchanged), both scorers score the same queries — signalling-like (a ~150-token
prompt, 6 options, a neutral prompt for PMI) and idiom-like (a short state, 4 glosses of 5–20
tokens), from ``bench_engine`` — and this prints:

* **per token**: the largest |Δ log-prob| over every token of every string, with llama.cpp's
  token ids fed to the transformers model (so the numbers of the two runtimes are compared on the
  same tokens), and how many strings the two tokenizers split differently;
* **per option**: the largest |Δ sum| of an option's score between the two scorers as a user
  runs them (each with its own tokenizer), the median, and how many argmaxes agree;
* **speed**: seconds for each scorer on the same queries and the ratio, in one process, with the
  same number of threads for torch and llama.cpp (best of ``--repeats``).

``hf`` dequantizes a quantized GGUF to float32, llama.cpp executes the quantized types, so on
the shipped files the two differ by quantized arithmetic; on the F32 GGUF both compute in
float32 and agree to float32 rounding, except where llama.cpp rounds on purpose: its CPU GELU
(Gemma's MLP) is a lookup table indexed by the input rounded to float16, whose entries are
float16 (``GGML_GELU_FP16`` in ggml-cpu's ``vec.h``). ``--gelu-f16`` also compares per token with
the transformers model's GELU replaced by that same table arithmetic, which shows how much of
the difference that one rounding is. Needs llama-cpp-python
(``pip install 'choiceaudit[llama-cpp]'``) and the ``hf`` extra::

    PYTHONPATH=src python benchmarks/bench_llama_cpp.py --threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import idiom_queries, signalling_queries


def write_f32_gguf(source: Path, target: Path) -> Path:
    """``source`` with every tensor dequantized to float32, metadata copied unchanged."""
    import gguf

    if target.exists():
        return target
    reader = gguf.GGUFReader(str(source))
    arch = str(reader.fields["general.architecture"].contents())
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".partial")
    writer = gguf.GGUFWriter(str(tmp), arch)
    for field in reader.fields.values():
        if field.name == "general.architecture" or field.name.startswith("GGUF."):
            continue
        value = field.contents()
        if field.name == "general.file_type":
            value = int(gguf.LlamaFileType.ALL_F32)
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, value, kind, sub_type=sub)
    arrays = []
    for tensor in reader.tensors:
        data = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        # GGUF lists dimensions innermost first; the array is outermost first
        data = data.reshape(tuple(int(d) for d in reversed(tensor.shape.tolist())))
        arrays.append(data)
        writer.add_tensor_info(
            tensor.name, data.shape, data.dtype, data.nbytes, gguf.GGMLQuantizationType.F32
        )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for data in arrays:
        writer.write_tensor_data(data)
    writer.close()
    os.replace(tmp, target)
    return target


def ggml_gelu_f16(x: Any) -> Any:
    """GELU (tanh form) as ggml's CPU backend computes it: the input rounded to float16 indexes
    a table of float16 values of the float32 GELU; 0 at or below -10, the input at or above 10."""
    import torch

    table = torch.nn.functional.gelu(x.half().float(), approximate="tanh").half().float()
    return torch.where(x <= -10.0, torch.zeros_like(x), torch.where(x >= 10.0, x, table))


@contextmanager
def gelu_as_ggml(model: Any) -> Iterator[int]:
    """Swap the GELU-tanh activation of every MLP in ``model`` for :func:`ggml_gelu_f16` (how
    many were swapped), restoring them after."""
    import torch

    class GgmlGelu(torch.nn.Module):  # a module attribute of a module must be a module
        def forward(self, x: Any) -> Any:
            return ggml_gelu_f16(x)

    names = {"GELUTanh", "PytorchGELUTanh"}  # transformers' gelu_pytorch_tanh, by release
    swapped = [m for m in model.modules() if type(getattr(m, "act_fn", None)).__name__ in names]
    saved = [m.act_fn for m in swapped]
    for m in swapped:
        m.act_fn = GgmlGelu()
    try:
        yield len(swapped)
    finally:
        for m, act in zip(swapped, saved, strict=True):
            m.act_fn = act


def per_token(
    hf: Any, cpp: Any, texts: Sequence[str], *, gelu_f16: bool = False
) -> tuple[float, int, int, float | None]:
    """Largest |Δ log-prob| over the tokens of ``texts`` (llama.cpp's ids into both runtimes),
    the tokens compared, how many texts the two tokenizers split differently, and with
    ``gelu_f16`` the largest |Δ| with ggml's float16 GELU in the transformers model too (None
    where the model has no GELU-tanh to swap)."""
    import torch

    def logprobs(ids: list[int]) -> Any:
        with torch.no_grad():
            logits = hf.lm.model(torch.tensor([ids])).logits[0].double()
        return torch.log_softmax(logits[:-1], dim=-1)[
            torch.arange(len(ids) - 1), torch.tensor(ids[1:])
        ].numpy()

    worst, n, differ, worst_f16 = 0.0, 0, 0, None
    for text in texts:
        ids = list(cpp.llm.tokenize(text.encode("utf-8"), add_bos=True, special=False))
        ours = np.asarray(cpp._tokens(text, "bench").logprobs[1:], dtype=np.float64)
        hf_ids = hf.lm.tokenizer(text, add_special_tokens=True)["input_ids"]
        differ += hf_ids != ids
        diff = np.abs(ours - logprobs(ids))
        worst, n = max(worst, float(diff.max())), n + len(diff)
        if gelu_f16:
            with gelu_as_ggml(hf.lm.model) as swapped:
                if swapped:
                    d16 = float(np.abs(ours - logprobs(ids)).max())
                    worst_f16 = d16 if worst_f16 is None else max(worst_f16, d16)
    return worst, n, differ, worst_f16


def per_option(a: Sequence[Any], b: Sequence[Any]) -> dict[str, Any]:
    deltas = np.concatenate(
        [np.abs(x.scores["sum"] - y.scores["sum"]) for x, y in zip(a, b, strict=True)]
    )
    agree = sum(
        int(np.argmax(x.scores["sum"])) == int(np.argmax(y.scores["sum"]))
        for x, y in zip(a, b, strict=True)
    )
    return {
        "max_abs_sum": float(deltas.max()),
        "median_abs_sum": float(np.median(deltas)),
        "argmax_agree": f"{agree}/{len(a)}",
    }


def timed(scorer: Any, queries: Sequence[Any], repeats: int) -> tuple[float, list[Any]]:
    best, out = float("inf"), []
    for _ in range(repeats):
        start = time.perf_counter()
        out = scorer.score(queries)
        best = min(best, time.perf_counter() - start)
    return best, out


def texts_of(queries: Sequence[Any]) -> list[str]:
    from choiceaudit.scorers import query_strings

    return [t for q in queries for t in query_strings(q)[0]]


def bench_file(
    label: str, gguf: Path, workloads: dict[str, list[Any]], args: Any
) -> list[dict[str, Any]]:
    from choiceaudit.scorers import load_scorer

    hf = load_scorer(f"hf:{gguf}")
    cpp = load_scorer(f"llama-cpp:{gguf}", n_threads=args.threads)
    rows = []
    for name, queries in workloads.items():
        t_hf, a = timed(hf, queries, args.repeats)
        t_cpp, b = timed(cpp, queries, args.repeats)
        worst, n_tok, differ, f16 = per_token(hf, cpp, texts_of(queries), gelu_f16=args.gelu_f16)
        row = {
            "file": label,
            "workload": name,
            "queries": len(queries),
            "per_token_max_abs": worst,
            "tokens_compared": n_tok,
            "strings_tokenized_differently": differ,
            "per_token_max_abs_hf_gelu_f16": f16,
            **per_option(a, b),
            "hf_s": t_hf,
            "llama_cpp_s": t_cpp,
            "hf_over_llama_cpp": t_hf / t_cpp,
        }
        with_f16 = "" if f16 is None else f" (hf with ggml's f16 GELU: {f16:.2e})"
        print(
            f"{label:34s} {name:16s} token max|Δ| {worst:.2e}{with_f16} ({n_tok} tokens, {differ} split "
            f"differently)  option max|Δsum| {row['max_abs_sum']:.2e} median {row['median_abs_sum']:.2e} "
            f"argmax {row['argmax_agree']}  hf {t_hf:.2f}s llama.cpp {t_cpp:.2f}s "
            f"(hf/llama.cpp {t_hf / t_cpp:.2f})",
            flush=True,
        )
        rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model", action="append", help="repeatable; default smollm2 and gemma3-270m"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch and llama.cpp threads")
    parser.add_argument("--signalling-queries", type=int, default=4)
    parser.add_argument("--idiom-queries", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=1, help="time = best of this many runs")
    parser.add_argument("--no-f32", action="store_true", help="skip the F32 GGUF")
    parser.add_argument("--only-f32", action="store_true", help="skip the shipped GGUF")
    parser.add_argument(
        "--gelu-f16",
        action="store_true",
        help="also compare per token with ggml's float16 GELU table in hf",
    )
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    from choiceaudit.scorers import cache_dir, load_scorer, resolve_causal_lm

    torch.set_num_threads(args.threads)
    workloads = {
        "signalling-like": signalling_queries(args.signalling_queries),
        "idiom-like": idiom_queries(args.idiom_queries),
    }
    rows: list[dict[str, Any]] = []
    for model in args.model or ["smollm2", "gemma3-270m"]:
        load_scorer(model)  # materialises the shipped GGUF (Gemma's is assembled from chunks)
        shipped = Path(resolve_causal_lm(model).location)
        if not args.only_f32:
            rows += bench_file(f"{model} ({shipped.name})", shipped, workloads, args)
        if not args.no_f32:
            f32 = write_f32_gguf(shipped, cache_dir() / "gguf-f32" / f"{shipped.stem}.F32.gguf")
            rows += bench_file(f"{model} (F32 GGUF)", f32, workloads, args)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
