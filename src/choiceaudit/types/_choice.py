"""The choice itself: what a scorer sees (`Query`), what comes back (`Decision`), the items
instruments build (`Item`, `ItemSet`), and the array aliases every package annotates with.

Every type is a frozen dataclass validated at construction, so a malformed value fails where it
is made, not three stages later in an analysis.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from typing_extensions import TypedDict

from choiceaudit.files import canonical_hash

__all__ = [
    "DEFAULT_TEMPLATE",
    "PROB_TOLERANCE",
    "AnswerFormat",
    "BoolArray",
    "Decision",
    "FloatArray",
    "IntArray",
    "Item",
    "ItemSet",
    "Query",
    "QueryRecord",
    "check_query_meta",
    "format_perm",
    "parse_perm",
    "tied_argmax",
]

#: Σp must equal 1 within this tolerance after the scorer's own normalisation.
PROB_TOLERANCE = 1e-6

#: How a causal LM sees a query when the caller gives no template: the instruction, then the
#: state, then an answer cue; the option (or its key) is the continuation after one space.
DEFAULT_TEMPLATE = "{instruction}\n\n{state}\n\nAnswer:"

AnswerFormat = Literal["text", "key"]

#: The array aliases every package annotates with (one definition, so a dtype change is one edit).
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def format_perm(perm: Sequence[int]) -> str:
    """Permutation as stored: ``"2031"`` means slot 0 shows canonical option 2, slot 1 option 0, …

    Menus longer than ten options use comma separation (``"10,2,…"``) so the string stays
    unambiguous.
    """
    if len(perm) <= 10:
        return "".join(str(i) for i in perm)
    return ",".join(str(i) for i in perm)


def parse_perm(text: str) -> tuple[int, ...]:
    """Inverse of :func:`format_perm`; validates that the result is a permutation."""
    parts = text.split(",") if "," in text else list(text)
    try:
        perm = tuple(int(p) for p in parts)
    except ValueError:
        raise ValueError(f"permutation {text!r} is not a string of option indices") from None
    _check_perm(perm, len(perm))
    return perm


def _check_perm(perm: Sequence[int], n: int) -> None:
    if len(perm) != n or sorted(perm) != list(range(n)):
        raise ValueError(f"permutation {list(perm)} is not a permutation of 0..{n - 1}")


def tied_argmax(values: Sequence[float] | npt.NDArray[Any]) -> tuple[int, ...]:
    """All indices attaining the maximum: exact ties are a set, never broken by array order."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        raise ValueError("argmax of an empty score vector")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"scores must be finite, got {arr.tolist()}")
    top = arr.max()
    return tuple(int(i) for i in np.flatnonzero(arr == top))


def _stable_hash(payload: Mapping[str, Any]) -> str:
    """First 24 hex digits of the sha256 of canonical JSON: identical on any machine."""
    return canonical_hash(payload, length=24)


def _check_gold(meta: Mapping[str, Any] | None, n_options: int) -> None:
    """``meta["gold"]``, where present and not null, is what every gold-labelled analysis reads
    as the canonical index of the correct option, so anything else is refused here, where every
    query (a file line, an import, a run read back, the Python API) is built: a float, a string
    or a boolean would otherwise be coerced or dropped far from its source."""
    if not meta or meta.get("gold") is None:
        return
    gold = meta["gold"]
    if isinstance(gold, bool) or not isinstance(gold, numbers.Integral):
        raise ValueError(
            f"Query.meta.gold must be an integer index of the options (0…{n_options - 1}) "
            f"or null, got {gold!r}"
        )
    if not 0 <= int(gold) < n_options:
        raise ValueError(
            f"Query.meta.gold is {int(gold)}, outside the {n_options} options (0…{n_options - 1})"
        )


def _freeze_meta(meta: Mapping[str, Any] | None, *, finite: bool = False) -> dict[str, Any]:
    """``meta`` as a plain dict of JSON values; with ``finite``, a NaN or infinity anywhere in it
    is refused too (strict JSON has neither, and an analysis reading one would compute with it)."""
    meta = dict(meta or {})
    for key, value in meta.items():
        if not isinstance(key, str):
            raise TypeError(f"meta keys must be strings, got {key!r}")
        try:
            json.dumps(value, allow_nan=not finite)
        except TypeError:
            raise TypeError(f"meta[{key!r}] = {value!r} is not JSON-serialisable") from None
        except ValueError:
            raise ValueError(
                f"Query.meta.{key} holds a non-finite number ({value!r}); meta must be finite JSON"
            ) from None
    return meta


def check_query_meta(meta: Mapping[str, Any], n_options: int) -> None:
    """What building a :class:`Query` of ``n_options`` options checks of its ``meta``: a gold
    that is an index of the options, JSON values, no NaN or infinity (``ValueError`` or
    ``TypeError`` naming the field). For readers that check stored rows without building them."""
    _check_gold(meta, n_options)
    _freeze_meta(meta, finite=True)


