"""The configuration of a meaning run: the plan's configuration (corpus, design, blocks,
families, seeds; :func:`~choiceaudit.instruments.meaning.plan_meaning`), the loader report,
the per-experiment build reports and the embedder behind d-sem / d-hard, so a report can say
what was drawn and what was skipped."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from typing_extensions import TypedDict

from choiceaudit.instruments.meaning._build_report import BuildReport
from choiceaudit.instruments.meaning._corpus import LoaderRecord, LoaderStep
from choiceaudit.types import RunConfig

__all__ = ["MeaningConfig", "PlanBlock", "PlanConfig"]


class PlanBlock(TypedDict):
    """One block of the plan as the run's config stores it: its name, experiment, language,
    seed base, the item set it samples, its item count and its families (``None``: the
    experiment's own)."""

    block: str
    experiment: str
    language: str
    seed_base: int
    item_set: str
    n_items: int
    families: list[str] | None


class PlanConfig(TypedDict):
    """What :func:`plan_meaning` records about the plan it built (the JSON a run's config
    starts from; :class:`MeaningConfig` reads it back)."""

    corpus: str
    corpus_language: str
    other_language: str | None
    design: str | None
    loader: LoaderRecord
    loader_steps: list[LoaderStep]
    experiments: list[str]
    blocks: list[PlanBlock]
    skipped_experiments: list[str]
    not_in_design: list[str]
    n_items: int | None
    n_order_items: int
    sample_seed: int
    families: list[str]
    families_left_out: list[str]
    sem_source: str
    e7_keys: list[str]
    seeds: dict[str, int]
    split_seed: int


@dataclass(frozen=True)
class MeaningConfig(RunConfig):
    """The fields :func:`plan_meaning` records (:class:`PlanConfig`), then what
    ``run_meaning`` adds: the corpus spec, the embedder, the number of queries and the build
    reports per experiment. Nested records are the typed JSON the plan wrote."""

    instrument: str | None = "meaning"
    corpus: str | None = None
    corpus_language: str | None = None
    other_language: str | None = None
    design: str | None = None
    loader: LoaderRecord | None = None
    loader_steps: tuple[LoaderStep, ...] | None = None
    experiments: tuple[str, ...] | None = None
    blocks: tuple[PlanBlock, ...] | None = None
    skipped_experiments: tuple[str, ...] | None = None
    not_in_design: tuple[str, ...] | None = None
    n_items: int | None = None
    n_order_items: int | None = None
    sample_seed: int | None = None
    families: tuple[str, ...] | None = None
    families_left_out: tuple[str, ...] | None = None
    sem_source: str | None = None
    e7_keys: tuple[str, ...] | None = None
    seeds: Mapping[str, int] | None = None
    corpus_spec: str | None = None
    embedder: str | None = None
    n_queries: int | None = None
    build_reports: Mapping[str, BuildReport] | None = None
