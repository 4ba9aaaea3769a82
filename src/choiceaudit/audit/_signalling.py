"""The signalling instrument (arXiv 2609.00576) run on models and reference choosers.

:func:`build_instrument` freezes an item set (``freeze_instrument``: items, prompts, tiles, fit
family, pool, rendering and analysis battery, with a content hash). :func:`run_signalling`
takes a frozen item directory or builds one into ``<out>/.items`` (hidden, so ``<out>/*`` is a
list of runs), renders the frozen queries once and scores them with each model and reference
chooser into its own run directory ``<out>/<model or chooser>``. Each run records
``config["items_hash"]`` and keeps a copy of the item directory in ``<run>/instrument``; the
analysis refuses a run whose hash differs from it.
"""

from __future__ import annotations

import contextlib
import json
import re
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from choiceaudit.audit._backend import RaySettings, open_scorer
from choiceaudit.audit._scoring import run_scoring
from choiceaudit.errors import InputError
from choiceaudit.instruments.signalling import (
    ConformanceReport,
    FrozenInstrument,
    InstrumentMismatchError,
    RobustnessConfig,
    build_signalling_items,
    candidate_columns,
    check_conformance,
    freeze_instrument,
    load_instrument,
    signalling_chooser,
)
from choiceaudit.instruments.signalling.choosers import chooser_condition
from choiceaudit.instruments.signalling.frozen import INSTRUMENT_FILE
from choiceaudit.scorers import (
    Scorer,
    capabilities_of,
    causal_lm_of,
    load_embedder,
    load_scorer,
)
from choiceaudit.store import RunStore

__all__ = [
    "BFLOAT16_WARNING",
    "CHOOSERS",
    "DEFAULT_SEED",
    "build_instrument",
    "check_signalling",
    "default_chat_template",
    "make_chooser",
    "run_signalling",
]

#: Why bfloat16 is warned about (§I-J rules it out), with the noise floor this project measured
#: (README, ``benchmarks/noise_floor.py``: SmolLM2 on CPU, 32 signalling-like queries).
BFLOAT16_WARNING = (
    "bfloat16 scoring: the paper rules it out (§I-J: every rung at one precision, fp16). "
    "Measured noise floor against fp32: max |delta| of the summed log-probability 0.92 under "
    "bfloat16 against 0.093 under float16 (PMI 0.45 against 0.075); use -o dtype=float16"
)

#: Choosers by their command-line name (§I-K): conditions 1 (cosine), 2 (swow), 3 (conceptnet),
#: 6 (rsa:swow, rsa:conceptnet; any other rsa:<base> is refused with the reason), 7 (bayes) and
#: the uniform and salience references. Conditions 4 and 5 are models (``--model``).
CHOOSERS: tuple[str, ...] = (
    "cosine",
    "swow",
    "conceptnet",
    "rsa:swow",
    "rsa:conceptnet",
    "bayes",
    "uniform",
    "salience",
)
DEFAULT_SEED = 20260901
ITEMS_DIR = ".items"

ProgressCallback = Callable[[str, int, int], None]


def _n_candidates(n_items: int) -> int:
    # The paper draws 200,000 candidates for 1,000 items; smaller sets keep the same ratio.
    return 200_000 if n_items >= 1000 else max(20_000, 200 * n_items)


def build_instrument(
    norms: str,
    out_dir: Path | str,
    *,
    data: Path | str | None = None,
    seed: int = DEFAULT_SEED,
    n_items: int = 1000,
    n_candidates: int | None = None,
    tiles: str | None = None,
    allow_loss: bool = False,
    swow: Path | str | None = None,
    override_tile_screen: bool = False,
    filters: RobustnessConfig | None = None,
) -> FrozenInstrument:
    """Build the item set from the norms and freeze it into ``out_dir``, with every generated
    candidate (selected or not) in ``candidates.parquet``. A THINGS loader that loses more
    concepts than its threshold refuses unless ``allow_loss``; any loss is warned about and
    recorded in the frozen configuration (``pool.norms_loss``). ``swow`` enters the pool
    intersection (§I-B); a tile file the §I-C screen disagrees with is refused unless
    ``override_tile_screen`` (recorded); ``filters`` are optional selection filters (none by
    default; recorded)."""
    if norms not in ("things", "lancaster"):
        raise InputError(f"unknown norms {norms!r}; use things or lancaster")
    if (Path(out_dir) / INSTRUMENT_FILE).exists():  # refuse before spending the build
        raise InputError(
            f"{out_dir} already holds a frozen instrument; amend it (--amend) or use a new --out"
        )
    result = build_signalling_items(
        norms,  # type: ignore[arg-type]
        seed=seed,
        data=data,
        tiles=tiles,
        n_candidates=n_candidates or _n_candidates(n_items),
        n_items=n_items,
        allow_loss=allow_loss,
        swow=swow,
        override_tile_screen=override_tile_screen,
        robustness=filters,
    )
    return freeze_instrument(result.items, out_dir, candidates=candidate_columns(result.selection))


