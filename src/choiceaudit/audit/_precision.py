"""``choiceaudit check precision``: the precision gate of the signalling paper (§I-J).

A causal LM scored in a reduced precision (bfloat16, float16) gives scores with a noise floor
that must be measured, not assumed. The gate scores one sample of queries twice through the
ordinary engine — in the reduced precision and in float32, batched as a run batches them — and
reports, per scoring rule, the distribution of |Δ score| per option and the share of queries
whose chosen option set flips: the noise floor. Then it checks float32 itself on a smaller
sample against a float64 reference computed by an independent path
(:func:`choiceaudit.scorers.reference_scores`: one unpadded, uncached forward per string of a
float64 copy of the model): there the distance must collapse to rounding, and a distance above
:data:`REFERENCE_TOLERANCE` is a bug, not a precision effect, since a bug would survive float32
at full magnitude.

The sample is the first ``n_queries`` of a query file, or of the queries a frozen signalling item
set renders, or — given neither — of a small signalling item set built on the Lancaster norms
(offline). Every query is scored as given.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from choiceaudit.errors import InputError
from choiceaudit.metrics import RuleShift, rule_shifts
from choiceaudit.scorers import load_scorer
from choiceaudit.types import Decision, FloatArray, Query

__all__ = [
    "REDUCED_DTYPES",
    "REFERENCE_TOLERANCE",
    "PrecisionReport",
    "check_precision",
    "measure_precision",
]

#: The largest |Δ summed log-probability| per option between float32 and the float64 reference
#: that counts as rounding. The signalling paper measures 1.9e-6 in float32 against a noise
#: floor of about 0.24 in float16; a padding, position or mask bug moves scores by whole units.
#: 1e-3 sits three orders above float32's rounding on long strings and two below float16's
#: floor.
REFERENCE_TOLERANCE = 1e-3
#: the precisions the gate measures against float32
REDUCED_DTYPES = ("bfloat16", "float16")


@dataclass(frozen=True)
class PrecisionReport:
    """What the gate measured: the sample, the reduced precision's shift from float32 per rule
    (the noise floor), float32's shift from the float64 reference per rule, and whether that
    stayed within ``tolerance`` (``reference_ok``; False is a bug to find before any number of
    the model is read)."""

    model: str
    dtype: str
    source: str
    n_queries: int
    floor: tuple[RuleShift, ...]
    n_reference: int
    reference: tuple[RuleShift, ...]
    tolerance: float
    #: why float32 was not checked against float64 ("" when it was): the backend has no
    #: float64 reference path (a causal LM asked for a key reads another distribution)
    reference_skipped: str = ""

    @property
    def reference_max_abs(self) -> float:
        return max((s.max_abs for s in self.reference), default=0.0)

    @property
    def reference_ok(self) -> bool:
        """Float32 agrees with float64 within ``tolerance`` on every option, each finite (True
        when the check was skipped: see ``reference_skipped``)."""
        finite = all(s.n_not_finite == 0 for s in self.reference)
        return finite and self.reference_max_abs <= self.tolerance


def _scores(decisions: Sequence[Decision]) -> list[Mapping[str, FloatArray]]:
    return [{"probs": d.probs, **d.scores} for d in decisions]


def _sample(
    queries: Path | str | None, items: Path | str | None, n: int
) -> tuple[list[Query], str]:
    from choiceaudit.instruments.signalling import load_instrument
    from choiceaudit.store import read_queries

    if queries is not None and items is not None:
        raise InputError("give a query file or an item set, not both", field="--queries")
    if queries is not None:
        return list(read_queries(queries).queries)[:n], str(queries)
    if items is not None:
        return load_instrument(items).render()[:n], str(items)
    from choiceaudit.audit._signalling_build import build_instrument

    with tempfile.TemporaryDirectory() as tmp:
        frozen = build_instrument("lancaster", out=Path(tmp) / "items", n_items=max(4, n // 8))
        sample = frozen.render()[:n]
    return sample, "signalling items built on the lancaster norms"


def check_precision(
    model: str,
    *,
    dtype: str = "bfloat16",
    queries: Path | str | None = None,
    items: Path | str | None = None,
    n_queries: int = 64,
    n_reference: int = 8,
    scorer_options: Mapping[str, Any] | None = None,
    tolerance: float = REFERENCE_TOLERANCE,
) -> PrecisionReport:
    """Measure ``model``'s noise floor in ``dtype`` against float32 on ``n_queries`` queries,
    and check float32 against the float64 reference on ``n_reference`` of them (see the module
    docstring). ``scorer_options`` are the model's other ``-o`` options (device, batching).

    >>> report = check_precision("smollm2", dtype="bfloat16", n_queries=4, n_reference=2)
    >>> report.reference_ok, [s.rule for s in report.floor]
    (True, ['probs', 'sum', 'mean', 'pmi'])
    """
    if not 0 < tolerance < float("inf"):
        raise InputError(f"--tolerance must be above 0 and finite, got {tolerance!r}")
    if dtype not in REDUCED_DTYPES:
        raise InputError(f"--dtype {dtype!r}: use {' or '.join(REDUCED_DTYPES)}", field="--dtype")
    if n_queries < 1 or not 0 < n_reference <= n_queries:
        raise InputError(
            f"need 1 <= --n-reference <= --n, got {n_reference} and {n_queries}", field="--n"
        )
    options = dict(scorer_options or {})
    if "dtype" in options:
        raise InputError("give the precision as --dtype, not -o dtype=", field="-o")
    sample, source = _sample(queries, items, n_queries)
    if not sample:
        raise InputError(f"{source} holds no query to measure")
    return measure_precision(
        model,
        sample,
        dtype=dtype,
        source=source,
        n_reference=n_reference,
        scorer_options=options,
        tolerance=tolerance,
    )


def measure_precision(
    model: str,
    sample: Sequence[Query],
    *,
    dtype: str,
    source: str,
    n_reference: int,
    scorer_options: Mapping[str, Any],
    tolerance: float = REFERENCE_TOLERANCE,
) -> PrecisionReport:
    """The gate's two measurements on ``sample`` as given (checked arguments; ``scorer_options``
    without ``dtype``): the noise floor of ``dtype`` against float32 on every query, and float32
    against the float64 reference on the first ``n_reference``."""
    full = load_scorer(model, dtype="float32", **scorer_options)
    reduced = load_scorer(model, dtype=dtype, **scorer_options)
    fp32 = full.score(sample)
    floor = rule_shifts(_scores(fp32), _scores(reduced.score(sample)))
    del reduced
    from choiceaudit.scorers import has_reference, reference_scores

    skipped = "" if has_reference(full) else f"{type(full).__name__} has no float64 reference path"
    checked = [] if skipped else list(sample[:n_reference])
    reference = (
        rule_shifts(
            [{k: v for k, v in s.items() if k != "probs"} for s in _scores(fp32[: len(checked)])],
            reference_scores(full, checked),
        )
        if checked
        else ()
    )
    return PrecisionReport(
        model=model,
        dtype=dtype,
        source=source,
        n_queries=len(sample),
        floor=floor,
        n_reference=len(checked),
        reference=reference,
        tolerance=tolerance,
        reference_skipped=skipped,
    )
