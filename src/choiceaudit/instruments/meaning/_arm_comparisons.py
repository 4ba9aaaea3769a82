"""Two analysed arms against each other, on the rows both answered: the paired model contrasts
on the ladder and on the o4 control, the pairing check (Appendix R, "Pairing": did they ask the
same questions), and subset drift (Appendix O: one arm's accuracy on the other's item subset).
"""

from __future__ import annotations

from choiceaudit.errors import AnalysisError
from choiceaudit.instruments.meaning._analysis import paired_contrast
from choiceaudit.instruments.meaning._analysis_results import (
    ArmInfo,
    ModelContrast,
    PairingCheck,
    SubsetDrift,
)
from choiceaudit.instruments.meaning._arm_plans import family_order
from choiceaudit.instruments.meaning._audits import pairing_check, subset_drift
from choiceaudit.instruments.meaning._rows import MeaningRows
from choiceaudit.types import Skipped

__all__ = ["model_contrasts", "pairing_between", "subset_drift_between"]


def model_contrasts(
    label_a: str,
    rows_a: MeaningRows,
    label_b: str,
    rows_b: MeaningRows,
    *,
    n_resamples: int,
    seed: int,
) -> tuple[list[ModelContrast], list[Skipped]]:
    """Per ladder family both arms have: accuracy (and LAR where the family carries the literal
    gloss) of a − b on shared items, and accuracy on the o4 control (§5.3: McNemar between the
    arms under o4; family ``e6 o4``). A contrast that cannot be computed (no shared item: the
    arms ran different plans) is returned as a ``Skipped`` naming both arms and the family."""
    ladder_a = rows_a.where(experiment="e1")
    ladder_b = rows_b.where(experiment="e1")
    families = family_order(sorted(set(ladder_a.family.tolist()) & set(ladder_b.family.tolist())))
    out: list[ModelContrast] = []
    skipped: list[Skipped] = []
    for family in families:
        cell_a, cell_b = ladder_a.where(family=family), ladder_b.where(family=family)
        outcomes = ["correct"] + (["captured"] if (cell_a.literal_slot >= 0).any() else [])
        for outcome in outcomes:
            try:
                c = paired_contrast(
                    cell_a, cell_b, outcome=outcome, n_resamples=n_resamples, seed=seed
                )
            except AnalysisError as e:  # no shared item: different plans
                skipped.append(
                    Skipped(f"model contrast {label_a} − {label_b} ({family}, {outcome})", str(e))
                )
                continue
            measure = "accuracy" if outcome == "correct" else "lar"
            out.append(ModelContrast(label_a, label_b, family, measure, c))
    o4_a = rows_a.select(
        (rows_a.experiment == "e6") & (rows_a.condition == "o4") & ~rows_a.identity_rows
    )
    o4_b = rows_b.select(
        (rows_b.experiment == "e6") & (rows_b.condition == "o4") & ~rows_b.identity_rows
    )
    if len(o4_a) and len(o4_b):
        try:
            c = paired_contrast(o4_a, o4_b, n_resamples=n_resamples, seed=seed)
            out.append(ModelContrast(label_a, label_b, "e6 o4", "accuracy", c))
        except AnalysisError as e:
            skipped.append(Skipped(f"model contrast {label_a} − {label_b} (e6 o4)", str(e)))
    return out, skipped


def pairing_between(
    label_a: str, rows_a: MeaningRows, label_b: str, rows_b: MeaningRows
) -> PairingCheck:
    """The pairing check of two arms' parts, named by their display labels."""
    return pairing_check(rows_a, rows_b, model_a=label_a, model_b=label_b)


def subset_drift_between(
    full: ArmInfo, full_rows: MeaningRows, sub: ArmInfo, sub_rows: MeaningRows, n: int, seed: int
) -> list[SubsetDrift]:
    """Appendix O: where ``sub``'s ladder items are a proper subset of ``full``'s, ``full``'s
    accuracy per family on those items against its own full set."""
    a = full_rows.where(experiment="e1")
    b = sub_rows.where(experiment="e1")
    items_a, items_b = set(a.item_id.tolist()), set(b.item_id.tolist())
    if not items_b or not items_b < items_a:
        return []
    drift = subset_drift(
        a, sorted(items_b), arm=full.display, subset_of=sub.display, n_resamples=n, seed=seed
    )
    return list(drift.values())