def check_signalling(
    norms: str = "things",
    *,
    data: Path | str | None = None,
    seed: int = DEFAULT_SEED,
    n_candidates: int = 200_000,
    n_items: int = 1000,
    swow: Path | str | None = None,
    allow_loss: bool = False,
) -> ConformanceReport:
    """The model-free conformance check (``choiceaudit check signalling``): build the paper's
    design (200,000 candidates, 1,000 items by default) and compare every number the paper
    reports that needs no model with the measured one."""
    result = build_signalling_items(
        norms,  # type: ignore[arg-type]
        seed=seed,
        data=data,
        n_candidates=n_candidates,
        n_items=n_items,
        allow_loss=allow_loss,
        swow=swow,
    )
    return check_conformance(result, seed=seed)


def make_chooser(
    name: str,
    frozen: FrozenInstrument,
    *,
    swow: Path | str | None = None,
    conceptnet: Path | str | None = None,
) -> Scorer:
    """A chooser over the frozen items by its command-line name (:data:`CHOOSERS`; cosine
    uses MiniLM). An RSA layer over an ineligible base is refused with the reason."""
    return signalling_chooser(
        name,
        frozen.items,
        embed=lambda: load_embedder("minilm"),
        embed_model="minilm",
        swow=swow,
        conceptnet=conceptnet,
    )


def _has_chat_template(directory: Path) -> bool:
    if (directory / "chat_template.jinja").is_file() or (
        directory / "chat_template.json"
    ).is_file():
        return True
    config = directory / "tokenizer_config.json"
    if not config.is_file():
        return False
    try:
        return bool(json.loads(config.read_text(encoding="utf-8")).get("chat_template"))
    except (json.JSONDecodeError, OSError):
        return False


#: §I-J for the built-in causal LMs: (chat_template option, why).
BUILTIN_TEMPLATES: dict[str, tuple[str | None, str]] = {
    "smollm2": ("own", "instruct model (SmolLM2-135M-Instruct): its own chat template"),
    "gemma3-270m": (
        None,
        "base model; its instruct sibling (gemma-3-270m-it) is not installed offline, so no "
        "template; pass -o chat_template=<sibling dir> to score with it (§I-J)",
    ),
}


def default_chat_template(spec: str) -> tuple[str | None, str]:
    """The paper's scoring environment (§I-J) for a local ``hf:<dir>`` model: an instruct
    model is scored with its own chat template (``"own"``); a base model (directory name ending
    ``-Base``) with its instruct sibling's, applied verbatim (the sibling directory beside it,
    name without ``-Base``). Returns ``(chat_template option or None, why)``; anything else
    (built-in GGUF models, hub ids, a base model without a sibling on disk) keeps no template,
    and the reason says so. Always recorded in the run's config. The built-in models:
    ``smollm2`` (SmolLM2-135M-Instruct) gets its own template, which its GGUF carries;
    ``gemma3-270m`` is a base model whose instruct sibling is not installed, so it is scored
    without a template (pass ``-o chat_template=<sibling dir>`` to follow §I-J). A model behind
    a server (``openai:smollm2``) gets the default of the model it serves (``smollm2``), which
    the client applies, so it reads the prompt it reads in process."""
    model = causal_lm_of(spec)
    if model is None:
        return None, f"{spec} is not a causal LM; no chat template"
    template, why = _default_for(model)
    return template, (why if model == spec else f"served model {model}: {why}")


