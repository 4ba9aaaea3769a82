"""Model-free conformance: every number the paper reports that needs no model, measured on the
user's norms beside the paper's value, with a declared tolerance (what ``choiceaudit check
signalling`` prints).

The numbers come from one build (:func:`build_signalling_items`, seed and candidate count as
given; the paper's design is 200,000 candidates and 1,000 items) and from the same analysis
functions a model run goes through (reference choosers → :func:`coordinate_table` →
:func:`cell_summary` / :func:`fit_cost_deciles`), so the check exercises the code, not a copy of
it. The absolute tolerances in :data:`PAPER` describe one draw only; the check the command
prints is over many item-set draws (:mod:`._conformance_seeds`), where each tolerance is a
multiple of the measured spread across seeds, so a favourable draw cannot pass for agreement.
Where a number needs a source the user did not give (SWOW for the 1,118-concept pool and the
Appendix A retention), the row says ``unavailable`` instead of printing a figure of another
pool. Why a measured number misses its tolerance is written in the instrument's guide (docs/instruments/signalling.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from choiceaudit.instruments.signalling._analysis import cell_summary, coordinate_table
from choiceaudit.instruments.signalling._build import BuildResult
from choiceaudit.instruments.signalling._choosers import (
    BayesOracleChooser,
    SalienceChooser,
    UniformChooser,
)
from choiceaudit.instruments.signalling._divergence import fit_cost_deciles
from choiceaudit.instruments.signalling._fit import pair_fit
from choiceaudit.instruments.signalling._render import render_queries
from choiceaudit.instruments.signalling._tiles import Tile

__all__ = [
    "PAPER",
    "ConformanceReport",
    "ConformanceRow",
    "PaperValue",
    "check_conformance",
]


@dataclass(frozen=True)
class PaperValue:
    section: str
    value: float
    tolerance: float
    text: str


#: The paper's model-free numbers with the tolerance each is held to (absolute).
PAPER: dict[str, PaperValue] = {
    "pool size": PaperValue("§I-B", 1118, 20, "a pool of 1,118 noun concepts (with SWOW)"),
    "SWOW overlap": PaperValue("§I-B", 0.67, 0.03, "the SWOW overlap ... roughly 67 percent"),
    "rater ratio manmade": PaperValue("§I-C", 0.379, 0.03, "manmade (0.379)"),
    "rater ratio size": PaperValue("§I-C", 0.409, 0.03, "size (0.409)"),
    "rater ratio hold": PaperValue("§I-C", 0.658, 0.03, "hold (0.658)"),
    "rater ratio moves": PaperValue("§I-C", 0.735, 0.03, "moves (0.735)"),
    "rater ratio arousing": PaperValue("§I-C", 3.53, 0.3, "arousal ... 3.53"),
    "rater ratio precious": PaperValue("§I-C", 1.62, 0.15, "precious ... 1.62"),
    "rater ratio pleasant": PaperValue("§I-C", 1.14, 0.1, "pleasant ... 1.14"),
    "largest pairwise r among the four tiles": PaperValue("§I-C", -0.63, 0.05, "-0.63"),
    "conflict rate manmade": PaperValue("§I-F", 0.0378, 0.01, "3.78 percent on manmade"),
    "conflict rate size": PaperValue("§I-F", 0.3782, 0.01, "37.82 percent on size"),
    "median local competition ratio": PaperValue("§I-B, §I-F", 1.842, 0.05, "1.842"),
    "geometric share of ties": PaperValue("Appendix B", 0.847, 0.02, "covers 84.7 percent"),
    "Fig. 1 fit, football": PaperValue("§I-F1, Fig. 1", 1.00, 0.005, "f = 1.00"),
    "Fig. 1 fit, chicken egg": PaperValue("§I-F1, Fig. 1", 0.58, 0.01, "f = 0.58"),
    "Fig. 1 fit_cost": PaperValue("§I-F1, Fig. 1", 0.423, 0.01, "0.423"),
    "pool concepts in the football bin": PaperValue("§I-F1", 468, 20, "468 of the 1,118"),
    "pool concepts in the chicken egg bin": PaperValue("§I-F1", 231, 20, "its bin holds 231"),
    "size conflict items": PaperValue("§IV", 125, 0, "the 125 size conflict items"),
    "random fit_norm mean": PaperValue("§I-H1", 0.3985, 0.01, "fit_norm = 0.3985"),
    "random fit_norm SD": PaperValue("§I-H1", 0.0294, 0.006, "(SD 0.0294 across items)"),
    "random post_norm mean": PaperValue("§I-H1", 0.4593, 0.015, "post_norm = 0.4593"),
    "random post_norm SD": PaperValue("§I-H1", 0.0617, 0.01, "(SD 0.0617)"),
    "salience pole post_norm": PaperValue("§IV-B", 0.691, 0.02, "salience pole at 0.691"),
    "Bayes pole post_norm": PaperValue("§IV-B", 1.000, 1e-9, "the Bayes pole at 1.000"),
    "random on the salience-to-Bayes scale": PaperValue("§IV-B", -0.75, 0.1, "sits at -0.75"),
    "Bayes pole fit_norm, lowest fit_cost decile": PaperValue("§IV-D", 0.972, 0.03, "0.972"),
    "Bayes pole fit_norm, highest fit_cost decile": PaperValue("§IV-D", 0.403, 0.05, "0.403"),
    "fit-axis separation, lowest decile": PaperValue("§IV-D", 0.028, 0.03, "from 0.028"),
    "fit-axis separation, highest decile": PaperValue("§IV-D", 0.597, 0.05, "to 0.597"),
    "posterior-axis separation, smallest decile": PaperValue("§IV-D", 0.128, 0.05, "0.128"),
    "posterior-axis separation, largest decile": PaperValue("§IV-D", 0.415, 0.05, "0.415"),
    "salience reference slope": PaperValue("§IV-D, Fig. 3", 0.0, 1e-9, "0.00 for salience"),
    "Bayes reference slope": PaperValue("§IV-D, Fig. 3", -0.90, 0.1, "about -0.90"),
}


@dataclass(frozen=True)
class ConformanceRow:
    """One number: the paper's value, the measured one, the tolerance and the status
    (``within``, ``outside``, ``unavailable`` — with the reason in ``note`` — or ``measured``
    for a number the paper does not print)."""

    section: str
    quantity: str
    paper: float | None
    measured: float | None
    tolerance: float | None
    status: str
    note: str = ""

    @property
    def gap(self) -> float | None:
        if self.paper is None or self.measured is None:
            return None
        return self.measured - self.paper


@dataclass(frozen=True)
class ConformanceReport:
    """Every model-free number of one build against the paper."""

    norms: str
    seed: int
    n_candidates: int
    n_items: int
    swow: bool
    rows: tuple[ConformanceRow, ...]

    def by_quantity(self, quantity: str) -> ConformanceRow:
        for row in self.rows:
            if row.quantity == quantity:
                return row
        raise KeyError(quantity)

    @property
    def outside(self) -> tuple[ConformanceRow, ...]:
        return tuple(r for r in self.rows if r.status == "outside")


def _row(key: str, measured: float | None, note: str = "", *, quantity: str = "") -> ConformanceRow:
    p = PAPER[key]
    if measured is None or not np.isfinite(measured):
        return ConformanceRow(
            p.section, quantity or key, p.value, None, p.tolerance, "unavailable", note
        )
    status = "within" if abs(measured - p.value) <= p.tolerance + 1e-12 else "outside"
    return ConformanceRow(
        p.section, quantity or key, p.value, float(measured), p.tolerance, status, note
    )


def _measured(section: str, quantity: str, value: float, note: str = "") -> ConformanceRow:
    return ConformanceRow(section, quantity, None, float(value), None, "measured", note)


def _size_tile(result: BuildResult) -> Tile | None:
    return next((b.tile for b in result.selection.blocks if b.tile.name == "size"), None)


def _fig1(result: BuildResult) -> list[ConformanceRow]:
    norms, tile = result.pool.norms, _size_tile(result)
    keys = ("Fig. 1 fit, football", "Fig. 1 fit, chicken egg", "Fig. 1 fit_cost")
    if tile is None or not {"grapefruit", "faucet"} <= set(norms.words):
        return [_row(k, None, "no size tile or no grapefruit/faucet in the norms") for k in keys]
    size = norms.dimensions[tile.dimension].means
    g, f = size[norms.words.index("grapefruit")], size[norms.words.index("faucet")]
    fit = pair_fit(g, f, tile)
    names = [o.lower() for o in tile.options]
    football = next((i for i, o in enumerate(names) if "football" in o), None)
    egg = next((i for i, o in enumerate(names) if "chicken egg" in o), None)
    if football is None or egg is None:
        return [_row(k, None, "the size tile lacks the two quoted anchor phrases") for k in keys]
    note = f"grapefruit {g:.1f}, faucet {f:.1f} on the size slider"
    rows = [
        _row(keys[0], float(fit[football]), note),
        _row(keys[1], float(fit[egg]), note),
        _row(keys[2], float(fit[football] - fit[egg]), note),
    ]
    pool_sizes = size[result.pool.indices]
    for key, k in (
        ("pool concepts in the football bin", football),
        ("pool concepts in the chicken egg bin", egg),
    ):
        n = int(((pool_sizes >= tile.edges[k]) & (pool_sizes <= tile.edges[k + 1])).sum())
        if "swow" in result.pool.sources:
            rows.append(_row(key, float(n), f"of the {len(result.pool)} pool concepts"))
        else:
            rows.append(
                ConformanceRow(
                    PAPER[key].section,
                    key,
                    PAPER[key].value,
                    None,
                    PAPER[key].tolerance,
                    "unavailable",
                    f"the paper counts its 1,118-concept SWOW pool; here {n} of the "
                    f"{len(result.pool)} concepts of a pool without SWOW",
                )
            )
    return rows


def _screen(result: BuildResult) -> list[ConformanceRow]:
    screen = result.items.config["tile_screen"]
    ratios = screen["rater_disagreement_ratio"]
    rows = []
    for dim in ("manmade", "size", "hold", "moves", "arousing", "precious", "pleasant"):
        value = ratios.get(dim)
        rows.append(
            _row(
                f"rater ratio {dim}",
                None if value is None else float(value),
                "" if value is not None else "the norms publish no rater SD",
            )
        )
    norms, pool = result.pool.norms, result.pool
    four = [d for d in ("manmade", "size", "hold", "moves") if d in norms.dimensions]
    if len(four) == 4:
        mat = np.array([norms.dimensions[d].means[pool.indices] for d in four])
        r = np.corrcoef(mat)
        iu = np.triu_indices(4, 1)
        j = int(np.argmax(np.abs(r[iu])))
        pair = f"{four[iu[0][j]]}-{four[iu[1][j]]}, over the {len(pool)} pool concepts"
        rows.append(_row("largest pairwise r among the four tiles", float(r[iu][j]), pair))
    else:
        rows.append(
            _row("largest pairwise r among the four tiles", None, "the four tiles are absent")
        )
    return rows


def _pool(result: BuildResult) -> list[ConformanceRow]:
    cfg = result.items.config["pool"]
    rows = [_measured("§I-B", f"pool step: {step}", n) for step, n in cfg["steps"]]
    swow = cfg.get("swow")
    if swow is None:
        reason = (
            f"needs SWOW (--swow FILE): the intersection includes the SWOW cue match; without "
            f"it the pool is {cfg['size']}"
        )
        rows += [_row("pool size", None, reason), _row("SWOW overlap", None, reason)]
    else:
        rows.append(_row("pool size", float(cfg["size"])))
        n = len(result.pool.norms)
        rows.append(_row("SWOW overlap", swow["concepts_matched"] / n, f"of {n} concepts"))
    return rows


def _candidates(result: BuildResult) -> list[ConformanceRow]:
    cfg = result.items.config
    rates = cfg["conflict_rates"]
    rows = []
    for tile, r in rates.items():
        key = f"conflict rate {tile}"
        if key in PAPER:
            rows.append(_row(key, r["conflict_rate"]))
        else:
            rows.append(
                _measured("§I-F", key, r["conflict_rate"], "the paper prints manmade and size")
            )
    pooled = np.concatenate(
        [b.oracle.competition_ratio[b.oracle.conflict] for b in result.selection.blocks]
    )
    rows.append(
        _row(
            "median local competition ratio",
            float(np.median(pooled)) if pooled.size else None,
            "over every conflict candidate, all tiles pooled; ratio Σ_h f(o_fit,h) / Σ_h f(o_bayes,h)",
        )
    )
    for tile, r in rates.items():
        rows.append(
            _measured(
                "§I-F",
                f"median local competition ratio, {tile}",
                r["median_competition_ratio_conflict"],
            )
        )
    ties = cfg["tie_readings"]
    pooled_ties = ties["pooled"]
    rows.append(
        _measured(
            "Appendix B",
            "tie rate at the Bayes optimum",
            pooled_ties["bayes_optimum/listed_concepts"]["tie_rate"],
            "all tiles pooled; the paper prints no rate",
        )
    )
    size = ties["per_tile"].get("size")
    for reading in (
        "bayes_optimum/listed_concepts",
        "bayes_optimum/target_pair",
        "any_two_options/listed_concepts",
        "any_two_options/target_pair",
    ):
        share = pooled_ties[reading]["geometric_share"]
        suff = pooled_ties.get(f"sufficiency/{reading.split('/')[1]}", {})
        p_tie = suff.get("p_tie_given_geometric")
        extra = (
            ""
            if p_tie is None
            else f"; P(tie | geometric) under this range {p_tie:.3f} (sufficient means 1)"
        )
        if size is not None and size[reading]["geometric_share"] is not None:
            extra += f"; size tile alone {100 * size[reading]['geometric_share']:.1f} %"
        rows.append(
            _row(
                "geometric share of ties",
                share,
                f"{pooled_ties[reading]['tied']} tied units, all tiles pooled{extra}",
                quantity=f"geometric share of ties ({reading.replace('/', ', ')})",
            )
        )
    for scope in ("listed_concepts", "target_pair"):
        suff = pooled_ties.get(f"sufficiency/{scope}")
        if suff and suff["p_tie_given_geometric"] is not None:
            rows.append(
                _measured(
                    "Appendix B",
                    f"P(tie | geometric), range {scope.replace('_', ' ')}",
                    suff["p_tie_given_geometric"],
                    f"{suff['tied']} of {suff['geometric_pairs']} option pairs beyond the range "
                    "on one side tie; Appendix B calls the geometric condition sufficient (1)",
                )
            )
    return rows


def _references(result: BuildResult, *, seed: int, n_resamples: int) -> list[ConformanceRow]:
    items = [i for i in result.items if i.meta["tile"] == "size" and i.meta["conflict"]]
    keys = [k for k, v in PAPER.items() if v.section.startswith(("§I-H1", "§IV"))]
    if not items:
        return [_row(k, None, "the item set has no size conflict items") for k in keys]
    rows = [_row("size conflict items", float(len(items)))]
    queries = render_queries(items)
    uniform = coordinate_table(items, queries, UniformChooser().score(queries), rules=["probs"])
    s = cell_summary(uniform, seed=seed, n_resamples=n_resamples)
    rows += [
        _row("random fit_norm mean", s.random_fit_norm.mean),
        _row("random fit_norm SD", s.random_fit_norm.sd),
        _row("random post_norm mean", s.random_post_norm.mean),
        _row("random post_norm SD", s.random_post_norm.sd),
        _row("salience pole post_norm", s.salience_post_norm.mean),
    ]
    bayes_rows = coordinate_table(
        items, queries, BayesOracleChooser(items).score(queries), rules=["probs"]
    )
    b = cell_summary(bayes_rows, seed=seed, n_resamples=n_resamples)
    rows.append(_row("Bayes pole post_norm", b.post_norm.mean))
    sal = s.salience_post_norm.mean
    rows.append(
        _row(
            "random on the salience-to-Bayes scale",
            (s.random_post_norm.mean - sal) / (1.0 - sal),
            "(random post_norm - salience) / (1 - salience)",
        )
    )
    n_bins = 10 if len(items) >= 20 else max(2, len(items) // 2)
    deciles = fit_cost_deciles(bayes_rows, items, n_bins=n_bins, seed=seed, n_resamples=n_resamples)
    bins = deciles.bins
    post_sep = [x.post_separation for x in bins]
    rows += [
        _row("Bayes pole fit_norm, lowest fit_cost decile", bins[0].bayes_fit_norm),
        _row("Bayes pole fit_norm, highest fit_cost decile", bins[-1].bayes_fit_norm),
        _row("fit-axis separation, lowest decile", bins[0].fit_separation),
        _row("fit-axis separation, highest decile", bins[-1].fit_separation),
        _row(
            "posterior-axis separation, smallest decile",
            min(post_sep),
            "per decile: " + ", ".join(f"{x:.3f}" for x in post_sep),
        ),
        _row("posterior-axis separation, largest decile", max(post_sep)),
    ]
    monotone = bool(np.all(np.diff([x.fit_separation for x in bins]) >= 0))
    rows.append(
        _measured("§IV-D", "fit-axis separation grows monotonically (1 = yes)", float(monotone))
    )
    sal_rows = coordinate_table(
        items, queries, SalienceChooser(items).score(queries), rules=["probs"]
    )
    sal_dec = fit_cost_deciles(sal_rows, items, n_bins=n_bins, seed=seed, n_resamples=n_resamples)
    rows += [
        _row("salience reference slope", sal_dec.slope.estimate),
        _row("Bayes reference slope", deciles.bayes_slope.estimate),
    ]
    return rows


def check_conformance(
    result: BuildResult, *, seed: int = 0, n_resamples: int = 1000
) -> ConformanceReport:
    """Every model-free number of the paper against ``result`` (see module docstring);
    ``seed`` and ``n_resamples`` only feed bootstrap intervals no row reports."""
    rows: list[ConformanceRow] = []
    rows += _pool(result)
    rows += _screen(result)
    rows += _candidates(result)
    rows += _fig1(result)
    rows += _references(result, seed=seed, n_resamples=n_resamples)
    retention = result.items.config["retention"]
    if not retention.get("available"):
        rows.append(
            ConformanceRow(
                "Appendix A",
                "natural-kind retention gap (pp)",
                25.0,
                None,
                2.0,
                "unavailable",
                str(retention.get("reason", "")),
            )
        )
    else:
        gap = float(retention["all"]["gap_pp"])
        status = "within" if abs(gap - 25.0) <= 2.0 else "outside"
        rows.append(
            ConformanceRow("Appendix A", "natural-kind retention gap (pp)", 25.0, gap, 2.0, status)
        )
    cfg = result.items.config
    return ConformanceReport(
        norms=str(cfg.get("norms")),
        seed=int(cfg.get("seed", 0)),
        n_candidates=int(cfg.get("n_candidates", 0)),
        n_items=len(result.items),
        swow="swow" in result.pool.sources,
        rows=tuple(rows),
    )
