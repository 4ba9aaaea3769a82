"""The precision gate of a run: a causal LM run in a reduced precision (``-o dtype=bfloat16`` or
``float16``) measures its own noise floor before its first row is scored.

The gate takes an evenly spaced sample of the run's own queries (every k-th, so a run ordered
by experiment or language is sampled across all of it), scores it in the run's precision and in
float32, and checks float32 on the first few against the float64 reference
(:func:`~choiceaudit.audit.measure_precision`). The result is stored in the run's manifest under
``precision_gate`` — beside the configuration, not in it, so it never changes the configuration
hash — and the report shows it beside every table of that model. Two outcomes stop the run
before anything is written:

* float32 disagrees with float64 beyond the tolerance: a bug (a wrong mask, position or padding
  survives float32 at full magnitude), never a precision effect;
* the largest share of choices the reduced precision flips under any rule is above
  ``max_flip_rate`` — a threshold of this tool, not of the paper, which reports its flip rate
  without one — unless the caller accepts the flips (recorded as ``accepted_flips``).

A resumed run keeps the result its first session stored. Opting out (``precision_gate=None``,
``--no-precision-gate``) is recorded as such, so a report can say the floor was not measured.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from choiceaudit.audit._precision import (
    REDUCED_DTYPES,
    REFERENCE_TOLERANCE,
    PrecisionReport,
    measure_precision,
)
from choiceaudit.errors import InputError, ScorerError
from choiceaudit.metrics import RuleShift, floor_shown
from choiceaudit.store import RunStore
from choiceaudit.types import Query

__all__ = [
    "DEFAULT_PRECISION_GATE",
    "MAX_FLIP_RATE",
    "PrecisionGate",
    "PrecisionGateError",
    "gate_sample",
    "gate_summary",
    "gates_this_process",
    "precision_record",
    "precision_summaries",
    "run_precision_gate",
]

#: The largest share of chosen options a reduced precision may flip (under its worst rule)
#: before a run is refused. Ours: the signalling paper reports its flip rate without a
#: threshold. One choice in twenty moves an accuracy by up to five points, more than the
#: intervals the instruments report on their default item counts.
MAX_FLIP_RATE = 0.05


@dataclass(frozen=True)
class PrecisionGate:
    """How a run in a reduced precision gates itself: ``n_queries`` of its queries measured
    against float32, the first ``n_reference`` of those checked against float64 within
    ``tolerance``, refused when a rule flips more than ``max_flip_rate`` of the choices unless
    ``accept_flips``. Pass ``precision_gate=None`` to an entry point to opt out (recorded)."""

    n_queries: int = 64
    #: fewer than ``check precision``'s 8: the float64 forward (one per option string, no
    #: sharing) costs more than the rest of the gate, and the float32 scores it checks come
    #: from the whole batched sample, so padding and packing are exercised either way
    n_reference: int = 4
    max_flip_rate: float = MAX_FLIP_RATE
    accept_flips: bool = False
    tolerance: float = REFERENCE_TOLERANCE

    def __post_init__(self) -> None:
        if self.n_queries < 1 or not 0 < self.n_reference <= self.n_queries:
            raise InputError(
                f"need 1 <= n_reference <= n_queries, got {self.n_reference} and {self.n_queries}",
                field="precision_gate",
            )
        if not 0 <= self.max_flip_rate <= 1:
            raise InputError(
                f"a share between 0 and 1, got {self.max_flip_rate!r}", field="--max-flip-rate"
            )
        if not 0 < self.tolerance < math.inf:
            raise InputError(
                f"above 0 and finite, got {self.tolerance!r}", field="precision_gate.tolerance"
            )


#: the gate every run in a reduced precision runs unless told otherwise
DEFAULT_PRECISION_GATE = PrecisionGate()


class PrecisionGateError(ScorerError):
    """A run refused by its precision gate; ``record`` is what the gate measured (the
    manifest's ``precision_gate`` had the run gone ahead)."""

    def __init__(self, message: str, record: Mapping[str, Any]) -> None:
        super().__init__(message)
        self.record = dict(record)


def gate_sample(queries: Sequence[Query], n: int) -> list[Query]:
    """``n`` queries spread evenly over ``queries`` (all of them when there are fewer), in
    their order: positions ``round(i * (len - 1) / (n - 1))``."""
    if len(queries) <= n:
        return list(queries)
    if n == 1:
        return [queries[0]]
    step = (len(queries) - 1) / (n - 1)
    return [queries[round(i * step)] for i in range(n)]


def _number(value: float) -> float | None:
    # JSON has no NaN: a distance over no finite option is stored as null
    return value if math.isfinite(value) else None


def _shift_json(shift: RuleShift) -> dict[str, Any]:
    return {
        "rule": shift.rule,
        "n_queries": shift.n_queries,
        "n_options": shift.n_options,
        "median_abs": _number(shift.median_abs),
        "p95_abs": _number(shift.p95_abs),
        "max_abs": _number(shift.max_abs),
        "flips": shift.flips,
        "flip_rate": _number(shift.flip_rate),
        "n_not_finite": shift.n_not_finite,
    }


def precision_record(report: PrecisionReport, gate: PrecisionGate) -> dict[str, Any]:
    """The manifest's ``precision_gate`` for a measured run: the sample, each rule's noise
    floor and flips, the float64 check, the worst rule's flip rate and the threshold it met."""
    worst = max(report.floor, key=lambda s: s.flip_rate, default=None)
    return {
        "gated": True,
        "dtype": report.dtype,
        "against": "float32",
        "sample": report.source,
        "n_queries": report.n_queries,
        "floor": [_shift_json(s) for s in report.floor],
        "n_reference": report.n_reference,
        "reference": [_shift_json(s) for s in report.reference],
        "reference_max_abs": (
            None if report.reference_skipped else _number(report.reference_max_abs)
        ),
        "tolerance": report.tolerance,
        "reference_ok": report.reference_ok,
        **({"reference_skipped": report.reference_skipped} if report.reference_skipped else {}),
        "largest_flip_rate": None if worst is None else worst.flip_rate,
        "largest_flip_rule": None if worst is None else worst.rule,
        "max_flip_rate": gate.max_flip_rate,
        "accepted_flips": gate.accept_flips,
    }


def _verdict(record: Mapping[str, Any], model: str) -> None:
    dtype = record["dtype"]
    if not record["reference_ok"]:
        largest = record["reference_max_abs"]
        by = "a score that is not finite" if largest is None else f"{largest:.3g}"
        raise PrecisionGateError(
            f"precision gate: {model} in float32 differs from the float64 reference by {by} "
            f"on {record['n_reference']} queries (tolerance {record['tolerance']:g}, or a score "
            "not finite): that is a bug in the scoring path "
            "(mask, positions, padding), not a precision effect; `choiceaudit check precision` "
            "shows it per rule. Report it; do not read this model's numbers",
            record,
        )
    rate = record["largest_flip_rate"]
    if rate is not None and rate > record["max_flip_rate"] and not record["accepted_flips"]:
        flips = next(s for s in record["floor"] if s["rule"] == record["largest_flip_rule"])
        raise PrecisionGateError(
            f"precision gate: {model} in {dtype} flips {flips['flips']} of "
            f"{flips['n_queries']} choices ({rate:.1%}) under the {flips['rule']} rule against "
            f"float32, above the threshold {record['max_flip_rate']:.1%}. Run in float32 "
            "(leave out -o dtype=), raise --max-flip-rate, or accept the flips with "
            "--accept-precision-flips (recorded in the manifest)",
            record,
        )


#: ``(model, seconds)`` of every gate this process measured, so a caller timing a run's open
#: (the demo's per-phase record) can tell the gate apart from the model's load
_GATES: list[tuple[str, float]] = []


def gates_this_process() -> tuple[tuple[str, float], ...]:
    """``(model, seconds)`` of each precision gate this process measured (refused ones too)."""
    return tuple(_GATES)


def run_precision_gate(
    model: str,
    options: Mapping[str, Any],
    queries: Sequence[Query],
    gate: PrecisionGate | None,
    *,
    stored: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The ``precision_gate`` record of a run of ``model`` with ``options`` on ``queries``:
    ``None`` when the run is not in a reduced precision, the ``stored`` record of a resumed
    run, a record of the opt-out when ``gate`` is None, else the gate measured now (raising
    :class:`PrecisionGateError` when it refuses the run)."""
    dtype = options.get("dtype")
    if dtype not in REDUCED_DTYPES:
        return None
    if stored is not None:
        return dict(stored)
    if gate is None:
        return {"gated": False, "dtype": dtype, "opted_out": True}
    sample = gate_sample(queries, gate.n_queries)
    if not sample:
        return {"gated": False, "dtype": dtype, "opted_out": False, "no_queries": True}
    started = time.monotonic()
    try:
        return _measured(model, options, queries, sample, gate)
    finally:
        _GATES.append((model, time.monotonic() - started))


def _measured(
    model: str,
    options: Mapping[str, Any],
    queries: Sequence[Query],
    sample: Sequence[Query],
    gate: PrecisionGate,
) -> dict[str, Any]:
    dtype = str(options["dtype"])
    report = measure_precision(
        model,
        sample,
        dtype=dtype,
        source=f"{len(sample)} of the run's {len(queries)} queries, evenly spaced",
        n_reference=min(gate.n_reference, len(sample)),
        scorer_options={k: v for k, v in options.items() if k != "dtype"},
        tolerance=gate.tolerance,
    )
    record = precision_record(report, gate)
    _verdict(record, model)
    return record


def gate_summary(record: Mapping[str, Any]) -> str:
    """One line of what a run's ``precision_gate`` record says, for a terminal: the sample, the
    noise floor of the summed log-probability (or the first rule measured), the largest flip
    rate against the threshold, and float32 against float64."""
    dtype = record.get("dtype")
    if not record.get("gated"):
        why = "opted out" if record.get("opted_out") else "no queries to sample"
        return f"{dtype}: not gated ({why})"
    shown = floor_shown(list(record.get("floor", ())))

    def num(key: str) -> str:
        value = shown.get(key)
        return "–" if value is None else f"{value:.3g}"

    rate, limit = record.get("largest_flip_rate"), record.get("max_flip_rate")
    flips = "–" if rate is None else f"{rate:.1%} ({record.get('largest_flip_rule')})"
    if limit is not None:
        flips += f", threshold {limit:.1%}"
        if rate is not None and rate > limit and record.get("accepted_flips"):
            flips += ", accepted"
    n_reference, reference = record.get("n_reference"), record.get("reference_max_abs")
    if not n_reference:
        checked = "no float64 path"
    elif reference is None:
        checked = f"not finite on {n_reference}"
    else:
        checked = f"{reference:.2g} on {n_reference}"
    return (
        f"{dtype} on {record.get('n_queries')} queries: |Δ {shown.get('rule', '–')}| median "
        f"{num('median_abs')}, p95 {num('p95_abs')}, max {num('max_abs')}; flips {flips}; "
        f"float32 against float64 {checked}"
    )


def precision_summaries(runs: Sequence[Path]) -> list[tuple[Path, str]]:
    """``(run directory, gate_summary)`` of each run in ``runs`` whose manifest holds a
    precision-gate record (a run in a reduced precision), in the order given: what the
    commands print when they end. A run in float32 has none, so it gives no line:

    >>> import pathlib, tempfile
    >>> from choiceaudit.audit import score_file
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (tmp / "q.jsonl").write_text('{"state": "2 + 2 =", "options": ["4", "5"]}\\n')
    >>> precision_summaries([score_file(tmp / "q.jsonl", "fake", out=tmp / "run").summary.path])
    []

    A run of ``-m smollm2 -o dtype=bfloat16`` gives a line such as ``bfloat16 on 64 queries:
    |Δ sum| median 0.073, p95 0.301, max 0.499; flips 21.9% (pmi), threshold 5.0%, accepted;
    float32 against float64 3.2e-05 on 4``."""
    out = []
    for run in runs:
        record = RunStore(run).manifest().precision_gate
        if record is not None:
            out.append((Path(run), gate_summary(record)))
    return out