def _default_for(spec: str) -> tuple[str | None, str]:
    if spec in BUILTIN_TEMPLATES:
        return BUILTIN_TEMPLATES[spec]
    if not spec.startswith("hf:"):
        return None, "not a local hf: directory; no template unless -o chat_template=… is given"
    path = Path(spec.removeprefix("hf:"))
    if not path.is_dir():
        return None, f"{path} is not a local directory; no template unless -o chat_template=…"
    if path.name.lower().endswith("-base"):
        sibling = path.with_name(path.name[: -len("-Base")])
        if sibling.is_dir() and _has_chat_template(sibling):
            return str(sibling), f"base model: its instruct sibling {sibling}'s template, verbatim"
        return None, f"base model without an instruct sibling with a template at {sibling}"
    if _has_chat_template(path):
        return "own", "instruct model: its own chat template"
    return None, f"{path} ships no chat template"


def _dir_name(prefix: str, spec: str) -> str:
    return prefix + re.sub(r"[^A-Za-z0-9._-]+", "_", spec).strip("_")


def _resolve_items(
    out_root: Path,
    items: Path | str | None,
    *,
    norms: str,
    data: Path | str | None,
    seed: int,
    n_items: int,
    n_candidates: int | None,
    allow_loss: bool = False,
    swow: Path | str | None = None,
) -> FrozenInstrument:
    if items is not None:
        return load_instrument(items)
    item_dir = out_root / ITEMS_DIR
    if not (item_dir / INSTRUMENT_FILE).exists():
        return build_instrument(
            norms,
            item_dir,
            data=data,
            seed=seed,
            n_items=n_items,
            n_candidates=n_candidates,
            allow_loss=allow_loss,
            swow=swow,
        )
    frozen = load_instrument(item_dir)
    want = {"norms": norms, "seed": seed, "n_items": n_items}
    have = {k: frozen.record.get(k) for k in want}
    if have != want:
        raise InstrumentMismatchError(
            f"{item_dir} was frozen with {have}, not {want}; use another --out or --items"
        )
    return frozen


