"""The backend table: every backend, how a spec names it, how it loads and what it is.

Code outside ``scorers`` never compares a backend's name; it asks the backend's
:class:`Capabilities` instead — what it reads (a keyed menu, or each option as an independent
continuation), which scoring rules it returns, which option sets its batch size, whether a chat
template applies, whether it is the in-process causal-LM engine, and which fields of its
``describe()`` identify it when a run is resumed. Adding a backend is one module (the scorer)
plus one :class:`Backend` entry in :data:`BACKENDS`; nothing else dispatches on the name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from choiceaudit.scorers._protocol import ScorerError

__all__ = [
    "BACKENDS",
    "DEFAULT_IDENTITY",
    "Backend",
    "Capabilities",
    "backend_named",
    "resume_identity",
]

#: The identity of a scorer that is not a registered backend (the signalling reference
#: choosers, a human study, an import): those of these fields its description has.
DEFAULT_IDENTITY = (
    "backend",
    "model",
    "model_id",
    "weights_sha256",
    "revision",
    "dtype",
    "name",
    "truncate",
)

#: The identity of a causal LM loaded in process (the fields ``LoadedLM.describe`` writes).
_LM_IDENTITY = ("backend", "model", "model_id", "weights_sha256", "revision", "dtype")
_LOGPROB_RULES = ("sum", "mean", "pmi")


@dataclass(frozen=True)
class Capabilities:
    """What a backend is, as the layers above it need to know.

    ``reads``: ``"menu"`` — the keyed menu of a query (decision models, embedding choosers,
    a causal LM asked for a key); ``"continuations"`` — each option scored independently as the
    continuation after the prompt (a causal LM scored by option log-probability, in process or
    over a server), so an instrument asks it the text form of a query. ``rules``: the keys of
    ``Decision.scores`` it can return. ``batch_option``: the option that sets how many rows go
    into one forward pass (``None``: it does not batch rows; ``--batch-one`` sets it to 1).
    ``chat_template``: it takes ``chat_template`` and ``system_prompt``. ``engine``: it is the
    in-process causal-LM engine (``serve-model`` can serve it; ``lm-choice:`` can wrap it).
    ``identity``: the ``describe()`` fields that must match for a run to be resumed by it;
    every one must be present in its description (:func:`resume_identity` refuses otherwise).
    ``local_compute``: it runs a causal LM loaded in the scoring process, so its throughput on a
    CPU grows with worker processes (each loading its own copy), not only with threads."""

    reads: Literal["menu", "continuations"]
    rules: tuple[str, ...]
    identity: tuple[str, ...]
    batch_option: str | None = None
    chat_template: bool = False
    engine: bool = False
    local_compute: bool = False


@dataclass(frozen=True)
class Backend:
    """One row of the table.

    ``prefix`` (``"hf:"``) names specs of the form ``prefix<target>``; ``names`` are whole-word
    specs (``smollm2``). ``loader`` is ``"module:attribute"``, imported only when the backend is
    used (so the core never needs torch); ``target_param`` is the loader's parameter the spec's
    target fills (``None``: the spec has no target), and ``target_is_spec`` makes the target the
    whole spec (the ``hf`` loader resolves ``hf:…`` itself). ``required`` are options the spec
    cannot do without, each with what it is; ``installed`` names the built-in model whose
    packages must be installed (``"{spec}"`` / ``"{target}"`` stand for the spec's own).
    ``causal_lm`` says where the causal LM whose prompt conventions apply is named: the spec
    itself, its target (``openai:smollm2`` serves ``smollm2``), or nowhere. ``loads_lm`` says
    where the causal LM the backend loads in this process is named (``lm-choice:smollm2`` loads
    ``smollm2``), so its weights can be made ready before it loads. ``target_hint`` is what
    follows the prefix, as an unknown spec's error lists it."""

    name: str
    prefix: str | None
    names: tuple[str, ...]
    loader: str
    target_param: str | None
    capabilities: Capabilities
    target_is_spec: bool = False
    required: tuple[tuple[str, str], ...] = ()
    installed: str | None = None
    causal_lm: Literal["spec", "target"] | None = None
    loads_lm: Literal["spec", "target"] | None = None
    target_hint: str = "<model>"

    def load_callable(self) -> Callable[..., Any]:
        """The loader itself (imports the backend's module, not the model)."""
        module, _, attribute = self.loader.partition(":")
        target: Any = importlib.import_module(module)
        for part in attribute.split("."):
            target = getattr(target, part)
        return target  # type: ignore[no-any-return]


BACKENDS: tuple[Backend, ...] = (
    Backend(
        "hf",
        "hf:",
        ("smollm2", "gemma3-270m"),
        "choiceaudit.scorers._hf:HFScorer.load",
        "name",
        Capabilities(
            "continuations",
            _LOGPROB_RULES,
            _LM_IDENTITY,
            batch_option="max_batch_rows",
            chat_template=True,
            engine=True,
            local_compute=True,
        ),
        target_is_spec=True,
        installed="{spec}",
        causal_lm="spec",
        loads_lm="spec",
        target_hint="<dir|gguf|hub id>",
    ),
    Backend(
        "lm-choice",
        "lm-choice:",
        (),
        "choiceaudit.scorers._lm_choice:LMChoiceScorer.load",
        "name",
        Capabilities(
            "menu",
            ("prob", "logit"),
            _LM_IDENTITY,
            batch_option="max_batch_rows",
            chat_template=True,
            local_compute=True,
        ),
        installed="{target}",
        loads_lm="target",
        target_hint="<causal LM>",
    ),
    Backend(
        "sparrow",
        "sparrow:",
        ("sparrow",),
        "choiceaudit.scorers._sparrow:SparrowScorer.load",
        "model",
        Capabilities(
            "menu", ("prob",), ("backend", "model", "model_id", "weights_sha256", "truncate")
        ),
        installed="sparrow",
        target_hint="<name>",
    ),
    Backend(
        "systemone",
        "systemone:",
        (),
        "choiceaudit.scorers._systemone:SystemOneScorer",
        "model",
        Capabilities("menu", ("prob",), ("backend", "model")),
        required=(("base_url", "the decision API's address"),),
    ),
    Backend(
        "openai",
        "openai:",
        (),
        "choiceaudit.scorers._openai:OpenAIScorer",
        "model",
        # A completions server with echo scores prompts, so what it serves is a causal LM read
        # exactly as hf reads it in process; the prompt it was given is part of its identity.
        Capabilities(
            "continuations",
            _LOGPROB_RULES,
            (*_LM_IDENTITY, "name", "chat_template", "system_prompt"),
            chat_template=True,
        ),
        required=(("base_url", "the server's address"),),
        causal_lm="target",
    ),
    Backend(
        "llama-cpp",
        "llama-cpp:",
        (),
        "choiceaudit.scorers._llama_cpp:LlamaCppScorer.load",
        "path",
        # llama.cpp executes the GGUF as it is quantized: its file (by sha256) identifies it
        Capabilities(
            "continuations", _LOGPROB_RULES, ("backend", "model", "model_id", "weights_sha256")
        ),
        target_hint="<file.gguf>",
    ),
    Backend(
        "cosine",
        None,
        ("minilm",),
        "choiceaudit.scorers._cosine:CosineScorer.load",
        None,
        Capabilities(
            "menu", ("cosine",), ("backend", "model", "model_id", "weights_sha256", "truncate")
        ),
        installed="minilm",
    ),
    Backend(
        "fake",
        None,
        ("fake",),
        "choiceaudit.scorers._fake:FakeScorer",
        None,
        Capabilities("menu", ("prob", "logit"), ("backend", "name")),
    ),
)

_BY_NAME = {b.name: b for b in BACKENDS}


def backend_named(name: str) -> Backend:
    """The table's row for a backend name (a :class:`ScorerError` for an unknown one)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ScorerError(f"unknown backend {name!r}; known: {', '.join(_BY_NAME)}") from None


def resume_identity(description: Mapping[str, Any], *, strict: bool = True) -> dict[str, Any]:
    """The fields of a scorer's ``describe()`` that identify it for resume: those its backend
    declares (:attr:`Capabilities.identity`), or, for a scorer that is not a registered
    backend, those of :data:`DEFAULT_IDENTITY` it has. A declared field missing from the
    description is a :class:`ScorerError` (an identity is never silently shortened); with
    ``strict=False`` (a description read back from an older run) it is left out, so the
    comparison with a current identity fails instead."""
    backend = _BY_NAME.get(str(description.get("backend")))
    if backend is None:
        return {k: description[k] for k in DEFAULT_IDENTITY if k in description}
    declared = backend.capabilities.identity
    missing = [k for k in declared if k not in description]
    if missing and strict:
        raise ScorerError(
            f"the {backend.name} backend declares {missing} as identifying it for resume, but "
            "its describe() does not report them; a run could be resumed by another model"
        )
    return {k: description[k] for k in declared if k in description}
