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
from some or all arms). The comparisons of two arms are in ``_arm_comparisons``, the plans' skips
and the display labels in ``_arm_plans``.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence

import numpy as np

from choiceaudit.errors import AnalysisError
from choiceaudit.instruments.meaning._analysis import BOOTSTRAP_SEED, N_RESAMPLES
from choiceaudit.instruments.meaning._analysis_results import (
    ArmInfo,
    MeaningAnalysis,
    ModelContrast,
    SubsetDrift,
)
from choiceaudit.instruments.meaning._arm_comparisons import (
    model_contrasts,
    pairing_between,
    subset_drift_between,
)
from choiceaudit.instruments.meaning._arm_plans import (
    EXPERIMENT_NAMES,
    display_labels_of,
    family_order,
    plan_skips,
)
from choiceaudit.instruments.meaning._config import MeaningConfig
from choiceaudit.instruments.meaning._examples import EXAMPLE_CONDITIONS, examples
from choiceaudit.instruments.meaning._language_swap import ladder_language_rows
from choiceaudit.instruments.meaning._rows import MeaningRows, decision_fields
from choiceaudit.instruments.meaning._summary import analyse_meaning, language_analysis
from choiceaudit.types import Arm, Skipped

__all__ = [
    "BILINGUAL",
    "EXAMPLE_CONDITIONS",
    "EXPERIMENT_NAMES",
    "MEANING_META_FIELDS",
    "OPTIONAL_META_FIELDS",
    "analyse_meaning_runs",
    "meaning_rows",
    "split_by_language",
]

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

#: Meta keys read where present (older runs lack them): the plan block, the identity flag of E3
#: and E6 o2 rows, the corpus frequency label (Appendix G) and the seed base.
OPTIONAL_META_FIELDS = ("block", "identity_perturbation", "frequency", "seed_base")


def meaning_rows(arm: Arm) -> MeaningRows:
    """The analysis columns of an arm's rows (see the module docstring)."""
    records: list[dict[str, object]] = []
    for index, (query, decision) in enumerate(arm.rows):
        meta = query.meta
        missing = [key for key in MEANING_META_FIELDS if key not in meta]
        if missing:
            raise AnalysisError(
                f"{arm.source}: row {index} (query {query.id}): meta lacks "
                f"field(s) {missing}; not a meaning run?"
            )
        records.append(
            {
                **{key: meta[key] for key in MEANING_META_FIELDS},
                **{key: meta.get(key) for key in OPTIONAL_META_FIELDS},
                "state": query.state,
                "options": list(query.options),
                "probs": decision.probs.tolist(),
                **decision_fields(query, decision),
            }
        )
    return MeaningRows.from_records(records)


def _display_labels(arms: Sequence[Arm]) -> list[str]:
    """Each arm's label, with its run directory's name where two arms share a label."""
    return display_labels_of([arm.label for arm in arms], [arm.source for arm in arms])


#: experiments whose rows carry both languages as conditions (analysed with the corpus
#: language's part of a run)
BILINGUAL = ("e4", "matrix")


def split_by_language(
    rows: MeaningRows, home: str | None = None
) -> list[tuple[str, str, MeaningRows]]:
    """A run's rows as ``(language, block, rows)`` parts, each analysed on its own so no cell of
    one language is ever shown under another's name.

    E1, E2, E3, E6 and E7 rows go to the part of their language; E4 and the matrix (both
    languages by construction) to the part of ``home`` (the corpus language; default the
    language of their first row). Where one language holds several ladder (E1) blocks — the
    commercial design's English ladder on the literal pool and its ceiling on the full English
    pool — each ladder block is its own part (``block`` names it) and the language's other rows
    join the first; otherwise ``block`` is ``""``."""
    experiment = rows.experiment.tolist()
    language = rows.language.tolist()
    blocks = rows.blocks.tolist()
    bilingual = [i for i, e in enumerate(experiment) if e in BILINGUAL]
    if home is None:
        home = language[bilingual[0]] if bilingual else language[0]
    lang_of = [
        home if e in BILINGUAL else lang for e, lang in zip(experiment, language, strict=True)
    ]
    ladder_blocks: dict[str, list[str]] = {}
    for e, lang, block in zip(experiment, lang_of, blocks, strict=True):
        if e == "e1" and block not in ladder_blocks.setdefault(lang, []):
            ladder_blocks[lang].append(block)
    keys: list[tuple[str, str]] = []
    for e, lang, block in zip(experiment, lang_of, blocks, strict=True):
        several = len(ladder_blocks.get(lang, [])) > 1
        if not several:
            keys.append((lang, ""))
        else:
            keys.append((lang, block if e == "e1" else ladder_blocks[lang][0]))
    order = list(dict.fromkeys(keys))
    key_array = np.array([f"{lang}\x1f{block}" for lang, block in keys])
    return [(lang, block, rows.select(key_array == f"{lang}\x1f{block}")) for lang, block in order]


def _part_label(label: str, language: str, block: str) -> str:
    return f"{label} [{language}, {block}]" if block else f"{label} [{language}]"


