"""One row of a per-item decision file, read and validated: the fields of
:data:`~choiceaudit.audit._decision_files.FIELDS` through a mapping into a :class:`DecisionRow`,
or the reason it cannot be one (``_Unmappable``).

A field's value must have its field's type. In a typed file (JSONL, Parquet) a number field
holds a JSON number, a list field a list, a text field text or an integer (an integer id is its
digits), ``identity_perturbation`` a boolean; a CSV cell is text, and numbers are read from it.
No value is coerced from another type: a boolean is never a number or a slot, an object never a
name, a text never a list. ``--set field=value`` gives a text field one value for every row.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from choiceaudit.audit._decision_files import DecisionMapping, as_list, cell
from choiceaudit.audit._import import _Unmappable
from choiceaudit.errors import InputError
from choiceaudit.types import parse_perm

__all__ = ["SETTABLE", "DecisionRow", "parse_constants", "read_row"]

#: experiments that show one option set under several conditions (its canonical order is shared)
ONE_OPTION_SET = ("e2", "e3", "e7")
#: the family of an experiment's rows where the file gives none (the instrument's own choice)
DEFAULT_FAMILY = {"e2": "d-hard", "e3": "d-lit", "matrix": "d-lit"}
_KEYS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class DecisionRow:
    """One validated row, in display order."""

    item_id: str
    experiment: str
    condition: str
    family: str
    language: str
    block: str
    state: str
    options: tuple[str, ...] | None
    keys: tuple[str, ...]
    raw: np.ndarray
    predicted: str | None
    gold_slot: int
    literal_slot: int | None
    perm: tuple[int, ...] | None
    conf_head: float | None
    frequency: str | None
    identity: bool = False

    @property
    def group(self) -> tuple[str, ...]:
        """The option set this row renders (see the module docstring)."""
        base = (self.item_id, self.experiment, self.block, self.language)
        if self.experiment in ONE_OPTION_SET:
            return base
        return (*base, self.condition)


#: the fields ``--set field=value`` may give as one value for every row (text fields only:
#: a number or a list given on the command line would be a value of another type)
SETTABLE = (
    "experiment",
    "condition",
    "family",
    "language",
    "block",
    "frequency",
    "gold_key",
    "literal_key",
    "predicted_key",
)


def parse_constants(pairs: Sequence[str], mapping: DecisionMapping) -> dict[str, str]:
    """``--set field=value`` pairs as {field: value}: a text field of :data:`SETTABLE`, once,
    and not also mapped to a column (one source per field)."""
    constants: dict[str, str] = {}
    for pair in pairs:
        field, sep, value = pair.partition("=")
        field, value = field.strip(), value.strip()
        if not sep or not field or not value:
            raise InputError(f"give field=value (e.g. experiment=e7), got {pair!r}", field="--set")
        if field not in SETTABLE:
            raise InputError(
                f"{field} cannot be set to one value for every row (settable: "
                f"{', '.join(SETTABLE)})",
                field="--set",
            )
        if field in constants:
            raise InputError(f"{field} is set twice", field="--set")
        if field in mapping:
            raise InputError(
                f"{field} is both mapped to column {mapping[field]!r} and set to {value!r}; "
                "give one of the two",
                field="--set",
            )
        constants[field] = value
    return constants


def _text(
    row: Mapping[str, Any], mapping: DecisionMapping, values: Mapping[str, Any], field: str
) -> str | None:
    value = cell(row, mapping, field)
    if _absent(value):
        return None
    # A text field is text; an integer is taken as its decimal digits (released files number
    # their items), and nothing else is turned into text: an object, a list, a boolean or a
    # fractional number in a text field is a mapping error, not a name.
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise _Unmappable(f"{field} {_shown(value)} is not text")
    text = str(value).strip()
    return values.get(field, {}).get(text, text) if text else None


def _absent(value: Any) -> bool:
    """A cell the row does not fill: missing, or the NaN a Parquet null number reads as."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _shown(value: Any) -> str:
    """A cell's value as an error message shows it (JSON, cut short)."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(value: Any, what: str, *, typed: bool) -> float:
    """A numeric cell: a number in a typed file (JSONL, Parquet, a JSON list in a CSV cell),
    or the text of one in a CSV cell. A boolean is never a number, and a typed file's text is
    not read as one: no value is coerced from another type."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise _Unmappable(f"{what} {_shown(value)} is not a number")
    if isinstance(value, str):
        if typed:
            raise _Unmappable(f"{what} {_shown(value)} is text, not a number")
        try:
            return float(value)
        except ValueError:
            raise _Unmappable(f"{what} {_shown(value)} is not a number") from None
    return float(value)


