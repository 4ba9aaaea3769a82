"""Coverage of a chooser over a frozen item set (paper §I-B, §IV-H2).

§I-B: "No concept enters that some condition cannot score, because a condition scored on a
different subset is not a comparison." An association chooser (SWOW walk, ConceptNet path and
the RSA layers over them) can score an item only where its source holds the words; on an item
set whose pool was built without that source it silently scores a subset. :func:`item_coverage`
measures that subset before a run — one rendering per item (condition 4, format V, the first
stored permutation: coverage depends on the item's concepts and option words, never on the
order) — so the run can refuse, or record an explicit permission beside every figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from choiceaudit.instruments.signalling._config import CoverageRecord
from choiceaudit.instruments.signalling._freeze_records import AnalysisSetSpec
from choiceaudit.scorers import Scorer
from choiceaudit.types import Item, Query

__all__ = ["COVERAGE_CHOOSERS", "CoverageCheck", "analysis_item_ids", "item_coverage"]

#: Choosers whose source may lack an item's words (the others score every item by construction).
COVERAGE_CHOOSERS: frozenset[str] = frozenset({"swow", "conceptnet", "rsa:swow", "rsa:conceptnet"})


@dataclass(frozen=True)
class CoverageCheck:
    """Items of the frozen set a chooser can score: ``n_covered`` of ``n_items`` overall and
    ``n_analysis_covered`` of ``n_analysis_items`` in the analysis set, with up to five
    uncovered item ids as examples."""

    chooser: str
    n_items: int
    n_covered: int
    n_analysis_items: int
    n_analysis_covered: int
    examples: tuple[str, ...]

    @property
    def complete(self) -> bool:
        return self.n_covered == self.n_items

    def as_record(self) -> CoverageRecord:
        """The check as a run records it, with whether a partial chooser was let run."""
        return {
            "chooser": self.chooser,
            "n_items": self.n_items,
            "n_covered": self.n_covered,
            "n_analysis_items": self.n_analysis_items,
            "n_analysis_covered": self.n_analysis_covered,
            "uncovered_examples": list(self.examples),
            "partial_allowed": not self.complete,
        }


def item_coverage(
    name: str, chooser: Scorer, queries: Sequence[Query], analysis_items: set[str]
) -> CoverageCheck:
    """Score one rendering per item and count the covered ones (``aux["covered"]``)."""
    first: dict[str, Query] = {}
    for q in queries:
        if q.meta.get("condition") == "4" and q.meta.get("format") == "V":
            first.setdefault(str(q.meta.get("item_id")), q)
    picked = [first[i] for i in sorted(first)]
    decisions = chooser.score(picked)
    covered = {
        str(q.meta.get("item_id"))
        for q, d in zip(picked, decisions, strict=True)
        if d.aux.get("covered", True)
    }
    missing = [i for i in sorted(first) if i not in covered]
    in_set = [i for i in first if i in analysis_items]
    return CoverageCheck(
        chooser=name,
        n_items=len(first),
        n_covered=len(covered),
        n_analysis_items=len(in_set),
        n_analysis_covered=sum(i in covered for i in in_set),
        examples=tuple(missing[:5]),
    )


def analysis_item_ids(items: Iterable[Item], spec: AnalysisSetSpec) -> set[str]:
    """Ids of the items in the frozen analysis set (its ``tile``, None for every tile, and its
    ``conflict`` flag)."""
    return {
        i.id
        for i in items
        if spec.get("tile") in (None, i.meta.get("tile"))
        and bool(i.meta.get("conflict")) == bool(spec.get("conflict", True))
    }
