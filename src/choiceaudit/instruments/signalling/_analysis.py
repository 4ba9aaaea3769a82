"""The coordinate analysis (paper §I-F1, §I-H, §I-H1, §I-H2, §IV-A, §IV-B).

Every choice is placed on two axes, each min-max normalised within the item's own option set:
``fit_norm`` (eq. 5) and ``post_norm`` (eq. 6). A chosen display slot is mapped back to its
canonical option through the query's permutation; an exact tie is scored as the mean coordinate
over the tied options (an expectation under indifference, not a tie-break). Next to each choice
sit the references: the per-item random reference (the mean coordinate over the option set,
§I-H1), the salience pole (the coordinate of ``o_fit``) and the Bayes pole (of ``o_bayes``).

Per cell (a rule, and whatever grouping the caller applies: tile, condition, format), the
summary reports mean and median coordinates over items (each item's renderings averaged, so the
item is the unit), the random reference with its SD across items, agreement with ``o_fit``,
``o_bayes`` and what random selection would give, the paired item-clustered bootstrap of the
difference from random (§I-H2), and the excess consistency over the marginal null (§IV-A) from
the two stored permutations, a tied choice scored by split credit like every other measure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from choiceaudit import stats
from choiceaudit.instruments.signalling._fit import DECAY_FAMILIES, DecayFamily
from choiceaudit.instruments.signalling._results import (
    CellSummary,
    ItemReferences,
    MeanMedianSD,
    PairedExcess,
    RandomDifference,
)
from choiceaudit.types import Decision, FloatArray, Item, Query

__all__ = [
    "CoordinateRow",
    "cell_summary",
    "coordinate_table",
    "item_references",
    "paired_excess",
    "summarise_cells",
]


@dataclass(frozen=True)
class CoordinateRow:
    """One rendering under one rule: the chosen canonical set and its coordinates, beside the
    item's references (what every cell, decile and agreement analysis reads)."""

    item_id: str
    tile: str | None
    conflict: bool
    condition: str | None
    format: str | None
    perm_index: int | None
    rule: str
    n_options: int
    #: canonical options chosen (several when the decision ties)
    chosen: tuple[int, ...]
    #: the display slots chosen, in the query's order
    chosen_slots: tuple[int, ...]
    #: False where a chooser could not score the item (an association source without the words)
    covered: bool
    n_tied: int
    fit_norm: float
    post_norm: float
    agree_fit: float
    agree_bayes: float
    random_fit_norm: float
    random_post_norm: float
    random_agree_fit: float
    random_agree_bayes: float
    salience_post_norm: float
    bayes_fit_norm: float
    #: format L's label form (None for format V)
    label_form: str | None = None
    #: the arm's label, set where several choosers' rows are pooled into one grouping
    chooser: str = ""

    def field(self, name: str) -> object:
        """The value of one field by name (grouping and analysis-set criteria name fields)."""
        if name not in _ROW_FIELDS:
            raise KeyError(f"a coordinate row has no field {name!r}")
        value: object = getattr(self, name)
        return value


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


def _opt_int(value: object) -> int | None:
    if value is None or isinstance(value, int):
        return value
    return int(str(value))


def _minmax(x: FloatArray) -> FloatArray:
    span = x.max() - x.min()
    if span <= 0:
        return np.full(x.shape, np.nan)
    return np.asarray((x - x.min()) / span, dtype=np.float64)


