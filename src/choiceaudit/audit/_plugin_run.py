"""``choiceaudit run <plug-in>``: a plug-in instrument's runs, one per model.

A plug-in instrument (:func:`~choiceaudit.instruments.register_instrument`) plans from options
given as text: its ``plan(**options)`` returns the queries, which every model scores into its
own run directory (``INSTRUMENT.run_dir(out, model)``) through the one run loop, so resume,
progress, locks and stamps are those of every run. The configuration each run records is the
instrument's name and the options it was planned with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from choiceaudit.audit._backend import ProcessSettings
from choiceaudit.audit._precision_gate import DEFAULT_PRECISION_GATE, PrecisionGate
from choiceaudit.audit._runs import JobProgress, RunJob, model_scorer, run_jobs
from choiceaudit.errors import InputError
from choiceaudit.instruments import plugin_instruments
from choiceaudit.types import Query

__all__ = ["run_instrument"]


def run_instrument(
    name: str,
    models: Sequence[str],
    *,
    out: Path | str,
    options: Mapping[str, str] | None = None,
    scorer_options: Mapping[str, Any] | None = None,
    workers: int = 1,
    chunk_size: int = 32,
    command: Sequence[str] | None = None,
    progress: JobProgress | None = None,
    precision_gate: PrecisionGate | None = DEFAULT_PRECISION_GATE,
) -> list[Path]:
    """Plan the plug-in instrument ``name`` with ``options`` and score its queries with each
    model into ``out`` (see the module docstring); return the run directories. A model run in a
    reduced precision is first gated on a sample of the queries (``precision_gate``; ``None``
    opts out, which is recorded)."""
    instrument = plugin_instruments().get(name)
    if instrument is None:
        raise InputError(
            f"{name!r} is not a plug-in instrument (installed: "
            f"{', '.join(plugin_instruments()) or 'none'}); the built-in ones have their own "
            "run commands",
            field="instrument",
        )
    if not models:
        raise InputError("give at least one model", field="models")
    given = dict(options or {})
    try:
        queries = list(instrument.plan(**given))
    except TypeError as exc:  # the plan does not take these options
        raise InputError(f"the {name} plan does not take {sorted(given)} ({exc})") from None
    if not queries or not all(isinstance(q, Query) for q in queries):
        raise InputError(f"the {name} plan returned no queries (or something else) for {given}")
    config = instrument.config_type.from_json({"instrument": name, "plan_options": given})
    jobs = [
        RunJob(
            path=instrument.run_dir(out, model),
            label=model,
            config=config,
            queries=queries,
            scorer=model_scorer(
                model,
                dict(scorer_options or {}),
                None,
                ProcessSettings.of(workers),
                precision=precision_gate,
            ),
        )
        for model in models
    ]
    run_jobs(jobs, chunk_size=chunk_size, command=command, progress=progress)
    return [job.path for job in jobs]
