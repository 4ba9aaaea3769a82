"""E6, ablating the options (the meaning paper, Appendix C, P; §5.3, §5.5).

The state, the instruction and the gold position are held fixed and every option is rewritten
the same way, under ``d-rand`` (seed 6000):

* ``o0`` the full gloss;
* ``o1`` the first six words (an option of six words or fewer is left as it is, so the
  manipulation is a no-op there, as the paper reports for most Bengali glosses);
* ``o2`` the option's words in a random order, redrawn from the item's generator until the order
  differs from the original (a single-word option, or one whose words are all the same, has no
  other order and stays; an item none of whose options can change is kept with
  ``meta["identity_perturbation"] = True``, excluded from o2's statistics and counted);
* ``o3`` each gloss's counterpart in the other language (corpora with two languages only);
* ``o4`` bare labels by display slot, ``অর্থ 1…4`` / ``meaning 1…4`` in the block's language, the
  semantics-free control of §5.3 (labels follow the slot, not the option, so they carry nothing).

Words are those of :func:`~choiceaudit.instruments.meaning._text.words`: the E6 tokenizer "splits
on punctuation and rejoins on spaces" (Table 11), so punctuation does not survive ``o1``/``o2``.
A transform that makes two options of an item identical skips that item's cell (counted).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from choiceaudit.errors import InputError
from choiceaudit.instruments.meaning._build_report import (
    count_item,
    new_report,
    skip_item,
)
from choiceaudit.instruments.meaning._contract import SEEDS_BN
from choiceaudit.instruments.meaning._corpus import Corpus
from choiceaudit.instruments.meaning._items import (
    ItemBuild,
    as_pools,
    draw_slate,
    indices_of,
    language_of,
    make_query,
    slate_texts,
    state_of,
    view_of,
)
from choiceaudit.instruments.meaning._pools import Pools, View
from choiceaudit.instruments.meaning._text import option_key, words
from choiceaudit.scorers import Embedder
from choiceaudit.types import Query

__all__ = [
    "BARE_LABELS",
    "E6_VARIANTS",
    "MAX_SCRAMBLE_REDRAWS",
    "TRUNCATE_WORDS",
    "bare_labels",
    "build_e6",
    "can_scramble",
    "scramble_words",
    "truncate_words",
]

E6_VARIANTS: tuple[str, ...] = ("o0", "o1", "o2", "o3", "o4")
TRUNCATE_WORDS = 6
#: §5.3: "অর্থ 1–4 for the Bengali arms and meaning 1–4 for the commercial one".
BARE_LABELS: dict[str, str] = {"bn": "অর্থ {n}", "en": "meaning {n}"}


def truncate_words(text: str, n: int = TRUNCATE_WORDS) -> str:
    """``o1``: the first ``n`` words rejoined on spaces; unchanged if it has ``n`` or fewer."""
    toks = words(text)
    return text if len(toks) <= n else " ".join(toks[:n])


#: Redraws of an o2 scramble before falling back to a rotation by one word.
MAX_SCRAMBLE_REDRAWS = 100


def scramble_words(text: str, rng: random.Random) -> str:
    """``o2``: the option's words in an order other than the original, rejoined on spaces.

    Shuffles are drawn from ``rng`` until the word sequence changes (at most
    :data:`MAX_SCRAMBLE_REDRAWS`, then a rotation by one word, which differs whenever two words
    do); an option with no other order (one word, or every word the same) keeps its words."""
    toks = words(text)
    shuffled = list(toks)
    if len(set(toks)) < 2:
        rng.shuffle(shuffled)  # consume the draw as for any option
        return " ".join(toks)
    for _ in range(MAX_SCRAMBLE_REDRAWS):
        rng.shuffle(shuffled)
        if shuffled != toks:
            return " ".join(shuffled)
    return " ".join(toks[1:] + toks[:1])


def can_scramble(text: str) -> bool:
    """Whether ``text`` has a word order other than its own (two different words)."""
    return len(set(words(text))) >= 2


def bare_labels(perm: Sequence[int], language: str) -> list[str]:
    """``o4`` in canonical order: canonical option ``c`` shows the label of its display slot."""
    template = BARE_LABELS[language]
    return [template.format(n=list(perm).index(c) + 1) for c in range(len(perm))]


def build_e6(
    corpus: Corpus | Pools,
    *,
    seed_base: int = SEEDS_BN["e6"],
    family: str = "d-rand",
    variants: Sequence[str] = E6_VARIANTS,
    embed: Embedder | None = None,
    item_ids: Sequence[int] | None = None,
    language: str | None = None,
    block: str | None = None,
) -> ItemBuild:
    """E6: one query per item and option form, all sharing the item's permutation, asked in
    ``language`` (default the corpus language; o3 is then the corpus language's gloss and o4
    the labels of ``language``)."""
    pools = as_pools(corpus, embed)
    unknown = sorted(set(variants) - set(E6_VARIANTS))
    if unknown:
        raise InputError(f"unknown E6 variants {unknown}; known: {list(E6_VARIANTS)}")
    two_languages = pools.corpus.other_language is not None
    view = view_of(pools, language)
    counter: View = "other" if view == "own" else "own"
    views: tuple[View, ...] = (view, counter) if two_languages and "o3" in variants else (view,)
    language = language_of(pools, view)
    report = new_report(pools, [family], seed_base, "e6")
    report["language"] = language
    report["variants"] = {v: 0 for v in variants}
    report["identity_perturbations"] = {"o2": 0}
    report["o2_options_unchangeable"] = 0
    queries: list[Query] = []
    for index in indices_of(pools, item_ids):
        entry = pools.entries[index]
        state = state_of(entry, view)
        # only o3 needs the other language's glosses: an item without one keeps every other
        # form (the paper's E6 has one item count for all five forms) and skips o3, counted
        item_views = views
        if not entry.gold_other:
            if view == "other":  # every form of a block asked in the other language needs it
                skip_item(report, family, "no other-language gloss")
                continue
            item_views = (view,)
        if state is None:
            skip_item(report, family, f"no {language} equivalent idiom")
            continue
        draw = draw_slate(pools, index, seed_base, family, report, views=item_views)
        if draw is None:
            continue
        slate = draw.slates[family]
        full = slate_texts(pools, slate, view)
        scrambled = [scramble_words(t, draw.rng) for t in full]
        changeable = [can_scramble(t) for t in full]
        forms: dict[str, list[str] | None] = {
            "o0": list(full),
            "o1": [truncate_words(t) for t in full],
            "o2": scrambled,
            "o3": list(slate_texts(pools, slate, counter)) if len(item_views) == 2 else None,
            "o4": bare_labels(draw.perm, language),
        }
        for variant in variants:
            canonical = forms[variant]
            if canonical is None:
                reason = "corpus has one language" if len(views) == 1 else "no other-language gloss"
                skip_item(report, family, f"{variant}: {reason}")
                continue
            if len({option_key(t) for t in canonical}) < len(canonical) or not all(canonical):
                skip_item(report, family, f"{variant}: options collide or vanish")
                continue
            identity = variant == "o2" and not any(changeable)
            if variant == "o2":
                report["identity_perturbations"]["o2"] += int(identity)
                report["o2_options_unchangeable"] += sum(not c for c in changeable)
            queries.append(
                make_query(
                    pools,
                    draw,
                    family,
                    state=state,
                    experiment="e6",
                    condition=variant,
                    seed_base=seed_base,
                    canonical=canonical,
                    view=view,
                    block=block,
                    extra={
                        "options_changed": canonical != list(full),
                        "identity_perturbation": identity,
                    },
                )
            )
            report["variants"][variant] += 1
        count_item(report, family, slate.topped_up)
    return ItemBuild(tuple(queries), report)
