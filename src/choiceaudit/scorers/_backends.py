"""The backend table: every backend, how a spec names it, how it loads and what it is.

Code outside ``scorers`` never compares a backend's name; it asks the backend's
:class:`Capabilities` instead — what it reads (a keyed menu, or each option as an independent
continuation), which scoring rules it returns, which option sets its batch size, whether a chat
template applies, whether it is the in-process causal-LM engine, and which fields of its
``describe()`` identify it when a run is resumed. The built-in backends are :data:`BACKENDS`;
another is added without editing this project, by :func:`register_backend` or by an entry point
in the ``choiceaudit.backends`` group of an installed distribution (its object a
:class:`Backend`, or a callable returning one), read the first time the table is consulted. A
declaration that is incomplete is refused when it is registered, naming what is missing;
nothing else dispatches on the name.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from choiceaudit.entry_points import declared
from choiceaudit.scorers._protocol import ScorerError

__all__ = [
    "BACKENDS",
    "BACKEND_ENTRY_POINTS",
    "DEFAULT_IDENTITY",
    "Backend",
    "Capabilities",
    "backend_named",
    "register_backend",
    "registered_backends",
    "resume_identity",
]

#: the entry-point group an installed distribution declares its backends in
BACKEND_ENTRY_POINTS = "choiceaudit.backends"

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
    used (so the core never needs torch), or the callable itself (a backend registered from
    Python, where the class is at hand); ``target_param`` is the loader's parameter the spec's
    target fills (``None``: the spec has no target), and ``target_is_spec`` makes the target the
    whole spec (the ``hf`` loader resolves ``hf:…`` itself). ``required`` are options the spec
    cannot do without, each with what it is; ``installed`` names the built-in model whose
    packages must be installed (``"{spec}"`` / ``"{target}"`` stand for the spec's own).
    ``causal_lm`` says where the causal LM whose prompt conventions apply is named: the spec
    itself, its target (``openai:smollm2`` serves ``smollm2``), or nowhere. ``loads_lm`` says
    where the causal LM the backend loads in this process is named (``lm-choice:smollm2`` loads
    ``smollm2``), so its weights can be made ready before it loads. ``target_hint`` is what
    follows the prefix, as an unknown spec's error lists it. ``example`` is one spec that names
    the backend (the tests that cover every backend resolve it); ``description`` says in a
    line what it is (``choiceaudit models`` lists it)."""

    name: str
    prefix: str | None
    names: tuple[str, ...]
    loader: str | Callable[..., Any]
    target_param: str | None
    capabilities: Capabilities
    target_is_spec: bool = False
    required: tuple[tuple[str, str], ...] = ()
    installed: str | None = None
    causal_lm: Literal["spec", "target"] | None = None
    loads_lm: Literal["spec", "target"] | None = None
    target_hint: str = "<model>"
    example: str = ""
    description: str = ""

    def load_callable(self) -> Callable[..., Any]:
        """The loader itself (imports the backend's module, not the model)."""
        if callable(self.loader):
            return self.loader
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
        example="hf:/models/x",
        description="a causal LM in process, scored by option log-probability",
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
        example="lm-choice:smollm2",
        description="a causal LM asked for the key of its choice",
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
        example="sparrow",
        description="a sparrow decision model",
    ),
    Backend(
        "systemone",
        "systemone:",
        (),
        "choiceaudit.scorers._systemone:SystemOneScorer",
        "model",
        Capabilities("menu", ("prob",), ("backend", "model")),
        required=(("base_url", "the decision API's address"),),
        example="systemone:jev",
        description="a /v1/systemone decision API",
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
        example="openai:smollm2",
        description="a causal LM behind a completions server with echo (vLLM, SGLang)",
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
        example="llama-cpp:/models/x.gguf",
        description="a GGUF run by llama-cpp-python",
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
        example="minilm",
        description="an embedding model choosing by cosine similarity",
    ),
    Backend(
        "fake",
        None,
        ("fake",),
        "choiceaudit.scorers._fake:FakeScorer",
        None,
        Capabilities("menu", ("prob", "logit"), ("backend", "name")),
        example="fake",
        description="a model-free scorer for tests and benchmarks",
    ),
)

