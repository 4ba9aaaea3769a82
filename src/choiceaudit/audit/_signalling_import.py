"""``choiceaudit import decisions --instrument signalling``: released per-item signalling outputs
as a signalling arm on a frozen item set.

A signalling run is only analysed against the item set it rendered, so an import names that set
(``items``: a frozen item directory) and every row must be one of its renderings. What
identifies an item is its frozen content: its id (``items.parquet``'s ``id``), its tile, the
concept ids of its Means and Clues lists (``means_ids``, ``clues_ids``, as ``candidates.parquet``
stores them) and its option ids ``<tile>:<canonical index>``. A row names its item by id; where
it also carries the concept ids they must equal the frozen item's, and every option it names
(an option id, a canonical index or an option text) must be one of that item's options. A row
whose item, options, display order or rendering is not the frozen set's is refused with its
reason and listed in the manifest; it is never analysed.

Per row (one row per item per rendering): the prompt condition (4 or 5), the format (V or L;
format L's label form), the display order (``display_order``: the options in the order shown,
or ``perm_index``: which of the item's two stored permutations), and the choice, as a
probability vector (``probs``, in ``option_order``, the display order by default) and/or the
chosen option or tied set (``chosen``). The display order must be one of the item's two stored
permutations: the instrument's consistency is defined on exactly those two renderings.

The vector is reordered into display order and kept bit for bit where it sums to 1 within
1e-6 (else renormalised, within ``sum_tolerance``). Exactly equal maxima are a tied set, scored
by split credit as §I-H scores every tie. A ``chosen`` option given with a vector must be among
the vector's maxima (a producer's tie-break of a tied set is accepted and recorded as the
reported choice; the analysis scores the whole tied set); without a vector the chosen set is
the choice. Rule scores (``score_pmi``, ``score_sum``, ``score_mean``) make the arm a model arm
with those rules, like a causal LM run.

The run written is an ordinary signalling run (``config["instrument"] = "signalling"``, the item
set's hash, a copy of the item directory in ``<run>/instrument``), with the import's record:
the files' sha256, the mapping, and every refused row with its file, row and reason.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from choiceaudit.audit._decision_files import (
    DecisionMapping,
    as_list,
    cell,
    iter_rows,
    load_mapping,
)
from choiceaudit.audit._import import (
    ImportResult,
    Mapped,
    ReplayDescription,
    _Collector,
    _expand,
    _Unmappable,
)
from choiceaudit.audit._import_write import (
    Ledger,
    Reader,
    check_rows,
    import_result,
    write_import,
)
from choiceaudit.audit._signalling import CHOOSERS
from choiceaudit.errors import InputError
from choiceaudit.files import sha256_file
from choiceaudit.instruments.signalling import (
    INSTRUMENT,
    FrozenInstrument,
    SignallingConfig,
    load_instrument,
)
from choiceaudit.instruments.signalling.choosers import chooser_condition
from choiceaudit.types import Decision, FloatArray, Item, Query, parse_perm

__all__ = ["SIGNALLING_FIELDS", "import_signalling_decisions"]

#: Every field a signalling decision row can carry, with what it means (recorded in the run).
SIGNALLING_FIELDS: dict[str, str] = {
    "item_id": "the frozen item's id (items.parquet `id`)",
    "condition": "the rendering's prompt condition: 4 (zero-shot) or 5 (with the salience "
    "sentence)",
    "format": "V (the answer is the option text) or L (the answer is a label)",
    "label_form": "format L's labels: bare (A) or paren ((A)); needed for format L rows",
    "display_order": "the options in the order shown (option ids <tile>:<k>, canonical "
    "indices or option texts; a list, one column per slot, or a digit string such as 2031)",
    "perm_index": "which of the item's two stored permutations was shown (0 or 1); instead of "
    "display_order",
    "option_order": "the order of the probs and score entries (as display_order); default "
    "the display order",
    "probs": "the probability vector over the options (a list, or one column per option)",
    "chosen": "the chosen option (option id, canonical index, option text or display key), or "
    "a list of them (a tied set)",
    "score_pmi": "PMI scores per option, in option_order (a model arm's rule)",
    "score_sum": "summed log-probability per option, in option_order",
    "score_mean": "per-token mean log-probability per option, in option_order",
    "covered": "false where the chooser could not score the rendering (coverage); default true",
    "means_ids": "the concept ids of the Means list (checked against the frozen item)",
    "clues_ids": "the concept ids of the Clues list (checked against the frozen item)",
}
SCORE_FIELDS = {"score_pmi": "pmi", "score_sum": "sum", "score_mean": "mean"}
#: what a rendering's coordinates are keyed by: item, condition, format, label form, perm index
RenderingKey = tuple[str, str, str, str, int]


@dataclass(frozen=True)
class _Renderings:
    """The frozen item set's items and every rendering, keyed by what a row names."""

    frozen: FrozenInstrument
    items: Mapping[str, Item]
    by_key: Mapping[RenderingKey, Query]
    order: Mapping[str, int]

    @classmethod
    def of(cls, frozen: FrozenInstrument) -> _Renderings:
        queries = frozen.render()
        by_key = {}
        for q in queries:
            m = q.meta
            form = str(m.get("label_form", "bare"))
            key = (
                str(m["item_id"]),
                str(m["condition"]),
                str(m["format"]),
                form,
                int(m["perm_index"]),
            )
            by_key[key] = q
        items = {item.id: item for item in frozen.items}
        return cls(frozen, items, by_key, {q.id: n for n, q in enumerate(queries)})


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


