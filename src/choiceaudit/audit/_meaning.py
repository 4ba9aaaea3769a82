"""The meaning-choice instrument (arXiv 2610.22526) run on models: one resumable run directory
per model, all answering byte-identical questions.

:func:`run_meaning` loads the corpus, builds the plan once, turns it into the queries each
backend reads (:func:`queries_for`) and scores them with each model into
``<out>/meaning-<model>``, with the plan's queries beside the decisions (``queries.jsonl``). The
run's ``config`` (in its manifest) holds the plan configuration, the loader report, the
per-experiment build reports and the embedder used for d-sem / d-hard, so a report can say what
was drawn and what was skipped. A second call with the same arguments resumes each run and
scores nothing already done.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

from choiceaudit.audit._backend import ProcessSettings, RaySettings
from choiceaudit.audit._precision_gate import DEFAULT_PRECISION_GATE, PrecisionGate
from choiceaudit.audit._runs import RunJob, model_scorer, run_jobs
from choiceaudit.audit._scoring import check_chunk_size
from choiceaudit.errors import InputError
from choiceaudit.instruments.meaning import (
    INSTRUMENT,
    Corpus,
    MeaningConfig,
    MeaningPlan,
    load_bagdhara,
    load_idioms_en,
)
from choiceaudit.scorers import BUILTIN_MODELS, Embedder, capabilities_of, load_embedder
from choiceaudit.store import QUERIES, RunStore
from choiceaudit.types import Query

__all__ = [
    "DEFAULT_MEANING_EXPERIMENTS",
    "DEFAULT_MEANING_ITEMS",
    "QUERIES_FILE",
    "build_meaning_plan",
    "default_n_items",
    "load_meaning_corpus",
    "meaning_run_dir",
    "queries_for",
    "record_choice_check",
    "resolve_embedder",
    "run_meaning",
]

#: Every experiment; e4 and the capture matrix need a two-language corpus and are skipped
#: (with the reason in the run's config) on one-language corpora such as idioms-en.
DEFAULT_MEANING_EXPERIMENTS: tuple[str, ...] = ("e1", "e2", "e3", "e4", "e6", "e7", "matrix")

#: The plan's queries, written into every run directory (so ``<out>/*`` is a list of runs).
QUERIES_FILE = QUERIES

ProgressCallback = Callable[[str, int, int], None]


def load_meaning_corpus(spec: str) -> Corpus:
    """``idioms-en`` (the englishidioms package) or ``bagdhara:<path>`` (JSONL or CSV)."""
    if spec == "idioms-en":
        return load_idioms_en()
    if spec.startswith("idioms-en:"):
        return load_idioms_en(spec.partition(":")[2])
    if spec.startswith("bagdhara:") and spec.partition(":")[2]:
        return load_bagdhara(spec.partition(":")[2])
    raise InputError(f"unknown corpus {spec!r}; use idioms-en or bagdhara:<path to .jsonl/.csv>")


def resolve_embedder(name: str) -> tuple[Embedder | None, str]:
    """The embedder for d-sem / d-hard on untagged corpora: ``minilm``, ``none`` or ``auto``
    (minilm when its packages are installed, else none). Returns it and the name recorded."""
    if name not in ("auto", "minilm", "none"):
        raise InputError(f"unknown embedder {name!r}; use auto, minilm or none")
    if name == "none":
        return None, "none"
    if name == "auto" and BUILTIN_MODELS["minilm"].missing():
        return None, "none"
    return load_embedder("minilm"), "minilm"


def meaning_run_dir(out_root: Path | str, model: str) -> Path:
    """``out_root/meaning-<model>`` (the instrument's prefix and the one naming rule,
    :func:`choiceaudit.instruments.run_dir_name`)."""
    return INSTRUMENT.run_dir(out_root, model)


def _stored_config(record: Mapping[str, object]) -> MeaningConfig:
    """``record`` (the plan's configuration and what the run adds) read back as the
    :class:`MeaningConfig` the store will write: the store compares a resumed run's config with
    the stored JSON, so it is the JSON's round trip (tuples become lists)."""
    return MeaningConfig.from_json(json.loads(json.dumps(record, default=str)))


def queries_for(model: str, queries: Sequence[Query]) -> list[Query]:
    """The plan's queries as ``model`` reads them.

    What a backend reads is its declared capability (``scorers.capabilities_of``). Decision
    models (and ``lm-choice``) read the keyed A–D menu. A causal LM scored by option
    log-probability (``smollm2``, ``gemma3-270m``, ``hf:…``, and the same models behind a server,
    ``openai:…``) has no menu to read, so each gloss is scored independently as the continuation
    after the idiom (``answer_format="text"``); the permutation and meta are unchanged, so the
    rows pair with the other arms by item.
    """
    if capabilities_of(model).reads == "menu":
        return list(queries)
    return [dataclasses.replace(q, answer_format="text", id="") for q in queries]


#: Items a meaning plan without a design samples from the corpus when not told otherwise.
DEFAULT_MEANING_ITEMS = 100


def default_n_items(design: str | None) -> int | None:
    """The item count a plan uses when none is given, for the library and the command line
    alike: :data:`DEFAULT_MEANING_ITEMS` sampled from the corpus, or with a ``design`` the
    design's full item sets (``None``), since a design is one arm of the paper exactly."""
    return None if design is not None else DEFAULT_MEANING_ITEMS


def build_meaning_plan(
    corpus: str | Corpus = "idioms-en",
    *,
    experiments: Sequence[str] = DEFAULT_MEANING_EXPERIMENTS,
    n_items: int | None = None,
    n_order_items: int = 20,
    embedder: str = "auto",
    design: str | None = None,
    languages: Sequence[str] | None = None,
    matrix_items: int | None = None,
    e7_keys: Sequence[str] = ("slot",),
    split_seed: int | None = None,
) -> tuple[Corpus, MeaningPlan, str]:
    """The corpus, the plan :func:`run_meaning` scores (and ``--dry-run`` counts), and the
    embedder's recorded name; the arguments are :func:`run_meaning`'s: ``n_items`` ``None``
    is :func:`default_n_items` (100 items, or with a design its full item sets), 0 every usable
    item, as on the command line; ``matrix_items`` 0 or ``None`` the whole capture pool."""
    # checked before the corpus and the embedder load, so a bad count costs nothing
    for name, value in (("n_items", n_items), ("matrix_items", matrix_items)):
        if value is not None and value < 0:
            raise InputError(f"must be 0 (every usable item) or more, got {value}", field=name)
    if n_order_items < 1:
        raise InputError(
            f"must be 1 or more, got {n_order_items} (the items of the 24-ordering audit; "
            "leave e7 out of the experiments to run none)",
            field="n_order_items",
        )
    n_items = default_n_items(design) if n_items is None else (n_items or None)
    matrix_items = matrix_items or None
    loaded = load_meaning_corpus(corpus) if isinstance(corpus, str) else corpus
    embed, embedder_name = resolve_embedder(embedder)
    build = partial(
        INSTRUMENT.plan,
        loaded,
        experiments=experiments,
        n_items=n_items,
        n_order_items=n_order_items,
        embed=embed,
        design=design,
        languages=languages,
        matrix_items=matrix_items,
        e7_keys=e7_keys,
    )
    # without a seed the plan draws with the instrument's own contract seed
    plan = build() if split_seed is None else build(split_seed=split_seed)
    return loaded, plan, embedder_name


def run_meaning(
    models: Sequence[str],
    *,
    out: Path | str,
    corpus: str | Corpus = "idioms-en",
    experiments: Sequence[str] = DEFAULT_MEANING_EXPERIMENTS,
    n_items: int | None = None,
    n_order_items: int = 20,
    embedder: str = "auto",
    scorer_options: Mapping[str, Mapping[str, object]] | None = None,
    chunk_size: int = 32,
    progress: ProgressCallback | None = None,
    command: Sequence[str] | None = None,
    design: str | None = None,
    languages: Sequence[str] | None = None,
    matrix_items: int | None = None,
    e7_keys: Sequence[str] = ("slot",),
    ray: RaySettings | None = None,
    split_seed: int | None = None,
    workers: int | ProcessSettings = 1,
    precision_gate: PrecisionGate | None = DEFAULT_PRECISION_GATE,
) -> list[Path]:
    """Score the meaning plan with every model; return the run directories, in model order.

    ``corpus`` is a spec for :func:`load_meaning_corpus` or a loaded :class:`Corpus`;
    ``scorer_options`` maps a model spec to its scorer's keyword options;
    ``progress(model, done, total)`` is called after each written part. ``design`` (``laya``,
    ``lod``, ``jev``) builds that arm of the paper exactly. ``n_items``: ``None`` (the default)
    samples 100 items without a design and asks a design's full item sets, as the command line
    does (:func:`default_n_items`); 0 asks every usable item; a number samples that many (each
    block of a design, for a trial); ``languages`` adds the other
    language's blocks to a plan without a design; the capture matrix asks its whole pool unless
    ``matrix_items`` is given; E7 asks the slot-bound keys unless ``e7_keys`` says otherwise.
    After scoring, every run's manifest records ``choice_not_argmax_rows``: rows whose returned
    ``choice`` is not the argmax of the returned probabilities. With ``ray`` each model's chunks
    are scored on Ray actors (:class:`~choiceaudit.audit.RaySettings`), with ``workers`` above
    one (or :class:`~choiceaudit.audit.ProcessSettings`) on worker processes of this machine
    (for a causal LM run in process); the parts are written here. Each model's run directory is
    ``out/meaning-<model>``. A model run in a reduced precision (``dtype`` in its options) is
    first gated on a sample of its own queries (``precision_gate``; ``None`` opts out, which is
    recorded): see :class:`~choiceaudit.audit.PrecisionGate`.

    >>> import pathlib, tempfile
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> runs = run_meaning(["fake"], out=tmp, experiments=["e1"], n_items=4, embedder="none")
    >>> [run.name for run in runs]
    ['meaning-fake']
    """
    out_root = Path(out)
    processes = ProcessSettings.of(workers)
    if not models:
        raise InputError("run_meaning needs at least one model")
    check_chunk_size(chunk_size)
    loaded, plan, embedder_name = build_meaning_plan(
        corpus,
        experiments=experiments,
        n_items=n_items,
        n_order_items=n_order_items,
        embedder=embedder,
        design=design,
        languages=languages,
        matrix_items=matrix_items,
        e7_keys=e7_keys,
        split_seed=split_seed,
    )
    queries: list[Query] = plan.queries()
    if not queries:
        raise InputError(f"the plan over corpus {loaded.name} has no queries")
    config = _stored_config(
        {
            "instrument": INSTRUMENT.name,
            **plan.config,
            "corpus_spec": corpus if isinstance(corpus, str) else loaded.name,
            "embedder": embedder_name,
            "n_queries": len(queries),
            "build_reports": plan.reports(),
        }
    )
    jobs = []
    for model in models:
        model_queries = queries_for(model, queries)
        options = (scorer_options or {}).get(model, {})
        jobs.append(
            RunJob(
                path=meaning_run_dir(out_root, model),
                label=model,
                config=config,
                queries=model_queries,
                scorer=model_scorer(model, options, ray, processes, precision=precision_gate),
                on_accepted=_plan_writer(model_queries),
                after=record_choice_check,
            )
        )
    summaries = run_jobs(jobs, chunk_size=chunk_size, command=command, progress=progress)
    return [summary.path for summary in summaries]


def _plan_writer(queries: Sequence[Query]) -> Callable[[Path], None]:
    def write(directory: Path) -> None:
        RunStore(directory).write_planned_queries(queries)

    return write


def record_choice_check(store: RunStore) -> int:
    """Count, over every stored row, decisions whose returned ``choice`` (``aux``
    ``reported_choice`` / ``choice_key``) is not in the tied argmax of the returned vector
    (``scores["prob"]``, else ``probs``), and write it to the manifest as
    ``choice_not_argmax_rows`` (with ``rows_with_choice``), under the run's lock."""
    with store.lock():
        run = store.load(allow_empty=True)
        with_choice = 0
        bad = 0
        for row in run.rows:
            decision, query = row.decision, row.query
            choice = decision.aux.get("reported_choice", decision.aux.get("choice_key"))
            if choice is None or choice not in query.keys:
                continue
            with_choice += 1
            vector = decision.scores.get("prob", decision.probs)
            slot = list(query.keys).index(choice)
            if vector[slot] < vector.max():
                bad += 1
        manifest = replace(
            store.manifest(), rows_with_choice=with_choice, choice_not_argmax_rows=bad
        )
        store.write_manifest(manifest)
    return bad
