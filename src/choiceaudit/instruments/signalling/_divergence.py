"""Secondary analyses over coordinate rows (paper §IV-C, §IV-D, §IV-G).

* :func:`fit_cost_deciles` — achieved ``fit_norm`` by ``fit_cost`` decile (§IV-D, Fig. 3), with
  the salience, Bayes and random references per decile and the item-level slope of achieved fit
  on ``fit_cost`` with a bootstrap interval, beside the Bayes reference's own slope.
* :func:`condition_agreement` — condition 4 vs condition 5 (§IV-G): agreement of canonical
  choices on matched renderings and the total-variation distance between the two conditions'
  canonical option distributions. Exact ties count as the tied set: the agreement of tied sets
  ``A`` and ``B`` is ``|A ∩ B| / (|A| |B|)`` (two independent indifferent draws) and a tied
  rendering spreads its unit of mass equally over ``A``.
* :func:`choice_distributions` — the canonical option distribution and the display-slot
  distribution of one cell, with their largest distance from uniform (§IV-H4: under format L
  the canonical distribution sits near uniform while one letter takes most renderings).
* :func:`excess_distance_correlation` — across cells, Pearson r between excess consistency and
  the distance of the coordinate from random (§IV-C: "item-sensitivity and distance from random
  correlate at only r = 0.30").

Rows are those of :func:`coordinate_table`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from choiceaudit import stats
from choiceaudit.instruments.signalling._analysis import CoordinateRow
from choiceaudit.instruments.signalling._results import CellSummary, ConditionMatch
from choiceaudit.types import Item

#: cells may be keyed by anything (tile, condition, item); only the values are read.
_Key = TypeVar("_Key")

__all__ = [
    "ChoiceDistribution",
    "DecileBin",
    "ExcessDistance",
    "FitCostDeciles",
    "SlopeInterval",
    "choice_distributions",
    "condition_agreement",
    "excess_distance_correlation",
    "fit_cost_deciles",
]


@dataclass(frozen=True)
class SlopeInterval:
    """A point estimate with the low and high end of its bootstrap interval."""

    estimate: float
    low: float
    high: float

    @classmethod
    def of(cls, result: stats.BootstrapResult, scale: float = 1.0) -> SlopeInterval:
        """The interval of ``result``, every end multiplied by ``scale``."""
        return cls(result.estimate * scale, result.low * scale, result.high * scale)


@dataclass(frozen=True)
class DecileBin:
    """One ``fit_cost`` bin: the chooser beside the three references on both axes."""

    n_items: int
    fit_cost: float
    fit_cost_low: float
    fit_cost_high: float
    achieved_fit_norm: float
    salience_fit_norm: float
    bayes_fit_norm: float
    fit_separation: float
    random_fit_norm: float
    random_fit_norm_sd: float
    achieved_post_norm: float
    salience_post_norm: float
    bayes_post_norm: float
    post_separation: float
    random_post_norm: float
    random_post_norm_sd: float
    departure_from_o_fit: float


@dataclass(frozen=True)
class FitCostDeciles:
    """:func:`fit_cost_deciles` of one cell: the bins and the item-level slopes."""

    rule: str
    n_items: int
    n_resamples: int
    bins: tuple[DecileBin, ...]
    slope: SlopeInterval
    bayes_slope: SlopeInterval
    post_slope: SlopeInterval
    fit_cost_range: tuple[float, float]
    post_predicted_change: SlopeInterval


@dataclass(frozen=True)
class ExcessDistance:
    """Pearson r across cells between excess and distance from random, with its interval."""

    n_cells: int
    skipped: int
    estimate: float
    low: float
    high: float


@dataclass(frozen=True)
class ChoiceDistribution:
    """Canonical-option and display-slot shares of one cell, ties split equally."""

    n_renderings: int
    canonical: tuple[float, ...]
    slots: tuple[float, ...]
    canonical_max_deviation_from_uniform: float
    slot_max_deviation_from_uniform: float
    top_slot: int
    top_slot_share: float


#: Per-item fields of a coordinate row averaged over renderings for the decile analysis.
_DECILE_FIELDS = (
    "fit_norm",
    "post_norm",
    "bayes_fit_norm",
    "random_fit_norm",
    "random_post_norm",
    "salience_post_norm",
    "agree_fit",
)


def fit_cost_deciles(
    rows: Sequence[CoordinateRow],
    items: Iterable[Item],
    *,
    n_bins: int = 10,
    seed: int,
    n_resamples: int = 4000,
    level: float = 0.95,
) -> FitCostDeciles:
    """Achieved fit and posterior by ``fit_cost`` bin for one cell (rows of a single rule).

    Items are averaged over their renderings, sorted by ``fit_cost`` and cut into ``n_bins``
    bins of (near-)equal size. Per bin, on the fit axis (§IV-D, Fig. 3): mean ``fit_cost``, the
    chooser's mean ``fit_norm``, the salience pole (1), the Bayes pole's mean ``fit_norm``, the
    random reference's mean and SD and the salience–Bayes separation; on the posterior axis:
    the chooser's mean ``post_norm``, the salience pole's mean ``post_norm``, the Bayes pole (1),
    the random reference and the separation; and the rate of departure from ``o_fit`` (§IV-E).
    Slopes are least squares over items (not bins), with item-resampled intervals
    (``n_resamples``, ``level``): achieved ``fit_norm`` on ``fit_cost`` (§IV-D), the Bayes
    pole's, and the mean coordinate ``post_norm`` on ``fit_cost`` (§IV-E) with its predicted
    change over the observed ``fit_cost`` range.
    """
    rules = {r.rule for r in rows}
    if len(rules) != 1:
        raise ValueError(f"fit_cost deciles take one scoring rule, got {sorted(rules)}")
    cost = {i.id: float(i.meta["fit_cost"]) for i in items}
    sums: dict[str, list[float]] = {}
    width = len(_DECILE_FIELDS)
    for r in rows:
        if not (np.isfinite(r.fit_norm) and np.isfinite(r.post_norm)):
            continue
        if r.item_id not in cost:
            raise KeyError(f"row for unknown item {r.item_id!r}")
        acc = sums.setdefault(r.item_id, [0.0] * (width + 1))
        for j, f in enumerate(_DECILE_FIELDS):
            acc[j] += float(getattr(r, f))
        acc[width] += 1
    if len(sums) < n_bins:
        raise ValueError(f"{len(sums)} items cannot fill {n_bins} bins")
    ids = sorted(sums, key=lambda i: (cost[i], i))
    x = np.array([cost[i] for i in ids])
    per = {
        f: np.array([sums[i][j] / sums[i][width] for i in ids])
        for j, f in enumerate(_DECILE_FIELDS)
    }
    bins = []
    for part in np.array_split(np.arange(len(ids)), n_bins):
        bayes_fit = float(per["bayes_fit_norm"][part].mean())
        salience_post = float(per["salience_post_norm"][part].mean())
        random_fit = per["random_fit_norm"][part]
        random_post = per["random_post_norm"][part]
        bins.append(
            DecileBin(
                n_items=int(part.size),
                fit_cost=float(x[part].mean()),
                fit_cost_low=float(x[part].min()),
                fit_cost_high=float(x[part].max()),
                achieved_fit_norm=float(per["fit_norm"][part].mean()),
                salience_fit_norm=1.0,
                bayes_fit_norm=bayes_fit,
                fit_separation=1.0 - bayes_fit,
                random_fit_norm=float(random_fit.mean()),
                random_fit_norm_sd=float(random_fit.std(ddof=1)) if part.size > 1 else 0.0,
                achieved_post_norm=float(per["post_norm"][part].mean()),
                salience_post_norm=salience_post,
                bayes_post_norm=1.0,
                post_separation=1.0 - salience_post,
                random_post_norm=float(random_post.mean()),
                random_post_norm_sd=float(random_post.std(ddof=1)) if part.size > 1 else 0.0,
                departure_from_o_fit=float(1.0 - per["agree_fit"][part].mean()),
            )
        )
    post_slope = stats.ols_slope(
        x, per["post_norm"], n_resamples=n_resamples, seed=seed, level=level
    )
    span = float(x.max() - x.min())
    return FitCostDeciles(
        rule=next(iter(rules)),
        n_items=len(ids),
        n_resamples=n_resamples,
        bins=tuple(bins),
        slope=SlopeInterval.of(
            stats.ols_slope(x, per["fit_norm"], n_resamples=n_resamples, seed=seed, level=level)
        ),
        bayes_slope=SlopeInterval.of(
            stats.ols_slope(
                x, per["bayes_fit_norm"], n_resamples=n_resamples, seed=seed, level=level
            )
        ),
        post_slope=SlopeInterval.of(post_slope),
        fit_cost_range=(float(x.min()), float(x.max())),
        post_predicted_change=SlopeInterval.of(post_slope, span),
    )


def _key(row: CoordinateRow) -> tuple[str, int | None, str, str | None]:
    return (row.item_id, row.perm_index, row.rule, row.format)


def condition_agreement(
    rows_a: Sequence[CoordinateRow], rows_b: Sequence[CoordinateRow]
) -> ConditionMatch:
    """Agreement and total-variation distance between two conditions' choices (see module
    docstring). Renderings are matched on (item, permutation, rule, format); unmatched rows are
    counted. The TVD is computed per menu size and reported overall only when every matched
    row shares one menu size."""
    index_b = {_key(r): r for r in rows_b}
    if len(index_b) != len(rows_b):
        raise ValueError("duplicate renderings in the second condition's rows")
    agree = []
    mass: dict[int, list[np.ndarray]] = {}
    unmatched = 0
    for ra in rows_a:
        rb = index_b.get(_key(ra))
        if rb is None:
            unmatched += 1
            continue
        a, b = set(ra.chosen), set(rb.chosen)
        agree.append(len(a & b) / (len(a) * len(b)))
        k = ra.n_options
        pair = mass.setdefault(k, [np.zeros(k), np.zeros(k)])
        pair[0][list(a)] += 1.0 / len(a)
        pair[1][list(b)] += 1.0 / len(b)
    if not agree:
        raise ValueError("no renderings matched between the two conditions")
    tvd = {
        k: float(0.5 * np.abs(pa / pa.sum() - pb / pb.sum()).sum()) for k, (pa, pb) in mass.items()
    }
    return ConditionMatch(
        n_matched=len(agree),
        unmatched=unmatched + (len(rows_b) - len(agree)),
        agreement=float(np.mean(agree)),
        tvd_by_menu_size=tvd,
        tvd=next(iter(tvd.values())) if len(tvd) == 1 else None,
    )


def excess_distance_correlation(
    cells: Mapping[_Key, CellSummary], *, seed: int, n_resamples: int = 4000
) -> ExcessDistance:
    """Pearson r across cells between excess consistency and |post_norm − random| (§IV-C).

    ``cells`` are :func:`cell_summary` results; cells without an available excess are skipped
    and counted.
    """
    xs, ys, skipped = [], [], 0
    for cell in cells.values():
        ex = cell.excess_consistency
        if not ex.available or ex.excess is None:
            skipped += 1
            continue
        xs.append(float(ex.excess))
        ys.append(abs(float(cell.post_norm_minus_random.estimate)))
    if len(xs) < 3:
        raise ValueError(f"need at least 3 cells with an excess, got {len(xs)}")
    r = stats.pearson_r(xs, ys, n_resamples=n_resamples, seed=seed)
    return ExcessDistance(len(xs), skipped, r.estimate, r.low, r.high)


def choice_distributions(rows: Sequence[CoordinateRow]) -> ChoiceDistribution:
    """Canonical-option and display-slot shares of one cell (ties split equally), the largest
    absolute deviation of each from uniform, and the most chosen slot's share."""
    ks = {r.n_options for r in rows}
    if len(ks) != 1:
        raise ValueError(f"menus of different sizes {sorted(ks)}: group by tile first")
    k = ks.pop()
    canonical, slots = np.zeros(k), np.zeros(k)
    for r in rows:
        canonical[list(r.chosen)] += 1.0 / len(r.chosen)
        slots[list(r.chosen_slots)] += 1.0 / len(r.chosen_slots)
    canonical /= len(rows)
    slots /= len(rows)
    return ChoiceDistribution(
        n_renderings=len(rows),
        canonical=tuple(float(x) for x in canonical),
        slots=tuple(float(x) for x in slots),
        canonical_max_deviation_from_uniform=float(np.abs(canonical - 1 / k).max()),
        slot_max_deviation_from_uniform=float(np.abs(slots - 1 / k).max()),
        top_slot=int(np.argmax(slots)),
        top_slot_share=float(slots.max()),
    )
