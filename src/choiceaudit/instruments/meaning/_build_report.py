"""What a block's build records about itself, as the run's config stores it (``build_reports``):
items and top-ups per family, items not built per family and reason, and the per-experiment
counts some builders add (variants, identity perturbations, the capture pool).

These are JSON records written into the manifest and read back from it, so they are typed
dictionaries: the stored shape is exactly the type.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NotRequired

from typing_extensions import TypedDict

if TYPE_CHECKING:
    from choiceaudit.instruments.meaning._pools import Pools

__all__ = ["BuildReport", "FamilyCounts", "count_item", "new_report", "skip_item"]


class FamilyCounts(TypedDict):
    """One family's items built, items topped up and options added by top-ups."""

    items: int
    topped_up_items: int
    topped_up_options: int


class BuildReport(TypedDict):
    """A block's build report; the keys after ``skipped`` are present only for the builders
    that record them."""

    corpus: str
    experiment: str
    seed_base: int
    sem_source: str
    sem_neighbours: int | None
    families: dict[str, FamilyCounts]
    skipped: dict[str, dict[str, int]]  # family -> reason -> items
    language: NotRequired[str]
    block: NotRequired[str]
    key_bindings: NotRequired[list[str]]
    variants: NotRequired[dict[str, int]]
    identity_perturbations: NotRequired[dict[str, int]]
    o2_options_unchangeable: NotRequired[int]
    pool: NotRequired[dict[str, int]]


def new_report(
    pools: Pools, families: Sequence[str], seed_base: int, experiment: str
) -> BuildReport:
    """An empty report: every family at zero, nothing skipped."""
    return {
        "corpus": pools.corpus.name,
        "experiment": experiment,
        "seed_base": seed_base,
        "sem_source": pools.sem_source,
        "sem_neighbours": pools.sem_neighbours if pools.sem_source == "embedding" else None,
        "families": {
            f: {"items": 0, "topped_up_items": 0, "topped_up_options": 0} for f in families
        },
        "skipped": {},
    }


def count_item(report: BuildReport, family: str, topped: int) -> None:
    """One item built under ``family`` with ``topped`` options topped up."""
    stats = report["families"][family]
    stats["items"] += 1
    stats["topped_up_items"] += int(topped > 0)
    stats["topped_up_options"] += topped


def skip_item(report: BuildReport, family: str, reason: str) -> None:
    """One item not built under ``family``, for ``reason``."""
    by_reason = report["skipped"].setdefault(family, {})
    by_reason[reason] = by_reason.get(reason, 0) + 1
