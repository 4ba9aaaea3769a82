"""The configuration of a meaning run: the plan's configuration (corpus, design, blocks,
families, seeds; :func:`~choiceaudit.instruments.meaning.plan_meaning`), the loader report,
the per-experiment build reports and the embedder behind d-sem / d-hard, so a report can say
what was drawn and what was skipped."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from choiceaudit.types import RunConfig

__all__ = ["MeaningConfig"]


@dataclass(frozen=True)
class MeaningConfig(RunConfig):
    """The fields :func:`plan_meaning` records, then what
    ``run_meaning`` adds: the corpus spec, the embedder, the number of queries and the build
    reports per experiment. Nested records (``loader``, ``blocks``, ``build_reports``, …) are
    kept as the JSON the plan wrote."""

    instrument: str | None = "meaning"
    corpus: str | None = None
    corpus_language: str | None = None
    other_language: str | None = None
    design: str | None = None
    loader: Mapping[str, Any] | None = None
    loader_steps: tuple[Any, ...] | None = None
    experiments: tuple[str, ...] | None = None
    blocks: tuple[Mapping[str, Any], ...] | None = None
    skipped_experiments: tuple[str, ...] | None = None
    not_in_design: tuple[str, ...] | None = None
    n_items: int | None = None
    n_order_items: int | None = None
    sample_seed: int | None = None
    families: tuple[str, ...] | None = None
    families_left_out: tuple[Any, ...] | None = None
    sem_source: str | None = None
    e7_keys: tuple[str, ...] | None = None
    seeds: Mapping[str, Any] | None = None
    corpus_spec: str | None = None
    embedder: str | None = None
    n_queries: int | None = None
    build_reports: Mapping[str, Any] | None = None
