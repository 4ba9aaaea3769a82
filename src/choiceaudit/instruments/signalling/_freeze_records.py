"""The JSON records of a frozen item directory, typed: ``instrument.json`` (:class:`FreezeRecord`
with its rendering, analysis battery, fit family, covariate and candidate blocks) and one line
of ``amendments.jsonl`` (:class:`Amendment`).

They are TypedDicts because they are JSON records read and written as JSON: the freeze writes
them with sorted keys and hashes their canonical JSON, so the dict is the file's own shape and
a dataclass would only add a conversion that could change the bytes.
"""

from __future__ import annotations

from typing import NotRequired

from typing_extensions import TypedDict

from choiceaudit.instruments.signalling._build_records import PoolRecord
from choiceaudit.instruments.signalling._render import Condition, Format, LabelForm

__all__ = [
    "Amendment",
    "AnalysisBattery",
    "AnalysisSetSpec",
    "BootstrapSpec",
    "CandidateRecord",
    "CovariateReport",
    "FitFamily",
    "FreezeRecord",
    "RenderingOverrides",
    "RenderingSpec",
]


class RenderingSpec(TypedDict):
    """Which renderings the freeze holds (§I-G–§I-I) and the text around them."""

    conditions: list[Condition]
    formats: list[Format]
    label_forms: list[LabelForm]
    template: str
    instruction: str
    salience_sentence: str
    experiment: str


class RenderingOverrides(TypedDict, total=False):
    """The fields of :class:`RenderingSpec` a caller replaces at freeze time."""

    conditions: list[Condition]
    formats: list[Format]
    label_forms: list[LabelForm]
    template: str
    instruction: str
    salience_sentence: str
    experiment: str


class AnalysisSetSpec(TypedDict):
    """The frozen analysis set: a None ``tile`` selects every tile."""

    tile: str | None
    conflict: bool
    condition: str
    format: str


class BootstrapSpec(TypedDict):
    """The battery's bootstrap: resamples, level and resampling unit."""

    n_resamples: int
    level: float
    unit: str


class AnalysisBattery(TypedDict):
    """The analysis battery fixed before any model runs (§I-F1, §I-H, §IV)."""

    rules: list[str]
    primary_rule: str
    reference_rule: str
    decay_families: list[str]
    primary_decay: str
    analysis_set: AnalysisSetSpec
    bootstrap: BootstrapSpec
    bonferroni: str
    fit_cost_bins: int
    seed: int
    #: the smallest effect size of interest for the slopes; a freeze without it reads 0.05
    sesoi: NotRequired[float]


class FitFamily(TypedDict):
    """The fit function (§I-D, §I-E, Appendix B) in words."""

    primary: str
    families: dict[str, str]
    distance: str
    pair_aggregation: str
    prior: str


class CovariateReport(TypedDict):
    """Covariates of both targets the items carry, and why the others are missing."""

    available: list[str]
    unavailable: dict[str, str]


class CandidateRecord(TypedDict):
    """``candidates.parquet``: its name and how many candidates were (not) selected."""

    file: str
    n: int
    selected: int
    unselected: int


class FreezeRecord(TypedDict):
    """``instrument.json``. ``hash`` is added once the other fields are written (it covers
    the content fields, see ``instrument_hash``); ``norms``, ``seed`` and ``pool`` are copied
    from the item set's build configuration as they stand there."""

    format_version: int
    instrument: str
    item_set_hash: str
    prompts_sha256: str
    tiles_sha256: str
    tiles_file: str
    fit_family: FitFamily
    rendering: RenderingSpec
    analysis: AnalysisBattery
    norms: str | None
    seed: int | None
    n_items: int
    n_prompts: int
    pool: PoolRecord | None
    covariates: CovariateReport
    candidates: CandidateRecord | None
    files: dict[str, str]
    frozen_at: str
    hash: NotRequired[str]


class Amendment(TypedDict):
    """One line of the amendment log; ``entry_sha256`` covers the other fields."""

    date: str
    text: str
    author: str | None
    instrument_hash: str
    previous_sha256: str
    entry_sha256: NotRequired[str]
