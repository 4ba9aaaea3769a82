"""Where the demo's minutes go: a per-phase timing record.

The demo is the first thing a new user runs, and its length is set by a handful of phases whose
shares change with the machine: opening each model (the one-time GGUF conversion apart from the
load itself), scoring each model, each instrument's analysis and the report. :class:`PhaseTimer`
sees them through the run loop's own progress callback, so no backend or instrument has to know
it is timed: a job's first progress report comes once its scorer is open (so everything since
the previous phase is the open), and its report of ``total`` rows ends its scoring.

Each phase records the CPU time beside its wall time: on a shared machine the wall time says how
long a user waited, the CPU time what the phase costs (every thread of this process and of the
worker processes scoring for it counts, so two busy threads give up to twice the wall time).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from choiceaudit.audit._precision_gate import gates_this_process
from choiceaudit.audit._processes import worker_cpu_seconds
from choiceaudit.audit._runs import JobProgress
from choiceaudit.files import atomic_write_text, make_dir
from choiceaudit.scorers import conversions_this_process

__all__ = ["TIMING_FILE", "Phase", "PhaseTimer"]

#: The file the demo writes its record to, beside the runs.
TIMING_FILE = "timing.json"


@dataclass(frozen=True)
class Phase:
    """One timed phase: ``name`` (e.g. ``signalling · smollm2: scoring``), its ``kind``
    (``convert``, ``gate``, ``load``, ``score``, ``analyse``, ``report``), its wall-clock ``seconds``,
    the seconds since the timer started when it ended (``ended_at``), the rows it scored and
    the process CPU seconds it used (``cpu_seconds``)."""

    name: str
    kind: str
    seconds: float
    ended_at: float
    rows: int | None = None
    cpu_seconds: float = 0.0


def _cpu_with_workers() -> float:
    return time.process_time() + worker_cpu_seconds()


class PhaseTimer:
    """Records phases in the order they end; ``clock`` (wall) and ``cpu_clock`` (CPU time:
    by default this process's and that of the worker processes scoring for it) are injectable so
    tests need no sleep."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        cpu_clock: Callable[[], float] | None = None,
    ) -> None:
        self._clock = clock
        self._cpu_clock = cpu_clock or _cpu_with_workers
        self._start = clock()
        self._mark = self._start
        self._cpu_start = self._cpu_clock()
        self._cpu_mark = self._cpu_start
        self._open: set[str] = set()
        self._scored: set[str] = set()
        self._conversions = len(conversions_this_process())
        self._gates = len(gates_this_process())
        self.phases: list[Phase] = []

    def elapsed(self) -> float:
        """Seconds since the timer started."""
        return self._clock() - self._start

    def cpu_elapsed(self) -> float:
        """Process CPU seconds since the timer started."""
        return self._cpu_clock() - self._cpu_start

    def _end(self, name: str, kind: str, rows: int | None = None) -> None:
        now, cpu = self._clock(), self._cpu_clock()
        self.phases.append(
            Phase(name, kind, now - self._mark, now - self._start, rows, cpu - self._cpu_mark)
        )
        self._mark, self._cpu_mark = now, cpu

    def lap(self, name: str, kind: str) -> None:
        """End the phase ``name``: everything since the previous phase ended."""
        self._end(name, kind)

    @contextmanager
    def phase(self, name: str, kind: str) -> Iterator[None]:
        """Time the block as the phase ``name`` (what ran before it is not counted in it)."""
        self._mark, self._cpu_mark = self._clock(), self._cpu_clock()
        yield
        self._end(name, kind)

    def _opened(self, name: str) -> None:
        """A scorer is open: split the time since the last phase into conversion, precision
        gate and load (the first two report their wall seconds only, so the CPU time is split in
        that proportion)."""
        now, cpu = self._clock(), self._cpu_clock()
        converted = conversions_this_process()[self._conversions :]
        self._conversions += len(converted)
        gated = gates_this_process()[self._gates :]
        self._gates += len(gated)
        for seconds, label, kind in (
            (sum(s for _, s in converted), "convert GGUF", "convert"),
            (sum(s for _, s in gated), "precision gate", "gate"),
        ):
            part = min(seconds, now - self._mark)
            if part > 0:
                share = (cpu - self._cpu_mark) * part / (now - self._mark)
                ended = self._mark + part - self._start
                self.phases.append(Phase(f"{name}: {label}", kind, part, ended, None, share))
                self._mark += part
                self._cpu_mark += share
        self._end(f"{name}: open", "load")

    def progress(self, prefix: str, inner: JobProgress | None = None) -> JobProgress:
        """A run-loop progress callback that times each job under ``prefix`` and passes every
        report on to ``inner`` (the progress bar)."""

        def advance(label: str, done: int, total: int) -> None:
            name = f"{prefix} · {label}"
            if name not in self._open:
                self._open.add(name)
                self._opened(name)
            if done >= total and name not in self._scored:
                self._scored.add(name)
                self._end(f"{name}: scoring", "score", total)
            if inner is not None:
                inner(label, done, total)

        return advance

    def totals(self, *, cpu: bool = False) -> dict[str, float]:
        """Seconds by kind (wall, or process CPU with ``cpu``), in the order kinds first occur."""
        out: dict[str, float] = {}
        for p in self.phases:
            out[p.kind] = out.get(p.kind, 0.0) + (p.cpu_seconds if cpu else p.seconds)
        return out

    def lines(self) -> list[str]:
        """The record as printed: each phase of a second or more (wall, then CPU), then the
        totals by kind."""
        out = [
            f"{p.seconds:7.1f} s {p.cpu_seconds:7.1f} s CPU  {p.name}"
            + (f" ({p.rows} rows)" if p.rows else "")
            for p in self.phases
            if p.seconds >= 1
        ]
        cpu = self.totals(cpu=True)
        totals = ", ".join(
            f"{kind} {seconds:.0f} s ({cpu[kind]:.0f} s CPU)"
            for kind, seconds in self.totals().items()
        )
        out.append(
            f"by kind: {totals}; total {self.elapsed():.0f} s ({self.cpu_elapsed():.0f} s CPU)"
        )
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "total_seconds": self.elapsed(),
            "total_cpu_seconds": self.cpu_elapsed(),
            "by_kind": self.totals(),
            "by_kind_cpu": self.totals(cpu=True),
            "phases": [
                {
                    "name": p.name,
                    "kind": p.kind,
                    "seconds": p.seconds,
                    "cpu_seconds": p.cpu_seconds,
                    "ended_at": p.ended_at,
                    **({"rows": p.rows} if p.rows is not None else {}),
                }
                for p in self.phases
            ],
        }

    def write(self, directory: Path) -> Path:
        """Write the record as ``timing.json`` in ``directory``; return its path."""
        path = directory / TIMING_FILE
        make_dir(directory)
        atomic_write_text(path, json.dumps(self.to_json(), indent=1) + "\n")
        return path
