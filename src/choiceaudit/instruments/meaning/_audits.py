"""Audits read from intervention runs (the meaning paper, Appendices J, M, N, O, P, Q, R).

* :func:`surface_agreement` (E2, Appendix N) — per (canonical, alternative) pair, whether the
  canonical choice agrees, and the Jensen–Shannon divergence (bits) between the two vectors;
  pair-level and item-averaged; accuracy on each member and exact McNemar over the pairs.
* :func:`unit_integrity` (E3, Appendix M) — accuracy per variant and agreement of each variant's
  canonical choice with the intact (``v0``) answer.
* :func:`signal_retention` (E6, Appendix P) — accuracy per option form and the signal retained,
  (acc − 1/k) / (acc_o0 − 1/k).
* :func:`order_audit` (E7, Appendix Q) — the Table 21 measures and the Table 22 permutation audit
  from ``choiceaudit.stats`` over items seen under all k! orderings.
* :func:`pairing_check` (Appendix R, "Pairing") — on rows two runs share, the share on which gold
  slot, literal slot, state and options agree (1.000 licenses paired tests).
* :func:`cue_strata` (§5.6, Appendix J) — LAR split by verbatim containment, Latin script,
  longest option and content-word hook.
* :func:`subset_drift` (Appendix O) — a model's accuracy on a subset against its own full set.

Agreement is computed on rows with a unique argmax; tied rows are excluded and counted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from choiceaudit import stats
from choiceaudit.errors import AnalysisError
from choiceaudit.instruments.meaning._analysis import (
    BOOTSTRAP_SEED,
    N_RESAMPLES,
    accuracy_by,
    interval,
)
from choiceaudit.instruments.meaning._rows import MeaningRows
from choiceaudit.instruments.meaning._text import content_words, has_latin

__all__ = [
    "cue_flags",
    "cue_strata",
    "order_audit",
    "pairing_check",
    "signal_retention",
    "subset_drift",
    "surface_agreement",
    "unit_integrity",
]


def _index(rows: MeaningRows) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for i, key in enumerate(zip(rows.item_id.tolist(), rows.condition.tolist(), strict=True)):
        if key in out:
            raise AnalysisError(f"two rows for item {key[0]} condition {key[1]}; select one run")
        out[key] = i
    return out


def _agreement(rows: MeaningRows, pairs: list[tuple[int, int]]) -> dict[str, Any]:
    if not pairs:
        return {"n_pairs": 0, "agreement": math.nan, "n_tied_excluded": 0}
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    choice = rows.canonical_choice
    ok = (choice[a] >= 0) & (choice[b] >= 0)
    agree = (choice[a] == choice[b])[ok].astype(float)
    return {
        "n_pairs": len(pairs),
        "agreement": float(agree.mean()) if agree.size else math.nan,
        "n_tied_excluded": int((~ok).sum()),
        "_agree": agree,
        "_items": rows.item_id[a][ok],
    }


def surface_agreement(rows: MeaningRows) -> dict[str, Any]:
    """E2: agreement and JS divergence between each item's canonical form and its alternatives."""
    index = _index(rows)
    pairs = [
        (index[(item, "canonical")], i)
        for (item, condition), i in index.items()
        if condition.startswith("alt") and (item, "canonical") in index
    ]
    result = _agreement(rows, pairs)
    agree, items = result.pop("_agree", None), result.pop("_items", None)
    if pairs:
        canon = rows.canonical_probs
        js = np.atleast_1d(
            stats.js_divergence(canon[[p[0] for p in pairs]], canon[[p[1] for p in pairs]])
        )
        result["mean_js_divergence"] = float(js.mean())
        result["n_items"] = len({rows.item_id[p[0]] for p in pairs})
        if agree is not None and agree.size:
            per_item = [float(agree[items == it].mean()) for it in np.unique(items)]
            result["agreement_item_mean"] = float(np.mean(per_item))
        # accuracy on the two members of each pair, and exact McNemar on the pairs (Appendix N)
        correct = rows.correct
        ca = correct[[p[0] for p in pairs]]
        cb = correct[[p[1] for p in pairs]]
        unique = ((ca == 0) | (ca == 1)) & ((cb == 0) | (cb == 1))
        test = stats.mcnemar_exact(ca[unique] == 1, cb[unique] == 1)
        result["accuracy_canonical"] = float(ca.mean())
        result["accuracy_alternative"] = float(cb.mean())
        result["mcnemar_b"], result["mcnemar_c"], result["mcnemar_p"] = test.b, test.c, test.p
    return result