class QueryRecord(TypedDict):
    """A :class:`Query` as one line of a JSONL query file (the store's planned queries):
    every field, the permutation as its string form, ``meta`` as the query carries it."""

    id: str
    state: str
    instruction: str
    options: list[str]
    keys: list[str]
    neutral_state: str | None
    template: str
    answer_format: AnswerFormat
    perm: str | None
    meta: Mapping[str, object]


@dataclass(frozen=True)
class Query:
    """What one call to a scorer sees.

    ``options`` are in **display** order and ``keys`` are the labels bound to them (``A``–``D``
    or option names). ``perm`` maps display slots to canonical options: slot ``i`` shows
    canonical option ``perm[i]``. ``neutral_state`` is the same menu with item content stripped
    (for PMI). A causal LM reads ``prompt()`` and scores each of ``continuations()``; a decision
    model receives state, instruction and the keyed options.
    """

    state: str
    options: tuple[str, ...]
    instruction: str = ""
    keys: tuple[str, ...] = ()
    neutral_state: str | None = None
    template: str = DEFAULT_TEMPLATE
    answer_format: AnswerFormat = "text"
    perm: tuple[int, ...] | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    id: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        options = tuple(self.options)
        object.__setattr__(self, "options", options)
        if not isinstance(self.state, str):
            raise TypeError("Query.state must be a string")
        if len(options) == 0:
            raise ValueError("Query.options is empty: a menu needs at least one option")
        for i, text in enumerate(options):
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"Query.options[{i}] is empty")
        if len(set(options)) != len(options):
            dup = sorted({o for o in options if options.count(o) > 1})
            raise ValueError(f"Query.options are not distinct within the query: {dup}")
        keys = tuple(self.keys) if self.keys else _default_keys(len(options))
        object.__setattr__(self, "keys", keys)
        if len(keys) != len(options):
            raise ValueError(f"Query.keys has {len(keys)} labels for {len(options)} options")
        for i, key in enumerate(keys):
            if not isinstance(key, str) or not key.strip():
                raise ValueError(f"Query.keys[{i}] is empty")
        if len(set(keys)) != len(keys):
            raise ValueError(f"Query.keys are not unique: {list(keys)}")
        if self.perm is not None:
            perm = tuple(int(i) for i in self.perm)
            _check_perm(perm, len(options))
            object.__setattr__(self, "perm", perm)
        if self.answer_format not in ("text", "key"):
            raise ValueError(
                f"Query.answer_format must be 'text' or 'key', got {self.answer_format!r}"
            )
        if "{state}" not in self.template:
            raise ValueError("Query.template must contain the {state} field")
        try:
            self.template.format(state="", instruction="")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(
                f"Query.template may use only {{state}} and {{instruction}}: {exc}"
            ) from None
        _check_gold(self.meta, len(options))
        object.__setattr__(self, "meta", _freeze_meta(self.meta, finite=True))
        expected = self.content_hash()
        if self.id and self.id != expected:
            raise ValueError(f"Query.id {self.id!r} does not match its content hash {expected!r}")
        object.__setattr__(self, "id", expected)

    def content_hash(self) -> str:
        """Stable id: sha256 over the content and the meta (item, condition, experiment), so the
        same query gets the same id on any machine and two items never collide in a run."""
        return _stable_hash(
            {
                "state": self.state,
                "instruction": self.instruction,
                "options": list(self.options),
                "keys": list(self.keys),
                "neutral_state": self.neutral_state,
                "template": self.template,
                "answer_format": self.answer_format,
                "perm": list(self.perm) if self.perm is not None else None,
                "meta": dict(self.meta),
            }
        )

    @property
    def n_options(self) -> int:
        return len(self.options)

    def prompt(self, *, neutral: bool = False) -> str:
        """The text a causal LM conditions on (the neutral prompt when ``neutral``)."""
        if neutral:
            if self.neutral_state is None:
                raise ValueError(f"query {self.id} has no neutral_state (needed for PMI)")
            state = self.neutral_state
        else:
            state = self.state
        return self.template.format(state=state, instruction=self.instruction)

    def continuations(self) -> tuple[str, ...]:
        """What follows the prompt for each option: the option text, or its key, after a space."""
        labels = self.options if self.answer_format == "text" else self.keys
        return tuple(" " + label for label in labels)

    def canonical(self, slot: int) -> int:
        """Canonical option shown in display ``slot`` (identity when no permutation is given)."""
        return self.perm[slot] if self.perm is not None else slot

    def to_dict(self) -> QueryRecord:
        return {
            "id": self.id,
            "state": self.state,
            "instruction": self.instruction,
            "options": list(self.options),
            "keys": list(self.keys),
            "neutral_state": self.neutral_state,
            "template": self.template,
            "answer_format": self.answer_format,
            "perm": format_perm(self.perm) if self.perm is not None else None,
            "meta": dict(self.meta),
        }


def _default_keys(n: int) -> tuple[str, ...]:
    if n > 26:
        raise ValueError(f"{n} options need explicit keys (only A–Z are generated)")
    return tuple(chr(ord("A") + i) for i in range(n))


def _as_vector(values: Iterable[float] | npt.NDArray[Any], name: str, n: int) -> FloatArray:
    arr = np.array(values, dtype=np.float64)
    arr.setflags(write=False)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"Decision.{name} has shape {arr.shape}, expected ({n},)")
    return arr