def _list(value: Any, field: str) -> list[Any] | None:
    """A list cell (a list, a JSON list in a CSV cell, or several columns); ``None`` where the
    row has none. A cell that is there but holds no list is refused, never read as absent."""
    if _absent(value):
        return None
    items = as_list(value)
    if items is None:
        raise _Unmappable(
            f"{field} {_shown(value)} is not a list (a list, a JSON list or one column per slot)"
        )
    return items


def _vector(value: Any, tolerance: float, *, typed: bool) -> np.ndarray:
    items = _list(value, "probs")
    if items is None:
        raise _Unmappable("no probs (a list, a JSON list or one column per slot)")
    # the cells of several CSV columns are text; a JSON list's entries are typed
    text_cells = not typed and not (isinstance(value, str) and value.strip().startswith("["))
    raw = np.array(
        [_number(v, "probs entry", typed=not text_cells) for v in items], dtype=np.float64
    )
    if raw.size < 2:
        raise _Unmappable("probs has fewer than two options")
    if not np.all(np.isfinite(raw)) or np.any(raw < 0) or np.any(raw > 1):
        raise _Unmappable("probs has a value that is not a probability (NaN, < 0 or > 1)")
    total = float(raw.sum())
    if abs(total - 1.0) > tolerance + 1e-12:
        raise _Unmappable(f"probs sums to {total:.6g}, not 1 within the tolerance {tolerance:g}")
    return raw


def _slot(
    key: str | None, position: Any, keys: Sequence[str], base: int, what: str, *, typed: bool
) -> int | None:
    if key is not None:
        if key not in keys:
            raise _Unmappable(f"{what}_key {key!r} is not one of the keys {list(keys)}")
        return list(keys).index(key)
    if _absent(position):
        return None
    number = _number(position, f"{what}_position", typed=typed)
    if number != int(number) or not 0 <= int(number) - base < len(keys):
        raise _Unmappable(
            f"{what}_position {position} is not a slot of {len(keys)} options (base {base})"
        )
    return int(number) - base


def _perm(value: Any, k: int) -> tuple[int, ...] | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise _Unmappable(f"perm {_shown(value)} is not a display order of option indices")
    try:
        items = as_list(value)
        if items is not None:
            if any(isinstance(v, bool) or not isinstance(v, int) for v in items):
                raise ValueError("not integers")
            perm = tuple(items)
        elif isinstance(value, int | str):
            text = str(value).strip()
            perm = parse_perm(text.zfill(k) if text.isdigit() else text)
        else:
            raise ValueError("not a display order")
    except (TypeError, ValueError):
        raise _Unmappable(
            f"perm {_shown(value)} is not a display order of option indices"
        ) from None
    if sorted(perm) != list(range(k)):
        raise _Unmappable(f"perm {_shown(value)} is not a permutation of 0..{k - 1}")
    return perm


