"""Interventions on the state and the option order: E2, E3, E4 and E7 (the meaning paper,
Appendix C, M, N, Q, §5.7).

Each holds the option list fixed and varies one thing:

* **E2**, surface invariance (Appendix N): the canonical expression and each annotated alternative
  surface form, under ``d-hard``, with one option list for all of them (condition ``canonical``,
  ``alt1``, ``alt2`` …).
* **E3**, unit integrity (Appendix C, M): expressions of three or more words (the instrument's
  word tokenizer, :func:`~choiceaudit.instruments.meaning._text.words`: runs of letters, digits
  and combining marks, so punctuation is not a word; ``tokenize`` selects another) under
  ``d-lit``; ``v0`` intact, ``v1`` words shuffled, ``v2`` reversed, ``v3`` one word deleted at
  random, ``v4`` one word replaced by a word sampled from another expression, ``v5`` the gold
  carrier sentence. The option list is byte-identical across all six. ``v1`` is redrawn from the
  item's generator until the string differs from ``v0`` (the paper: the shuffle changes the string
  on 99.9% of items); it may still coincide with ``v2`` (the paper reports both rows). Where no
  different string exists (every word the same; a palindromic ``v2``; no other word for ``v4``)
  the row is kept with ``meta["identity_perturbation"] = True`` and the analysis excludes it from
  that variant's statistics, counted. ``meta["state_changed"]`` records whether the string differs.
* **E4**, task language (§5.7, Appendix K): ``d-rand`` asked in the corpus language (the
  expression, its glosses) and in the other (the annotator's nearest equivalent idiom, the other
  language's glosses), both cells from one distractor draw.
* **E7**, order (Appendix Q): one fixed option set under all 4! = 24 orderings, condition
  ``p`` + the permutation string with keys A–D bound to display slots (the paper's E7, which
  moves a gloss and relabels it at once), and ``t`` + the permutation with each option keeping
  its key as it moves (position only; §5.4 names this as the condition the design lacks).

Perturbation draws (E3's shuffle, deletion, substitution) continue the item's own generator after
its slates, so they too are a pure function of (experiment seed, item id).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from choiceaudit.errors import InputError
from choiceaudit.instruments.meaning._build_report import (
    count_item,
    new_report,
    skip_item,
)
from choiceaudit.instruments.meaning._contract import OPTION_KEYS, SEEDS_BN
from choiceaudit.instruments.meaning._corpus import Corpus
from choiceaudit.instruments.meaning._items import (
    ItemBuild,
    as_pools,
    draw_slate,
    indices_of,
    language_of,
    make_query,
    state_of,
    view_of,
)
from choiceaudit.instruments.meaning._matrix import language_cells
from choiceaudit.instruments.meaning._pools import Pools, gold_text
from choiceaudit.instruments.meaning._text import words
from choiceaudit.scorers import Embedder
from choiceaudit.types import Query, format_perm

__all__ = [
    "DEFAULT_E7_KEYS",
    "E3_VARIANTS",
    "E7_CONDITION_PREFIX",
    "E7_KEY_BINDINGS",
    "MAX_SHUFFLE_REDRAWS",
    "E3Draws",
    "build_e2",
    "build_e3",
    "build_e4",
    "build_e7",
    "perturb_state",
    "shuffle_until_changed",
]

E3_VARIANTS: tuple[str, ...] = ("v0", "v1", "v2", "v3", "v4", "v5")
E3_MIN_WORDS = 3
#: Redraws of the v1 shuffle before falling back to a rotation by one word (which differs from
#: the original whenever two words differ).
MAX_SHUFFLE_REDRAWS = 100


def shuffle_until_changed(toks: Sequence[str], rng: random.Random) -> tuple[int, ...]:
    """A word order whose string differs from ``toks``: shuffles of ``range(len(toks))`` drawn from
    ``rng`` until the joined words change (at most :data:`MAX_SHUFFLE_REDRAWS`, then a rotation);
    the identity order only where no other string exists (every word the same)."""
    n = len(toks)
    order = list(range(n))
    if len(set(toks)) < 2:
        rng.shuffle(order)  # consume the draw as for any item, so later draws stay aligned
        return tuple(range(n))
    for _ in range(MAX_SHUFFLE_REDRAWS):
        rng.shuffle(order)
        if [toks[i] for i in order] != list(toks):
            return tuple(order)
    return (*range(1, n), 0)


def build_e2(
    corpus: Corpus | Pools,
    *,
    seed_base: int = SEEDS_BN["e2"],
    family: str = "d-hard",
    embed: Embedder | None = None,
    item_ids: Sequence[int] | None = None,
) -> ItemBuild:
    """E2: items with alternative surface forms; one query per form, one option list per item."""
    pools = as_pools(corpus, embed)
    report = new_report(pools, [family], seed_base, "e2")
    queries: list[Query] = []
    for index in indices_of(pools, item_ids):
        entry = pools.entries[index]
        if not entry.alternatives:
            skip_item(report, family, "no alternative surface form")
            continue
        draw = draw_slate(pools, index, seed_base, family, report)
        if draw is None:
            continue
        forms = [("canonical", entry.expression)] + [
            (f"alt{i}", alt) for i, alt in enumerate(entry.alternatives, start=1)
        ]
        for condition, state in forms:
            queries.append(
                make_query(
                    pools,
                    draw,
                    family,
                    state=state,
                    experiment="e2",
                    condition=condition,
                    seed_base=seed_base,
                )
            )
        count_item(report, family, draw.slates[family].topped_up)
    return ItemBuild(tuple(queries), report)


@dataclass(frozen=True)
class E3Draws:
    """The random choices behind one item's E3 states: a word order for ``v1``, the word
    ``v3`` deletes, and the position and replacement word of ``v4``."""

    shuffle: tuple[int, ...]
    delete: int
    substitute_at: int
    substitute_word: str


def perturb_state(
    expression: str,
    variant: str,
    draws: E3Draws,
    *,
    carrier: str | None,
    tokenize: Callable[[str], list[str]] = words,
) -> str:
    """The E3 state for ``variant`` given pre-drawn choices (see :func:`build_e3`): the
    expression's words (``tokenize``, default the instrument's word tokenizer) rearranged and
    rejoined on single spaces."""
    toks = tokenize(expression)
    if variant == "v0":
        return expression
    if variant == "v1":
        return " ".join(toks[i] for i in draws.shuffle)
    if variant == "v2":
        return " ".join(reversed(toks))
    if variant == "v3":
        return " ".join(t for i, t in enumerate(toks) if i != draws.delete)
    if variant == "v4":
        return " ".join(
            draws.substitute_word if i == draws.substitute_at else t for i, t in enumerate(toks)
        )
    if variant == "v5":
        if carrier is None:
            raise ValueError("v5 needs a carrier sentence")
        return carrier
    raise InputError(f"unknown E3 variant {variant!r}; known: {list(E3_VARIANTS)}")


def build_e3(
    corpus: Corpus | Pools,
    *,
    seed_base: int = SEEDS_BN["e3"],
    family: str = "d-lit",
    variants: Sequence[str] = E3_VARIANTS,
    embed: Embedder | None = None,
    item_ids: Sequence[int] | None = None,
    tokenize: Callable[[str], list[str]] = words,
) -> ItemBuild:
    """E3: perturb expressions of three or more words; the options never change. Words are
    ``tokenize``'s (default :func:`~choiceaudit.instruments.meaning._text.words`, the word
    tokenizer of E6 and the Jaccard: punctuation is not a word; pass ``str.split`` for
    whitespace words)."""
    pools = as_pools(corpus, embed)
    report = new_report(pools, [family], seed_base, "e3")
    report["variants"] = {v: 0 for v in variants}
    report["identity_perturbations"] = {v: 0 for v in variants if v in ("v1", "v2", "v3", "v4")}
    queries: list[Query] = []
    for index in indices_of(pools, item_ids):
        entry = pools.entries[index]
        toks = tokenize(entry.expression)
        if len(toks) < E3_MIN_WORDS:
            skip_item(report, family, f"fewer than {E3_MIN_WORDS} words")
            continue
        draw = draw_slate(pools, index, seed_base, family, report)
        if draw is None:
            continue
        rng = draw.rng
        order = shuffle_until_changed(toks, rng)
        delete = rng.randrange(len(toks))
        pos = rng.randrange(len(toks))
        word = toks[pos]
        for _ in range(20):  # a word from another expression that differs from the one replaced
            other = pools.entries[rng.randrange(len(pools))]
            if other.id != entry.id:
                other_words = tokenize(other.expression)
                word = rng.choice(other_words) if other_words else word
                if word != toks[pos]:
                    break
        draws = E3Draws(tuple(order), delete, pos, word)
        carrier = entry.carriers[0] if entry.carriers else None
        for variant in variants:
            if variant == "v5" and carrier is None:
                skip_item(report, family, "v5: no carrier sentence")
                continue
            state = perturb_state(
                entry.expression, variant, draws, carrier=carrier, tokenize=tokenize
            )
            # the intact words rejoined: a perturbation that only drops punctuation is no change
            identity = variant in ("v1", "v2", "v3", "v4") and state in (
                entry.expression,
                " ".join(toks),
            )
            if identity:
                report["identity_perturbations"][variant] += 1
            queries.append(
                make_query(
                    pools,
                    draw,
                    family,
                    state=state,
                    experiment="e3",
                    condition=variant,
                    seed_base=seed_base,
                    extra={
                        "state_changed": state != entry.expression,
                        "identity_perturbation": identity,
                    },
                )
            )
            report["variants"][variant] += 1
        count_item(report, family, draw.slates[family].topped_up)
    return ItemBuild(tuple(queries), report)


def build_e4(
    corpus: Corpus | Pools,
    *,
    seed_base: int = SEEDS_BN["e4"],
    family: str = "d-rand",
    embed: Embedder | None = None,
    item_ids: Sequence[int] | None = None,
) -> ItemBuild:
    """E4: one item asked in both languages from one distractor draw.

    The other-language cell's state is the first annotated equivalent idiom
    (``similar_in_english``), not a translation (Appendix J, asymmetry (i)); its permutation is
    drawn from the same generator after the corpus-language one, so the two are independent."""
    pools = as_pools(corpus, embed)
    if pools.corpus.other_language is None:
        raise InputError(f"corpus {pools.corpus.name} has one language; E4 needs two")
    report = new_report(pools, [family], seed_base, "e4")
    queries: list[Query] = []
    for index in indices_of(pools, item_ids):
        entry = pools.entries[index]
        if not entry.equivalents_other or not entry.gold_other:
            skip_item(report, family, "no other-language equivalent or gloss")
            continue
        draw = draw_slate(pools, index, seed_base, family, report, views=("own", "other"))
        if draw is None:
            continue
        perm_other = list(draw.perm)
        draw.rng.shuffle(perm_other)
        queries += language_cells(
            pools, draw, family, perm_other, experiment="e4", seed_base=seed_base
        )
        count_item(report, family, draw.slates[family].topped_up)
    return ItemBuild(tuple(queries), report)


#: E7's key bindings: ``slot`` binds A–D to display slots (the paper's E7: a moved gloss changes
#: its letter), ``travelling`` keeps each option's key (the one it has in the item's own order)
#: with the option wherever it is shown, so only position changes.
E7_KEY_BINDINGS: tuple[str, ...] = ("slot", "travelling")
#: the bindings a plan asks unless told otherwise: the paper's E7 only (slot-bound), so a design
#: pays the paper's calls (Appendix R: 300 × 24 = 7,200 for the commercial arm)
DEFAULT_E7_KEYS: tuple[str, ...] = ("slot",)
#: condition prefix of each binding: ``p0123`` (slot-bound), ``t0123`` (travelling keys)
E7_CONDITION_PREFIX = {"slot": "p", "travelling": "t"}


def build_e7(
    corpus: Corpus | Pools,
    *,
    seed_base: int = SEEDS_BN["e7"],
    family: str = "d-rand",
    embed: Embedder | None = None,
    item_ids: Sequence[int] | None = None,
    language: str | None = None,
    block: str | None = None,
    key_bindings: Sequence[str] = DEFAULT_E7_KEYS,
) -> ItemBuild:
    """E7: every item's fixed option set under all 24 orderings (lexicographic order), once per
    key binding in ``key_bindings`` (see :data:`E7_KEY_BINDINGS`), in ``language``."""
    pools = as_pools(corpus, embed)
    unknown = sorted(set(key_bindings) - set(E7_KEY_BINDINGS))
    if unknown or not key_bindings:
        raise InputError(f"unknown E7 key bindings {unknown}; known: {list(E7_KEY_BINDINGS)}")
    view = view_of(pools, language)
    report = new_report(pools, [family], seed_base, "e7")
    report["language"] = language_of(pools, view)
    report["key_bindings"] = list(key_bindings)
    queries: list[Query] = []
    for index in indices_of(pools, item_ids):
        entry = pools.entries[index]
        state = state_of(entry, view)
        if state is None or not gold_text(entry, view):
            skip_item(report, family, f"no {report['language']} equivalent idiom or gloss")
            continue
        draw = draw_slate(pools, index, seed_base, family, report, views=(view,))
        if draw is None:
            continue
        k = len(draw.slates[family].sources)
        own_key = {c: OPTION_KEYS[draw.perm.index(c)] for c in range(k)}
        for binding in key_bindings:
            for perm in itertools.permutations(range(k)):
                keys = [own_key[c] for c in perm] if binding == "travelling" else None
                queries.append(
                    make_query(
                        pools,
                        draw,
                        family,
                        state=state,
                        experiment="e7",
                        condition=E7_CONDITION_PREFIX[binding] + format_perm(perm),
                        seed_base=seed_base,
                        perm=perm,
                        view=view,
                        block=block,
                        keys=keys,
                        extra={"key_binding": binding},
                    )
                )
        count_item(report, family, draw.slates[family].topped_up)
    return ItemBuild(tuple(queries), report)