@dataclass(frozen=True)
class Decision:
    """What a scorer returned for one query.

    ``probs`` is over options in display order, finite, non-negative and summing to 1 within
    :data:`PROB_TOLERANCE`. ``scores`` holds raw per-option scores by rule (``sum``, ``mean``,
    ``pmi`` for causal LMs; ``prob`` for decision models). ``aux`` keeps vendor fields such as a
    separate confidence head (``conf_head``).
    """

    query_id: str
    probs: FloatArray
    scores: Mapping[str, FloatArray] = field(default_factory=dict)
    n_tokens: tuple[int, ...] | None = None
    aux: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        probs = np.array(self.probs, dtype=np.float64)
        if probs.ndim != 1 or probs.size == 0:
            raise ValueError(f"Decision.probs for {self.query_id} must be a non-empty vector")
        n = probs.shape[0]
        probs = _as_vector(probs, "probs", n)
        if not np.all(np.isfinite(probs)):
            raise ValueError(f"Decision.probs for {self.query_id} is not finite: {probs.tolist()}")
        if np.any(probs < 0):
            raise ValueError(f"Decision.probs for {self.query_id} has negative entries")
        total = float(probs.sum())
        if not math.isclose(total, 1.0, abs_tol=PROB_TOLERANCE):
            raise ValueError(
                f"Decision.probs for {self.query_id} sums to {total!r}, not 1 within {PROB_TOLERANCE}"
            )
        object.__setattr__(self, "probs", probs)
        scores: dict[str, FloatArray] = {}
        for rule, values in dict(self.scores).items():
            vec = _as_vector(values, f"scores[{rule!r}]", n)
            if np.any(np.isnan(vec)):
                raise ValueError(f"Decision.scores[{rule!r}] for {self.query_id} has NaN")
            scores[rule] = vec
        object.__setattr__(self, "scores", scores)
        if self.n_tokens is not None:
            n_tokens = tuple(int(t) for t in self.n_tokens)
            if len(n_tokens) != n:
                raise ValueError(f"Decision.n_tokens has {len(n_tokens)} entries for {n} options")
            object.__setattr__(self, "n_tokens", n_tokens)
        object.__setattr__(self, "aux", _freeze_meta(self.aux))

    @property
    def n_options(self) -> int:
        return int(self.probs.shape[0])

    def choice(self, rule: str = "probs") -> tuple[int, ...]:
        """Display slots chosen under ``rule`` (``"probs"`` or a key of ``scores``): the tied set."""
        values = self.probs if rule == "probs" else self.scores[rule]
        return tied_argmax(values)

    @classmethod
    def uniform_over(cls, query_id: str, n: int, slots: Iterable[int], **fields: Any) -> Decision:
        """A choice of the tied set ``slots`` of an ``n``-option menu (one slot: a point mass),
        the probability split evenly over it; ``fields`` are the other fields (scores, aux)."""
        chosen = sorted({int(s) for s in slots})
        if not chosen:
            raise ValueError(f"Decision.uniform_over for {query_id}: the tied set is empty")
        probs = np.zeros(n, dtype=np.float64)
        probs[chosen] = 1.0 / len(chosen)
        return cls(query_id, probs, **fields)

    def check_against(self, query: Query) -> None:
        """Fail loudly if this decision does not belong to ``query``."""
        if self.query_id != query.id:
            raise ValueError(f"decision for {self.query_id} returned for query {query.id}")
        if self.n_options != query.n_options:
            raise ValueError(
                f"decision for {query.id} has {self.n_options} probabilities for "
                f"{query.n_options} options"
            )


@dataclass(frozen=True)
class Item:
    """One instrument item in canonical option order (before any permutation)."""

    id: str
    options: tuple[str, ...]
    gold: int | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError("Item.id must be a non-empty string")
        options = tuple(self.options)
        object.__setattr__(self, "options", options)
        if not options:
            raise ValueError(f"Item {self.id} has no options")
        for i, text in enumerate(options):
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"Item {self.id}: option {i} is empty")
        if len(set(options)) != len(options):
            raise ValueError(f"Item {self.id}: options are not distinct")
        if self.gold is not None and not 0 <= self.gold < len(options):
            raise ValueError(f"Item {self.id}: gold index {self.gold} out of range")
        object.__setattr__(self, "meta", _freeze_meta(self.meta))


@dataclass(frozen=True)
class ItemSet:
    """An instrument's items plus the configuration that built them."""

    name: str
    items: tuple[Item, ...]
    config: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        items = tuple(self.items)
        object.__setattr__(self, "items", items)
        seen: set[str] = set()
        for item in items:
            if item.id in seen:
                raise ValueError(f"ItemSet {self.name}: duplicate item id {item.id!r}")
            seen.add(item.id)
        object.__setattr__(self, "config", _freeze_meta(self.config))

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.items)

    def by_id(self, item_id: str) -> Item:
        for item in self.items:
            if item.id == item_id:
                return item
        raise KeyError(item_id)
