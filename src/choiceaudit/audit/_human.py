"""``import human``: a study's responses as one run the analyses read like any chooser's.

Every response is to one frozen rendering (an item under one of its two stored permutations),
so the run's rows are those renderings, keyed by the frozen query ids: the analysis re-renders
the items and finds each row, exactly as for a model's run. A run holds one decision per query,
and several people answer the same rendering, so a row's decision is the people's choice
distribution over its displayed options: ``probs`` = the share of responses on each display slot
(the crowd read as one chooser: its choice is the modal option, an exact tie scored as the mean
coordinate over the tied options — the rule every chooser gets). Each response is kept beside
it in ``aux["responses"]``: the panel id (the only participant identifier recorded), the block,
the display slot chosen and the response times, so the per-participant strategy classification
and the per-response population curve (``analyse_human_runs``) read them from the same run.

A meaning study (the meaning plan's queries served as they are) is imported the same way: one
row per query people answered, the run's ``config`` that of the meaning run the queries came
from (its plan), so ``analyse_meaning_runs`` reads people as one more arm.

The run is written by the one run loop (:func:`~choiceaudit.audit._runs.run_jobs`) with a
scorer that replays the people's decisions, so its manifest, stamps and lock are those of any
run. Attention checks are never rows. A participant who failed one is left out unless
``keep_failed_attention``; the manifest counts every participant left out and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from choiceaudit.audit._runs import ReplayScorer, RunJob, loaded, run_jobs
from choiceaudit.errors import InputError, StoreError
from choiceaudit.human import DB_FILE, StudyRecord, TrialExport, normalise_panel_id, read_study
from choiceaudit.instruments.meaning import MeaningConfig
from choiceaudit.instruments.signalling import SignallingConfig
from choiceaudit.store import Manifest, RunStore
from choiceaudit.types import Decision, Query, RunConfig

__all__ = ["HumanImport", "import_human"]


@dataclass(frozen=True)
class HumanImport:
    """What an import wrote: the run, its rows and responses, who was left out and why."""

    path: Path
    rows: int
    responses: int
    participants: int
    excluded: dict[str, int]
    manifest: Manifest


def _answered_slot(t: TrialExport) -> int:
    """The display slot of a trial that was answered (only those are kept)."""
    slot = t["slot"]
    if slot is None:
        raise ValueError(f"trial {t['position']} of participant {t['panel_id']} has no response")
    return int(slot)


def _kept_trials(
    record: StudyRecord, *, keep_failed_attention: bool, finished_only: bool
) -> tuple[list[TrialExport], int, dict[str, int]]:
    """The answered non-attention trials of the participants kept, how many were kept, and
    how many were left out by reason."""
    by_participant: dict[str, list[TrialExport]] = {}
    for t in record.trials:
        # the rule the app enrolled by and withdrawal applies: an id it could not have
        # enrolled (a study written by an older version) is refused, never merged or dropped
        panel_id = normalise_panel_id(
            t["panel_id"],
            source=str(record.path / DB_FILE),
            row=f"participant k={t['k']}, position {t['position']}",
            field="panel_id",
            hint="a version that did not check ids enrolled it: erase that participant "
            "(choiceaudit withdraw-human STUDY ID --erase, the id exactly as stored, e.g. "
            "$'X\\n' in bash) and import again",
        )
        by_participant.setdefault(panel_id, []).append(t)
    excluded = {"failed an attention check": 0, "not finished": 0, "no response": 0}
    kept: list[TrialExport] = []
    n_kept = 0
    for trials in by_participant.values():
        answered = [t for t in trials if t["slot"] is not None]
        failed = any(
            t["block"] == "attention" and t["slot"] is not None and t["slot"] != t["check_option"]
            for t in trials
        )
        if not answered:
            excluded["no response"] += 1
        elif failed and not keep_failed_attention:
            excluded["failed an attention check"] += 1
        elif finished_only and not trials[0]["finished"]:
            excluded["not finished"] += 1
        else:
            n_kept += 1
            kept.extend(t for t in answered if t["block"] != "attention")
    return kept, n_kept, excluded


def _decisions(
    study: Path | str, queries: Sequence[Query], kept: Sequence[TrialExport]
) -> list[tuple[Query, Decision]]:
    """One row per rendering people answered, in the frozen order: the share of responses on
    each display slot, every response kept in ``aux``."""
    order = {q.id: n for n, q in enumerate(queries)}
    by_id = {q.id: q for q in queries}
    grouped: dict[str, list[TrialExport]] = {}
    for t in kept:
        if t["query_id"] not in by_id:
            raise InputError(
                f"query {t['query_id']} is not one of the study's frozen queries",
                source=str(study),
                row=f"participant {t['panel_id']}, position {t['position']}",
                field="query_id",
            )
        grouped.setdefault(str(t["query_id"]), []).append(t)
    rows: list[tuple[Query, Decision]] = []
    for qid in sorted(grouped, key=order.__getitem__):
        q = by_id[qid]
        responses = grouped[qid]
        counts = np.bincount([_answered_slot(t) for t in responses], minlength=q.n_options)
        aux = {
            "n_responses": len(responses),
            "counts": counts.tolist(),
            "responses": [
                {
                    "panel_id": t["panel_id"],
                    "block": t["block"],
                    "slot": _answered_slot(t),
                    "rt_ms": t["rt_ms"],
                    "server_rt_ms": t["server_rt_ms"],
                }
                for t in responses
            ],
        }
        rows.append((q, Decision(qid, counts / counts.sum(), aux=aux)))
    if not rows:
        raise InputError("the study has no responses to import", source=str(study))
    return rows


def _config(record: StudyRecord, study: Path, label: str, human: dict[str, object]) -> RunConfig:
    frozen = record.items.frozen
    if frozen is None:  # meaning: the configuration of the run the queries came from
        data = {**dict(record.items.source_config), "instrument": "meaning"}
        return MeaningConfig.from_json({**data, "chooser": label, "human": human})
    return SignallingConfig.from_json(
        {
            "instrument": "signalling",
            "items_hash": frozen.hash,
            "items_dir": str(study / "instrument"),
            "norms": frozen.record.get("norms"),
            "seed": frozen.record.get("seed"),
            "n_items": len(frozen.items),
            "conditions": [record.spec.condition],
            "formats": ["V"],
            "label_forms": ["bare"],
            "chooser": label,
            "human": human,
        }
    )


def import_human(
    study: Path | str,
    *,
    out: Path | str,
    keep_failed_attention: bool = False,
    finished_only: bool = False,
    label: str = "people",
    command: Sequence[str] | None = None,
) -> HumanImport:
    """Write the responses of the study directory ``study`` into a new run directory ``out``;
    ``label`` names the arm in tables (give two imports in one report different labels)."""
    if not label.strip():
        raise InputError("the arm's label is empty", field="label")
    record = read_study(study)
    frozen = record.items.frozen
    if RunStore(out).exists() or RunStore(out).part_paths():
        raise StoreError(
            f"{RunStore(out).path} already holds a run; import into a new --out directory"
        )
    kept, n_kept, excluded = _kept_trials(
        record, keep_failed_attention=keep_failed_attention, finished_only=finished_only
    )
    if frozen is not None:
        queries = frozen.render(
            conditions=[record.spec.condition], formats=["V"], label_forms=["bare"]
        )
    else:  # meaning: the plan's queries as the study served them
        queries = [q for item in record.items.items for q in item.renderings]
    rows = _decisions(study, queries, kept)
    where = Path(study).resolve()
    human = {
        "study": record.spec.to_dict(),
        "study_dir": str(where),
        "participants": n_kept,
        "excluded": excluded,
        "keep_failed_attention": keep_failed_attention,
        "finished_only": finished_only,
    }
    scorer = ReplayScorer(
        {q.id: d for q, d in rows}, {"backend": "human", "name": label, "study": str(where)}
    )

    def beside(directory: Path) -> None:
        if frozen is not None:
            frozen.copy_to(directory / "instrument")
        else:
            RunStore(directory).write_planned_queries([q for q, _ in rows])

    job = RunJob(
        path=Path(out),
        label=label,
        config=_config(record, where, label, human),
        queries=[q for q, _ in rows],
        scorer=loaded(scorer),
        on_accepted=beside,
        notes={
            "imported_from": str(where),
            "responses": len(kept),
            "participants": n_kept,
            "excluded": excluded,
        },
    )
    (summary,) = run_jobs([job], chunk_size=max(len(rows), 1), command=command)
    return HumanImport(summary.path, len(rows), len(kept), n_kept, excluded, summary.manifest)