def run_signalling(
    models: Sequence[str | Scorer],
    choosers: Sequence[str],
    out_root: Path | str,
    *,
    norms: str = "lancaster",
    data: Path | str | None = None,
    items: Path | str | None = None,
    n_items: int = 1000,
    n_candidates: int | None = None,
    seed: int = DEFAULT_SEED,
    conditions: Sequence[str] = ("4", "5"),
    formats: Sequence[str] = ("V", "L"),
    label_forms: Sequence[str] = ("bare", "paren"),
    chunk_size: int = 32,
    scorer_options: dict[str, Any] | None = None,
    command: Sequence[str] | None = None,
    progress: ProgressCallback | None = None,
    allow_loss: bool = False,
    swow: Path | str | None = None,
    conceptnet: Path | str | None = None,
    ray: RaySettings | None = None,
    batch_one: bool = False,
) -> list[Path]:
    """Score the frozen renderings with every model (a spec for ``load_scorer``, or a loaded
    scorer) and reference chooser; return the run directories (models first, then choosers, in
    the order given). A second call resumes each run. With ``ray`` each model spec's chunks are
    scored on Ray actors (reference choosers run here: they are exact and cheap). With
    ``batch_one`` every model spec is also scored one query per forward pass
    (its backend's batch option, ``max_batch_rows=1`` for ``hf``) into ``<model>-batch1``; the analysis reports the batch-1 flip rate
    per tile against the batched run (§I-K scores the size tile at batch size 1)."""
    if not models and not choosers:
        raise InputError("give at least one --model or --chooser")
    for name in choosers:
        if name.startswith("rsa:") and name not in CHOOSERS:
            signalling_chooser(name, [])  # raises the refusal with its reason (§IV-H1)
        if name not in CHOOSERS:
            raise InputError(f"unknown chooser {name!r}; use one of {', '.join(CHOOSERS)}")
        if name in ("swow", "rsa:swow") and swow is None:
            raise InputError(f"chooser {name} (condition 2/6) needs --swow FILE")
        if name in ("conceptnet", "rsa:conceptnet") and conceptnet is None:
            raise InputError(f"chooser {name} (condition 3/6) needs --conceptnet FILE")
    options = dict(scorer_options or {})
    if str(options.get("dtype", "")).lower() in ("bfloat16", "bf16"):
        warnings.warn(BFLOAT16_WARNING, UserWarning, stacklevel=2)
    root = Path(out_root)
    frozen = _resolve_items(
        root,
        items,
        norms=norms,
        data=data,
        seed=seed,
        n_items=n_items,
        n_candidates=n_candidates,
        allow_loss=allow_loss,
        swow=swow,
    )
    queries = frozen.render(conditions=conditions, formats=formats, label_forms=label_forms)
    base = {
        "instrument": "signalling",
        "items_hash": frozen.hash,
        "items_dir": str(frozen.path.resolve()),
        "norms": frozen.record.get("norms"),
        "seed": frozen.record.get("seed"),
        "n_items": len(frozen.items),
        "conditions": list(conditions),
        "formats": list(formats),
        "label_forms": list(label_forms),
    }
    jobs: list[tuple[str, dict[str, Any], Callable[[], Scorer]]] = []
    fanned: dict[str, tuple[str, dict[str, Any]]] = {}  # directory → (spec, options) for Ray
    for spec in models:
        if isinstance(spec, str):
            model_options = dict(scorer_options or {})
            template_note: dict[str, Any] = {}
            capabilities = capabilities_of(spec)
            # §I-J's scoring environment is that of a causal LM scored by option
            # log-probability, in process or over a server.
            if (
                "chat_template" not in model_options
                and capabilities.chat_template
                and capabilities.reads == "continuations"
            ):
                template, why = default_chat_template(spec)
                if template is not None:
                    model_options["chat_template"] = template
                template_note = {"chat_template_default": {"chat_template": template, "why": why}}
            fanned[_dir_name("", spec)] = (spec, model_options)
            jobs.append(
                (
                    _dir_name("", spec),
                    {**base, "model": spec, **template_note},
                    lambda spec=spec, o=model_options: load_scorer(spec, **o),  # type: ignore[misc]
                )
            )
            if batch_one:
                if capabilities.batch_option is None:
                    raise InputError(
                        f"--batch-one needs a batched causal LM (a backend with a rows-per-pass "
                        f"option, such as hf's max_batch_rows); {spec!r} does not batch rows"
                    )
                single = {**model_options, capabilities.batch_option: 1}
                dirname = _dir_name("", spec) + "-batch1"
                fanned[dirname] = (spec, single)
                jobs.append(
                    (
                        dirname,
                        {
                            **base,
                            "model": f"{spec} (batch 1)",
                            "batch_of": spec,
                            "batch_rows": 1,
                            **template_note,
                        },
                        lambda spec=spec, o=single: load_scorer(spec, **o),  # type: ignore[misc]
                    )
                )
        else:  # an already-loaded scorer, named by its description
            desc = spec.describe()
            name = str(desc.get("model") or desc.get("name") or type(spec).__name__)
            jobs.append((_dir_name("", name), {**base, "model": name}, lambda s=spec: s))  # type: ignore[misc]
    for name in choosers:
        jobs.append(
            (
                _dir_name("", name),
                {**base, "chooser": name, "condition": chooser_condition(name)},
                lambda n=name: make_chooser(n, frozen, swow=swow, conceptnet=conceptnet),  # type: ignore[misc]
            )
        )
    run_dirs = []
    for dirname, config, factory in jobs:
        store = RunStore(root / dirname)
        if store.exists() and store.manifest().config.get("items_hash") != frozen.hash:
            raise InstrumentMismatchError(
                f"{store.path} holds a run on other items; choose a new --out"
            )

        def copy_items(directory: Path) -> None:
            frozen.copy_to(directory / "instrument")

        label = str(config.get("model") or config.get("chooser"))

        def advance(done: int, total: int, label: str = label) -> None:
            if progress is not None:
                progress(label, done, total)

        opener = (
            open_scorer(*fanned[dirname], ray)
            if ray is not None and dirname in fanned
            else contextlib.nullcontext((factory(), None))
        )
        with opener as (scorer, executor):
            run_scoring(
                scorer,
                queries,
                store,
                chunk_size=chunk_size,
                command=command,
                config=config,
                on_accepted=copy_items,
                on_progress=advance,
                executor=executor,
            )
        run_dirs.append(store.path)
    return run_dirs
