"""``choiceaudit import decisions``: anyone's per-item outputs as a run of an instrument.

:func:`import_decisions` reads CSV, JSONL or Parquet files with one row per item per condition
(columns named by a mapping, ``_decision_files``), validates every row before anything is
analysed, and writes the valid ones as an ordinary run directory through the scoring loop (a
replay scorer hands back the decisions). ``instrument="meaning"`` makes a meaning arm: ``report``
gives it every analysis its rows support and pairs it, by item, with runs the tool produced;
``instrument="scoring"`` a plain scoring run (accuracy, calibration, order audit).

Validation, per row (a row that fails is not imported; its file, row and reason are written
once to the run's ``refused.jsonl``, counted by reason and digested in the configuration):

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
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path

from choiceaudit.audit._decision_files import FIELDS, DecisionMapping, iter_rows, load_mapping
from choiceaudit.audit._decision_rows import (
    DecisionRow,
    parse_constants,
    read_row,
)
from choiceaudit.audit._import import (
    FileRecord,
    ImportResult,
    Mapped,
    _Collector,
    _expand,
    _Unmappable,
    text_digest,
)
from choiceaudit.audit._import_write import Reader, check_rows, write_rows
from choiceaudit.errors import InputError
from choiceaudit.instruments.meaning import MeaningConfig, condition_problem
from choiceaudit.instruments.scoring import ScoreConfig
from choiceaudit.types import Decision, Query, format_perm

#: the order statistics' default sum tolerance (``choiceaudit.stats``: four options rounded
#: to two decimals)
RETURNED_SUM_TOLERANCE = 0.02

__all__ = ["DECISION_INSTRUMENTS", "import_decisions"]

#: what ``--instrument`` accepts
DECISION_INSTRUMENTS = ("meaning", "scoring", "signalling")


class Canonicaliser:
    """Each option set's canonical order, fixed by its first rendering read, and the relabelling
    that puts gold at 0 and the literal at 1 (see the module docstring). What it keeps of an
    option set is compact (a million sets fit in a bounded import): the gold and literal's
    canonical indices and a 16-byte digest of each option's text in canonical order."""

    def __init__(self) -> None:
        self._first: dict[bytes, tuple[int, int | None, bytes | None]] = {}

    def perm_of(self, row: DecisionRow) -> tuple[int, ...]:
        """The row's display order in the relabelled canonical order."""
        k = row.raw.size
        perm = row.perm
        texts = None
        group = text_digest(json.dumps(row.group, ensure_ascii=False))
        first = self._first.get(group)
        shown = None if row.options is None else tuple(text_digest(o) for o in row.options)
        if perm is None and shown is not None and first is not None and first[2]:
            canonical = [first[2][i : i + 16] for i in range(0, len(first[2]), 16)]
            if sorted(canonical) != sorted(shown):
                raise _Unmappable(
                    f"item {row.item_id}: its options differ from its first rendering"
                )
            perm = tuple(canonical.index(o) for o in shown)
        perm = perm or tuple(range(k))
        if shown is not None:
            inverse = sorted(range(k), key=lambda s: perm[s])
            texts = b"".join(shown[s] for s in inverse)  # canonical order
        gold, literal = perm[row.gold_slot], None
        if row.literal_slot is not None:
            literal = perm[row.literal_slot]
        if first is None:
            self._first[group] = (gold, literal, texts)
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
        "item_id": row.item_id,
        "gold": 0,
        "literal": literal,
        "gold_slot": row.gold_slot,
        "literal_slot": row.literal_slot,
        "perm": format_perm(perm),
        "family": row.family,
        "condition": row.condition,
        "experiment": row.experiment,
        "block": row.block,
        "language": row.language,
        "frequency": row.frequency,
        "imported": True,
    }
    if row.identity:
        meta["identity_perturbation"] = True
    query = Query(
        state=row.state, options=options, keys=row.keys, answer_format="key", perm=perm, meta=meta
    )
    return query, _decision(query, row)


def _scoring_pair(row: DecisionRow, perm: tuple[int, ...]) -> tuple[Query, Decision]:
    options = row.options or tuple(f"option {perm[s]}" for s in range(len(perm)))
    meta = {
        "item_id": f"{row.experiment}:{row.item_id}",
        "gold": 0,
        "task": row.experiment,
        "condition": row.condition,
        "language": row.language,
    }
    query = Query(
        state=row.state,
        options=options,
        keys=row.keys,
        answer_format="key",
        template="{state}",
        perm=perm,
        meta=meta,
    )
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


def _cell_clash(mapped: Mapped, first: str | int) -> InputError:
    """A second meaning row of one (experiment, block, language, condition, item): the
    analyses pair rows by that key, so a second row would make the report fail or pair the
    wrong rows; the import stops naming both. (A row repeating another exactly is dropped; a
    misnamed condition is refused before, with the names expected.)"""
    experiment, block, language, condition, item = mapped.cell or ("",) * 5
    return InputError(
        f"a second row for item {item} of {experiment} condition {condition} (block {block}, "
        f"language {language}) besides row {first}; each item has one row per condition: "
        "check the condition column (or its mapping)",
        source=mapped.file,
        row=mapped.row,
        field="condition",
    )


def _read_one(
    row: Mapping[str, object] | str,
    read: Callable[[Mapping[str, object]], DecisionRow],
    source: str,
    canon: Canonicaliser,
    where: tuple[str, int],
) -> Mapped:
    """One file row mapped (``_Unmappable``: the row is refused)."""
    if isinstance(row, str):
        raise _Unmappable(row)
    parsed = read(row)
    meaning = source == "decisions:meaning"
    if meaning and (problem := condition_problem(parsed.experiment, parsed.condition)):
        raise _Unmappable(problem)
    pair = _meaning_pair if meaning else _scoring_pair
    query, decision = pair(parsed, canon.perm_of(parsed))
    fields = (parsed.experiment, parsed.block, parsed.language, parsed.condition, parsed.item_id)
    return Mapped(*where, query, decision, tuple(str(v) for v in fields) if meaning else None)


