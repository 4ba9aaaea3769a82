"""The signalling instrument (arXiv 2609.00576) run on models and reference choosers.

:func:`run_signalling` takes a frozen item directory or builds one (``_signalling_build``) into
``<out>/.items`` (hidden, so ``<out>/*`` is a list of runs), renders the frozen queries once and scores them with each model and reference
chooser into its own run directory ``<out>/<model or chooser>``. Each run records
``config["items_hash"]`` and keeps a copy of the item directory in ``<run>/instrument``; the
analysis refuses a run whose hash differs from it.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from choiceaudit.audit._backend import ProcessSettings, RaySettings
from choiceaudit.audit._precision_gate import DEFAULT_PRECISION_GATE, PrecisionGate
from choiceaudit.audit._runs import RunJob, ScorerOpener, loaded, made, model_scorer, run_jobs
from choiceaudit.audit._scoring import check_chunk_size
from choiceaudit.audit._signalling_build import DEFAULT_SEED, build_instrument, check_counts
from choiceaudit.audit._signalling_templates import default_chat_template
from choiceaudit.errors import InputError
from choiceaudit.instruments import run_dir_name
from choiceaudit.instruments.signalling import (
    INSTRUMENT,
    FrozenInstrument,
    InstrumentMismatchError,
    SignallingConfig,
    load_instrument,
    signalling_chooser,
)
from choiceaudit.instruments.signalling.choosers import (
    COVERAGE_CHOOSERS,
    analysis_item_ids,
    chooser_condition,
    item_coverage,
)
from choiceaudit.instruments.signalling.frozen import INSTRUMENT_FILE
from choiceaudit.instruments.signalling.records import ChatTemplateNote, CoverageRecord
from choiceaudit.scorers import Scorer, capabilities_of, load_embedder
from choiceaudit.store import RunStore
from choiceaudit.types import Query

__all__ = [
    "BFLOAT16_WARNING",
    "CHOOSERS",
    "default_chat_template",
    "make_chooser",
    "run_signalling",
]

#: Why bfloat16 is warned about (§I-J rules it out), with the noise floor this project measured
#: (docs/benchmarks.md, ``benchmarks/noise_floor.py``: SmolLM2 on CPU, 32 signalling-like queries).
BFLOAT16_WARNING = (
    "bfloat16 scoring: the paper rules it out (§I-J: every rung at one precision, fp16). "
    "Measured noise floor against fp32: max |delta| of the summed log-probability 1.17 under "
    "bfloat16 against 0.094 under float16 (PMI 0.41 against 0.072); use -o dtype=float16"
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
ITEMS_DIR = ".items"

ProgressCallback = Callable[[str, int, int], None]

#: The fields every signalling run's configuration stores, whatever their value (a freeze
#: without ``norms`` records ``"norms": null``, as the manifest always has).
_BASE_KEYS = (
    "instrument",
    "items_hash",
    "items_dir",
    "norms",
    "seed",
    "n_items",
    "conditions",
    "formats",
    "label_forms",
)


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
            out=item_dir,
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


def _coverage_checks(
    choosers: Sequence[str],
    frozen: FrozenInstrument,
    queries: Sequence[Query],
    swow: Path | str | None,
    conceptnet: Path | str | None,
    *,
    allow: bool,
) -> dict[str, tuple[Scorer, CoverageRecord]]:
    """§I-B's coverage check for the choosers whose source may lack an item's words: each is
    built once, scored on one rendering per item, and refused when it cannot score every item
    unless ``allow`` (then the coverage and the permission are what its run records)."""
    analysis = analysis_item_ids(frozen.items, frozen.analysis["analysis_set"])
    out: dict[str, tuple[Scorer, CoverageRecord]] = {}
    for name in dict.fromkeys(choosers):
        if name not in COVERAGE_CHOOSERS:
            continue
        chooser = make_chooser(name, frozen, swow=swow, conceptnet=conceptnet)
        check = item_coverage(name, chooser, queries, analysis)
        if not check.complete and not allow:
            raise InputError(
                f"coverage check: chooser {name} can score {check.n_covered} of the "
                f"{check.n_items} frozen items ({check.n_analysis_covered} of the "
                f"{check.n_analysis_items} in the analysis set; e.g. {', '.join(check.examples)}). "
                "§I-B admits no concept that some condition cannot score: build the items with "
                "the same source (--swow FILE enters the pool), or pass --allow-partial-coverage "
                "to score the covered items (recorded, and shown beside every figure)"
            )
        out[name] = (chooser, check.as_record())
    return out


def _check_choosers(
    choosers: Sequence[str], swow: Path | str | None, conceptnet: Path | str | None
) -> None:
    for name in choosers:
        if name.startswith("rsa:") and name not in CHOOSERS:
            signalling_chooser(name, [])  # raises the refusal with its reason (§IV-H1)
        if name not in CHOOSERS:
            raise InputError(f"unknown chooser {name!r}; use one of {', '.join(CHOOSERS)}")
        if name in ("swow", "rsa:swow") and swow is None:
            raise InputError(f"chooser {name} (condition 2/6) needs --swow FILE")
        if name in ("conceptnet", "rsa:conceptnet") and conceptnet is None:
            raise InputError(f"chooser {name} (condition 3/6) needs --conceptnet FILE")


def _model_runs(
    spec: str, options: Mapping[str, object], batch_one: bool, base: SignallingConfig
) -> list[tuple[str, SignallingConfig, dict[str, object]]]:
    """``(directory name, configuration, scorer options)`` of a model spec's run and, with
    ``batch_one``, of its batch-1 rerun; the §I-J chat-template default is applied and
    recorded."""
    model_options = dict(options)
    note: ChatTemplateNote | None = None
    capabilities = capabilities_of(spec)
    # §I-J's scoring environment is that of a causal LM scored by option log-probability, in
    # process or over a server.
    if (
        "chat_template" not in model_options
        and capabilities.chat_template
        and capabilities.reads == "continuations"
    ):
        template, why = default_chat_template(spec)
        if template is not None:
            model_options["chat_template"] = template
        note = {"chat_template": template, "why": why}
    noted = {"chat_template_default"} if note is not None else set()
    name = run_dir_name(spec)
    config = _stored(base, {"model", *noted}, model=spec, chat_template_default=note)
    runs = [(name, config, model_options)]
    if batch_one:
        if capabilities.batch_option is None:
            raise InputError(
                f"--batch-one needs a batched causal LM (a backend with a rows-per-pass "
                f"option, such as hf's max_batch_rows); {spec!r} does not batch rows"
            )
        rerun = replace(
            config,
            model=f"{spec} (batch 1)",
            batch_of=spec,
            batch_rows=1,
            stored_keys=config.stored_keys | {"batch_of", "batch_rows"},
        )
        runs.append((name + "-batch1", rerun, {**model_options, capabilities.batch_option: 1}))
    return runs


def _stored(
    base: SignallingConfig,
    keys: set[str],
    *,
    model: str | None = None,
    chat_template_default: ChatTemplateNote | None = None,
    chooser: str | None = None,
    condition: str | None = None,
    coverage: CoverageRecord | None = None,
) -> SignallingConfig:
    """``base`` with one run's own fields, ``keys`` recorded as stored (what the manifest holds
    and a resume compares: the configuration as if read from the JSON object with them)."""
    return replace(
        base,
        model=model,
        chat_template_default=chat_template_default,
        chooser=chooser,
        condition=condition,
        coverage=coverage,
        stored_keys=base.stored_keys | keys,
    )


def _jobs(
    root: Path,
    frozen: FrozenInstrument,
    base: SignallingConfig,
    queries: Sequence[Query],
    models: Sequence[str | Scorer],
    choosers: Sequence[str],
    *,
    options: Mapping[str, object],
    ray: RaySettings | None,
    processes: ProcessSettings | None,
    batch_one: bool,
    swow: Path | str | None,
    conceptnet: Path | str | None,
    checked: dict[str, tuple[Scorer, CoverageRecord]],
    precision: PrecisionGate | None,
) -> list[RunJob]:
    """One job per model run (and batch-1 rerun), then one per reference chooser."""
    runs: list[tuple[str, SignallingConfig, ScorerOpener]] = []
    for spec in models:
        if isinstance(spec, str):
            for name, config, opts in _model_runs(spec, options, batch_one, base):
                model = model_scorer(spec, opts, ray, processes, precision=precision)
                runs.append((name, config, model))
        else:  # an already-loaded scorer, named by its description
            desc = spec.describe()
            label = str(desc.get("model") or desc.get("name") or type(spec).__name__)
            runs.append((run_dir_name(label), _stored(base, {"model"}, model=label), loaded(spec)))
    for name in choosers:
        # Reference choosers run here even under Ray: they are exact and cheap. A chooser
        # whose coverage was checked is the one already built for the check, and its run
        # records that coverage.
        condition = chooser_condition(name)
        if name in checked:
            built, coverage = checked[name]
            config = _stored(
                base,
                {"chooser", "condition", "coverage"},
                chooser=name,
                condition=condition,
                coverage=coverage,
            )
            runs.append((run_dir_name(name), config, loaded(built)))
            continue
        config = _stored(base, {"chooser", "condition"}, chooser=name, condition=condition)
        chooser = functools.partial(make_chooser, name, frozen, swow=swow, conceptnet=conceptnet)
        runs.append((run_dir_name(name), config, made(chooser)))

    def same_items(store: RunStore) -> None:
        if store.exists() and store.manifest().config.get("items_hash") != frozen.hash:
            raise InstrumentMismatchError(
                f"{store.path} holds a run on other items; choose a new --out"
            )

    def copy_items(directory: Path) -> None:
        frozen.copy_to(directory / "instrument")

    jobs = []
    for name, config, opener in runs:
        label = str(config.model or config.chooser)
        jobs.append(
            RunJob(root / name, label, config, queries, opener, copy_items, before=same_items)
        )
    return jobs


def run_signalling(
    models: Sequence[str | Scorer],
    choosers: Sequence[str],
    *,
    out: Path | str,
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
    scorer_options: Mapping[str, object] | None = None,
    command: Sequence[str] | None = None,
    progress: ProgressCallback | None = None,
    allow_loss: bool = False,
    swow: Path | str | None = None,
    conceptnet: Path | str | None = None,
    ray: RaySettings | None = None,
    batch_one: bool = False,
    allow_partial_coverage: bool = False,
    workers: int | ProcessSettings = 1,
    precision_gate: PrecisionGate | None = DEFAULT_PRECISION_GATE,
) -> list[Path]:
    """Score the frozen renderings with every model (a spec for ``load_scorer``, or a loaded
    scorer) and reference chooser; return the run directories (models first, then choosers, in
    the order given), each ``out/<model or chooser>``. A second call resumes each run. With
    ``ray`` each model spec's chunks are scored on Ray actors, with ``workers`` above one (or
    :class:`~choiceaudit.audit.ProcessSettings`) on worker processes of this machine (a causal LM
    run in process; reference choosers run here: they are exact and cheap). With
    ``batch_one`` every model spec is also scored one query per forward pass
    (its backend's batch option, ``max_batch_rows=1`` for ``hf``) into ``<model>-batch1``; the
    analysis reports the batch-1 flip rate per tile against the batched run (§I-K scores the
    size tile at batch size 1). An association chooser that cannot score every frozen item is
    refused (§I-B) unless ``allow_partial_coverage``, which is recorded in its run with the
    coverage. A model run in a reduced precision (``dtype`` in ``scorer_options``) is first
    gated on a sample of its own queries (``precision_gate``; ``None`` opts out, which is
    recorded): see :class:`~choiceaudit.audit.PrecisionGate`.

    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> [r.name for r in run_signalling(["fake"], ["salience"], out=out, n_items=8, n_candidates=4000)]
    ['fake', 'salience']
    """
    if not models and not choosers:
        raise InputError("give at least one --model or --chooser")
    check_chunk_size(chunk_size)
    if items is None:
        check_counts(n_items, n_candidates)
    _check_choosers(choosers, swow, conceptnet)
    options = dict(scorer_options or {})
    if str(options.get("dtype", "")).lower() in ("bfloat16", "bf16"):
        warnings.warn(BFLOAT16_WARNING, UserWarning, stacklevel=2)
    root = Path(out)
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
    base = SignallingConfig(
        instrument=INSTRUMENT.name,
        items_hash=frozen.hash,
        items_dir=str(frozen.path.resolve()),
        norms=frozen.record.get("norms"),
        seed=frozen.record.get("seed"),
        n_items=len(frozen.items),
        conditions=tuple(conditions),
        formats=tuple(formats),
        label_forms=tuple(label_forms),
        stored_keys=frozenset(_BASE_KEYS),
    )
    queries = INSTRUMENT.plan(
        frozen, conditions=conditions, formats=formats, label_forms=label_forms
    )
    checked = _coverage_checks(
        choosers, frozen, queries, swow, conceptnet, allow=allow_partial_coverage
    )
    jobs = _jobs(
        root,
        frozen,
        base,
        queries,
        models,
        choosers,
        options=options,
        ray=ray,
        processes=ProcessSettings.of(workers),
        batch_one=batch_one,
        swow=swow,
        conceptnet=conceptnet,
        checked=checked,
        precision=precision_gate,
    )
    summaries = run_jobs(jobs, chunk_size=chunk_size, command=command, progress=progress)
    return [summary.path for summary in summaries]