def read_row(
    row: Mapping[str, Any],
    mapping: DecisionMapping,
    values: Mapping[str, Any],
    *,
    language: str | None,
    position_base: int,
    sum_tolerance: float,
    typed: bool = True,
    constants: Mapping[str, str] | None = None,
) -> DecisionRow:
    """One file row as a :class:`DecisionRow`, or :class:`_Unmappable` with the reason.
    ``typed``: the row comes from a file whose cells carry types (JSONL, Parquet), where a
    number must be a number; a CSV row's cells are text and numbers are read from it.
    ``constants`` are the fields given one value for every row (``--set``), which any column
    of the same name in the file does not override."""
    if constants:
        row = {**row, **{_constant_column(f): v for f, v in constants.items()}}
        mapping = {**mapping, **{f: _constant_column(f) for f in constants}}

    def text(field: str) -> str | None:
        return _text(row, mapping, values, field)

    item_id, experiment = text("item_id"), text("experiment")
    if item_id is None:
        raise _Unmappable("no item_id")
    if experiment is None:
        raise _Unmappable("no experiment")
    experiment = experiment.lower()
    raw = _vector(cell(row, mapping, "probs"), sum_tolerance, typed=typed)
    k = raw.size
    keys = _texts(cell(row, mapping, "keys"), "keys") or tuple(_KEYS[:k])
    options = _texts(cell(row, mapping, "options"), "options")
    for name, got in (("keys", keys), ("options", options)):
        if got is not None and len(got) != k:
            raise _Unmappable(f"{name} has {len(got)} entries for {k} probabilities")
    gold = _slot(
        text("gold_key"),
        cell(row, mapping, "gold_position"),
        keys,
        position_base,
        "gold",
        typed=typed,
    )
    if gold is None:
        raise _Unmappable("no gold option (gold_key or gold_position)")
    literal = _slot(
        text("literal_key"),
        cell(row, mapping, "literal_position"),
        keys,
        position_base,
        "literal",
        typed=typed,
    )
    if literal == gold:
        raise _Unmappable("the literal option is the gold option")
    predicted = text("predicted_key")
    if predicted is not None and predicted not in keys:
        raise _Unmappable(f"predicted_key {predicted!r} is not one of the keys {list(keys)}")
    family, condition = text("family"), text("condition")
    family = family.lower() if family else None
    condition = condition or family
    if condition is None:
        raise _Unmappable("no condition or family")
    if family is None:
        family = (
            condition.lower() if experiment == "e1" else DEFAULT_FAMILY.get(experiment, "d-rand")
        )
    lang = text("language") or language
    if lang is None:
        raise _Unmappable("no language (map a column or give --language)")
    head = cell(row, mapping, "conf_head")
    head = None if head is None or head == "" else _number(head, "conf_head", typed=typed)
    return DecisionRow(
        item_id=item_id,
        experiment=experiment,
        condition=condition,
        family=family,
        language=lang,
        block=text("block") or experiment,
        state=text("state") or item_id,
        options=options,
        keys=keys,
        raw=raw,
        predicted=predicted,
        gold_slot=gold,
        literal_slot=literal,
        perm=_perm(cell(row, mapping, "perm"), k),
        conf_head=head,
        frequency=text("frequency"),
        identity=_flag(cell(row, mapping, "identity_perturbation"), typed=typed),
    )


def _constant_column(field: str) -> str:
    """The column a ``--set`` value is read from: a name no file's header can hold."""
    return f"\x00set:{field}"


def _texts(value: Any, field: str) -> tuple[str, ...] | None:
    """A list of texts (options, keys): each entry text, or an integer taken as its digits."""
    items = _list(value, field)
    if items is None:
        return None
    for entry in items:
        if isinstance(entry, bool) or not isinstance(entry, str | int):
            raise _Unmappable(f"{field} holds {_shown(entry)}, which is not text")
    return tuple(str(x) for x in items)


def _flag(value: Any, *, typed: bool) -> bool:
    """``identity_perturbation``: a JSON boolean in a typed file; in a CSV cell ``true`` /
    ``false`` / ``1`` / ``0`` (any case); absent is false."""
    if _absent(value):
        return False
    if isinstance(value, bool):
        return value
    if not typed and isinstance(value, str) and value.strip().lower() in FLAG_TEXT:
        return FLAG_TEXT[value.strip().lower()]
    raise _Unmappable(f"identity_perturbation {_shown(value)} is not true or false")


#: the CSV texts of ``identity_perturbation``
FLAG_TEXT = {"true": True, "false": False, "1": True, "0": False}