def item_references(item: Item, decay: DecayFamily = "exponential") -> ItemReferences:
    """Canonical per-option ``fit_norm``/``post_norm`` of an item and its three references."""
    if decay not in DECAY_FAMILIES:
        raise ValueError(f"unknown decay family {decay!r}")
    sfx = "" if decay == "exponential" else "_gaussian"
    fit = np.asarray(item.meta[f"fit{sfx}"], dtype=np.float64)
    post = np.asarray(item.meta[f"posterior{sfx}"], dtype=np.float64)
    fit_norm, post_norm = _minmax(fit), _minmax(post)
    fit_set = fit == fit.max()
    o_bayes = int(item.meta[f"o_bayes{sfx}"])
    return ItemReferences(
        fit_norm=fit_norm,
        post_norm=post_norm,
        fit_set=fit_set,
        o_bayes=o_bayes,
        random_fit_norm=float(fit_norm.mean()),
        random_post_norm=float(post_norm.mean()),
        salience_fit_norm=float(fit_norm[fit_set].mean()),
        salience_post_norm=float(post_norm[fit_set].mean()),
        bayes_fit_norm=float(fit_norm[o_bayes]),
        bayes_post_norm=float(post_norm[o_bayes]),
    )


def coordinate_table(
    items: Iterable[Item],
    queries: Sequence[Query],
    decisions: Sequence[Decision],
    *,
    rules: Sequence[str] | None = None,
    decay: DecayFamily = "exponential",
) -> list[CoordinateRow]:
    """One row per (rendering, rule): the chosen canonical set and its coordinates.

    ``rules`` defaults to ``"probs"`` plus every score rule of each decision. A rule missing from
    a decision raises.
    """
    if len(queries) != len(decisions):
        raise ValueError(f"{len(queries)} queries but {len(decisions)} decisions")
    by_id = {item.id: item for item in items}
    refs: dict[str, ItemReferences] = {}
    rows: list[CoordinateRow] = []
    for q, d in zip(queries, decisions, strict=True):
        d.check_against(q)
        item_id = str(q.meta.get("item_id"))
        if item_id not in by_id:
            raise KeyError(f"query {q.id}: unknown item {item_id!r}")
        if item_id not in refs:
            refs[item_id] = item_references(by_id[item_id], decay)
        ref = refs[item_id]
        item = by_id[item_id]
        k = q.n_options
        for rule in rules if rules is not None else ("probs", *sorted(d.scores)):
            if rule != "probs" and rule not in d.scores:
                raise KeyError(f"decision for {q.id} has no scores for rule {rule!r}")
            slots = list(d.choice(rule))
            chosen = [q.canonical(s) for s in slots]
            rows.append(
                CoordinateRow(
                    item_id=item_id,
                    tile=_opt_str(item.meta.get("tile")),
                    conflict=bool(item.meta.get("conflict")),
                    condition=_opt_str(q.meta.get("condition")),
                    format=_opt_str(q.meta.get("format")),
                    perm_index=_opt_int(q.meta.get("perm_index")),
                    rule=rule,
                    n_options=k,
                    chosen=tuple(chosen),
                    chosen_slots=tuple(slots),
                    covered=bool(d.aux.get("covered", True)),
                    n_tied=len(chosen),
                    fit_norm=float(np.mean(ref.fit_norm[chosen])),
                    post_norm=float(np.mean(ref.post_norm[chosen])),
                    agree_fit=float(np.mean(ref.fit_set[chosen])),
                    agree_bayes=float(np.mean([c == ref.o_bayes for c in chosen])),
                    random_fit_norm=ref.random_fit_norm,
                    random_post_norm=ref.random_post_norm,
                    random_agree_fit=float(ref.fit_set.mean()),
                    random_agree_bayes=1.0 / k,
                    salience_post_norm=ref.salience_post_norm,
                    bayes_fit_norm=ref.bayes_fit_norm,
                    label_form=_opt_str(q.meta.get("label_form")),
                )
            )
    return rows


_ITEM_FIELDS = (
    "fit_norm",
    "post_norm",
    "agree_fit",
    "agree_bayes",
    "random_fit_norm",
    "random_post_norm",
    "random_agree_fit",
    "random_agree_bayes",
    "salience_post_norm",
    "bayes_fit_norm",
)

_ROW_FIELDS = frozenset(CoordinateRow.__dataclass_fields__)


