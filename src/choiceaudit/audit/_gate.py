"""``choiceaudit gate``: a confidence cut-point chosen on one slice of stored runs, read on every
other slice, written as a thresholds file a service can load.

:func:`gate_runs` opens the runs (any instrument whose rows carry a canonical ``gold`` in their
meta: plain scoring runs, imports, meaning runs), calls
:func:`choiceaudit.gate.analyse_gate` and, with ``out``, writes
:func:`~choiceaudit.gate.thresholds_document` as JSON (atomically).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from choiceaudit.errors import InputError
from choiceaudit.files import atomic_write_text, make_dir
from choiceaudit.gate import (
    GateAnalysis,
    GateSpec,
    ThresholdsDocument,
    analyse_gate,
    thresholds_document,
)
from choiceaudit.store import stored_arm

__all__ = ["GateResult", "ThresholdsFile", "gate_runs"]


class ThresholdsFile(ThresholdsDocument):
    """The thresholds file as written: the gate's document and what made it (when, which
    version and command, the resampling that chose the cut-points)."""

    created: str
    choiceaudit_version: str
    command: list[str] | None
    n_resamples: int
    seed: int


@dataclass(frozen=True)
class GateResult:
    """The analysis, the thresholds document and where it was written (``None``: not written)."""

    analysis: GateAnalysis
    document: ThresholdsFile
    path: Path | None


def gate_runs(
    run_dirs: Sequence[Path | str],
    spec: GateSpec,
    *,
    out: Path | str | None = None,
    command: Sequence[str] | None = None,
) -> GateResult:
    """Open ``run_dirs``, fit the gate of ``spec`` on every model they hold, and write the
    thresholds file to ``out`` when given (see the module docstring).

    >>> import json, pathlib, tempfile
    >>> from choiceaudit.audit import score_file
    >>> from choiceaudit.gate import GateSpec
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> lines = [{"state": f"q{i}", "options": ["a", "b", "c"],
    ...           "meta": {"item_id": str(i), "gold": i % 3, "task": "ab"[i % 2]}}
    ...          for i in range(60)]
    >>> _ = (tmp / "q.jsonl").write_text("".join(json.dumps(x) + "\\n" for x in lines))
    >>> _ = score_file(tmp / "q.jsonl", "fake", out=tmp / "run")
    >>> spec = GateSpec("target_accuracy", 0.5, "task=a", n_resamples=200, repeats=2)
    >>> gate_runs([tmp / "run"], spec, out=tmp / "thresholds.json").path.name
    'thresholds.json'
    """
    if not run_dirs:
        raise InputError("give at least one run directory")
    arms = [stored_arm(path) for path in run_dirs]
    analysis = analyse_gate(arms, spec)
    from choiceaudit import __version__

    document: ThresholdsFile = {
        **thresholds_document(analysis),
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "choiceaudit_version": __version__,
        "command": list(command) if command is not None else None,
        "n_resamples": spec.n_resamples,
        "seed": spec.seed,
    }
    path = None
    if out is not None:
        path = Path(out)
        make_dir(path.parent)
        text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)
        atomic_write_text(path, text + "\n")
    return GateResult(analysis, document, path)
