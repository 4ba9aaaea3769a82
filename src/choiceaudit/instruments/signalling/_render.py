"""Rendering items as queries (paper §I-G rendering, §I-I response format, §I-H scoring).

* Concepts are bare words (no glosses). The two candidate lists must be disjoint and no listed
  concept name may occur, case-insensitively, inside any option phrase (the leak test); an item
  that violates either is refused here even though generation already excludes it.
* Each item is rendered under its two stored permutations; ``Query.perm`` maps display slots to
  canonical options.
* **Format V** (the measurement format): the menu lists the option texts and the answer repeats
  the option text (``answer_format="text"``: a causal LM scores ``" " + option``). **Format L**:
  options are labelled ``A``, ``B``, … (``label_form="bare"``) or ``(A)``, ``(B)``, …
  (``label_form="paren"``) and the answer is the label (``answer_format="key"``).
* **Condition 4** is the zero-shot instruction; **condition 5** adds exactly one sentence: the
  listener will consider every possible pairing.
* The **neutral prompt** (for PMI, §I-H) is the real menu in the displayed order, with all item
  content (both lists and the target pair) stripped; instruction, tile question and answer cue
  are unchanged, so ``log P(o | prompt) − log P(o | neutral prompt)`` differs only in the item.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from choiceaudit.errors import InputError
from choiceaudit.types import DEFAULT_TEMPLATE, Item, Query, parse_perm

__all__ = [
    "CONDITIONS",
    "FORMATS",
    "INSTRUCTION",
    "LABEL_FORMS",
    "SALIENCE_SENTENCE",
    "Condition",
    "Format",
    "LabelForm",
    "check_item_rendering",
    "render_queries",
    "render_signalling_query",
]

Condition = Literal["4", "5"]
Format = Literal["V", "L"]
LabelForm = Literal["bare", "paren"]
CONDITIONS: tuple[Condition, ...] = ("4", "5")
FORMATS: tuple[Format, ...] = ("V", "L")
LABEL_FORMS: tuple[LabelForm, ...] = ("bare", "paren")

#: Condition 4: the zero-shot task statement.
INSTRUCTION = (
    "You know a secret pair: one Means and one Clue, taken from the two lists below. Another "
    "person sees the same lists but not the pair. You may send them exactly one of the options "
    "shown, and they will use it to work out which pair you have in mind. Choose the option "
    "you send."
)
#: Condition 5 adds this one sentence (§I-K, §IV-G).
SALIENCE_SENTENCE = (
    "The other person will consider every possible pairing of a Means with a Clue, not only "
    "the pair you have in mind."
)


def check_item_rendering(item: Item) -> None:
    """Refuse an item whose lists overlap or whose concept names leak into an option phrase."""
    means, clues = list(item.meta["means"]), list(item.meta["clues"])
    shared = sorted(set(means) & set(clues))
    if shared:
        raise ValueError(f"item {item.id}: Means and Clues lists share {shared}")
    if len(set(means)) != len(means) or len(set(clues)) != len(clues):
        raise ValueError(f"item {item.id}: a concept is listed twice")
    leaks = [(w, o) for w in means + clues for o in item.options if str(w).lower() in o.lower()]
    if leaks:
        raise ValueError(f"item {item.id}: concept names leak into option phrases: {leaks}")


def _keys(n: int, fmt: Format, label_form: LabelForm) -> tuple[str, ...]:
    letters = [chr(ord("A") + i) for i in range(n)]
    if fmt == "L" and label_form == "paren":
        return tuple(f"({x})" for x in letters)
    return tuple(letters)


def _menu(question: str, options: Sequence[str], keys: Sequence[str], fmt: Format) -> str:
    if fmt == "V":
        lines = [f"- {o}" for o in options]
    else:
        lines = [
            f"{k} {o}" if k.startswith("(") else f"{k}. {o}"
            for k, o in zip(keys, options, strict=True)
        ]
    return f"{question}\nOptions:\n" + "\n".join(lines)


def render_signalling_query(
    item: Item,
    *,
    perm_index: int,
    condition: Condition = "4",
    fmt: Format = "V",
    label_form: LabelForm = "bare",
    experiment: str = "signalling",
    template: str = DEFAULT_TEMPLATE,
) -> Query:
    """One rendering of ``item`` under its stored permutation ``perm_index`` (0 or 1)."""
    if condition not in CONDITIONS:
        raise InputError(f"unknown condition {condition!r}; use one of {CONDITIONS}")
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; use one of {FORMATS}")
    if label_form not in LABEL_FORMS:
        raise InputError(f"unknown label form {label_form!r}; use one of {LABEL_FORMS}")
    check_item_rendering(item)
    perms = item.meta["perms"]
    if not 0 <= perm_index < len(perms):
        raise ValueError(
            f"item {item.id} has {len(perms)} stored permutations, not {perm_index + 1}"
        )
    perm = parse_perm(perms[perm_index])
    if len(perm) != len(item.options):
        raise ValueError(f"item {item.id}: permutation {perms[perm_index]} does not fit its menu")
    options = tuple(item.options[p] for p in perm)
    keys = _keys(len(options), fmt, label_form)
    menu = _menu(str(item.meta["question"]), options, keys, fmt)
    m_word, c_word = item.meta["target_words"]
    content = (
        f"Means: {', '.join(item.meta['means'])}\n"
        f"Clues: {', '.join(item.meta['clues'])}\n"
        f"Your pair: Means = {m_word}, Clue = {c_word}"
    )
    instruction = INSTRUCTION if condition == "4" else f"{INSTRUCTION} {SALIENCE_SENTENCE}"
    meta = {
        "item_id": item.id,
        "experiment": experiment,
        "condition": condition,
        "format": fmt,
        "perm_index": perm_index,
        "tile": item.meta["tile"],
    }
    if fmt == "L":
        meta["label_form"] = label_form
    return Query(
        state=f"{content}\n\n{menu}",
        options=options,
        instruction=instruction,
        keys=keys,
        neutral_state=menu,
        template=template,
        answer_format="text" if fmt == "V" else "key",
        perm=perm,
        meta=meta,
    )


def render_queries(
    items: Iterable[Item],
    *,
    conditions: Sequence[Condition] = ("4",),
    formats: Sequence[Format] = ("V",),
    label_forms: Sequence[LabelForm] = ("bare",),
    experiment: str = "signalling",
    template: str = DEFAULT_TEMPLATE,
) -> list[Query]:
    """Every item under both stored permutations, for each condition and format (format L once
    per label form), in item order."""
    out = []
    for item in items:
        for condition in conditions:
            for fmt in formats:
                for label_form in label_forms if fmt == "L" else ("bare",):
                    for perm_index in range(len(item.meta["perms"])):
                        out.append(
                            render_signalling_query(
                                item,
                                perm_index=perm_index,
                                condition=condition,
                                fmt=fmt,
                                label_form=label_form,
                                experiment=experiment,
                                template=template,
                            )
                        )
    return out
