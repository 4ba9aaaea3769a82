"""A study: the frozen items people see and the study file's blocks (the study directory they
are kept in is ``_study_dir``).

``serve-human ITEMS --out STUDY`` turns an item source into a *study directory*:

* ``study.json`` — the resolved study (the study file's blocks and seed, the items' hash, the
  rendering people see); a restart with other items or another study file is refused;
* ``instrument/`` — a copy of the frozen signalling item directory (as a run keeps one), or
  ``queries.jsonl`` — the meaning plan's queries, for meaning items;
* ``responses.sqlite`` — the responses (``_db``); ``secret`` — the study key (mode 0600):
  CSRF tokens, completion codes and the keyed digest kept of a withdrawn panel id.

A study item is one item of the instrument with its frozen renderings (signalling: the two
stored permutations of the chosen condition under format V; meaning: the queries the plan wrote
for that item). A participant is shown exactly one rendering of an item, so the response maps
to the frozen rendering's query id, which is what the import writes as the run's row.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NotRequired

from typing_extensions import TypedDict

from choiceaudit.errors import InputError, unreadable
from choiceaudit.files import canonical_hash
from choiceaudit.human._panel_id import PANEL_ID_PATTERN
from choiceaudit.instruments.signalling import FrozenInstrument, load_instrument
from choiceaudit.store import QUERIES, RunStore, open_run, read_queries
from choiceaudit.types import Query

__all__ = [
    "PANEL_ID_PATTERN",
    "SECRET_FILE",
    "STUDY_FILE",
    "BlockJSON",
    "BlockSpec",
    "StudyFileJSON",
    "StudyItem",
    "StudyItems",
    "StudySpec",
    "StudySpecJSON",
    "load_study_items",
    "parse_study_file",
]

STUDY_FILE = "study.json"
SECRET_FILE = "secret"
BLOCKS = ("classification", "population")


@dataclass(frozen=True)
class BlockSpec:
    """One block of the study file.

    ``classification`` (paper §V: powered to classify an individual's strategy): the same
    ``n_items`` conflict items of the frozen analysis set for every participant, so each
    person's choices are compared with the two references on the same items. ``population``
    (powered to estimate a population curve): ``n_items`` per participant drawn round-robin
    from the remaining items of the pool (``pool``: ``analysis_set`` or ``all``), so the items
    are covered evenly across participants."""

    name: str
    n_items: int
    pool: str = "analysis_set"


class BlockJSON(TypedDict):
    """A block of the study file as the study record stores it."""

    name: str
    n_items: int
    pool: str


class StudySpecJSON(TypedDict):
    """A :class:`StudySpec` as the study record stores it (``study``)."""

    seed: int
    condition: str
    blocks: list[BlockJSON]
    attention_checks: int
    panel_param: str
    completion_code: str
    title: str
    max_participants: int | None


class StudyFileJSON(TypedDict):
    """``study.json``: the resolved study file, the instrument and hash of the items it serves,
    where they came from and their configuration (older studies may lack the last three)."""

    study: StudySpecJSON
    instrument: str
    items_hash: str
    items_source: NotRequired[str]
    source_config: NotRequired[dict[str, object]]
    format_version: NotRequired[int]


@dataclass(frozen=True)
class StudySpec:
    """The study file, resolved (its format: docs/guides/human-study.md)."""

    seed: int
    condition: str = "4"
    blocks: tuple[BlockSpec, ...] = ()
    attention_checks: int = 2
    panel_param: str = "PROLIFIC_PID"
    completion_code: str = ""
    title: str = "A short communication study"
    max_participants: int | None = None

    def to_dict(self) -> StudySpecJSON:
        return {
            "seed": self.seed,
            "condition": self.condition,
            "blocks": [{"name": b.name, "n_items": b.n_items, "pool": b.pool} for b in self.blocks],
            "attention_checks": self.attention_checks,
            "panel_param": self.panel_param,
            "completion_code": self.completion_code,
            "title": self.title,
            "max_participants": self.max_participants,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "study file") -> StudySpec:
        known = {
            "seed",
            "condition",
            "blocks",
            "attention_checks",
            "panel_param",
            "completion_code",
            "title",
            "max_participants",
        }
        extra = sorted(set(data) - known)
        if extra:
            raise InputError(f"unknown keys {extra}; use {sorted(known)}", source=source)

        def integer(key: str, value: Any, low: int) -> int:
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InputError(
                    f"must be an integer ≥ {low}, got {value!r}", source=source, field=key
                )
            return value

        if "seed" not in data:
            raise InputError("a study needs a seed", source=source, field="seed")
        blocks = []
        raw_blocks = data.get("blocks") or []
        if not isinstance(raw_blocks, list) or not raw_blocks:
            raise InputError("declare at least one block", source=source, field="blocks")
        for n, b in enumerate(raw_blocks):
            where = f"blocks[{n}]"
            if not isinstance(b, Mapping) or b.get("name") not in BLOCKS:
                raise InputError(f"a block is named one of {BLOCKS}", source=source, field=where)
            pool = str(b.get("pool", "analysis_set"))
            if pool not in ("analysis_set", "all"):
                raise InputError("pool is 'analysis_set' or 'all'", source=source, field=where)
            blocks.append(
                BlockSpec(str(b["name"]), integer(f"{where}.n_items", b.get("n_items"), 1), pool)
            )
        if len({b.name for b in blocks}) != len(blocks):
            raise InputError("a block is declared twice", source=source, field="blocks")
        param = str(data.get("panel_param", "PROLIFIC_PID"))
        if not PANEL_ID_PATTERN.fullmatch(param):
            raise InputError(
                f"not a query parameter name: {param!r}", source=source, field="panel_param"
            )
        code = str(data.get("completion_code") or "")
        if code and not PANEL_ID_PATTERN.fullmatch(code):
            raise InputError(
                "letters, digits, _ and - only", source=source, field="completion_code"
            )
        maxp = data.get("max_participants")
        return cls(
            seed=integer("seed", data["seed"], 0),
            condition=str(data.get("condition", "4")),
            blocks=tuple(blocks),
            attention_checks=integer("attention_checks", data.get("attention_checks", 2), 0),
            panel_param=param,
            completion_code=code,
            title=str(data.get("title", "A short communication study")),
            max_participants=None if maxp is None else integer("max_participants", maxp, 1),
        )


def parse_study_file(path: Path | str) -> StudySpec:
    """Read a study file (TOML, or JSON when it ends in ``.json``)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
        data = json.loads(text) if p.suffix == ".json" else tomllib.loads(text)
    except FileNotFoundError:
        raise InputError("no such study file", source=str(p)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(p, exc, what="the study file") from None
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not a study file ({exc})", source=str(p)) from None
    if not isinstance(data, dict):
        raise InputError("a study file is a table (a JSON object)", source=str(p))
    return StudySpec.from_dict(data, source=str(p))


@dataclass(frozen=True)
class StudyItem:
    """One item as people see it: its frozen renderings (one per stored permutation) and
    whether it belongs to the frozen analysis set (signalling) and is a conflict item."""

    item_id: str
    renderings: tuple[Query, ...]
    in_analysis_set: bool
    conflict: bool
    view: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StudyItems:
    """The items a study serves, from a frozen signalling directory or a meaning query file."""

    instrument: str
    items: tuple[StudyItem, ...]
    items_hash: str
    frozen: FrozenInstrument | None = None
    source: str = ""
    #: meaning: the configuration of the run the queries came from (its plan), when known
    source_config: Mapping[str, Any] = field(default_factory=dict)

    def by_id(self) -> dict[str, StudyItem]:
        return {i.item_id: i for i in self.items}

    def query_by_id(self) -> dict[str, Query]:
        return {q.id: q for i in self.items for q in i.renderings}


def _signalling_items(frozen: FrozenInstrument, condition: str) -> StudyItems:
    queries = frozen.render(conditions=[condition], formats=["V"], label_forms=["bare"])
    spec = frozen.analysis.get("analysis_set", {})
    by_item: dict[str, list[Query]] = {}
    for q in queries:
        by_item.setdefault(str(q.meta["item_id"]), []).append(q)
    out = []
    for item in frozen.items:
        meta = item.meta
        in_set = (spec.get("tile") in (None, meta["tile"])) and (
            spec.get("conflict") is None or bool(meta["conflict"]) == bool(spec.get("conflict"))
        )
        view = {
            "means": list(meta["means"]),
            "clues": list(meta["clues"]),
            "target": list(meta["target_words"]),
            "question": str(meta["question"]),
        }
        out.append(
            StudyItem(item.id, tuple(by_item[item.id]), bool(in_set), bool(meta["conflict"]), view)
        )
    return StudyItems("signalling", tuple(out), frozen.hash, frozen, str(frozen.path))


def _meaning_items(
    queries: Sequence[Query], path: Path, config: Mapping[str, Any] | None = None
) -> StudyItems:
    # a study item is one cell of the plan (item x experiment x condition x language); its
    # renderings are the plan's orderings of it, so people cover the cells the analysis pairs
    by_item: dict[str, list[Query]] = {}
    for q in queries:
        m = q.meta
        parts = [m.get("item_id"), m.get("experiment"), m.get("condition"), m.get("language")]
        key = "|".join(str(p) for p in parts) if m.get("item_id") is not None else q.id
        by_item.setdefault(key, []).append(q)
    if not by_item:
        raise InputError("no queries", source=str(path))
    items = tuple(StudyItem(k, tuple(v), True, False, {}) for k, v in by_item.items())
    digest = canonical_hash([q.id for i in items for q in i.renderings])
    return StudyItems("meaning", items, digest, None, str(path), dict(config or {}))


def load_study_items(source: Path | str, *, condition: str = "4") -> StudyItems:
    """The items at ``source``: a frozen signalling item directory (or a run's copy of one), or
    a meaning query file (``queries.jsonl``, or a meaning run directory holding one)."""
    p = Path(source)
    if (p / "instrument.json").is_file():
        return _signalling_items(load_instrument(p), condition)
    if (p / "instrument" / "instrument.json").is_file():
        return _signalling_items(load_instrument(p / "instrument"), condition)
    if p.is_dir() and RunStore(p).exists() and (p / QUERIES).is_file():  # a meaning run
        run = open_run(p, allow_empty=True)
        return _meaning_items(run.planned_queries(), p / QUERIES, run.manifest.config)
    if p.is_dir() and (p / QUERIES).is_file():
        return _meaning_items(read_queries(p / QUERIES).queries, p / QUERIES)
    if p.is_file() and p.suffix == ".jsonl":
        return _meaning_items(read_queries(p).queries, p)
    raise InputError(
        "not a frozen signalling item directory or a meaning queries.jsonl", source=str(p)
    )
