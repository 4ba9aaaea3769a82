"""Choosing a confidence cut-point on one slice and reading it on every other (the rule,
the objectives, the item bootstrap and the cross-fitted estimate: the package docstring)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from choiceaudit import stats
from choiceaudit.errors import AnalysisError, InputError
from choiceaudit.gate._types import (
    MAX_CURVE_POINTS,
    SLICE_KEYS,
    CurvePoints,
    DefinitionGate,
    GateAnalysis,
    GateSpec,
    Interval,
    OutOfSample,
    SliceResult,
)
from choiceaudit.metrics import (
    ArmInfo,
    GoldRows,
    gold_rows,
)
from choiceaudit.types import Arm, FloatArray, IntArray, Skipped

__all__ = ["analyse_gate", "resolve_slice"]


_TOL = 1e-12

#: Upper bound on the elements of one block of bootstrap draws.
_BLOCK_ELEMENTS = 1 << 22


def resolve_slice(rows: Sequence[GoldRows], text: str) -> tuple[str, str]:
    """``key=value`` as given, or the meta field holding the bare ``value`` (looked up in
    :data:`SLICE_KEYS` first, then in every field; ambiguous or absent is an error)."""
    key, sep, value = text.partition("=")
    if sep:
        key, value = key.strip(), value.strip()
        if not key or not value:
            raise InputError(f"slice {text!r} is not key=value")
        return key, value
    value = text.strip()
    found: set[str] = set()
    for r in rows:
        for meta in r.meta:
            for k, v in meta.items():
                if v is not None and not isinstance(v, dict | list) and str(v) == value:
                    found.add(k)
    if not found:
        raise InputError(f"no meta field of any row has the value {value!r}; give key=value")
    for k in SLICE_KEYS:
        if k in found:
            return k, value
    if len(found) > 1:
        raise InputError(
            f"{value!r} is a value of several meta fields ({', '.join(sorted(found))}); "
            "give key=value"
        )
    return found.pop(), value


def _filter(rows: GoldRows, where: Sequence[tuple[str, str]]) -> GoldRows:
    mask = np.ones(len(rows), dtype=bool)
    for key, value in where:
        mask &= np.array([v == value for v in rows.field(key)], dtype=bool)
    return rows.select(mask)


# -- choosing a cut-point -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Sorted:
    """A slice sorted by confidence, descending, with items as 0..n_items-1."""

    conf: FloatArray
    correct: FloatArray
    item: IntArray
    n_items: int

    @classmethod
    def of(cls, conf: FloatArray, correct: FloatArray, items: npt.NDArray[np.str_]) -> _Sorted:
        order = np.argsort(-conf, kind="stable")
        _, ids = np.unique(items, return_inverse=True)
        ids = ids.reshape(-1).astype(np.int64)
        return cls(conf[order], correct[order], ids[order], int(ids.max()) + 1)


def _choose(cum_w: FloatArray, cum_y: FloatArray, total: float, spec: GateSpec) -> int:
    """Index of the last accepted tie block, or -1 for accept-nothing."""
    if spec.objective == "cost_ratio":
        cost = (spec.value * (cum_w - cum_y) + (total - cum_w)) / total
        best = int(np.argmin(cost))
        return best if cost[best] < 1.0 - _TOL else -1
    accuracy = cum_y / cum_w
    feasible = np.flatnonzero((cum_w > 0) & (accuracy >= spec.required_accuracy - _TOL))
    return int(feasible[-1]) if feasible.size else -1


def _threshold(s: _Sorted, weights: FloatArray, spec: GateSpec) -> float | None:
    """The cut-point chosen on the rows of ``s`` with positive weight (weights: bootstrap draw
    counts or a fold mask); ``None`` = accept nothing."""
    keep = weights > 0
    c = s.conf[keep]
    if c.size == 0:
        return None
    w = weights[keep]
    ends = np.flatnonzero(np.append(c[1:] != c[:-1], True))
    cum_w = np.cumsum(w)[ends]
    cum_y = np.cumsum(s.correct[keep] * w)[ends]
    j = _choose(cum_w, cum_y, float(cum_w[-1]), spec)
    return None if j < 0 else float(c[ends[j]])


def _draws(n_items: int, spec: GateSpec, rng: np.random.Generator) -> Iterator[IntArray]:
    """Row blocks of the (n_resamples, n_items) matrix of how often each item is drawn per
    resample (one ``rng.integers(0, n_items, (n_resamples, n_items))`` draw, consumed in blocks
    so memory stays flat; the numbers do not depend on the block size)."""
    block = max(1, _BLOCK_ELEMENTS // max(n_items, 1))
    for start in range(0, spec.n_resamples, block):
        rows = min(block, spec.n_resamples - start)
        idx = rng.integers(0, n_items, size=(rows, n_items))
        flat = (np.arange(rows, dtype=np.int64)[:, None] * n_items + idx).ravel()
        yield np.bincount(flat, minlength=rows * n_items).reshape(rows, n_items)


def _interval(values: FloatArray, estimate: float, spec: GateSpec) -> Interval:
    finite = values[np.isfinite(values)]
    alpha = (1.0 - spec.level) / 2.0
    if finite.size:
        low, high = np.quantile(finite, [alpha, 1.0 - alpha])
    else:
        low = high = math.nan
    return Interval(
        estimate=float(estimate),
        low=float(low),
        high=float(high),
        n_resamples=int(values.size),
        n_undefined=int(values.size - finite.size),
    )


def _cut_point_interval(s: _Sorted, tau: float | None, spec: GateSpec) -> Interval | None:
    if tau is None:
        return None
    taus: list[float] = []
    for block in _draws(s.n_items, spec, np.random.default_rng(spec.seed)):
        for counts in block:
            t = _threshold(s, counts[s.item].astype(np.float64), spec)
            taus.append(math.nan if t is None else t)
    return _interval(np.array(taus, dtype=np.float64), tau, spec)


def _cross_fit(s: _Sorted, spec: GateSpec) -> OutOfSample | None:
    folds = min(spec.folds, s.n_items)
    if folds < 2:
        return None
    rng = np.random.default_rng(spec.seed + 1)
    accuracy, coverage, cost = [], [], []
    for _ in range(spec.repeats):
        fold = (rng.permutation(s.n_items) % folds)[s.item]
        accepted = np.zeros(s.conf.size, dtype=bool)
        for k in range(folds):
            tau = _threshold(s, (fold != k).astype(np.float64), spec)
            if tau is not None:
                accepted |= (fold == k) & (s.conf >= tau)
        n_acc = float(accepted.sum())
        n_cor = float(s.correct[accepted].sum())
        accuracy.append(n_cor / n_acc if n_acc else math.nan)
        coverage.append(n_acc / s.conf.size)
        cost.append((spec.value * (n_acc - n_cor) + (s.conf.size - n_acc)) / s.conf.size)
    acc = np.array(accuracy)
    mean_acc = float(np.nanmean(acc)) if np.isfinite(acc).any() else math.nan
    return OutOfSample(
        method=(
            f"split-by-item cross-fitting: {folds} folds of items, the cut-point chosen on "
            f"{folds - 1} and applied to the held-out fold, held-out rows pooled; mean over "
            f"{spec.repeats} random fold assignments"
        ),
        folds=folds,
        repeats=spec.repeats,
        accuracy=mean_acc,
        accuracy_min=float(np.nanmin(acc)) if np.isfinite(acc).any() else math.nan,
        accuracy_max=float(np.nanmax(acc)) if np.isfinite(acc).any() else math.nan,
        coverage=float(np.mean(coverage)),
        cost=float(np.mean(cost)) if spec.objective == "cost_ratio" else None,
        # nothing accepted out of sample reaches no accuracy, so no target is met
        target_met=bool(math.isfinite(mean_acc) and mean_acc >= spec.required_accuracy - _TOL),
    )


# -- what a fixed cut-point delivers ------------------------------------------------------------


def _status(accuracy: Interval | None, spec: GateSpec) -> str:
    if accuracy is None:
        return "nothing accepted"
    target = spec.required_accuracy - _TOL
    if accuracy.estimate >= target:
        return "met"
    if math.isfinite(accuracy.high) and accuracy.high < target:
        return "missed (interval below target)"
    return "missed"


def _fit_status(fit: SliceResult, out_of_sample: OutOfSample | None) -> str:
    """The fit slice's status, on the one definition of "met" every output shows: the
    out-of-sample estimate reaches the target (``target_met``). In sample the cut-point is
    chosen to reach it, so the in-sample accuracy says nothing; only where there are too few
    items to cross-fit is the in-sample status kept, and labelled so."""
    if fit.accuracy is None:  # the cut-point accepts nothing: the gate answers nothing
        return fit.status
    if out_of_sample is None:
        return f"{fit.status} (in sample: too few items to cross-fit)"
    if not math.isfinite(out_of_sample.accuracy):
        return "nothing accepted (out of sample)"
    return "met" if out_of_sample.target_met else "missed (out of sample)"


def _slice_result(
    key: str,
    value: str,
    *,
    is_fit: bool,
    conf: FloatArray,
    correct: FloatArray,
    items: npt.NDArray[np.str_],
    tau: float | None,
    fit_coverage: float,
    spec: GateSpec,
) -> tuple[SliceResult, CurvePoints]:
    accepted = conf >= tau if tau is not None else np.zeros(conf.size, dtype=bool)
    _, ids = np.unique(items, return_inverse=True)
    ids = ids.reshape(-1)
    n_items = int(ids.max()) + 1
    per_item = np.stack(
        [
            np.bincount(ids, minlength=n_items).astype(np.float64),
            np.bincount(ids, weights=accepted.astype(np.float64), minlength=n_items),
            np.bincount(ids, weights=correct * accepted, minlength=n_items),
        ]
    )
    sums = np.vstack(
        [
            block.astype(np.float64) @ per_item.T
            for block in _draws(n_items, spec, np.random.default_rng(spec.seed))
        ]
    )
    rows_b, acc_b, cor_b = sums[:, 0], sums[:, 1], sums[:, 2]
    n_rows, n_acc, n_cor = (float(v) for v in per_item.sum(axis=1))
    coverage = _interval(acc_b / rows_b, n_acc / n_rows, spec)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = _interval(cor_b / acc_b, n_cor / n_acc, spec) if n_acc else None
    cost = None
    if spec.objective == "cost_ratio":
        c = spec.value
        cost = _interval(
            (c * (acc_b - cor_b) + (rows_b - acc_b)) / rows_b,
            (c * (n_acc - n_cor) + (n_rows - n_acc)) / n_rows,
            spec,
        )
    result = SliceResult(
        key=key,
        value=value,
        is_fit=is_fit,
        n_rows=int(n_rows),
        n_items=n_items,
        accuracy_all=float(correct.mean()),
        coverage=coverage,
        accuracy=accuracy,
        cost=cost,
        coverage_shift=float(n_acc / n_rows - fit_coverage),
        status=_status(accuracy, spec),
        aurc=stats.aurc(conf, correct),
        aurc_random=stats.random_gate_aurc(correct),
        augrc=stats.augrc(conf, correct),
        augrc_random=stats.random_gate_augrc(correct),
    )
    curve = stats.risk_coverage_curve(conf, correct)
    n = curve.coverage.size
    keep = np.unique(np.linspace(0, n - 1, min(n, MAX_CURVE_POINTS)).round().astype(int))
    points = CurvePoints(
        value=value,
        coverage=tuple(float(curve.coverage[i]) for i in keep),
        selective_risk=tuple(float(curve.selective_risk[i]) for i in keep),
        random_gate=result.aurc_random,
        operating_coverage=float(n_acc / n_rows),
        operating_risk=None if accuracy is None else 1.0 - accuracy.estimate,
    )
    return result, points


def _gate(
    rows: GoldRows,
    labels: list[str | None],
    key: str,
    value: str,
    definition: str,
    conf: FloatArray,
    spec: GateSpec,
) -> DefinitionGate:
    lab = np.array([v if v is not None else "\0" for v in labels], dtype=object)
    fit_mask = lab == value
    s = _Sorted.of(conf[fit_mask], rows.correct[fit_mask], rows.item[fit_mask])
    tau = _threshold(s, np.ones(s.conf.size), spec)
    fit_coverage = float((conf[fit_mask] >= tau).mean()) if tau is not None else 0.0
    values = [value, *sorted({str(v) for v in labels if v is not None} - {value})]
    slices, curves = [], []
    for v in values:
        mask = lab == v
        result, curve = _slice_result(
            key,
            v,
            is_fit=v == value,
            conf=conf[mask],
            correct=rows.correct[mask],
            items=rows.item[mask],
            tau=tau,
            fit_coverage=fit_coverage,
            spec=spec,
        )
        slices.append(result)
        curves.append(curve)
    out_of_sample = _cross_fit(s, spec)
    slices[0] = replace(slices[0], status=_fit_status(slices[0], out_of_sample))
    return DefinitionGate(
        model=rows.model,
        definition=definition,
        cut_point=tau,
        cut_point_interval=_cut_point_interval(s, tau, spec),
        fit=slices[0],
        out_of_sample=out_of_sample,
        slices=tuple(slices),
        curves=tuple(curves),
    )


def analyse_gate(arms: Sequence[Arm], spec: GateSpec) -> GateAnalysis:
    """The gate of every model (runs with one label pooled) under every definition of
    ``spec`` (see the module docstring). Models without rows in the fit slice, and definitions
    a model does not define on every row (``conf_head``), are listed in ``skipped``."""
    if not arms:
        raise InputError("give at least one run")
    models = [_filter(r, spec.where) for r in gold_rows(arms)]
    if not any(len(r) for r in models):
        where = " and ".join(f"{k}={v}" for k, v in spec.where)
        raise AnalysisError("no row carries a gold option" + (f" where {where}" if where else ""))
    key, value = resolve_slice(models, spec.fit)
    gates: list[DefinitionGate] = []
    skipped: list[Skipped] = []
    excluded = {r.model: dict(r.excluded) for r in models}
    for rows in models:
        labels = rows.field(key)
        missing = sum(1 for v in labels if v is None)
        if missing:
            excluded[rows.model][f"no meta field {key!r} (in no slice)"] = missing
        if sum(1 for v in labels if v == value) == 0:
            skipped.append(Skipped("gate", f"{rows.model}: no gold-bearing row has {key}={value}"))
            continue
        for definition in spec.definitions:
            conf = rows.confidence(definition)
            if conf is None:
                have = int((~np.isnan(rows.conf_head)).sum())
                skipped.append(
                    Skipped(
                        f"gate ({definition})",
                        f"{rows.model}: the model reports a confidence head on {have} of "
                        f"{len(rows)} rows; conf_head needs it on every row",
                    )
                )
                continue
            gates.append(_gate(rows, labels, key, value, definition, conf, spec))
    infos = tuple(ArmInfo(a.label, a.source, a.manifest, len(a.columns())) for a in arms)
    return GateAnalysis(
        spec=spec,
        fit_key=key,
        fit_value=value,
        arms=infos,
        gates=tuple(gates),
        skipped=tuple(skipped),
        excluded={m: v for m, v in excluded.items() if v},
    )
