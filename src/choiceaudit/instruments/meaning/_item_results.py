"""Typed results beside ``_results``: per-item values of the audits and the output descriptives.

* :class:`ItemValues` — one audit's values item by item (E2 per pair, E3 per item and variant,
  E6 per item and form, E7 per item), so a reader can compare an arm with a published one item
  by item; the report writes each as a CSV.
* :class:`Descriptives` — Appendix H and J descriptives of one part's rows: items at
  p = 1.000 on the literal and 0.000 on the gold (to three decimals), the E2 mean peak, and the
  construction asymmetries of the capture matrix (gold–literal Jaccard per language, hook share
  per language, mean characters of each literal gloss).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Construction", "Descriptives", "ItemValues", "MatrixAsymmetries"]


@dataclass(frozen=True)
class ItemValues:
    """Per-item values of one audit: ``columns`` names them, each row is one item (or one
    item's pair / variant / form), in the analysis's order."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, name: str) -> tuple[Any, ...]:
        """One column's values, in row order."""
        i = self.columns.index(name)
        return tuple(row[i] for row in self.rows)


@dataclass(frozen=True)
class MatrixAsymmetries:
    """Appendix J, "The four asymmetries", read on the capture matrix's rows: per language
    cell, the mean Jaccard between gold and literal gloss (iii), the share of items whose
    literal gloss shares a content word with the state (iv: the hook), and the mean characters
    of the literal option (ii)."""

    n_items: int
    jaccard_gold_literal: Mapping[str, float]
    hook_share: Mapping[str, float]
    mean_literal_chars: Mapping[str, float]


@dataclass(frozen=True)
class Construction:
    """Appendix J, "Item construction": on the d-lit ladder rows, the share of single-word idioms
    (whitespace words), of literal glosses containing the idiom verbatim, of literal options
    longer (characters) than the gold and longest of all four, and the mean characters of the
    literal, of the gold and of the other three options (the gold among them: the paper's
    "41.1 characters against 31.5 for the other three")."""

    n_items: int
    share_single_word: float
    share_verbatim: float
    share_literal_longer_than_gold: float
    share_literal_longest: float
    mean_literal_chars: float
    mean_gold_chars: float
    mean_other_chars: float


@dataclass(frozen=True)
class Descriptives:
    """Appendix H / J descriptives of one part (``None`` where its rows lack what one needs):

    * ``n_literal_certain`` — per literal-bearing ladder family, items whose returned vector puts
      1.000 on the literal gloss and 0.000 on the gold, to three decimals (Appendix H: "on 21
      items Laya-ml returns p = 1.000 on the literal gloss and p = 0.000 on the gold");
    * ``e2_mean_peak`` — the paper's "mean peak probability on these pairs" (Appendix N,
      "Reading agreement against divergence"): the canonical form's returned peak, once per
      (canonical, alternative) pair, averaged over the pairs;
    * ``e2_mean_peak_rows`` — the mean returned peak over every distinct E2 row of the pairs
      (canonical and alternatives, each once), a different aggregation kept under its own name;
    * ``construction`` — Appendix J's item construction on d-lit (:class:`Construction`);
    * ``matrix`` — the capture matrix asymmetries (:class:`MatrixAsymmetries`).
    """

    n_literal_certain: Mapping[str, int] = field(default_factory=dict)
    e2_mean_peak: float | None = None
    e2_mean_peak_rows: float | None = None
    construction: Construction | None = None
    matrix: MatrixAsymmetries | None = None