def _text(
    row: Mapping[str, Any], mapping: DecisionMapping, values: Mapping[str, Any], field: str
) -> str | None:
    value = cell(row, mapping, field)
    if _blank(value):
        return None
    text = str(value).strip()
    if isinstance(value, float) and value.is_integer():
        text = str(int(value))
    return values.get(field, {}).get(text, text) if text else None


def _option_ids(item: Item) -> list[str]:
    return [f"{item.meta['tile']}:{k}" for k in range(len(item.options))]


def _option_index(
    token: Any, item: Item, keys: Sequence[str] = (), perm: Sequence[int] = ()
) -> int:
    """The canonical index of an option named by id, text, display key or canonical index."""
    k = len(item.options)
    if isinstance(token, str):
        text = token.strip()
        ids = _option_ids(item)
        if text in ids:
            return ids.index(text)
        if text in item.options:
            return item.options.index(text)
        if text in keys:
            return perm[list(keys).index(text)]
        if not text.isdigit():
            raise _Unmappable(
                f"option {token!r} is not an option of item {item.id} (an option id such as "
                f"{ids[0]}, a canonical index, an option text or a display key)"
            )
        token = int(text)
    if isinstance(token, float) and token.is_integer():
        token = int(token)
    if isinstance(token, bool) or not isinstance(token, int | np.integer) or not 0 <= token < k:
        raise _Unmappable(f"option {token!r} is not a canonical index of item {item.id}'s {k}")
    return int(token)


def _order(value: Any, item: Item, field: str) -> tuple[int, ...]:
    """A list of options (or a digit string) as canonical indices, a permutation of them."""
    items = as_list(value)
    if items is None and isinstance(value, str) and value.strip()[:1].isdigit():
        try:
            items = list(parse_perm(value.strip()))
        except ValueError:
            items = None
    if items is None:
        raise _Unmappable(f"{field} {value!r} is not a list of options")
    order = tuple(_option_index(t, item) for t in items)
    if sorted(order) != list(range(len(item.options))):
        raise _Unmappable(
            f"{field} {value!r} does not list each of item {item.id}'s "
            f"{len(item.options)} options once"
        )
    return order


