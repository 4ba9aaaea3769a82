"""Items of the meaning-choice task: slates per distractor family, option order, queries.

The task (§4.1): given an idiom, choose its gold figurative meaning from k = 4 options; the
distractor family is the independent variable, and the item, instruction, k and per-item option
order are held fixed across families. Each item is drawn from one generator,
``random.Random(seed_base + int(id))`` (task contract), consumed in a fixed order:

1. the option permutation (``shuffle`` of ``[0, 1, 2, 3]``), so the gold position is uniform and
   identical in every family of an experiment;
2. three random distractors ``R`` (other idioms' figurative glosses, never the item's own gold or
   literal gloss);
3. three surface neighbours ``S`` (topped up from the random pool if short);
4. three semantic neighbours ``M`` (topped up likewise).

Canonical option order (Appendix C): index 0 is the gold gloss. ``d-rand`` = gold + R;
``d-surf`` = gold + S; ``d-sem`` = gold + M; ``d-lit`` replaces the first random distractor with
the expression's own expert literal gloss, so d-rand and d-lit differ in that one option and
the literal sits at canonical index 1; ``d-hard`` = gold + literal + one surface + one semantic
neighbour. Duplicates (by :func:`option_key`) are never drawn, and any family left with fewer
than k distinct options is topped up from the random pool; top-ups are counted per family.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from typing_extensions import TypedDict

from choiceaudit.errors import InputError
from choiceaudit.instruments.meaning._build_report import (
    BuildReport,
    count_item,
    new_report,
    skip_item,
)
from choiceaudit.instruments.meaning._contract import (
    FAMILIES,
    INSTRUCTIONS,
    OPTION_KEYS,
    SEEDS_BN,
    K,
    item_rng,
)
from choiceaudit.instruments.meaning._corpus import Corpus, IdiomEntry
from choiceaudit.instruments.meaning._pools import (
    Pools,
    Taken,
    View,
    gold_text,
    literal_text,
)
from choiceaudit.instruments.meaning._text import option_key
from choiceaudit.scorers import Embedder
from choiceaudit.types import Query, format_perm

__all__ = [
    "LITERAL_FAMILIES",
    "CellExtra",
    "CellMeta",
    "ItemBuild",
    "ItemDraw",
    "Slate",
    "build_ladder",
    "default_block",
    "draw_item",
    "language_of",
    "make_query",
    "render_meaning_query",
    "slate_texts",
    "state_of",
    "view_of",
]

#: Families whose slate carries the expression's own literal gloss (canonical index 1).
LITERAL_FAMILIES = frozenset({"d-lit", "d-hard"})


@dataclass(frozen=True)
class Slate:
    """One item's options under one family, in canonical order, as ``(role, entry index)``
    with role ``gold``, ``literal`` or ``distractor``."""

    family: str
    sources: tuple[tuple[str, int], ...]
    topped_up: int = 0

    @property
    def literal_index(self) -> int | None:
        for i, (role, _) in enumerate(self.sources):
            if role == "literal":
                return i
        return None


@dataclass(frozen=True)
class ItemDraw:
    """Everything drawn for one item under one seed: the permutation and each family's slate.
    ``skipped`` names families the item cannot have (e.g. no literal gloss) with the reason."""

    entry_index: int
    item_id: int
    perm: tuple[int, ...]
    slates: dict[str, Slate]
    skipped: dict[str, str] = field(default_factory=dict)
    #: the item's generator after the draws, for later draws that must follow them (a second
    #: language's permutation in the capture matrix, E3 and E6 perturbations)
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)


def draw_item(
    pools: Pools, index: int, seed_base: int, *, views: Sequence[View] = ("own",)
) -> ItemDraw:
    """Draw the permutation and all five slates of entry ``index`` (see the module docstring).

    ``views`` are the languages every drawn option must exist (and be distinct) in: ``("own",)``
    for a one-language item, ``("own", "other")`` for the two cells of the capture matrix."""
    entry = pools.entries[index]
    rng = item_rng(seed_base, entry.id)
    perm = list(range(K))
    rng.shuffle(perm)
    base = Taken(views)
    for view in views:
        text = gold_text(entry, view)
        if not text:
            raise ValueError(f"item {entry.id} has no gold gloss in view {view!r}")
        base.add_text(view, text)
    has_literal = True
    for view in views:
        lit = literal_text(entry, view)
        gold = gold_text(entry, view)
        if not lit or (gold is not None and option_key(lit) == option_key(gold)):
            has_literal = False
    if has_literal:
        for view in views:
            lit = literal_text(entry, view)
            assert lit is not None
            base.add_text(view, lit)

    def family_draw(pool: Sequence[int] | None) -> tuple[list[int], int, Taken]:
        taken = copy.deepcopy(base)
        picked = pools.draw(rng, pool, K - 1, taken)
        short = K - 1 - len(picked)
        if short:
            picked += pools.draw(rng, None, short, taken)
        return picked, short, taken

    rand, _, _ = family_draw(None)
    if len(rand) < K - 1:
        raise InputError(
            f"corpus {pools.corpus.name} has too few distinct glosses to give item {entry.id} "
            f"{K - 1} distractors"
        )
    surf, surf_short, _ = family_draw(pools.surface(index, views[0]))
    sem_pool = pools.semantic(index) if pools.sem_source != "none" else None
    sem, sem_short, _ = family_draw(sem_pool) if sem_pool is not None else ([], 0, base)

    def slate(family: str, roles: Iterable[tuple[str, int]], topped: int) -> Slate:
        return Slate(family, (("gold", index), *roles), topped)

    slates = {
        "d-rand": slate("d-rand", (("distractor", j) for j in rand), 0),
        "d-surf": slate("d-surf", (("distractor", j) for j in surf), surf_short),
    }
    skipped: dict[str, str] = {}
    if sem_pool is not None:
        slates["d-sem"] = slate("d-sem", (("distractor", j) for j in sem), sem_short)
    else:
        skipped["d-sem"] = "no semantic source"
    if has_literal:
        slates["d-lit"] = slate(
            "d-lit", [("literal", index)] + [("distractor", j) for j in rand[1:]], 0
        )
        hard = copy.deepcopy(base)
        picks: list[int] = []
        topped = 0
        genuine = (surf[: K - 1 - surf_short], sem[: K - 1 - sem_short])
        for group in genuine:  # one surface and one semantic neighbour, never a top-up
            for j in group:
                if hard.take(pools.entries[j]):
                    picks.append(j)
                    break
        if sem_pool is None:
            skipped["d-hard"] = "no semantic source"
        else:
            if len(picks) < 2:
                topped = 2 - len(picks)
                picks += pools.draw(rng, None, topped, hard)
            slates["d-hard"] = slate(
                "d-hard", [("literal", index)] + [("distractor", j) for j in picks], topped
            )
    else:
        skipped["d-lit"] = skipped["d-hard"] = "no distinct literal gloss"
    return ItemDraw(index, entry.id, tuple(perm), slates, skipped, rng)


def slate_texts(pools: Pools, slate: Slate, view: View) -> tuple[str, ...]:
    """The canonical option texts of ``slate`` in language ``view``."""
    out = []
    for role, j in slate.sources:
        entry = pools.entries[j]
        text = literal_text(entry, view) if role == "literal" else gold_text(entry, view)
        if not text:
            raise ValueError(f"item option from entry {entry.id} has no {role} text in {view!r}")
        out.append(text)
    return tuple(out)


class CellExtra(TypedDict, total=False):
    """What an intervention adds to a query's meta: whether the state or the options differ
    from the item's own (E3, E6), whether the variant left them unchanged (an identity
    perturbation, excluded from that variant's statistics) and E7's key binding."""

    state_changed: bool
    identity_perturbation: bool
    options_changed: bool
    key_binding: str


class CellMeta(CellExtra):
    """The meta naming a query's cell (family, condition, experiment, plan block, language,
    seed base), its top-ups and the corpus frequency label; ``render_meaning_query`` adds the
    item id and the gold and literal positions."""

    family: str
    condition: str
    experiment: str
    block: str
    language: str
    seed_base: int
    topped_up: int
    frequency: str | None


def render_meaning_query(
    entry: IdiomEntry,
    canonical: Sequence[str],
    perm: Sequence[int],
    *,
    state: str,
    instruction: str,
    meta: CellMeta,
    literal_index: int | None,
    keys: Sequence[str] | None = None,
) -> Query:
    """A typed choice query: slot ``s`` shows ``canonical[perm[s]]`` under key A–D (or under
    ``keys[s]`` where given: E7's travelling-key arm)."""
    options = tuple(canonical[p] for p in perm)
    full_meta = {
        "item_id": str(entry.id),
        "gold": 0,
        "literal": literal_index,
        "gold_slot": list(perm).index(0),
        "literal_slot": list(perm).index(literal_index) if literal_index is not None else None,
        "perm": format_perm(perm),
        **meta,
    }
    return Query(
        state=state,
        options=options,
        instruction=instruction,
        keys=tuple(keys) if keys is not None else OPTION_KEYS[: len(options)],
        answer_format="key",
        perm=tuple(perm),
        meta=full_meta,
    )


def make_query(
    pools: Pools,
    draw: ItemDraw,
    family: str,
    *,
    state: str,
    experiment: str,
    condition: str,
    seed_base: int,
    view: View = "own",
    perm: Sequence[int] | None = None,
    canonical: Sequence[str] | None = None,
    extra: CellExtra | None = None,
    block: str | None = None,
    keys: Sequence[str] | None = None,
) -> Query:
    """The query of ``draw`` under ``family`` in language ``view``, optionally with another
    permutation or rewritten canonical options (interventions), and meta naming the cell:
    ``block`` is the plan block the query belongs to (default :func:`default_block`), and
    ``keys`` the labels in display order (default A–D by slot)."""
    slate = draw.slates[family]
    language = pools.corpus.language if view == "own" else pools.corpus.other_language
    if language is None or language not in INSTRUCTIONS:
        raise ValueError(f"corpus {pools.corpus.name} has no instruction for view {view!r}")
    entry = pools.entries[draw.entry_index]
    frequency = entry.extra.get("frequency") if entry.extra else None
    return render_meaning_query(
        entry,
        canonical if canonical is not None else slate_texts(pools, slate, view),
        perm if perm is not None else draw.perm,
        state=state,
        instruction=INSTRUCTIONS[language],
        literal_index=slate.literal_index,
        meta={
            "family": family,
            "condition": condition,
            "experiment": experiment,
            "block": block or default_block(experiment, pools, view),
            "language": language,
            "seed_base": seed_base,
            "topped_up": slate.topped_up,
            "frequency": str(frequency) if frequency else None,
            **(extra or {}),
        },
        keys=keys,
    )


def default_block(experiment: str, pools: Pools, view: View) -> str:
    """The block name of an experiment's queries when the plan gives none: the experiment id in
    the corpus language (``e1``), suffixed with the language otherwise (``e1_en``)."""
    if view == "own":
        return experiment
    return f"{experiment}_{pools.corpus.other_language}"


def view_of(pools: Pools, language: str | None) -> View:
    """The view in which a block is asked: ``"own"`` for the corpus language (or ``None``),
    ``"other"`` for the corpus's other language; any other language is an error."""
    if language is None or language == pools.corpus.language:
        return "own"
    if language == pools.corpus.other_language:
        return "other"
    raise InputError(
        f"corpus {pools.corpus.name} has languages {pools.corpus.language!r}"
        + (f" and {pools.corpus.other_language!r}" if pools.corpus.other_language else "")
        + f"; cannot ask a block in {language!r}"
    )


def state_of(entry: IdiomEntry, view: View) -> str | None:
    """The state of an item in ``view``: the expression, or (other language) the annotator's
    first equivalent idiom (Appendix J, asymmetry (i)); ``None`` where the corpus has none."""
    if view == "own":
        return entry.expression
    return entry.equivalents_other[0] if entry.equivalents_other else None


@dataclass(frozen=True)
class ItemBuild:
    """Queries plus a build report (items and top-ups per family, skips with reasons)."""

    queries: tuple[Query, ...]
    report: BuildReport


def build_ladder(
    corpus: Corpus | Pools,
    *,
    families: Sequence[str] = FAMILIES,
    seed_base: int = SEEDS_BN["e1"],
    experiment: str = "e1",
    embed: Embedder | None = None,
    item_ids: Sequence[int] | None = None,
    language: str | None = None,
    block: str | None = None,
) -> ItemBuild:
    """E1, the distractor ladder: one query per item and family, in ``language`` (default the
    corpus language). In the corpus's other language the state is the first equivalent idiom
    and every option that language's gloss (the commercial arm's English ladder, Appendix E);
    items without an equivalent idiom or other-language gloss are skipped and counted."""
    pools = as_pools(corpus, embed)
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        raise InputError(f"unknown distractor families {unknown}; known: {list(FAMILIES)}")
    if pools.sem_source == "none" and {"d-sem", "d-hard"} & set(families):
        pools.semantic(0)  # raises the explanatory error
    view = view_of(pools, language)
    indices = indices_of(pools, item_ids)
    queries: list[Query] = []
    report = new_report(pools, families, seed_base, experiment)
    report["language"] = language_of(pools, view)
    report["block"] = block or default_block(experiment, pools, view)
    for index in indices:
        entry = pools.entries[index]
        state = state_of(entry, view)
        if state is None or not gold_text(entry, view):
            for family in families:
                skip_item(report, family, f"no {report['language']} equivalent idiom or gloss")
            continue
        draw = draw_item(pools, index, seed_base, views=(view,))
        for family in families:
            if family not in draw.slates:
                skip_item(report, family, draw.skipped[family])
                continue
            queries.append(
                make_query(
                    pools,
                    draw,
                    family,
                    state=state,
                    experiment=experiment,
                    condition=family,
                    seed_base=seed_base,
                    view=view,
                    block=block,
                )
            )
            count_item(report, family, draw.slates[family].topped_up)
    return ItemBuild(tuple(queries), report)


def language_of(pools: Pools, view: View) -> str:
    language = pools.corpus.language if view == "own" else pools.corpus.other_language
    assert language is not None
    return language


def as_pools(corpus: Corpus | Pools, embed: Embedder | None = None) -> Pools:
    """``corpus`` as the builders' :class:`Pools`: itself if it is one already, else new pools
    over it (``embed`` for the semantic neighbours)."""
    return corpus if isinstance(corpus, Pools) else Pools(corpus, embed=embed)


def draw_slate(
    pools: Pools,
    index: int,
    seed_base: int,
    family: str,
    report: BuildReport,
    *,
    views: Sequence[View] = ("own",),
) -> ItemDraw | None:
    """:func:`draw_item` for a builder of one family: the draw, or ``None`` (counted in
    ``report`` as a skip with its reason) when the item has no slate under ``family``."""
    draw = draw_item(pools, index, seed_base, views=views)
    if family not in draw.slates:
        skip_item(report, family, draw.skipped.get(family, "no slate"))
        return None
    return draw


def indices_of(pools: Pools, item_ids: Sequence[int] | None) -> list[int]:
    if item_ids is None:
        return list(range(len(pools)))
    missing = [i for i in item_ids if i not in pools.index_of]
    if missing:
        raise ValueError(f"item ids not in corpus {pools.corpus.name}: {missing[:10]}")
    return [pools.index_of[i] for i in item_ids]
