"""The metric registry behind test_stats_common: every public statistic, the family of inputs
it takes, how to relabel its options, and which part of its output belongs to items."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from stats_helpers import full_sweep, random_probs

import choiceaudit.stats as S

Inputs = dict[str, Any]


# ---------------------------------------------------------------------------------------------
# Input families: how to draw inputs, which keys are row-aligned, and how options relabel.


@dataclass(frozen=True)
class Family:
    make: Callable[[np.random.Generator, int, int, bool], Inputs]
    rows: tuple[str, ...]  # keys whose first axis is the item axis
    floats: tuple[str, ...] = ()  # keys that can carry a NaN
    probs: tuple[str, ...] = ()  # keys holding probability rows (last axis = options)
    relabel: Callable[[Inputs, np.ndarray], Inputs] | None = None  # options permuted by sigma


def _labels_from(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.array([rng.choice(len(p), p=p) for p in probs])


def _make_probs_labels(rng: np.random.Generator, n: int, k: int, ties: bool) -> Inputs:
    probs = random_probs(rng, n, k, grid=4 if ties else None)
    return {"probs": probs, "labels": _labels_from(probs, rng)}


def _relabel_probs_labels(inp: Inputs, sigma: np.ndarray) -> Inputs:
    # New option j is old option sigma[j]: move the columns and relabel gold to match.
    inv = np.argsort(sigma)
    return {**inp, "probs": inp["probs"][:, sigma], "labels": inv[inp["labels"]]}


def _make_conf_correct(rng: np.random.Generator, n: int, k: int, ties: bool) -> Inputs:
    conf = rng.integers(0, 3, n) / 2.0 if ties else rng.random(n)
    return {"confidence": conf, "correct": (rng.random(n) < 0.6).astype(float)}


def _make_choice_pair(rng: np.random.Generator, n: int, k: int, ties: bool) -> Inputs:
    a = rng.integers(0, k, n)
    b = np.where(rng.random(n) < 0.5, a, rng.integers(0, k, n))
    return {"choice_a": a, "choice_b": b, "n_options": k}


def _relabel_choices(inp: Inputs, sigma: np.ndarray) -> Inputs:
    inv = np.argsort(sigma)
    return {**inp, "choice_a": inv[inp["choice_a"]], "choice_b": inv[inp["choice_b"]]}


def _make_correct(rng: np.random.Generator, n: int, k: int, ties: bool) -> Inputs:
    return {"correct": (rng.random(n) < 0.6).astype(float)}


def _make_probs_pair(rng: np.random.Generator, n: int, k: int, ties: bool) -> Inputs:
    grid = 4 if ties else None
    return {"p": random_probs(rng, n, k, grid=grid), "q": random_probs(rng, n, k, grid=grid)}


def _relabel_pair(inp: Inputs, sigma: np.ndarray) -> Inputs:
    return {"p": inp["p"][:, sigma], "q": inp["q"][:, sigma]}


def _make_probs(rng: np.random.Generator, n: int, k: int, ties: bool) -> Inputs:
    return {"probs": random_probs(rng, n, k, grid=4 if ties else None)}


def _make_correct_pair(rng: np.random.Generator, n: int, k: int, ties: bool) -> Inputs:
    return {
        "correct_a": (rng.random(n) < 0.6).astype(float),
        "correct_b": (rng.random(n) < 0.4).astype(float),
    }


def _make_values(rng: np.random.Generator, n: int, k: int, ties: bool) -> Inputs:
    # Two renderings per item, labelled by item id: the clustered bootstrap's own use case.
    values = rng.integers(0, 3, 2 * n) / 2.0 if ties else rng.normal(size=2 * n)
    return {"values": values, "clusters": np.repeat(np.arange(n) * 7 + 3, 2)}


def _make_xy(rng: np.random.Generator, n: int, k: int, ties: bool) -> Inputs:
    x = np.arange(n + 3, dtype=float) + rng.random(n + 3) * (0.0 if ties else 0.5)
    return {
        "x": x,
        "y": x * 0.5 + rng.normal(size=n + 3),
        "clusters": np.arange(n + 3)[::-1].copy(),
    }


def _make_pvalues(rng: np.random.Generator, n: int, k: int, ties: bool) -> Inputs:
    return {"p_values": rng.random(n)}


def _make_sweep(rng: np.random.Generator, n: int, k: int, ties: bool) -> Inputs:
    k = min(k, 4)  # keep the full k! sweep small
    sweep = full_sweep(k)
    perms = np.stack([sweep[rng.permutation(len(sweep))] for _ in range(n)])
    probs = random_probs(rng, n * len(sweep), k, grid=4 if ties else None).reshape(n, len(sweep), k)
    return {"probs": probs, "perms": perms, "gold": rng.integers(0, k, n)}


def _relabel_sweep(inp: Inputs, sigma: np.ndarray) -> Inputs:
    # Rename canonical options: display order (and so every probability row) is untouched.
    return {**inp, "perms": sigma[inp["perms"]], "gold": sigma[inp["gold"]]}


FAMILIES: dict[str, Family] = {
    "probs_labels": Family(
        _make_probs_labels, ("probs", "labels"), ("probs",), ("probs",), _relabel_probs_labels
    ),
    "correct": Family(_make_correct, ("correct",), ("correct",)),
    "conf_correct": Family(
        _make_conf_correct, ("confidence", "correct"), ("confidence", "correct")
    ),
    "choice_pair": Family(
        _make_choice_pair, ("choice_a", "choice_b"), ("choice_a",), relabel=_relabel_choices
    ),
    "probs_pair": Family(_make_probs_pair, ("p", "q"), ("p", "q"), ("p", "q"), _relabel_pair),
    "probs": Family(
        _make_probs,
        ("probs",),
        ("probs",),
        ("probs",),
        lambda inp, s: {"probs": inp["probs"][:, s]},
    ),
    "correct_pair": Family(
        _make_correct_pair, ("correct_a", "correct_b"), ("correct_a", "correct_b")
    ),
    "values": Family(_make_values, ("values", "clusters"), ("values",)),
    "xy": Family(_make_xy, ("x", "y", "clusters"), ("x", "y")),
    "pvalues": Family(_make_pvalues, ("p_values",), ("p_values",)),
    "sweep": Family(
        _make_sweep, ("probs", "perms", "gold"), ("probs",), ("probs",), _relabel_sweep
    ),
}


# ---------------------------------------------------------------------------------------------
# The registry.


def _flat(x: Any) -> np.ndarray:
    """Every number in an output (float, array, NamedTuple, dataclass) as one flat vector."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return _flat([getattr(x, f.name) for f in dataclasses.fields(x)])
    if isinstance(x, tuple | list):
        parts = [_flat(v) for v in x]
        return np.concatenate(parts) if parts else np.zeros(0)
    return np.atleast_1d(np.asarray(x, dtype=float)).ravel()


