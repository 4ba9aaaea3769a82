"""``import human``: a study's responses as one run the analyses read like any chooser's
(issue 15 item 3).

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

Attention checks are never rows. A participant who failed one is left out unless
``keep_failed_attention``; the manifest counts every participant left out and why.
"""

from __future__ import annotations

import datetime as dt
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from choiceaudit.errors import InputError, StoreError
from choiceaudit.files import canonical_hash, canonical_json
from choiceaudit.human import read_study
from choiceaudit.scorers import resume_identity
from choiceaudit.store import PartStamp, RunStore, write_queries
from choiceaudit.types import Decision, Query

__all__ = ["HumanImport", "import_human"]


@dataclass(frozen=True)
class HumanImport:
    """What an import wrote: the run, its rows and responses, who was left out and why."""

    path: Path
    rows: int
    responses: int
    participants: int
    excluded: dict[str, int]
    manifest: dict[str, Any]


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def import_human(
    study: Path | str,
    out: Path | str,
    *,
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
    spec = record.spec
    store = RunStore(out)
    if store.exists() or store.part_paths():
        raise StoreError(f"{store.path} already holds a run; import into a new --out directory")
    by_participant: dict[str, list[dict[str, Any]]] = {}
    for t in record.trials:
        by_participant.setdefault(str(t["panel_id"]), []).append(t)
    excluded = {"failed an attention check": 0, "not finished": 0, "no response": 0}
    kept: list[dict[str, Any]] = []
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
    if frozen is not None:
        queries = frozen.render(conditions=[spec.condition], formats=["V"], label_forms=["bare"])
    else:  # meaning: the plan's queries as the study served them
        queries = [q for item in record.items.items for q in item.renderings]
    order = {q.id: n for n, q in enumerate(queries)}
    by_id = {q.id: q for q in queries}
    grouped: dict[str, list[dict[str, Any]]] = {}
    for t in kept:
        if t["query_id"] not in by_id:
            raise InputError(
                f"query {t['query_id']} is not one of the study's frozen queries",
                source=str(study),
                row=f"participant {t['panel_id']}, position {t['position']}",
                field="query_id",
            )
        grouped.setdefault(str(t["query_id"]), []).append(t)
    rows: list[tuple[int, Query, Decision]] = []
    for qid in sorted(grouped, key=order.__getitem__):
        q = by_id[qid]
        responses = grouped[qid]
        counts = np.bincount([int(t["slot"]) for t in responses], minlength=q.n_options)
        aux = {
            "n_responses": len(responses),
            "counts": counts.tolist(),
            "responses": [
                {
                    "panel_id": t["panel_id"],
                    "block": t["block"],
                    "slot": int(t["slot"]),
                    "rt_ms": t["rt_ms"],
                    "server_rt_ms": t["server_rt_ms"],
                }
                for t in responses
            ],
        }
        rows.append((order[qid], q, Decision(qid, counts / counts.sum(), aux=aux)))
    if not rows:
        raise InputError("the study has no responses to import", source=str(study))
    human = {
        "study": spec.to_dict(),
        "study_dir": str(Path(study).resolve()),
        "participants": n_kept,
        "excluded": excluded,
        "keep_failed_attention": keep_failed_attention,
        "finished_only": finished_only,
    }
    config: dict[str, Any]
    if frozen is not None:
        config = {
            "instrument": "signalling",
            "items_hash": frozen.hash,
            "items_dir": str(Path(study).resolve() / "instrument"),
            "norms": frozen.record.get("norms"),
            "seed": frozen.record.get("seed"),
            "n_items": len(frozen.items),
            "conditions": [spec.condition],
            "formats": ["V"],
            "label_forms": ["bare"],
            "chooser": label,
            "human": human,
        }
    else:
        config = {
            **dict(record.items.source_config),
            "instrument": "meaning",
            "chooser": label,
            "human": human,
        }
    scorer = {"backend": "human", "name": label, "study": str(Path(study).resolve())}
    stamp = PartStamp(
        canonical_json(resume_identity(scorer)),
        canonical_hash(config),
    )
    with store.lock():
        if frozen is not None:
            frozen.copy_to(store.path / "instrument")
        else:
            write_queries(store.path / "queries.jsonl", [q for _, q, _ in rows])
        store.write_part(rows, stamp=stamp)
        from choiceaudit import __version__

        manifest = {
            "choiceaudit_version": __version__,
            "created": _now(),
            "updated": _now(),
            "config": config,
            "scorer": scorer,
            "status": "complete",
            "rows": len(rows),
            "parts": 1,
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "command": list(command) if command is not None else list(sys.argv),
            "sessions": [
                {
                    "started": _now(),
                    "ended": _now(),
                    "outcome": "complete",
                    "imported_from": str(Path(study).resolve()),
                    "responses": len(kept),
                    "participants": n_kept,
                    "excluded": excluded,
                }
            ],
        }
        store.write_manifest(manifest)
    return HumanImport(store.path, len(rows), len(kept), n_kept, excluded, manifest)