def analyse_meaning_runs(
    arms: Sequence[Arm],
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    hook_stopwords: Mapping[str, frozenset[str]] | None = None,
) -> MeaningAnalysis:
    """Analyse every arm (split by language, :func:`split_by_language`), contrast every pair of
    parts in one language from different arms, pair-check every pair of parts of different
    arms, list the skips (see the module docstring). Arms are kept in the order given;
    ``model_a`` of a contrast comes first. Each part's display label names its language."""
    infos: list[ArmInfo] = []
    parts: list[tuple[int, ArmInfo, MeaningRows]] = []
    skipped: list[Skipped] = []
    typed = [a.with_config(MeaningConfig) for a in arms]
    for index, (arm, label) in enumerate(zip(typed, _display_labels(arms), strict=True)):
        for info, rows, skips in _analyse_arm(
            arm, label, n_resamples=n_resamples, seed=seed, hook_stopwords=hook_stopwords
        ):
            infos.append(info)
            if rows is not None and info.analysis is not None:
                parts.append((index, info, rows))
            skipped.extend(s for s in skips if s not in skipped)
    analysed = [info for _, info, _ in parts]
    skipped.extend(plan_skips(analysed))
    pairs = [
        (i, j)
        for i, j in itertools.combinations(range(len(parts)), 2)
        if parts[i][0] != parts[j][0]
    ]
    contrasts: list[ModelContrast] = []
    drift: list[SubsetDrift] = []
    for i, j in pairs:
        (_, info_a, rows_a), (_, info_b, rows_b) = parts[i], parts[j]
        if info_a.language != info_b.language:
            continue  # a model contrast holds the language fixed
        found, left_out = model_contrasts(
            info_a.display, rows_a, info_b.display, rows_b, n_resamples=n_resamples, seed=seed
        )
        skipped.extend(s for s in left_out if s not in skipped)
        contrasts.extend(
            dataclasses.replace(c, contrast=c.contrast.adjusted(len(found))) for c in found
        )
        drift.extend(subset_drift_between(info_a, rows_a, info_b, rows_b, n_resamples, seed))
        drift.extend(subset_drift_between(info_b, rows_b, info_a, rows_a, n_resamples, seed))
    pairing = [
        pairing_between(parts[i][1].display, parts[i][2], parts[j][1].display, parts[j][2])
        for i, j in pairs
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
        families=tuple(family_order(families)),
        skipped=tuple(skipped),
        subset_drift=tuple(drift),
        examples=tuple(examples([(info.display, rows) for _, info, rows in parts])),
    )


def _analyse_arm(
    arm: Arm[MeaningConfig],
    label: str,
    *,
    n_resamples: int,
    seed: int,
    hook_stopwords: Mapping[str, frozenset[str]] | None,
) -> list[tuple[ArmInfo, MeaningRows | None, list[Skipped]]]:
    if not arm.rows:
        info = ArmInfo(arm.label, label, arm.source, arm.manifest, 0, None)
        return [(info, None, [Skipped(label, "the run has no rows yet")])]
    all_rows = meaning_rows(arm)
    home = arm.config.corpus_language
    swapped = False
    out: list[tuple[ArmInfo, MeaningRows | None, list[Skipped]]] = []
    for language, block, rows in split_by_language(all_rows, None if home is None else str(home)):
        display = _part_label(label, language, block)
        skipped: list[Skipped] = []
        try:
            analysis = analyse_meaning(
                rows,
                n_resamples=n_resamples,
                seed=seed,
                hook_stopwords=hook_stopwords,
                corpus_language=None if home is None else str(home),
            )
        except AnalysisError as exc:
            # The order audit needs an item seen under all 24 orderings; an interrupted run may
            # have none. Everything else is still analysed.
            if not (rows.experiment == "e7").any():
                raise
            skipped.append(Skipped(f"{display}: {EXPERIMENT_NAMES['e7']}", str(exc)))
            rows = rows.select(rows.experiment != "e7")
            analysis = analyse_meaning(
                rows,
                n_resamples=n_resamples,
                seed=seed,
                hook_stopwords=hook_stopwords,
                corpus_language=None if home is None else str(home),
            )
        if not swapped and analysis.e4 is None and language == (home or language):
            swapped = True  # E4 goes with the corpus language's (first) part, as E4 rows do
            swap = ladder_language_rows(all_rows, language)
            if swap is not None:
                e4 = language_analysis(
                    swap[0], n_resamples=n_resamples, seed=seed, corpus_language=language
                )
                analysis = dataclasses.replace(
                    analysis, e4=dataclasses.replace(e4, built_from=swap[1])
                )
        if analysis.e1 is not None:
            skipped.extend(
                Skipped(f"{display}: {EXPERIMENT_NAMES['e1']} d-rand − {family}", reason)
                for family, reason in analysis.e1.not_contrasted.items()
            )
        for key, part in (("e4", analysis.e4), ("matrix", analysis.matrix)):
            if part is not None and part.not_contrasted is not None:
                what = f"{display}: {EXPERIMENT_NAMES[key]} contrast"
                skipped.append(Skipped(what, part.not_contrasted))
        if analysis.e3 is not None:
            skipped.extend(
                Skipped(f"{display}: {EXPERIMENT_NAMES['e3']} {variant} − v0", reason)
                for variant, reason in analysis.e3.not_contrasted.items()
            )
        if arm.status != "complete":
            skipped.append(
                Skipped(
                    label,
                    f"run status is {arm.status!r} "
                    f"({len(all_rows)} of {arm.config.n_queries or '?'} queries scored); "
                    "figures use the rows present",
                )
            )
        n_bad = int((~rows.choice_is_argmax).sum())
        if n_bad:
            skipped.append(
                Skipped(
                    f"{display}: returned choice",
                    f"on {n_bad} of {len(rows)} rows the server's choice is not the argmax of "
                    "its probabilities; accuracy and LAR are shown on both (choice check table)",
                )
            )
        info = ArmInfo(
            arm.label,
            display,
            arm.source,
            arm.manifest,
            len(rows),
            analysis,
            language=language,
            block=block,
            n_choice_not_argmax=n_bad,
        )
        out.append((info, rows, skipped))
    return out
