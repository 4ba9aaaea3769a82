"""The build's reports as the item set's configuration records them (``config["pool"]``,
``config["retention"]``, ``config["tile_screen"]``, ``config["tiles"]``), typed.

They are TypedDicts because they are JSON records: the item set is frozen as canonical JSON and
hashed, so each report keeps exactly the keys it writes (a key that does not apply is absent,
not null) and a dataclass would only add a conversion in front of the same dict.
"""

from __future__ import annotations

from typing import NotRequired

from typing_extensions import TypedDict

__all__ = [
    "DimensionChoice",
    "LossRecord",
    "PoolRecord",
    "RetentionBlock",
    "RetentionReport",
    "ScreenDecision",
    "SwowRecord",
    "TileRecord",
    "TileScreen",
]


class LossRecord(TypedDict):
    """What a norms loader lost against its source's promise (``SourceLoss``)."""

    source: str
    expected: int
    usable: int
    lost: int
    threshold: int
    allowed: bool
    reasons: dict[str, int]
    examples: dict[str, list[str]]


class SwowRecord(TypedDict):
    """The SWOW strength file that entered the pool intersection and what it matched."""

    file: str
    response_set: str
    cues: int
    rows_without_response: int
    concepts_matched: int
    matching: str


class PoolRecord(TypedDict):
    """The concept pool: its size, each step from the bundle to it, its sources."""

    size: int
    steps: list[list[str | int]]
    sources: list[str]
    norms_skipped: dict[str, int]
    norms_loss: NotRequired[LossRecord]
    swow: NotRequired[SwowRecord]


class RetentionBlock(TypedDict):
    """Natural kinds against artifacts kept, over one set of concepts (Appendix A)."""

    natural_kinds: int
    artifacts: int
    natural_retention: float
    artifact_retention: float
    gap_pp: float


class RetentionReport(TypedDict):
    """Appendix A's retention report; unavailable reports carry only ``reason``, the
    frequency strata only where the bundle has a ``frequency`` covariate, ``set`` and
    ``final_pool`` only for the SWOW cue-list reading."""

    available: bool
    reason: NotRequired[str]
    all: NotRequired[RetentionBlock]
    single_word: NotRequired[RetentionBlock]
    rarest_frequency_quartile: NotRequired[RetentionBlock]
    rarest_quartile_threshold: NotRequired[float]
    frequency_quartiles: NotRequired[list[RetentionBlock]]
    share_of_gap_explained_by_multiword: NotRequired[float]
    set: NotRequired[str]
    final_pool: NotRequired[RetentionReport]


class DimensionChoice(TypedDict):
    """The §I-C choice of one dimension per redundancy cluster, or why it could not run."""

    selected: list[str]
    excluded: dict[str, str]
    unavailable: NotRequired[str]


class ScreenDecision(TypedDict):
    """Whether the screen or the tile file decided the tiles, and any override."""

    decided_by: str
    tile_file_dimensions: list[str]
    overridden: bool
    reason: NotRequired[str]
    screen_selected: NotRequired[list[str]]
    agrees: NotRequired[bool]


class TileScreen(TypedDict):
    """The §I-C screen: ratios, redundancy clusters, the choice and the decision."""

    rater_disagreement_ratio: dict[str, float | None]
    redundancy_clusters: list[list[str]]
    selected: list[str]
    excluded: dict[str, str]
    unavailable: NotRequired[str]
    decision: NotRequired[ScreenDecision]


class TileRecord(TypedDict):
    """One tile as recorded: its dimension, question, bin edges and option phrases."""

    name: str
    dimension: str
    question: str
    edges: list[float]
    options: list[str]