def _numbers(value: Any, k: int, field: str) -> FloatArray:
    items = as_list(value)
    if items is None:
        raise _Unmappable(f"{field} is not a list of numbers (a list, a JSON list or columns)")
    try:
        out = np.array([float(v) for v in items], dtype=np.float64)
    except (TypeError, ValueError):
        raise _Unmappable(f"{field} holds a value that is not a number") from None
    if out.size != k:
        raise _Unmappable(f"{field} has {out.size} entries for the item's {k} options")
    if not np.all(np.isfinite(out)):
        raise _Unmappable(f"{field} has a value that is not finite")
    return out


def _probs(value: Any, k: int, tolerance: float) -> FloatArray:
    raw = _numbers(value, k, "probs")
    if np.any(raw < 0) or np.any(raw > 1):
        raise _Unmappable("probs has a value that is not a probability (< 0 or > 1)")
    total = float(raw.sum())
    if abs(total - 1.0) > tolerance + 1e-12:
        raise _Unmappable(f"probs sums to {total:.6g}, not 1 within the tolerance {tolerance:g}")
    # a vector the Decision contract accepts as it is is kept bit for bit (an exported run
    # re-imports to the same numbers); only a vector further off is renormalised
    return raw if abs(total - 1.0) <= 1e-6 else raw / total


def _check_concepts(row: Mapping[str, Any], mapping: DecisionMapping, item: Item) -> None:
    for field in ("means_ids", "clues_ids"):
        value = cell(row, mapping, field)
        if _blank(value):
            continue
        given = [str(x) for x in (as_list(value) or [value])]
        frozen = [str(x) for x in item.meta.get(field, [])]
        if given != frozen:
            raise _Unmappable(
                f"{field} {given} is not item {item.id}'s {frozen} (another item under this id)"
            )


def _rendering(
    row: Mapping[str, Any], mapping: DecisionMapping, values: Mapping[str, Any], sets: _Renderings
) -> tuple[Item, Query]:
    """The frozen item and rendering a row names, or the reason it names none."""

    def text(field: str) -> str | None:
        return _text(row, mapping, values, field)

    item_id = text("item_id")
    if item_id is None:
        raise _Unmappable("no item_id")
    item = sets.items.get(item_id)
    if item is None:
        raise _Unmappable(f"item {item_id} is not in the frozen item set {sets.frozen.path}")
    _check_concepts(row, mapping, item)
    condition, fmt = text("condition"), text("format")
    if condition not in ("4", "5"):
        raise _Unmappable(f"condition {condition!r} is not 4 or 5")
    fmt = None if fmt is None else fmt.upper()
    if fmt not in ("V", "L"):
        raise _Unmappable(f"format {fmt!r} is not V or L")
    form = text("label_form") if fmt == "L" else "bare"
    if form not in ("bare", "paren"):
        raise _Unmappable(f"label_form {form!r} is not bare or paren (format L)")
    stored = [parse_perm(p) for p in item.meta["perms"]]
    display, index = cell(row, mapping, "display_order"), text("perm_index")
    if not _blank(display):
        perm = _order(display, item, "display_order")
        if perm not in stored:
            raise _Unmappable(
                f"display order {list(perm)} is not one of item {item_id}'s stored permutations "
                f"{[list(p) for p in stored]} (the frozen renderings)"
            )
        if index is not None and index != str(stored.index(perm)):
            raise _Unmappable(f"perm_index {index} does not show the display order {list(perm)}")
        perm_index = stored.index(perm)
    elif index in [str(i) for i in range(len(stored))]:
        perm_index = int(index)
    else:
        raise _Unmappable(f"no display order (display_order, or perm_index 0/1; got {index!r})")
    query = sets.by_key.get((item_id, condition, fmt, form, perm_index))
    if query is None:
        raise _Unmappable(
            f"condition {condition}, format {fmt} ({form}) is not in the frozen rendering"
        )
    return item, query


