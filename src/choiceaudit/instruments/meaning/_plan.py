"""A meaning run as a list of item builds (blocks): what ``choiceaudit run meaning`` scores.

The default plan is the ladder (E1), the option ablation (E6), the order audit
(E7) and, where the corpus has two languages, the capture matrix. Item samples are drawn once from
``sample_seed`` over ascending ids, so every model given the same plan answers byte-identical
questions and two runs pair row for row. ``n_items=None`` uses every item. The test language is a
dimension of the plan: every block is asked in one language (``languages``), and the paper's three
designs are presets (``design``, :mod:`._designs`) that build one arm's blocks exactly.

A corpus without tags has d-sem and d-hard only when an embedder is given (for example the
MiniLM default of :func:`choiceaudit.scorers.load_embedder`); without one those two families are left out
and the plan's config says so; E2, which the paper runs under d-hard, then runs under d-lit
(the other literal-bearing family).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from choiceaudit.errors import InputError
from choiceaudit.instruments.meaning._build_report import BuildReport
from choiceaudit.instruments.meaning._config import PlanConfig
from choiceaudit.instruments.meaning._contract import (
    FAMILIES,
    MATRIX_SEED,
    SEEDS_BN,
    SEEDS_EN,
    SPLIT_SEED,
)
from choiceaudit.instruments.meaning._corpus import Corpus, LoaderStep
from choiceaudit.instruments.meaning._designs import (
    DESIGNS,
    Block,
    block_items,
    design_blocks,
    item_set,
    sample_ids,
)
from choiceaudit.instruments.meaning._interventions import (
    DEFAULT_E7_KEYS,
    build_e2,
    build_e3,
    build_e4,
    build_e7,
)
from choiceaudit.instruments.meaning._items import ItemBuild, build_ladder
from choiceaudit.instruments.meaning._matrix import build_matrix, capture_pool
from choiceaudit.instruments.meaning._options import build_e6
from choiceaudit.instruments.meaning._pools import Pools
from choiceaudit.instruments.meaning._text import STOPWORDS
from choiceaudit.scorers import Embedder
from choiceaudit.types import Query

__all__ = [
    "DEFAULT_EXPERIMENTS",
    "DESIGNS",
    "EXPERIMENTS",
    "MeaningPlan",
    "loader_steps",
    "plan_meaning",
]

EXPERIMENTS: tuple[str, ...] = ("e1", "e2", "e3", "e4", "e6", "e7", "matrix")
DEFAULT_EXPERIMENTS: tuple[str, ...] = ("e1", "e6", "e7", "matrix")


@dataclass(frozen=True)
class MeaningPlan:
    """Item builds per experiment, in run order, and the configuration that made them."""

    builds: dict[str, ItemBuild]
    config: PlanConfig

    def queries(self) -> list[Query]:
        return [q for build in self.builds.values() for q in build.queries]

    def reports(self) -> dict[str, BuildReport]:
        return {name: build.report for name, build in self.builds.items()}


def plan_meaning(
    corpus: Corpus,
    *,
    experiments: Sequence[str] | None = None,
    n_items: int | None = None,
    n_order_items: int = 50,
    sample_seed: int = 0,
    embed: Embedder | None = None,
    design: str | None = None,
    languages: Sequence[str] | None = None,
    matrix_items: int | None = None,
    order_sample_seed: int | None = None,
    e7_keys: Sequence[str] = DEFAULT_E7_KEYS,
    stopwords: Mapping[str, frozenset[str]] = STOPWORDS,
    split_seed: int = SPLIT_SEED,
) -> MeaningPlan:
    """Build every requested block over the plan's item sets (see the module docstring).

    ``design`` (``laya``, ``lod``, ``jev``) builds that arm's blocks exactly (:data:`DESIGNS`);
    ``experiments`` (default: all of the design's) then selects among them and ``n_items``
    (default: none) samples each block's item set for a quick trial. Without a design
    ``experiments`` defaults to :data:`DEFAULT_EXPERIMENTS`. Without a design, ``n_items`` items are sampled from the corpus
    with ``sample_seed``; ``languages`` (default the corpus language) adds the other language's
    blocks under the contract's English seeds (E1 as ``j2_lit_en`` on pool items and
    ``j3_ceiling_en``, E6 as ``j5_options_en``, E7 as ``j1_order``); E7 asks ``n_order_items``
    drawn at random from the sample with ``order_sample_seed`` (default the E7 seed base), and
    the matrix asks the whole capture pool unless ``matrix_items`` is given. ``e7_keys`` are the
    E7 key bindings (default the paper's slot-bound only; add ``travelling`` for keys that
    move with their options); ``stopwords`` the d-surf content-word rule;
    ``split_seed`` (default the paper's 20261001) is recorded in the config."""
    if experiments is None:
        experiments = EXPERIMENTS if design is not None else DEFAULT_EXPERIMENTS
    unknown = sorted(set(experiments) - set(EXPERIMENTS))
    if unknown:
        raise InputError(f"unknown experiments {unknown}; known: {list(EXPERIMENTS)}")
    _check_counts(n_items=n_items, n_order_items=n_order_items, matrix_items=matrix_items)
    if design is not None and languages is not None:
        # a design is one arm of the paper exactly: its blocks' languages are part of it
        raise InputError(
            f"--design {design} fixes each block's language; leave --languages out (or plan "
            "without a design to choose the languages)",
            field="languages",
        )
    pools = Pools(corpus, embed=embed, stopwords=stopwords)
    families = tuple(FAMILIES)
    left_out: list[str] = []
    if pools.sem_source == "none":
        families = tuple(f for f in FAMILIES if f not in ("d-sem", "d-hard"))
        left_out = ["d-sem", "d-hard"]
    two_languages = corpus.other_language is not None
    if design is not None:
        blocks, ids_of = _design_blocks(
            corpus,
            design,
            experiments,
            n_items=n_items,
            matrix_items=matrix_items,
            sample_seed=sample_seed,
        )
        n_sampled = None
    else:
        blocks, ids_of = _generic_blocks(
            corpus,
            experiments,
            languages=languages,
            n_items=n_items,
            n_order_items=n_order_items,
            sample_seed=sample_seed,
            order_sample_seed=order_sample_seed,
            matrix_items=matrix_items,
        )
        n_sampled = len(sample_ids([e.id for e in corpus.entries], n_items, sample_seed))
    builds: dict[str, ItemBuild] = {}
    skipped: list[str] = []
    for block in blocks:
        if block.experiment in ("e4", "matrix") and not two_languages:
            skipped.append(block.name)
            continue
        builds[block.name] = _build(pools, block, ids_of[block.name], families, e7_keys)
    if design is not None and not any(b.queries for b in builds.values()):
        _refuse_empty_design(corpus, design, blocks, ids_of, skipped)
    config = _plan_config(
        corpus,
        blocks,
        ids_of,
        builds,
        skipped,
        experiments,
        design=design,
        n_sampled=n_sampled,
        sample_seed=sample_seed,
        families=families,
        left_out=left_out,
        sem_source=pools.sem_source,
        e7_keys=e7_keys,
        split_seed=split_seed,
    )
    return MeaningPlan(builds, config)


def _check_counts(*, n_items: int | None, n_order_items: int, matrix_items: int | None) -> None:
    """Item counts are whole numbers of items: a negative one is refused by name (``None``
    asks for every item of the set)."""
    for name, value in (("n_items", n_items), ("matrix_items", matrix_items)):
        if value is not None and value < 1:
            raise InputError(
                f"must be 1 or more, got {value} (None asks for every usable item; the command "
                "line's 0 means that)",
                field=name,
            )
    if n_order_items < 1:
        raise InputError(
            f"must be 1 or more, got {n_order_items} (the items of the 24-ordering audit; "
            "leave e7 out of the experiments to run none)",
            field="n_order_items",
        )


def _refuse_empty_design(
    corpus: Corpus,
    design: str,
    blocks: Sequence[Block],
    ids_of: Mapping[str, Sequence[int]],
    skipped: Sequence[str],
) -> None:
    """A design that plans no row on this corpus is refused with the reason of each block,
    where a plan of zero rows would otherwise be a run that measures nothing."""
    why = []
    for b in blocks:
        if b.name in skipped:
            why.append(f"{b.name} needs a second language")
        elif not ids_of[b.name]:
            why.append(f"{b.name}'s item set {b.items!r} is empty")
    languages = corpus.language + (f" + {corpus.other_language}" if corpus.other_language else "")
    raise InputError(
        f"--design {design} plans no row on corpus {corpus.name} ({languages}): "
        f"{'; '.join(why) or 'no block among the experiments asked'}. The designs are the "
        "paper's arms on the Bagdhara corpus (Bengali with English glosses): --corpus bagdhara "
        "--data FILE",
        field="design",
    )


def _design_blocks(
    corpus: Corpus,
    design: str,
    experiments: Sequence[str],
    *,
    n_items: int | None,
    matrix_items: int | None,
    sample_seed: int,
) -> tuple[list[Block], dict[str, list[int]]]:
    """A design's blocks among ``experiments`` and each block's item ids (the matrix's whole
    pool unless ``matrix_items`` samples it)."""
    blocks = [b for b in design_blocks(design) if b.experiment in experiments]
    ids_of = {
        b.name: block_items(corpus, b, n_items=None if b.experiment == "matrix" else n_items)
        for b in blocks
    }
    if matrix_items is not None:
        for b in blocks:
            if b.experiment == "matrix":
                ids_of[b.name] = sample_ids(ids_of[b.name], matrix_items, sample_seed)
    return blocks, ids_of


def _plan_config(
    corpus: Corpus,
    blocks: Sequence[Block],
    ids_of: Mapping[str, Sequence[int]],
    builds: Mapping[str, ItemBuild],
    skipped: Sequence[str],
    experiments: Sequence[str],
    *,
    design: str | None,
    n_sampled: int | None,
    sample_seed: int,
    families: Sequence[str],
    left_out: Sequence[str],
    sem_source: str,
    e7_keys: Sequence[str],
    split_seed: int,
) -> PlanConfig:
    """The plan's configuration as the run stores it (JSON: read back as a ``MeaningConfig``)."""
    pool_counts = capture_pool(corpus)[1] if corpus.other_language is not None else {}
    return {
        "corpus": corpus.name,
        "corpus_language": corpus.language,
        "other_language": corpus.other_language,
        "design": design,
        "loader": corpus.report.to_dict(),
        "loader_steps": loader_steps(corpus, pool_counts),
        "experiments": sorted(
            {b.experiment for b in blocks if b.name in builds}, key=EXPERIMENTS.index
        ),
        "blocks": [
            {
                "block": b.name,
                "experiment": b.experiment,
                "language": b.language or corpus.language,
                "seed_base": b.seed,
                "item_set": b.items,
                "n_items": len(ids_of[b.name]),
                "families": list(b.families) if b.families else None,
            }
            for b in blocks
            if b.name in builds
        ],
        # experiments needing two languages on a one-language corpus, in the order requested
        "skipped_experiments": [
            e for e in experiments if e in {b.experiment for b in blocks if b.name in skipped}
        ],
        # experiments requested that the design does not run (Appendix R, "Known gaps")
        "not_in_design": [e for e in experiments if e not in {b.experiment for b in blocks}],
        "n_items": n_sampled,
        "n_order_items": next((len(ids_of[b.name]) for b in blocks if b.experiment == "e7"), 0),
        "sample_seed": sample_seed,
        "families": list(families),
        "families_left_out": list(left_out),
        "sem_source": sem_source,
        "e7_keys": list(e7_keys),
        "seeds": {**SEEDS_BN, "matrix": MATRIX_SEED, **SEEDS_EN},
        "split_seed": split_seed,
    }


def loader_steps(corpus: Corpus, pool: Mapping[str, int]) -> list[LoaderStep]:
    """The membership steps from the corpus file to the capture pool, in order, with the count
    after each: the loader's steps (loaded → … → usable) then the pool's
    (English parenthetical → English equivalent → Jaccard < 0.34)."""
    steps: list[LoaderStep] = [{"step": name, "count": n} for name, n in corpus.report.steps]
    names = {
        "with_en_parenthetical": "pool: English parenthetical",
        "with_equivalent": "pool: English equivalent and gold",
        "distinct": "pool: Jaccard < 0.34",
    }
    steps += [{"step": names[k], "count": n} for k, n in pool.items() if k in names]
    return steps


def _generic_blocks(
    corpus: Corpus,
    experiments: Sequence[str],
    *,
    languages: Sequence[str] | None,
    n_items: int | None,
    n_order_items: int,
    sample_seed: int,
    order_sample_seed: int | None,
    matrix_items: int | None,
) -> tuple[list[Block], dict[str, list[int]]]:
    """The blocks of a plan without a design: each experiment over one sample of the corpus."""
    langs = list(languages) if languages else [corpus.language]
    bad = [lang for lang in langs if lang not in (corpus.language, corpus.other_language)]
    if bad:
        raise InputError(
            f"corpus {corpus.name} has no language {bad[0]!r} (it has {corpus.language!r}"
            + (f" and {corpus.other_language!r})" if corpus.other_language else ")")
        )
    items = sample_ids([e.id for e in corpus.entries], n_items, sample_seed)
    english = set(item_set(corpus, "english")) if corpus.other_language else set()
    pool = set(item_set(corpus, "pool")) if corpus.other_language else set()
    order_seed = SEEDS_BN["e7"] if order_sample_seed is None else order_sample_seed
    blocks: list[Block] = []
    ids_of: dict[str, list[int]] = {}

    def add(block: Block, ids: list[int]) -> None:
        blocks.append(block)
        ids_of[block.name] = ids

    home = corpus.language
    for name in experiments:
        if name == "matrix":
            pool_ids = item_set(corpus, "pool") if corpus.other_language else []
            add(
                Block("matrix", "matrix", MATRIX_SEED, "pool"),
                sample_ids(pool_ids, matrix_items, sample_seed),
            )
            continue
        for lang in langs:
            other = lang != home
            if other and name in ("e2", "e3", "e4"):
                continue  # asked in the corpus language only (E4 holds both languages)
            if name == "e7":
                source = [i for i in items if i in english] if other else items
                seed = SEEDS_EN["j1_order"] if other else SEEDS_BN["e7"]
                add(
                    Block("j1_order" if other else "e7", "e7", seed, "sample", language=lang),
                    sample_ids(source, n_order_items, order_seed),
                )
            elif name == "e6":
                source = [i for i in items if i in english] if other else items
                seed = SEEDS_EN["j5_options_en"] if other else SEEDS_BN["e6"]
                add(
                    Block("j5_options_en" if other else "e6", "e6", seed, "sample", language=lang),
                    source,
                )
            elif name == "e1" and other:
                add(
                    Block(
                        "j2_lit_en",
                        "e1",
                        SEEDS_EN["j2_lit_en"],
                        "sample",
                        language=lang,
                        families=("d-rand", "d-lit", "d-hard"),
                    ),
                    [i for i in items if i in pool],
                )
                add(
                    Block(
                        "j3_ceiling_en",
                        "e1",
                        SEEDS_EN["j3_ceiling_en"],
                        "sample",
                        language=lang,
                        families=("d-rand", "d-surf", "d-sem"),
                    ),
                    [i for i in items if i in english],
                )
            else:
                add(
                    Block(
                        name,
                        name,
                        SEEDS_BN[name],
                        "sample",
                        families=FAMILIES if name == "e1" else None,
                    ),
                    items,
                )
    return blocks, ids_of


def _build(
    pools: Pools,
    block: Block,
    ids: list[int],
    families: tuple[str, ...],
    e7_keys: Sequence[str],
) -> ItemBuild:
    """One block's queries (the builders of _items, _interventions, _options, _matrix)."""
    name, lang, seed = block.name, block.language, block.seed
    if block.experiment == "e1":
        wanted = tuple(f for f in (block.families or FAMILIES) if f in families)
        return build_ladder(
            pools, families=wanted, seed_base=seed, item_ids=ids, language=lang, block=name
        )
    if block.experiment == "e2":
        family = "d-hard" if "d-hard" in families else "d-lit"
        return build_e2(pools, family=family, seed_base=seed, item_ids=ids)
    if block.experiment == "e3":
        return build_e3(pools, seed_base=seed, item_ids=ids)
    if block.experiment == "e4":
        return build_e4(pools, seed_base=seed, item_ids=ids)
    if block.experiment == "e6":
        return build_e6(pools, seed_base=seed, item_ids=ids, language=lang, block=name)
    if block.experiment == "e7":
        return build_e7(
            pools, seed_base=seed, item_ids=ids, language=lang, block=name, key_bindings=e7_keys
        )
    return build_matrix(pools, seed_base=seed, item_ids=ids)