def unit_integrity(
    rows: MeaningRows, *, n_resamples: int = N_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> dict[str, Any]:
    """E3: accuracy per variant and agreement with the intact (v0) answer."""
    index = _index(rows)
    out: dict[str, Any] = {
        "accuracy": accuracy_by(rows, "condition", n_resamples=n_resamples, seed=seed)
    }
    agreement: dict[str, Any] = {}
    for variant in sorted({c for _, c in index if c != "v0"}):
        pairs = [
            (index[(item, "v0")], i)
            for (item, c), i in index.items()
            if c == variant and (item, "v0") in index
        ]
        result = _agreement(rows, pairs)
        agree = result.pop("_agree", None)
        items = result.pop("_items", None)
        if agree is not None and agree.size:
            result["interval"] = interval(agree, items, n_resamples=n_resamples, seed=seed)
        agreement[variant] = result
    out["agreement_with_intact"] = agreement
    return out


def signal_retention(
    rows: MeaningRows, *, n_resamples: int = N_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> dict[str, Any]:
    """E6: accuracy per option form and signal retained relative to ``o0``."""
    acc = accuracy_by(rows, "condition", n_resamples=n_resamples, seed=seed)
    chance = 1.0 / rows.k
    base = acc.get("o0", {}).get("estimate")
    out: dict[str, Any] = {}
    for variant, cell in acc.items():
        retained = math.nan
        if base is not None and float(base) != chance:
            retained = (float(cell["estimate"]) - chance) / (float(base) - chance)
        out[variant] = {**cell, "signal_retained": retained}
    return out


def order_audit(rows: MeaningRows, *, threshold: float = 1e-4) -> dict[str, Any]:
    """E7: Table 21 and Table 22 over the items that were seen under every ordering."""
    k = rows.k
    n_perms = math.factorial(k)
    by_item: dict[str, list[int]] = {}
    for i, item in enumerate(rows.item_id.tolist()):
        by_item.setdefault(item, []).append(i)
    complete = {
        item: idx
        for item, idx in by_item.items()
        if len(idx) == n_perms and len({tuple(rows.perm[j]) for j in idx}) == n_perms
    }
    incomplete = len(by_item) - len(complete)
    if not complete:
        raise AnalysisError(f"no item has all {n_perms} orderings ({incomplete} incomplete)")
    items = sorted(complete)
    idx = np.array([complete[item] for item in items])  # (n_items, n_perms)
    probs = rows.probs[idx]
    perms = rows.perm[idx]
    gold = np.zeros(len(items), dtype=np.int64)
    summary = stats.order_sensitivity(probs, perms, gold)
    audit = stats.permutation_audit(probs, perms, threshold=threshold)
    return {
        "n_items": summary.n_items,
        "n_incomplete_items_excluded": incomplete,
        "answer_instability": summary.answer_instability,
        "mean_distinct_choices": summary.mean_distinct_choices,
        "mean_gold_prob_range": summary.mean_gold_prob_range,
        "selection_spread": summary.selection_spread,
        "slot_shares": summary.slot_shares.tolist(),
        "permutation_audit": {
            "median_travel": audit.median,
            "mean_travel": audit.mean,
            "max_travel": audit.max,
            "threshold": audit.threshold,
            "share_at_or_below": audit.share_at_or_below,
            "share_identical": audit.share_identical,
        },
    }


def pairing_check(rows_a: MeaningRows, rows_b: MeaningRows) -> dict[str, Any]:
    """Agreement of the question itself on the rows two runs share (by experiment, condition,
    item): gold slot, literal slot, state string and option list."""

    def keyed(rows: MeaningRows) -> dict[tuple[str, str, str], int]:
        keys = zip(
            rows.experiment.tolist(), rows.condition.tolist(), rows.item_id.tolist(), strict=True
        )
        return {key: i for i, key in enumerate(keys)}

    ka, kb = keyed(rows_a), keyed(rows_b)
    shared = sorted(set(ka) & set(kb))
    if not shared:
        return {"n_shared": 0}
    a = np.array([ka[s] for s in shared])
    b = np.array([kb[s] for s in shared])
    return {
        "n_shared": len(shared),
        "gold_slot": float((rows_a.gold_slot[a] == rows_b.gold_slot[b]).mean()),
        "literal_slot": float((rows_a.literal_slot[a] == rows_b.literal_slot[b]).mean()),
        "state": float((rows_a.state[a] == rows_b.state[b]).mean()),
        "options": float(
            np.mean([rows_a.options[i] == rows_b.options[j] for i, j in zip(a, b, strict=True)])
        ),
    }


def cue_flags(rows: MeaningRows) -> dict[str, np.ndarray]:
    """Per literal-bearing row, the four construction cues of §5.6 / Appendix J."""
    flags: dict[str, list[bool]] = {"verbatim": [], "latin": [], "longest": [], "hook": []}
    for i in range(len(rows)):
        options = rows.options[i]
        literal = options[int(rows.literal_slot[i])]
        state = str(rows.state[i])
        others = [o for j, o in enumerate(options) if j != rows.literal_slot[i]]
        flags["verbatim"].append(state in literal)
        flags["latin"].append(has_latin(literal) and not any(has_latin(o) for o in others))
        flags["longest"].append(all(len(literal) > len(o) for o in others))
        lang = str(rows.language[i])
        flags["hook"].append(bool(content_words(literal, lang) & content_words(state, lang)))
    return {name: np.array(values) for name, values in flags.items()}


def cue_strata(
    rows: MeaningRows,
    *,
    cues: Sequence[str] = ("verbatim", "latin", "longest", "hook"),
    n_resamples: int = N_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, Any]:
    """LAR with and without each cue, and the difference (with − without)."""
    sub = rows.select(rows.literal_slot >= 0)
    flags = cue_flags(sub)
    out: dict[str, Any] = {}
    for cue in cues:
        cell: dict[str, Any] = {}
        for label, mask in (("with", flags[cue]), ("without", ~flags[cue])):
            part = sub.select(mask)
            cell[label] = (
                interval(part.captured, part.item_id, n_resamples=n_resamples, seed=seed)
                if len(part)
                else {"estimate": math.nan, "n_rows": 0}
            )
        cell["difference"] = float(cell["with"]["estimate"]) - float(cell["without"]["estimate"])
        out[cue] = cell
    return out


def subset_drift(
    rows: MeaningRows,
    subset_items: Sequence[str | int],
    *,
    column: str = "family",
    n_resamples: int = N_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, Any]:
    """Appendix O: per ``column`` value, accuracy on the subset minus accuracy on the full set,
    with both intervals and whether the subset estimate leaves the full-set interval."""
    wanted = {str(i) for i in subset_items}
    full = accuracy_by(rows, column, n_resamples=n_resamples, seed=seed)
    part = accuracy_by(
        rows.select(np.isin(rows.item_id, list(wanted))), column, n_resamples=n_resamples, seed=seed
    )
    out: dict[str, Any] = {}
    for value, cell in full.items():
        if value not in part:
            continue
        sub = part[value]
        out[value] = {
            "full": cell,
            "subset": sub,
            "drift": float(sub["estimate"]) - float(cell["estimate"]),
            "outside_full_interval": not (cell["low"] <= sub["estimate"] <= cell["high"]),
        }
    return out