def _decision(
    row: Mapping[str, Any],
    mapping: DecisionMapping,
    values: Mapping[str, Any],
    item: Item,
    query: Query,
    tolerance: float,
) -> Decision:
    """The row's choice as a decision in the rendering's display order."""
    k = query.n_options
    perm = query.perm if query.perm is not None else tuple(range(k))
    given = cell(row, mapping, "option_order")
    order = perm if _blank(given) else _order(given, item, "option_order")
    to_slot = [order.index(perm[s]) for s in range(k)]  # display slot -> entry of the file's
    probs_cell, chosen_cell = cell(row, mapping, "probs"), cell(row, mapping, "chosen")
    chosen: tuple[int, ...] | None = None
    if not _blank(chosen_cell):
        tokens = as_list(chosen_cell) or [chosen_cell]
        canonical = {_option_index(t, item, query.keys, perm) for t in tokens}
        chosen = tuple(sorted(perm.index(c) for c in canonical))
    scores = {}
    for field, rule in SCORE_FIELDS.items():
        value = cell(row, mapping, field)
        if not _blank(value):
            scores[rule] = _numbers(value, k, field)[to_slot]
    covered = _text(row, mapping, values, "covered")
    aux: dict[str, str | bool | list[str]] = {"confidence_source": "imported signalling decision"}
    if covered is not None:
        if covered.lower() not in ("true", "false", "1", "0"):
            raise _Unmappable(f"covered {covered!r} is not true or false")
        aux["covered"] = covered.lower() in ("true", "1")
    if _blank(probs_cell):
        if chosen is None:
            raise _Unmappable("neither probs nor chosen: the row holds no choice")
        return Decision.uniform_over(query.id, k, chosen, scores=scores, aux=aux)
    probs = _probs(probs_cell, k, tolerance)[to_slot]
    if chosen is not None:
        top = set(np.flatnonzero(probs == probs.max()).tolist())
        if not set(chosen) <= top:
            raise _Unmappable("chosen is not among the maxima of probs (the two disagree)")
        aux["reported_choice"] = [query.keys[s] for s in chosen]
    return Decision(query_id=query.id, probs=probs, scores=scores, aux=aux)


def import_signalling_decisions(
    files: Sequence[Path | str],
    out: Path | str,
    *,
    items: Path | str | None,
    mapping: Sequence[str] = (),
    mapping_file: Path | str | None = None,
    model: str | None = None,
    chooser: str | None = None,
    sum_tolerance: float = 0.02,
    command: Sequence[str] | None = None,
) -> ImportResult:
    """Import per-item signalling decision files into the run directory ``out`` as a
    signalling arm on the frozen item set ``items`` (see the module docstring): a model arm
    named ``model`` (default the first file's stem), or with ``chooser`` the released outputs
    of that reference chooser (its §I-K condition labels the arm)."""
    if items is None:
        raise InputError(
            "--items ITEMS is needed: a signalling import is checked against, and analysed on, "
            "the frozen item set its rows were rendered from"
        )
    if chooser is not None and model is not None:
        raise InputError("give --model or --chooser for a signalling import, not both")
    if chooser is not None and chooser not in CHOOSERS:
        raise InputError(f"--chooser {chooser!r}: use one of {', '.join(CHOOSERS)}")
    columns, values = load_mapping(mapping, mapping_file, fields=SIGNALLING_FIELDS)
    paths = _expand(files, ["*.csv", "*.jsonl", "*.parquet"])
    sets = _Renderings.of(load_instrument(items))
    seen_fields: set[str] = set()
    grid: dict[str, set[str]] = {"conditions": set(), "formats": set(), "label_forms": set()}

    def one(row: Mapping[str, Any] | str) -> tuple[Query, Decision]:
        if isinstance(row, str):
            raise _Unmappable(row)
        seen_fields.update(row)
        item, query = _rendering(row, columns, values, sets)
        return query, _decision(row, columns, values, item, query, sum_tolerance)

    def read(collector: _Collector) -> Iterator[Mapped]:
        for path in paths:
            for number, row in iter_rows(path):
                mapped = collector.mapped_or_refused(
                    str(path), number, partial(one, row), what="decision"
                )
                if mapped is None:
                    continue
                query, decision = mapped
                meta = query.meta
                grid["conditions"].add(str(meta["condition"]))
                grid["formats"].add(str(meta["format"]))
                if "label_form" in meta:
                    grid["label_forms"].add(str(meta["label_form"]))
                # one row per rendering: a repeat is dropped and counted, a contradiction
                # stops the import naming both rows
                yield Mapped(str(path), number, query, decision)

    collector = _Collector("decisions:signalling", spool=True)
    # the run keeps the frozen rendering order, whatever order the file has
    ledger = check_rows(read, collector, order=lambda query: sets.order[query.id])
    used = {c for v in columns.values() for c in (v if isinstance(v, list) else [v])}
    used |= {f for f in SIGNALLING_FIELDS if f not in columns}
    for name in sorted(seen_fields - used):
        collector.unmapped_field(name)
    label = chooser or model or paths[0].stem
    config = _config(
        sets.frozen, collector, grid, label, chooser, paths, columns, values, sum_tolerance
    )
    return _write(read, collector, ledger, out, config, sets.frozen, label, command)


