"""Typed, frozen results of the meaning analysis of several arms answering one plan: every arm
with its provenance and analysis (:class:`ArmInfo`), the model contrasts and pairing checks
between arms, subset drift, the example rows, and :class:`MeaningAnalysis`, which holds them:
what :func:`~choiceaudit.instruments.meaning.analyse_meaning_runs` returns and all the report
reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from choiceaudit.instruments.meaning._config import MeaningConfig
from choiceaudit.instruments.meaning._experiment_results import ArmAnalysis
from choiceaudit.instruments.meaning._results import (
    Interval,
    PairedContrast,
)
from choiceaudit.types import Manifest, Skipped

__all__ = [
    "ArmInfo",
    "ExampleRow",
    "MeaningAnalysis",
    "ModelContrast",
    "PairingCheck",
    "SubsetDrift",
]


@dataclass(frozen=True)
class SubsetDrift:
    """Appendix O: one arm's accuracy per family on a subset (another arm's items) against its
    own full set."""

    arm: str
    subset_of: str
    family: str
    full: Interval
    subset: Interval
    drift: float
    outside_full_interval: bool


@dataclass(frozen=True)
class ExampleRow:
    """One item exactly as a model received it (Tables 6, 11, 13): state, keyed options with
    each option's role, the returned probabilities and the chosen key."""

    model: str
    experiment: str
    condition: str
    item_id: str
    language: str
    state: str
    instruction_language: str
    options: tuple[tuple[str, str, str, float], ...]
    choice: str


@dataclass(frozen=True)
class ArmInfo:
    """One arm as given: its label (``display`` disambiguates equal labels with the run
    directory's name), where it came from, its manifest, its row count, and its analysis
    (``None`` for an arm with no rows yet)."""

    label: str
    display: str
    source: str
    manifest: Manifest
    n_rows: int
    analysis: ArmAnalysis | None
    #: the language of this arm's single-language experiments (E1, E2, E3, E6, E7) and, where one
    #: run holds several ladders in a language, the block of the ladder this part carries
    language: str = ""
    block: str = ""
    #: rows whose returned ``choice`` is not the argmax of the returned vector
    n_choice_not_argmax: int = 0

    @property
    def config(self) -> MeaningConfig:
        return MeaningConfig.from_json(self.manifest.config)

    def ladder_accuracy(self) -> dict[str, float]:
        """Plain accuracy (no interval) per ladder family, in the ladder's order."""
        e1 = None if self.analysis is None else self.analysis.e1
        return {} if e1 is None else {f: cell.estimate for f, cell in e1.accuracy.items()}

    def lar_d_lit(self) -> float:
        """LAR on d-lit (NaN without d-lit)."""
        e1 = None if self.analysis is None else self.analysis.e1
        cell = None if e1 is None else e1.lar.get("d-lit")
        return math.nan if cell is None else cell.estimate


@dataclass(frozen=True)
class ModelContrast:
    """Two arms on one ladder family: accuracy (``measure="accuracy"``) or LAR (``"lar"``) of
    ``model_a − model_b`` on the items both answered."""

    model_a: str
    model_b: str
    family: str
    measure: str
    contrast: PairedContrast


@dataclass(frozen=True)
class PairingCheck:
    """On the rows two arms share (by experiment, condition, item), the share with identical gold
    slot, literal slot, state and options; the shares are ``None`` when no row is shared."""

    model_a: str
    model_b: str
    n_shared: int
    gold_slot: float | None = None
    literal_slot: float | None = None
    state: float | None = None
    options: float | None = None


@dataclass(frozen=True)
class MeaningAnalysis:
    """The meaning analysis of several arms answering one plan: every arm (in the order given),
    the paired model contrasts and pairing checks between every pair of analysed arms, the
    ladder's families over all arms in the paper's order, and every analysis skipped, with the
    reason."""

    arms: tuple[ArmInfo, ...]
    model_contrasts: tuple[ModelContrast, ...]
    pairing: tuple[PairingCheck, ...]
    families: tuple[str, ...]
    skipped: tuple[Skipped, ...]
    subset_drift: tuple[SubsetDrift, ...] = ()
    examples: tuple[ExampleRow, ...] = ()

    @property
    def analysed(self) -> tuple[ArmInfo, ...]:
        """The arms with rows (and so an analysis)."""
        return tuple(a for a in self.arms if a.analysis is not None)

    def summary(self) -> list[dict[str, str | int | float]]:
        """Per analysed arm (its display label names the language): ``model``, ``rows``, plain
        accuracy per ladder family and ``"LAR d-lit"`` (NaN without d-lit), and
        ``"choice≠argmax"`` where the server's choice disagreed with its vector, with the
        accuracy per family and LAR read from the returned choice (``"<family> (choice)"``,
        ``"LAR d-lit (choice)"``): what ``choiceaudit run meaning`` prints."""
        out = []
        for a in self.analysed:
            record: dict[str, str | int | float] = {
                "model": a.display,
                "rows": a.n_rows,
                **a.ladder_accuracy(),
                "LAR d-lit": a.lar_d_lit(),
            }
            checks = (
                {} if a.analysis is None or a.analysis.e1 is None else a.analysis.e1.choice_check
            )
            if a.n_choice_not_argmax:
                record["choice≠argmax"] = a.n_choice_not_argmax
                # the headline read from the returned choice, beside the argmax reading above
                for family, check in checks.items():
                    record[f"{family} (choice)"] = check.accuracy_choice
                if "d-lit" in checks:
                    record["LAR d-lit (choice)"] = checks["d-lit"].lar_choice
            out.append(record)
        return out
