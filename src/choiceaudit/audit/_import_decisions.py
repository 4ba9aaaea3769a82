"""``choiceaudit import decisions``: anyone's per-item outputs as a run of an instrument.

:func:`import_decisions` reads CSV, JSONL or Parquet files with one row per item per condition
(columns named by a mapping, ``_decision_files``), validates every row before anything is
analysed, and writes the valid ones as an ordinary run directory through the scoring loop (a
replay scorer hands back the decisions). ``instrument="meaning"`` makes a meaning arm: ``report``
gives it every analysis its rows support and pairs it, by item, with runs the tool produced;
``instrument="scoring"`` a plain scoring run (accuracy, calibration, order audit).

Validation, per row (a row that fails is not imported; its file, row and reason are recorded in
the manifest, ``unmappable_listed``, every one of them, and counted by reason):

* the vector: one finite value in [0, 1] per option, summing to 1 within ``sum_tolerance``
  (default 0.02: four options rounded to two decimals). It is kept **as returned**
  (``scores["prob"]``, which the meaning analysis reads) and renormalised only for
  ``Decision.probs``;
* the gold (``gold_key`` or ``gold_position``) and literal option: a key among the row's keys or
  a slot in range, distinct from each other; the predicted key among the keys;
* the display order (``perm``): a permutation of the option indices;
* the canonical order: every rendering of one option set (one item's rows of one experiment and
  block, and for the experiments that change the option list — E1's families, E4 and the
  matrix's languages, E6's forms — of one condition) must put the gold, and the literal, at the
  same canonical index, and show the same text under each canonical index where texts are given.

Relabelling: the instrument's analyses read the gold at canonical index 0 and the literal at 1,
so each option set's canonical order is relabelled consistently — gold → 0, literal → 1, the
other options after them in their original canonical order — on every one of its renderings.
Choices, vectors and display order are unchanged; only the names of canonical options move, so
no number an analysis computes changes, and rows from a file whose canonical order keeps the gold
elsewhere (at 2, say) are analysed as they should be. Without a ``perm`` column, the first
rendering of an option set read fixes its canonical order by option text (E2, E3, E7, where one
set is shown several times) or the display order is the canonical order (one rendering).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from choiceaudit.audit._decision_files import (
    FIELDS,
    DecisionMapping,
    as_list,
    cell,
    iter_rows,
    load_mapping,
)
from choiceaudit.audit._import import (
    FileRecord,
    ImportResult,
    RefusedRow,
    _Collector,
    _expand,
    _Unmappable,
    _write,
)
from choiceaudit.errors import InputError
from choiceaudit.instruments.meaning import MeaningConfig
from choiceaudit.instruments.scoring import ScoreConfig
from choiceaudit.types import Decision, Query, format_perm, parse_perm

#: the order statistics' default sum tolerance (``choiceaudit.stats``: four options rounded
#: to two decimals)
RETURNED_SUM_TOLERANCE = 0.02

__all__ = ["DECISION_INSTRUMENTS", "import_decisions"]

#: what ``--instrument`` accepts
DECISION_INSTRUMENTS = ("meaning", "scoring", "signalling")
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
SETTABLE = ("experiment", "condition", "family", "language", "block", "frequency", "gold_key",
            "literal_key", "predicted_key")  # fmt: skip


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


def _text(row: Mapping[str, Any], mapping: DecisionMapping, values: Mapping[str, Any],
          field: str) -> str | None:  # fmt: skip
    value = cell(row, mapping, field)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    # A text field is text; an integer is taken as its decimal digits (released files number
    # their items), and nothing else is turned into text: an object, a list, a boolean or a
    # fractional number in a text field is a mapping error, not a name.
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise _Unmappable(f"{field} {_shown(value)} is not text")
    text = str(value).strip()
    return values.get(field, {}).get(text, text) if text else None


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
    if value is None or (isinstance(value, float) and math.isnan(value)):
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
    raw = np.array([_number(v, "probs entry", typed=not text_cells) for v in items],
                   dtype=np.float64)  # fmt: skip
    if raw.size < 2:
        raise _Unmappable("probs has fewer than two options")
    if not np.all(np.isfinite(raw)) or np.any(raw < 0) or np.any(raw > 1):
        raise _Unmappable("probs has a value that is not a probability (NaN, < 0 or > 1)")
    total = float(raw.sum())
    if abs(total - 1.0) > tolerance + 1e-12:
        raise _Unmappable(f"probs sums to {total:.6g}, not 1 within the tolerance {tolerance:g}")
    return raw


def _slot(key: str | None, position: Any, keys: Sequence[str], base: int, what: str,
          *, typed: bool) -> int | None:  # fmt: skip
    if key is not None:
        if key not in keys:
            raise _Unmappable(f"{what}_key {key!r} is not one of the keys {list(keys)}")
        return list(keys).index(key)
    if position is None or (isinstance(position, float) and math.isnan(position)):
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
        raise _Unmappable(f"perm {_shown(value)} is not a display order of option indices") from None
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
    gold = _slot(text("gold_key"), cell(row, mapping, "gold_position"), keys, position_base,
                 "gold", typed=typed)  # fmt: skip
    if gold is None:
        raise _Unmappable("no gold option (gold_key or gold_position)")
    literal = _slot(text("literal_key"), cell(row, mapping, "literal_position"), keys,
                    position_base, "literal", typed=typed)  # fmt: skip
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
        item_id=item_id, experiment=experiment, condition=condition, family=family,
        language=lang, block=text("block") or experiment, state=text("state") or item_id,
        options=options, keys=keys, raw=raw, predicted=predicted, gold_slot=gold,
        literal_slot=literal, perm=_perm(cell(row, mapping, "perm"), k),
        conf_head=head, frequency=text("frequency"),
        identity=_flag(cell(row, mapping, "identity_perturbation"), typed=typed),
    )  # fmt: skip


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
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    if isinstance(value, bool):
        return value
    if not typed and isinstance(value, str) and value.strip().lower() in FLAG_TEXT:
        return FLAG_TEXT[value.strip().lower()]
    raise _Unmappable(f"identity_perturbation {_shown(value)} is not true or false")


#: the CSV texts of ``identity_perturbation``
FLAG_TEXT = {"true": True, "false": False, "1": True, "0": False}


@dataclass
class _Every(_Collector):
    """The import collector, keeping every refused row (the manifest lists them all)."""

    all_refused: list[RefusedRow] = field(default_factory=list)

    def refuse(self, file: str, row: int | str, reason: str) -> None:
        super().refuse(file, row, reason)
        self.all_refused.append({"file": file, "row": row, "reason": reason})


class Canonicaliser:
    """Each option set's canonical order, fixed by its first rendering read, and the relabelling
    that puts gold at 0 and the literal at 1 (see the module docstring)."""

    def __init__(self) -> None:
        self._first: dict[tuple[str, ...], tuple[int, int | None, tuple[str, ...] | None]] = {}

    def perm_of(self, row: DecisionRow) -> tuple[int, ...]:
        """The row's display order in the relabelled canonical order."""
        k = row.raw.size
        perm = row.perm
        texts = None
        first = self._first.get(row.group)
        if perm is None and row.options is not None and first is not None and first[2]:
            canonical = first[2]
            if sorted(canonical) != sorted(row.options):
                raise _Unmappable(
                    f"item {row.item_id}: its options differ from its first rendering"
                )
            perm = tuple(canonical.index(o) for o in row.options)
        perm = perm or tuple(range(k))
        if row.options is not None:
            inverse = sorted(range(k), key=lambda s: perm[s])
            texts = tuple(row.options[s] for s in inverse)  # canonical order
        gold, literal = perm[row.gold_slot], None
        if row.literal_slot is not None:
            literal = perm[row.literal_slot]
        if first is None:
            self._first[row.group] = (gold, literal, texts)
        else:
            if (gold, literal) != first[:2]:
                raise _Unmappable(
                    f"item {row.item_id}: gold / literal at canonical {gold} / {literal} here but "
                    f"{first[0]} / {first[1]} on its first rendering (one option set, one order)"
                )
            if texts is not None and first[2] is not None and texts != first[2]:
                raise _Unmappable(
                    f"item {row.item_id}: a canonical index shows another text than on its first "
                    "rendering (the display order does not match the options)"
                )
        order = [gold] + ([literal] if literal is not None else [])
        order += [c for c in range(k) if c not in order]
        new = {old: i for i, old in enumerate(order)}
        return tuple(new[c] for c in perm)