_BY_NAME: dict[str, Backend] = {b.name: b for b in BACKENDS}
_ENTRY_POINTS_READ = [False]
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def _problems(backend: object, table: Mapping[str, Backend]) -> list[str]:
    """What keeps ``backend`` from being a complete, unambiguous row of ``table``."""
    if not isinstance(backend, Backend):
        return [f"a Backend is needed, got {type(backend).__name__}"]
    found = []
    if not _NAME.match(backend.name):
        found.append(f"name {backend.name!r} (lower-case letters, digits, '.', '_', '-')")
    if backend.prefix is None and not backend.names:
        found.append("a prefix or names (a spec must be able to name it)")
    if backend.prefix is not None and not backend.prefix.endswith(":"):
        found.append(f"prefix {backend.prefix!r} ending in ':'")
    if backend.prefix is not None and backend.target_param is None:
        found.append("target_param (the loader parameter the spec's target fills)")
    if isinstance(backend.loader, str):
        if not re.match(r"^[\w.]+:[\w.]+$", backend.loader):
            found.append(f"loader {backend.loader!r} as 'module:attribute' or a callable")
    elif not callable(backend.loader):
        found.append(f"loader {backend.loader!r} as 'module:attribute' or a callable")
    found.extend(_capability_problems(backend.capabilities))
    named = backend.example in backend.names or (
        backend.prefix is not None and backend.example.startswith(backend.prefix)
    )
    if not backend.example or not named:
        found.append(f"example {backend.example!r}: a spec that names it")
    if not backend.description:
        found.append("description (one line for `choiceaudit models`)")
    for other in table.values():
        if other.name == backend.name:
            continue
        if backend.prefix is not None and other.prefix == backend.prefix:
            found.append(f"a prefix of its own ({backend.prefix!r} is {other.name}'s)")
        for name in set(backend.names) & set(other.names):
            found.append(f"names of its own ({name!r} is {other.name}'s)")
    return found


def _capability_problems(capabilities: object) -> list[str]:
    if not isinstance(capabilities, Capabilities):
        return ["capabilities (a Capabilities)"]
    found = []
    if capabilities.reads not in ("menu", "continuations"):
        found.append(f"capabilities.reads 'menu' or 'continuations', not {capabilities.reads!r}")
    if not capabilities.rules or not all(isinstance(r, str) for r in capabilities.rules):
        found.append("capabilities.rules (the keys of Decision.scores it returns)")
    if "backend" not in capabilities.identity:
        found.append("capabilities.identity including 'backend' (what a resume must match)")
    return found


def register_backend(backend: Backend, *, replace: bool = False) -> Backend:
    """Add ``backend`` to the table, so every command and function that takes a model spec
    resolves its specs. A declaration that is incomplete or ambiguous (no way to name it, no
    loader, a capability missing, a prefix or name another backend has) is a
    :class:`ScorerError` naming each problem; a name already registered is refused unless
    ``replace``."""
    _read_entry_points()
    if not replace and isinstance(backend, Backend) and backend.name in _BY_NAME:
        raise ScorerError(f"a backend named {backend.name!r} is registered already")
    problems = _problems(backend, _BY_NAME)
    if problems:
        name = getattr(backend, "name", "?")
        raise ScorerError(f"backend {name!r} is incomplete; it needs " + "; ".join(problems))
    _BY_NAME[backend.name] = backend
    return backend


def _read_entry_points() -> None:
    """Register the backends installed distributions declare (once, on first use)."""
    if _ENTRY_POINTS_READ[0]:
        return
    _ENTRY_POINTS_READ[0] = True
    for where, backend in declared(BACKEND_ENTRY_POINTS, Backend, ScorerError):
        try:
            register_backend(backend)  # type: ignore[arg-type]
        except ScorerError as exc:
            raise ScorerError(f"{where}: {exc}") from None


def registered_backends() -> tuple[Backend, ...]:
    """Every backend: the built-in ones, those registered, and those installed distributions
    declare as entry points."""
    _read_entry_points()
    return tuple(_BY_NAME.values())


def backend_named(name: str) -> Backend:
    """The table's row for a backend name (a :class:`ScorerError` for an unknown one)."""
    _read_entry_points()
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
    _read_entry_points()
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