def _mean_sd(x: FloatArray) -> MeanMedianSD:
    return MeanMedianSD(
        mean=float(np.mean(x)),
        median=float(np.median(x)),
        sd=float(np.std(x, ddof=1)) if x.size > 1 else float("nan"),
    )


def cell_summary(
    rows: Sequence[CoordinateRow],
    *,
    seed: int,
    n_resamples: int = 4000,
    level: float = 0.95,
    bonferroni_cells: int | None = None,
) -> CellSummary:
    """Summary of one cell (rows of a single rule; see module docstring).

    Intervals are percentile bootstrap at ``level`` over items. With ``bonferroni_cells = n``
    the difference from random is also given at level ``1 − (1 − level)/n`` (the Bonferroni
    count across ``n`` cells, §I-H2).

    Rows a chooser could not score (``covered`` False: an association source without the
    words) are excluded and counted in ``n_uncovered_rows``; rows with a NaN coordinate (an item
    whose fit or posterior is flat across options) in ``n_flat_rows``.
    """
    rules = {r.rule for r in rows}
    if len(rules) != 1:
        raise ValueError(f"a cell holds one scoring rule, got {sorted(rules)}")
    covered = [r for r in rows if r.covered]
    defined = [bool(np.isfinite(r.fit_norm) and np.isfinite(r.post_norm)) for r in covered]
    use = [r for r, ok in zip(covered, defined, strict=True) if ok]
    n_flat = len(covered) - len(use)
    if not use:
        raise ValueError("cell has no rows with defined coordinates")
    item_ids = sorted({r.item_id for r in use})
    index = {i: j for j, i in enumerate(item_ids)}
    per_item = {f: np.zeros(len(item_ids)) for f in _ITEM_FIELDS}
    counts = np.zeros(len(item_ids))
    for r in use:
        j = index[r.item_id]
        counts[j] += 1
        for f in _ITEM_FIELDS:
            per_item[f][j] += getattr(r, f)
    for f in _ITEM_FIELDS:
        per_item[f] /= counts
    levels = {"": level}
    if bonferroni_cells is not None:
        if bonferroni_cells < 1:
            raise ValueError(f"bonferroni_cells must be at least 1, got {bonferroni_cells}")
        levels["_bonferroni"] = 1.0 - (1.0 - level) / bonferroni_cells
    differences: dict[str, RandomDifference] = {}
    for axis in ("post_norm", "fit_norm"):
        for suffix, lvl in levels.items():
            diff = stats.paired_bootstrap_ci(
                per_item[axis],
                per_item[f"random_{axis}"],
                n_resamples=n_resamples,
                level=lvl,
                seed=seed,
            )
            differences[f"{axis}_minus_random{suffix}"] = RandomDifference(
                estimate=diff.estimate,
                low=diff.low,
                high=diff.high,
                level=lvl,
                excludes_zero=bool(diff.low > 0 or diff.high < 0),
            )
    return CellSummary(
        rule=rules.pop(),
        n_items=len(item_ids),
        n_renderings=len(use),
        n_flat_rows=n_flat,
        n_uncovered_rows=len(rows) - len(covered),
        n_tied_renderings=sum(r.n_tied > 1 for r in use),
        fit_norm=_mean_sd(per_item["fit_norm"]),
        post_norm=_mean_sd(per_item["post_norm"]),
        agree_fit=_mean_sd(per_item["agree_fit"]),
        agree_bayes=_mean_sd(per_item["agree_bayes"]),
        random_fit_norm=_mean_sd(per_item["random_fit_norm"]),
        random_post_norm=_mean_sd(per_item["random_post_norm"]),
        random_agree_fit=_mean_sd(per_item["random_agree_fit"]),
        random_agree_bayes=_mean_sd(per_item["random_agree_bayes"]),
        salience_post_norm=_mean_sd(per_item["salience_post_norm"]),
        bayes_fit_norm=_mean_sd(per_item["bayes_fit_norm"]),
        post_norm_minus_random=differences["post_norm_minus_random"],
        fit_norm_minus_random=differences["fit_norm_minus_random"],
        post_norm_minus_random_bonferroni=differences.get("post_norm_minus_random_bonferroni"),
        fit_norm_minus_random_bonferroni=differences.get("fit_norm_minus_random_bonferroni"),
        excess_consistency=paired_excess(use),
        share_o_fit_both=_o_fit_both(use),
    )