def _meaning_pair(row: DecisionRow, perm: tuple[int, ...]) -> tuple[Query, Decision]:
    literal = None if row.literal_slot is None else 1
    options = row.options or tuple(f"option {perm[s]}" for s in range(len(perm)))
    meta = {
        "item_id": row.item_id, "gold": 0, "literal": literal, "gold_slot": row.gold_slot,
        "literal_slot": row.literal_slot, "perm": format_perm(perm), "family": row.family,
        "condition": row.condition, "experiment": row.experiment, "block": row.block,
        "language": row.language, "frequency": row.frequency, "imported": True,
    }  # fmt: skip
    if row.identity:
        meta["identity_perturbation"] = True
    query = Query(state=row.state, options=options, keys=row.keys, answer_format="key",
                  perm=perm, meta=meta)  # fmt: skip
    return query, _decision(query, row)


def _scoring_pair(row: DecisionRow, perm: tuple[int, ...]) -> tuple[Query, Decision]:
    options = row.options or tuple(f"option {perm[s]}" for s in range(len(perm)))
    meta = {"item_id": f"{row.experiment}:{row.item_id}", "gold": 0, "task": row.experiment,
            "condition": row.condition, "language": row.language}  # fmt: skip
    query = Query(state=row.state, options=options, keys=row.keys, answer_format="key",
                  template="{state}", perm=perm, meta=meta)  # fmt: skip
    return query, _decision(query, row)