@dataclass(frozen=True)
class Metric:
    name: str
    family: str
    fn: Callable[..., Any]
    choice_based: bool = False
    #: Split an output into (per-item part or None, the rest); per-item parts move with items.
    split: Callable[[Any], tuple[np.ndarray | None, np.ndarray]] = field(
        default=lambda out: (None, _flat(out))
    )
    #: Keys the metric reads (None: all); corruptions of unused keys are not its business.
    uses: tuple[str, ...] | None = None
    #: False where a "probs" key is read as plain scores (any finite values are valid).
    sums_checked: bool = True


def _per_row(out: Any) -> tuple[np.ndarray | None, np.ndarray]:
    return np.asarray(out, dtype=float), np.zeros(0)


def _top_label_split(out: Any) -> tuple[np.ndarray | None, np.ndarray]:
    return np.stack(out, axis=1), np.zeros(0)


def _audit_split(out: S.PermutationAudit) -> tuple[np.ndarray | None, np.ndarray]:
    rest = [out.median, out.mean, out.max, out.share_at_or_below, out.share_identical]
    return out.travel, np.asarray(rest)


REGISTRY: list[Metric] = [
    Metric("ece_width", "probs_labels", lambda probs, labels: S.ece(probs, labels), True),
    Metric(
        "ece_mass",
        "probs_labels",
        lambda probs, labels: S.ece(probs, labels, n_bins=5, strategy="mass"),
        True,
    ),
    Metric("reliability_bins", "probs_labels", S.reliability_bins, True),
    Metric("brier", "probs_labels", S.brier, True),
    Metric("nll", "probs_labels", lambda probs, labels: S.nll(probs, labels, eps=1e-12), True),
    Metric("top_label", "probs_labels", S.top_label, True, _top_label_split),
    Metric("aurc", "conf_correct", S.aurc),
    Metric("augrc", "conf_correct", S.augrc),
    Metric("risk_coverage_curve", "conf_correct", S.risk_coverage_curve),
    Metric(
        "selective_accuracy",
        "conf_correct",
        lambda confidence, correct: S.selective_accuracy(confidence, correct, [0.1, 0.5, 1]),
    ),
    Metric("confidence_by_outcome", "conf_correct", S.confidence_by_outcome),
    Metric("random_gate_aurc", "correct", S.random_gate_aurc),
    Metric("random_gate_augrc", "correct", S.random_gate_augrc),
    Metric("excess_consistency", "choice_pair", S.excess_consistency, True),
    Metric("permutation_consistency", "choice_pair", S.permutation_consistency, True),
    Metric("marginal_null", "choice_pair", S.marginal_null, True),
    Metric("option_marginal", "choice_pair", S.option_marginal),
    Metric(
        "agreement_rate",
        "choice_pair",
        lambda choice_a, choice_b, n_options: S.agreement_rate(choice_a, choice_b),
        True,
    ),
    Metric(
        "excess_consistency_ci.estimate",
        "choice_pair",
        lambda **kw: S.excess_consistency_ci(**kw, n_resamples=20, seed=0).estimate,
        True,
    ),
    Metric("js_divergence", "probs_pair", S.js_divergence, True, _per_row),
    Metric("normalized_entropy", "probs", S.normalized_entropy, True, _per_row),
    Metric("mcnemar_exact", "correct_pair", S.mcnemar_exact),
    Metric(
        "bootstrap_ci.clustered",
        "values",
        lambda values, clusters: S.bootstrap_ci(values, clusters=clusters, n_resamples=50, seed=1),
    ),
    Metric(
        "paired_bootstrap_ci.clustered",
        "values",
        lambda values, clusters: S.paired_bootstrap_ci(
            values, np.full_like(values, 0.5), clusters=clusters, n_resamples=50, seed=1
        ),
    ),
    Metric(
        "mean_interval.clustered",
        "values",
        lambda values, clusters: S.mean_interval(values, clusters=clusters, n_resamples=50, seed=1),
    ),
    Metric(
        "paired_contrast.clustered",
        "values",
        lambda values, clusters: S.paired_contrast(
            np.clip(np.abs(values), 0.0, 1.0),
            (np.abs(values) > 0.4).astype(float),
            clusters=clusters,
            n_resamples=50,
            seed=1,
        ),
    ),
    Metric(
        "pearson_r.clustered",
        "xy",
        lambda x, y, clusters: S.pearson_r(x, y, clusters=clusters, n_resamples=50, seed=2),
    ),
    Metric(
        "ols_slope.clustered",
        "xy",
        lambda x, y, clusters: S.ols_slope(x, y, clusters=clusters, n_resamples=50, seed=2),
    ),
    Metric("bonferroni", "pvalues", S.bonferroni, False, _per_row),
    Metric(
        "canonical_probs",
        "sweep",
        lambda probs, perms, gold: S.canonical_probs(probs, perms),
        False,
        _per_row,
        uses=("probs", "perms"),
    ),
    Metric(
        "answer_instability",
        "sweep",
        lambda probs, perms, gold: S.answer_instability(probs, perms),
        True,
        uses=("probs", "perms"),
        sums_checked=False,
    ),
    Metric(
        "unstable_items",
        "sweep",
        lambda probs, perms, gold: S.unstable_items(probs, perms),
        True,
        _per_row,
        uses=("probs", "perms"),
        sums_checked=False,
    ),
    Metric(
        "n_distinct_choices",
        "sweep",
        lambda probs, perms, gold: S.n_distinct_choices(probs, perms),
        True,
        _per_row,
        uses=("probs", "perms"),
        sums_checked=False,
    ),
    Metric("gold_prob_range", "sweep", S.gold_prob_range, True, _per_row),
    Metric(
        "permutation_audit",
        "sweep",
        lambda probs, perms, gold: S.permutation_audit(probs, perms),
        True,
        _audit_split,
        uses=("probs", "perms"),
    ),
    Metric(
        "slot_shares",
        "sweep",
        lambda probs, perms, gold: S.slot_shares(probs),
        True,
        uses=("probs",),
        sums_checked=False,
    ),
    Metric(
        "selection_spread",
        "sweep",
        lambda probs, perms, gold: S.selection_spread(probs),
        True,
        uses=("probs",),
        sums_checked=False,
    ),
    Metric("order_sensitivity", "sweep", S.order_sensitivity, True),
]

IDS = [m.name for m in REGISTRY]
