"""The gate's specification and its typed results: what to fit (:class:`GateSpec`) and what
the fitted cut-point delivers on every slice, per model and confidence definition."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from choiceaudit.errors import InputError
from choiceaudit.metrics import (
    CONFIDENCE_DEFINITIONS,
    N_RESAMPLES,
    SEED,
    ArmInfo,
)
from choiceaudit.types import Skipped

__all__ = [
    "GATE_SCHEMA",
    "MAX_CURVE_POINTS",
    "SLICE_KEYS",
    "CurvePoints",
    "DefinitionGate",
    "GateAnalysis",
    "GateSpec",
    "Interval",
    "Objective",
    "OutOfSample",
    "SliceResult",
]


Objective = Literal["target_accuracy", "max_risk", "cost_ratio"]

#: The thresholds file's format name; a service checks it before reading the file.
GATE_SCHEMA = "choiceaudit.gate/1"

#: Meta fields a bare slice value is looked up in first (then every other field).
SLICE_KEYS = ("family", "language", "condition", "experiment", "task", "run")

#: Risk–coverage points kept per curve.
MAX_CURVE_POINTS = 101


@dataclass(frozen=True)
class GateSpec:
    """What to fit: the objective and its value, the fit slice (``key=value`` or a bare value),
    filters applied before slicing (``where``), the definitions and the resampling settings."""

    objective: Objective
    value: float
    fit: str
    where: tuple[tuple[str, str], ...] = ()
    definitions: tuple[str, ...] = CONFIDENCE_DEFINITIONS
    n_resamples: int = N_RESAMPLES
    seed: int = SEED
    level: float = 0.95
    folds: int = 5
    repeats: int = 10

    def __post_init__(self) -> None:
        value = float(self.value)
        object.__setattr__(self, "value", value)
        if self.objective == "target_accuracy" and not 0.0 < value <= 1.0:
            raise InputError(f"target accuracy must lie in (0, 1], got {value}")
        if self.objective == "max_risk" and not 0.0 <= value < 1.0:
            raise InputError(f"max risk must lie in [0, 1), got {value}")
        if self.objective == "cost_ratio" and not (value > 0.0 and math.isfinite(value)):
            raise InputError(f"cost ratio must be a positive number, got {value}")
        if self.objective not in ("target_accuracy", "max_risk", "cost_ratio"):
            raise InputError(f"unknown objective {self.objective!r}")
        definitions = tuple(self.definitions)
        unknown = [d for d in definitions if d not in CONFIDENCE_DEFINITIONS]
        if unknown or not definitions or len(set(definitions)) != len(definitions):
            raise InputError(
                f"confidence definitions must be distinct names from "
                f"{', '.join(CONFIDENCE_DEFINITIONS)}; got {list(definitions)}"
            )
        object.__setattr__(self, "definitions", definitions)
        object.__setattr__(self, "where", tuple((str(k), str(v)) for k, v in self.where))
        if not str(self.fit).strip():
            raise InputError("the fit slice is empty")
        if self.n_resamples < 2 or self.folds < 2 or self.repeats < 1:
            raise InputError("need n_resamples >= 2, folds >= 2 and repeats >= 1")
        if not 0.0 < self.level < 1.0:
            raise InputError(f"level must lie in (0, 1), got {self.level}")
        if self.seed < 0:  # numpy's generators take a non-negative seed
            raise InputError(f"must be 0 or more, got {self.seed}", field="seed")

    @property
    def required_accuracy(self) -> float:
        """The accuracy the accepted rows must reach (cost ratio: the break-even ``1 − 1/C``)."""
        if self.objective == "target_accuracy":
            return self.value
        if self.objective == "max_risk":
            return 1.0 - self.value
        return 1.0 - 1.0 / self.value

    def describe(self) -> str:
        if self.objective == "cost_ratio":
            return (
                f"cost ratio {self.value:g} (an accepted error costs {self.value:g} escalations; "
                f"break-even accuracy {self.required_accuracy:.3f})"
            )
        if self.objective == "max_risk":
            return f"max risk {self.value:g} (accuracy >= {self.required_accuracy:.3f})"
        return f"target accuracy {self.value:g}"


@dataclass(frozen=True)
class Interval:
    """A point value with its percentile bootstrap interval over items; ``n_undefined``
    resamples had no value (nothing accepted, or no feasible cut-point) and were left out."""

    estimate: float
    low: float
    high: float
    n_resamples: int
    n_undefined: int = 0


@dataclass(frozen=True)
class SliceResult:
    """What the fixed cut-point delivers on one slice (``is_fit``: the slice it was chosen on,
    in-sample). ``accuracy`` is ``None`` when the cut-point accepts nothing there."""

    key: str
    value: str
    is_fit: bool
    n_rows: int
    n_items: int
    accuracy_all: float
    coverage: Interval
    accuracy: Interval | None
    cost: Interval | None
    coverage_shift: float
    status: str
    aurc: float
    aurc_random: float
    augrc: float
    augrc_random: float

    @property
    def advantage(self) -> float:
        """``aurc_random / aurc``: how many times lower the gated risk area is than a random
        gate's (the meaning paper's 5.1× → 1.4×); below 1 the gate is inverted."""
        return self.aurc_random / self.aurc if self.aurc > 0 else math.inf

    @property
    def missed(self) -> bool:
        return self.status.startswith("missed")


@dataclass(frozen=True)
class OutOfSample:
    """The cross-fitted estimate on the fit slice (see the module docstring)."""

    method: str
    folds: int
    repeats: int
    accuracy: float
    accuracy_min: float
    accuracy_max: float
    coverage: float
    cost: float | None
    target_met: bool


@dataclass(frozen=True)
class CurvePoints:
    """One slice's risk–coverage curve (at most 101 points) and the cut-point's operating
    point on it (``None`` when it accepts nothing)."""

    value: str
    coverage: tuple[float, ...]
    selective_risk: tuple[float, ...]
    random_gate: float
    operating_coverage: float
    operating_risk: float | None


@dataclass(frozen=True)
class DefinitionGate:
    """The gate of one model under one confidence definition."""

    model: str
    definition: str
    cut_point: float | None
    cut_point_interval: Interval | None
    fit: SliceResult
    out_of_sample: OutOfSample | None
    slices: tuple[SliceResult, ...]
    curves: tuple[CurvePoints, ...]

    @property
    def feasible(self) -> bool:
        return self.cut_point is not None

    @property
    def n_missed(self) -> int:
        return sum(1 for s in self.slices if s.missed and not s.is_fit)


@dataclass(frozen=True)
class GateAnalysis:
    """Every model's gates, and what could not be computed."""

    spec: GateSpec
    fit_key: str
    fit_value: str
    arms: tuple[ArmInfo, ...]
    gates: tuple[DefinitionGate, ...]
    skipped: tuple[Skipped, ...] = ()
    excluded: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


# -- slices -------------------------------------------------------------------------------------