def _decision(query: Query, row: DecisionRow) -> Decision:
    aux: dict[str, str | float] = {"confidence_source": "imported probability vector"}
    if row.predicted is not None:
        aux["reported_choice"] = row.predicted
    if row.conf_head is not None:
        aux["conf_head"] = row.conf_head
    # a vector the Decision contract accepts as it is (Σ within 1e-6) is kept bit for bit, so an
    # exported run re-imports to the same numbers; only a vector further off is renormalised
    total = float(row.raw.sum())
    probs = row.raw.copy() if abs(total - 1.0) <= 1e-6 else row.raw / total
    return Decision(query_id=query.id, probs=probs, scores={"prob": row.raw.copy()}, aux=aux)


def check_sum_tolerance(tolerance: float) -> None:
    """Refuse a sum tolerance that would switch the check off or make it refuse everything:
    NaN (every comparison with it is false), infinite, or negative."""
    if not math.isfinite(tolerance) or tolerance < 0:
        raise InputError(
            f"must be a finite number of at least 0, got {tolerance!r}; the default "
            f"{RETURNED_SUM_TOLERANCE:g} accepts four options rounded to two decimals",
            field="--sum-tolerance",
        )


def import_decisions(
    files: Sequence[Path | str],
    out: Path | str,
    *,
    instrument: str = "meaning",
    mapping: Sequence[str] = (),
    mapping_file: Path | str | None = None,
    constants: Sequence[str] = (),
    model: str | None = None,
    language: str | None = None,
    corpus_language: str | None = None,
    position_base: int = 0,
    sum_tolerance: float = RETURNED_SUM_TOLERANCE,
    command: Sequence[str] | None = None,
    items: Path | str | None = None,
    chooser: str | None = None,
) -> ImportResult:
    """Import per-item decision files into the run directory ``out`` as a run of
    ``instrument`` (see the module docstring). ``mapping`` holds ``field=column`` pairs,
    ``mapping_file`` a TOML/JSON mapping, ``constants`` ``field=value`` pairs giving a text
    field one value for every row (a released file with no experiment column:
    ``experiment=e7``; recorded in the run's configuration as ``set_fields``); ``language`` is the rows' test language where no
    column gives it; ``corpus_language`` the language the meaning analysis files E4 and the
    matrix under (default: that of their first row). A signalling import
    (``_signalling_import``) is checked against and analysed on the frozen item directory
    ``items``, as a model arm or, with ``chooser``, a reference chooser's released outputs."""
    if instrument not in DECISION_INSTRUMENTS:
        raise InputError(f"--instrument {instrument!r}: use {' or '.join(DECISION_INSTRUMENTS)}")
    check_sum_tolerance(sum_tolerance)
    if instrument == "signalling" and constants:
        raise InputError("--set is for --instrument meaning or scoring", field="--set")
    if instrument == "signalling":
        # imported here: the signalling import builds on this module's row collector
        from choiceaudit.audit._signalling_import import import_signalling_decisions

        return import_signalling_decisions(
            files, out, items=items, mapping=mapping, mapping_file=mapping_file, model=model,
            chooser=chooser, sum_tolerance=sum_tolerance, command=command,
        )  # fmt: skip
    if items is not None or chooser is not None:
        raise InputError("--items and --chooser are for --instrument signalling")
    if position_base not in (0, 1):
        raise InputError(f"--position-base {position_base}: use 0 or 1")
    columns, values = load_mapping(mapping, mapping_file)
    fixed = parse_constants(constants, columns)
    paths = _expand(files, ["*.csv", "*.jsonl", "*.parquet"])
    collector = _Every(f"decisions:{instrument}")
    canon = Canonicaliser()
    pair = _meaning_pair if instrument == "meaning" else _scoring_pair
    seen: set[str] = set()
    for path in paths:
        for number, row in iter_rows(path):
            try:
                if isinstance(row, str):
                    raise _Unmappable(row)
                seen.update(row)
                parsed = read_row(row, columns, values, language=language,
                                  position_base=position_base, sum_tolerance=sum_tolerance,
                                  typed=path.suffix.lower() != ".csv",
                                  constants=fixed)  # fmt: skip
                collector.add(str(path), number, *pair(parsed, canon.perm_of(parsed)))
            except _Unmappable as exc:
                collector.refuse(str(path), number, str(exc))
            except InputError:  # a refusal of the whole import, not of this row
                raise
            except ValueError as exc:  # a Query or Decision refused the mapped values
                collector.refuse(str(path), number, f"not a valid query ({exc})")
    used = {c for v in columns.values() for c in (v if isinstance(v, list) else [v])}
    used |= {f for f in FIELDS if f not in columns and f not in fixed}
    for name in sorted(seen - used):
        collector.unmapped_field(name)
    extra: dict[str, object] = {
        "decision_fields": dict(FIELDS),
        "value_renames": values,
        "set_fields": fixed,
        "sum_tolerance": sum_tolerance,
        "position_base": position_base,
        "unmappable_listed": [dict(r) for r in collector.all_refused],
        "files": [{"path": str(p), **f} for p, f in zip(paths, _file_records(paths), strict=True)],
    }
    if instrument == "meaning":
        extra.update({"instrument": "meaning", "design": None, "corpus_language": corpus_language,
                      "n_queries": len(collector.rows)})  # fmt: skip
    recorded = {**{f: f for f in FIELDS}, **columns}
    return _write(
        collector,
        out,
        model=model or paths[0].stem,
        version=None,
        files=paths,
        mapping={f: ",".join(c) if isinstance(c, list) else c for f, c in recorded.items()},
        extra=extra,
        command=command,
        config_type=MeaningConfig if instrument == "meaning" else ScoreConfig,
    )


def _file_records(paths: Sequence[Path]) -> list[FileRecord]:
    from choiceaudit.files import sha256_file

    return [{"name": p.name, "sha256": sha256_file(p)} for p in paths]