def _o_fit_both(rows: Sequence[CoordinateRow]) -> float | None:
    """§IV-B: share of items whose choice is ``o_fit`` under both stored permutations (a tied
    choice counts only when every tied option is ``o_fit``), over items with both renderings."""
    pairs: dict[str, dict[int, float]] = {}
    for r in rows:
        pairs.setdefault(r.item_id, {})[_perm(r)] = r.agree_fit
    both = [p for p in pairs.values() if 0 in p and 1 in p]
    if not both:
        return None
    return float(np.mean([p[0] == 1.0 and p[1] == 1.0 for p in both]))


def _perm(row: CoordinateRow) -> int:
    if row.perm_index is None:
        raise ValueError(f"row for item {row.item_id!r} has no stored permutation index")
    return row.perm_index


def paired_excess(rows: Sequence[CoordinateRow]) -> PairedExcess:
    """Excess over the marginal null from renderings 0 and 1 of each item (§IV-A), every tie
    scored by split credit (§I-H: the expectation under indifference; see
    :func:`choiceaudit.stats.split_credit_excess`), so no item is left out for a tie. Menus of
    different sizes have no common marginal and come back unavailable with the reason."""
    ks = {r.n_options for r in rows}
    if len(ks) > 1:
        return PairedExcess(
            available=False,
            n_items=0,
            tied_items=0,
            excluded_unpaired=0,
            reason=f"menus of different sizes {sorted(ks)}: group by tile",
        )
    pairs: dict[str, dict[int, CoordinateRow]] = {}
    for r in rows:
        pairs.setdefault(r.item_id, {})[_perm(r)] = r
    both = [p for p in pairs.values() if 0 in p and 1 in p]
    n_items = len(both)
    tied_items = sum(p[0].n_tied > 1 or p[1].n_tied > 1 for p in both)
    excluded = len(pairs) - len(both)
    if not both:
        return PairedExcess(
            available=False,
            n_items=n_items,
            tied_items=tied_items,
            excluded_unpaired=excluded,
            reason="no item holds both stored permutations",
        )
    ex = stats.split_credit_excess(
        [p[0].chosen for p in both], [p[1].chosen for p in both], ks.pop()
    )
    return PairedExcess(
        available=True,
        consistency=ex.consistency,
        marginal_null=ex.marginal_null,
        excess=ex.excess,
        n_items=n_items,
        tied_items=tied_items,
        excluded_unpaired=excluded,
    )


def summarise_cells(
    rows: Sequence[CoordinateRow],
    *,
    by: Sequence[str] = ("rule", "tile", "condition", "format"),
    seed: int,
    n_resamples: int = 4000,
    level: float = 0.95,
    bonferroni_cells: int | None = None,
) -> dict[tuple[object, ...], CellSummary]:
    """:func:`cell_summary` for every group of rows sharing the ``by`` fields (rule required),
    with the Bonferroni interval across ``bonferroni_cells`` cells (default: all the groups
    returned; the battery passes the number of model x rule cells, §I-H2)."""
    if "rule" not in by:
        raise ValueError("group by 'rule': a cell holds one scoring rule")
    groups: dict[tuple[object, ...], list[CoordinateRow]] = {}
    for r in rows:
        groups.setdefault(tuple(r.field(f) for f in by), []).append(r)
    return {
        key: cell_summary(
            group,
            seed=seed,
            n_resamples=n_resamples,
            level=level,
            bonferroni_cells=bonferroni_cells if bonferroni_cells else len(groups),
        )
        for key, group in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0])))
    }
