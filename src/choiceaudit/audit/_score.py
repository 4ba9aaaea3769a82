"""``choiceaudit score``: a JSONL query file scored by one model into one run directory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from choiceaudit.audit._backend import ProcessSettings, RaySettings
from choiceaudit.audit._precision_gate import DEFAULT_PRECISION_GATE, PrecisionGate
from choiceaudit.audit._runs import JobProgress, RunJob, model_scorer, run_jobs
from choiceaudit.audit._scoring import RunSummary, check_chunk_size
from choiceaudit.errors import InputError, ScorerError
from choiceaudit.instruments.scoring import INSTRUMENT, ScoreConfig
from choiceaudit.store import RepairReport, RunStore, read_queries, repair_run_dir

__all__ = ["ScoreFileResult", "repair_run", "score_file"]


@dataclass(frozen=True)
class ScoreFileResult:
    """The scoring session's summary and the input lines that were skipped
    (``(line, field, message)``; empty unless ``skip_invalid``)."""

    summary: RunSummary
    skipped_lines: tuple[tuple[int, str, str], ...]


def score_file(
    queries: Path | str,
    model: str,
    *,
    out: Path | str,
    scorer_options: Mapping[str, object] | None = None,
    chunk_size: int = 32,
    skip_invalid: bool = False,
    command: Sequence[str] | None = None,
    progress: JobProgress | None = None,
    ray: RaySettings | None = None,
    workers: int | ProcessSettings = 1,
    precision_gate: PrecisionGate | None = DEFAULT_PRECISION_GATE,
) -> ScoreFileResult:
    """Read ``queries`` (invalid lines are an :class:`~choiceaudit.errors.InputError` listing
    every one, unless ``skip_invalid``, which records them in the manifest), load ``model`` and
    score into the run directory ``out`` (created or resumed); ``progress(model, done, total)``
    is called after each written part. With ``ray`` (:class:`~choiceaudit.audit.RaySettings`:
    ``"auto"`` or a cluster address, actors, GPUs per actor) the chunks are scored on Ray
    actors, one model each, and the parts are written here. With ``workers`` above one (or
    :class:`~choiceaudit.audit.ProcessSettings`), a causal LM loaded in process is scored by
    that many processes of this machine, each on its share of the cores. A model run in a
    reduced precision (``dtype`` in ``scorer_options``) is first gated on a sample of the
    queries (``precision_gate``; ``None`` opts out, which is recorded): see
    :class:`~choiceaudit.audit.PrecisionGate`.

    >>> import json, pathlib, tempfile
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> line = {"state": "2 + 2 =", "options": ["4", "5"], "meta": {"gold": 0}}
    >>> _ = (tmp / "q.jsonl").write_text(json.dumps(line) + "\\n", encoding="utf-8")
    >>> score_file(tmp / "q.jsonl", "fake", out=tmp / "run").summary.scored
    1
    >>> score_file(tmp / "q.jsonl", "fake", out=tmp / "run").summary.already_done  # resumed
    1
    """
    check_chunk_size(chunk_size)  # refused before a model is loaded
    result = read_queries(queries, skip_invalid=skip_invalid)
    if not result.queries:  # an empty run would look like a finished one
        skipped_note = f" ({len(result.errors)} invalid line(s) skipped)" if result.errors else ""
        raise InputError(
            f"no queries to score{skipped_note}; a query file needs at least one JSON line "
            'such as {"state": "…", "options": ["…", "…"]}',
            source=str(queries),
        )
    job = RunJob(
        path=Path(out),
        label=model,
        config=ScoreConfig(kind="score"),
        queries=INSTRUMENT.plan(result.queries),
        scorer=model_scorer(
            model,
            dict(scorer_options or {}),
            ray,
            ProcessSettings.of(workers),
            precision=precision_gate,
        ),
        skipped={"invalid_input_line": len(result.errors)} if result.errors else {},
        skipped_lines=tuple(result.errors),
    )
    try:
        (summary,) = run_jobs([job], chunk_size=chunk_size, command=command, progress=progress)
    except ScorerError as exc:
        result.locate(exc)  # name the input line the failing query came from
        raise
    return ScoreFileResult(summary, tuple(result.errors))


def repair_run(path: Path | str, *, rebuild_manifest: bool = False) -> RepairReport:
    """Move a run's unreadable parts aside (``<run>/quarantine/``), record them in the manifest
    and remove stale temporaries, so the next resume re-scores the queries those parts held;
    with ``rebuild_manifest``, rebuild an unreadable or missing manifest from the parts where
    they carry what it needs. The report says what still blocks the run and what to do.

    >>> import json, pathlib, tempfile
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (tmp / "q.jsonl").write_text('{"state": "s", "options": ["a", "b"]}\\n')
    >>> _ = score_file(tmp / "q.jsonl", "fake", out=tmp / "run")
    >>> repair_run(tmp / "run").blocked
    ()
    """
    store = RunStore(path)
    if not store.path.is_dir():
        raise InputError(f"{store.path}: no such run directory")
    return repair_run_dir(store, rebuild_manifest=rebuild_manifest)