def _config(
    frozen: FrozenInstrument,
    collector: _Collector,
    seen: Mapping[str, set[str]],
    label: str,
    chooser: str | None,
    paths: Sequence[Path],
    columns: DecisionMapping,
    values: Mapping[str, Any],
    sum_tolerance: float,
) -> SignallingConfig:
    grid = {
        "conditions": sorted(seen["conditions"]),
        "formats": sorted(seen["formats"]),
        "label_forms": sorted(seen["label_forms"]) or ["bare"],
    }
    who: dict[str, str] = {"model": label}
    if chooser is not None:
        who = {"chooser": chooser, "condition": chooser_condition(chooser)}
    recorded = {**{f: f for f in SIGNALLING_FIELDS}, **columns}
    return SignallingConfig.from_json(
        {
            "instrument": INSTRUMENT.name,
            "items_hash": frozen.hash,
            "items_dir": str(frozen.path.resolve()),
            "norms": frozen.record.get("norms"),
            "seed": frozen.record.get("seed"),
            "n_items": len(frozen.items),
            **grid,
            **who,
            "kind": "import",
            "source": collector.source,
            "files": [{"path": str(p), "name": p.name, "sha256": sha256_file(p)} for p in paths],
            "mapping": {f: ",".join(c) if isinstance(c, list) else c for f, c in recorded.items()},
            "value_renames": dict(values),
            "decision_fields": dict(SIGNALLING_FIELDS),
            "sum_tolerance": sum_tolerance,
            "unmapped_fields": dict(sorted(collector.unmapped.items())),
            **collector.refusals(),
        }
    )


def _write(
    read: Reader,
    collector: _Collector,
    ledger: Ledger,
    out: Path | str,
    config: SignallingConfig,
    frozen: FrozenInstrument,
    label: str,
    command: Sequence[str] | None,
) -> ImportResult:
    if not ledger.n_kept:
        reasons = "; ".join(f"{n} × {r}" for r, n in sorted(collector.refused.items()))
        raise InputError(
            "no row could be imported as a rendering of the frozen item set"
            + (f" ({reasons})" if reasons else " (the files hold no rows)")
        )
    description: ReplayDescription = {
        "backend": f"import:{collector.source}",
        "model": label,
        "source": collector.source,
        "source_version": None,
    }
    summary = write_import(
        read,
        collector,
        ledger,
        out,
        description=description,
        config=config,
        command=command,
        on_accepted=lambda directory: frozen.copy_to(directory / "instrument"),
    )
    return import_result(summary, collector, ledger, version=None, model=label)