def _reader(
    paths: Sequence[Path], source: str, seen: set[str], read: Callable[..., DecisionRow]
) -> Reader:
    """The files' rows, mapped, for :func:`check_rows` and the writer (``read(row, typed=)``
    parses one row; ``seen`` gathers the columns met)."""

    def read_files(collector: _Collector) -> Iterator[Mapped]:
        canon = Canonicaliser()
        for path in paths:
            parse = partial(read, typed=path.suffix.lower() != ".csv")
            for number, row in iter_rows(path):
                if not isinstance(row, str):
                    seen.update(row)
                mapped = collector.mapped_or_refused(
                    str(path),
                    number,
                    partial(_read_one, row, parse, source, canon, (str(path), number)),
                )
                if mapped is not None:
                    yield mapped

    return read_files


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
    *,
    out: Path | str,
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
    ``experiment=e7``; recorded in the run's configuration as ``set_fields``); ``language``
    is the rows' test language where no column gives it; ``corpus_language`` the language the meaning analysis files E4 and the
    matrix under (default: that of their first row). A signalling import
    (``_signalling_import``) is checked against and analysed on the frozen item directory
    ``items``, as a model arm or, with ``chooser``, a reference chooser's released outputs.

    >>> import pathlib, tempfile
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> rows = 'item_id,state,probs,gold_position\\ni1,2 + 2 =,"[0.9, 0.1]",0\\ni2,3 + 3 =,"[0.2, 0.9]",1\\n'
    >>> _ = (tmp / "released.csv").write_text(rows, encoding="utf-8")
    >>> result = import_decisions([tmp / "released.csv"], out=tmp / "run", instrument="scoring",
    ...                           constants=["experiment=e1", "condition=plain"], language="en")
    >>> result.mapped, dict(result.unmappable)
    (1, {'probs sums to 1.1, not 1 within the tolerance 0.02': 1})
    """
    _check_arguments(instrument, sum_tolerance, constants, position_base, items, chooser)
    if instrument == "signalling":
        # imported here: the signalling import builds on this module's row collector
        from choiceaudit.audit._signalling_import import import_signalling_decisions

        return import_signalling_decisions(
            files,
            out,
            items=items,
            mapping=mapping,
            mapping_file=mapping_file,
            model=model,
            chooser=chooser,
            sum_tolerance=sum_tolerance,
            command=command,
        )
    columns, values = load_mapping(mapping, mapping_file)
    fixed = parse_constants(constants, columns)
    paths = _expand(files, ["*.csv", "*.jsonl", "*.parquet"])
    seen: set[str] = set()
    source = f"decisions:{instrument}"
    read_files = _reader(
        paths,
        source,
        seen,
        partial(
            read_row,
            mapping=columns,
            values=values,
            language=language,
            position_base=position_base,
            sum_tolerance=sum_tolerance,
            constants=fixed,
        ),
    )
    collector = _Collector(source, spool=True)
    ledger = check_rows(read_files, collector, cell_clash=_cell_clash)
    for name in _unmapped(seen, columns, fixed):
        collector.unmapped_field(name)
    extra: dict[str, object] = {
        "decision_fields": dict(FIELDS),
        "value_renames": values,
        "set_fields": fixed,
        "sum_tolerance": sum_tolerance,
        "position_base": position_base,
        "files": [{"path": str(p), **f} for p, f in zip(paths, _file_records(paths), strict=True)],
    }
    if instrument == "meaning":
        meaning = {"design": None, "corpus_language": corpus_language, "n_queries": ledger.n_kept}
        extra.update(instrument="meaning", **meaning)
    recorded = {**{f: f for f in FIELDS}, **columns}
    return write_rows(
        read_files,
        collector,
        ledger,
        out,
        model=model or paths[0].stem,
        version=None,
        files=paths,
        mapping={f: ",".join(c) if isinstance(c, list) else c for f, c in recorded.items()},
        extra=extra,
        command=command,
        config_type=MeaningConfig if instrument == "meaning" else ScoreConfig,
    )


def _check_arguments(
    instrument: str,
    sum_tolerance: float,
    constants: Sequence[str],
    position_base: int,
    items: Path | str | None,
    chooser: str | None,
) -> None:
    """Refuse an argument the chosen instrument does not read, before any file is opened."""
    if instrument not in DECISION_INSTRUMENTS:
        raise InputError(f"--instrument {instrument!r}: use {' or '.join(DECISION_INSTRUMENTS)}")
    check_sum_tolerance(sum_tolerance)
    if instrument == "signalling":
        if constants:
            raise InputError("--set is for --instrument meaning or scoring", field="--set")
        return
    if items is not None or chooser is not None:
        raise InputError("--items and --chooser are for --instrument signalling")
    if position_base not in (0, 1):
        raise InputError(f"--position-base {position_base}: use 0 or 1")


def _unmapped(seen: set[str], columns: DecisionMapping, fixed: Mapping[str, str]) -> list[str]:
    """The columns the files have that no field reads, reported so none is dropped unseen."""
    used = {c for v in columns.values() for c in (v if isinstance(v, list) else [v])}
    used |= {f for f in FIELDS if f not in columns and f not in fixed}
    return sorted(seen - used)


def _file_records(paths: Sequence[Path]) -> list[FileRecord]:
    from choiceaudit.files import sha256_file

    return [{"name": p.name, "sha256": sha256_file(p)} for p in paths]
