"""Figures of the signalling report: each draws exactly the records of its ``ReportTable``
(paper Fig. 2, Fig. 3 and the §IV-C scatter), records of the typed results of
``analyse_signalling_runs`` (``CoordinatePoint``, ``FitCostBin``, ``ExcessPoint``). Identity is carried by marker shape as well as
colour, as in the paper."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict

from matplotlib.figure import Figure

from choiceaudit.instruments.signalling.records import CoordinatePoint, ExcessPoint, FitCostBin
from choiceaudit.report._figures import ReportFigure
from choiceaudit.report._tables import Computed, ReportTable

__all__ = [
    "coordinate_figure",
    "excess_figure",
    "fit_cost_figure",
]

_MARKERS = ("o", "^", "v", "P", "X", "*", "h", "<", ">", "p")
_COLOURS = ("#1b6ca8", "#d1495b", "#2e933c", "#8e5ea2", "#e08e0b", "#00798c", "#6b4226", "#444")
_POLES = {"salience pole (S)": ("s", "S"), "Bayes pole (B)": ("D", "B"), "random (R)": ("o", "R")}


PAGE = "instruments/signalling.md"
COORDINATES = Computed(
    rule="each chooser's choices placed on the coordinate (post_norm: 1 = the Bayes pole; "
    "fit_norm: 1 = the salience pole); a model's under each rule.",
    aggregation="mean over the analysis set's items per chooser × rule, with the references' "
    "poles and the random reference's spread.",
    n="the analysis set's items (column n_items).",
    page=PAGE,
)
FIT_COST = Computed(
    rule="each item's achieved fit_norm of the chosen option, by the item's fit_cost.",
    aggregation="mean per fit_cost bin of the analysis set's items.",
    n="the bin's items.",
    page=PAGE,
)
EXCESS = Computed(
    rule="per chooser × rule cell: excess consistency (permutation consistency minus the "
    "marginal null) and the distance of its post_norm from random.",
    aggregation="one point per cell; r = Pearson correlation over the model × rule cells with "
    "its interval.",
    n="the model × rule cells (in the r text).",
    page=PAGE,
)


def _style(names: Sequence[str]) -> dict[str, tuple[str, str]]:
    return {
        n: (_MARKERS[i % len(_MARKERS)], _COLOURS[i % len(_COLOURS)]) for i, n in enumerate(names)
    }


def _facets(records: Sequence[CoordinatePoint] | Sequence[FitCostBin]) -> list[str]:
    return list(dict.fromkeys(str(r.facet) for r in records))


def coordinate_figure(records: Sequence[CoordinatePoint], set_label: str) -> ReportFigure:
    """Fig. 2: every chooser's mean (fit_norm, post_norm) against S, B and R (± 1 SD)."""
    table = ReportTable.from_records(
        "signalling_coordinates",
        f"Coordinates against the references ({set_label})",
        [asdict(r) for r in records],
        computed=COORDINATES,
    )
    facets = _facets(records)
    choosers = list(dict.fromkeys(r.point for r in records if r.kind != "pole"))
    style = _style(choosers)

    def draw(fig: Figure) -> None:
        axes = fig.subplots(1, len(facets), sharex=True, sharey=True, squeeze=False)[0]
        for ax, facet in zip(axes, facets, strict=True):
            here = [r for r in records if r.facet == facet]
            for r in here:
                if r.kind == "pole":
                    marker, letter = _POLES[r.point]
                    ax.errorbar(
                        r.fit_norm,
                        r.post_norm,
                        xerr=r.fit_norm_sd or None,
                        yerr=r.post_norm_sd or None,
                        fmt=marker,
                        color="black",
                        mfc="white",
                        ms=9,
                        capsize=3,
                        zorder=2,
                    )
                    ax.annotate(
                        letter,
                        (r.fit_norm, r.post_norm),
                        xytext=(6, 6),
                        textcoords="offset points",
                        fontweight="bold",
                    )
                else:
                    marker, colour = style[r.point]
                    ax.plot(
                        r.fit_norm,
                        r.post_norm,
                        marker,
                        color=colour,
                        ms=7,
                        alpha=0.85,
                        zorder=3,
                        label=r.point,
                    )
            ax.set_title(f"rule: {facet}")
            ax.set_xlabel("fit_norm (1 = salience)")
            ax.set_xlim(-0.05, 1.1)
            ax.set_ylim(-0.05, 1.1)
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("post_norm (1 = Bayes)")
        handles, labels = axes[0].get_legend_handles_labels()
        uniq = dict(zip(labels, handles, strict=True))
        fig.legend(list(uniq.values()), list(uniq), loc="outside right center", fontsize=8)

    return ReportFigure(
        "signalling_coordinates",
        "Every chooser against the salience, Bayes and random references (paper Fig. 2)",
        table,
        draw,
        caption=(
            "S: the salience pole (fit-maximising), B: the Bayes pole (posterior-maximising), "
            "R: uniform random selection with ±1 SD across items. Means over items of the "
            f"analysis set ({set_label}). Reference choosers have no scoring rule and repeat "
            "in every panel."
        ),
        width=3.2 * len(facets) + 2.2,
        height=3.6,
    )


def fit_cost_figure(records: Sequence[FitCostBin], set_label: str) -> ReportFigure:
    """Fig. 3: achieved fit_norm (top) and post_norm (bottom) by fit_cost bin, with the three
    reference lines on each axis."""
    table = ReportTable.from_records(
        "signalling_fit_cost",
        f"Achieved fit by fit_cost bin ({set_label})",
        [asdict(r) for r in records],
        computed=FIT_COST,
    )
    facets = _facets(records)
    choosers = list(dict.fromkeys(r.chooser for r in records))
    style = _style(choosers)

    # the fit axis (Fig. 3) above, the posterior axis (§IV-D) below: per axis, the chooser's
    # achieved value, the salience and Bayes lines, the random reference and its SD
    Read = Callable[[FitCostBin], float]
    panels: tuple[tuple[str, Read, Read, Read, Read, Read], ...] = (
        (
            "fit_norm",
            lambda r: r.achieved_fit_norm,
            lambda _: 1.0,
            lambda r: float(r.bayes_fit_norm),
            lambda r: r.random_fit_norm,
            lambda r: r.random_fit_norm_sd,
        ),
        (
            "post_norm",
            lambda r: r.achieved_post_norm,
            lambda r: float(r.salience_post_norm),
            lambda _: 1.0,
            lambda r: r.random_post_norm,
            lambda r: r.random_post_norm_sd,
        ),
    )

    def draw(fig: Figure) -> None:
        grid = fig.subplots(2, len(facets), sharex=True, sharey=True, squeeze=False)
        for row, (axis, achieved, salience, bayes, random, random_sd) in enumerate(panels):
            for ax, facet in zip(grid[row], facets, strict=True):
                here = [r for r in records if r.facet == facet]
                ref = [r for r in here if r.chooser == here[0].chooser]
                x = [r.fit_cost for r in ref]
                rand = [random(r) for r in ref]
                sd = [random_sd(r) for r in ref]
                ax.plot(x, [salience(r) for r in ref], ":", color="black", label="salience")
                ax.plot(x, [bayes(r) for r in ref], "--", color="black", label="Bayes")
                ax.plot(x, rand, "-.", color="grey", label="random ±1 SD")
                ax.fill_between(
                    x,
                    [m - s for m, s in zip(rand, sd, strict=True)],
                    [m + s for m, s in zip(rand, sd, strict=True)],
                    color="grey",
                    alpha=0.15,
                )
                for chooser in choosers:
                    rows = [r for r in here if r.chooser == chooser]
                    if rows:
                        marker, colour = style[chooser]
                        ax.plot(
                            [r.fit_cost for r in rows],
                            [achieved(r) for r in rows],
                            marker=marker,
                            color=colour,
                            lw=1.2,
                            ms=5,
                            alpha=0.85,
                            label=chooser,
                        )
                if row == 0:
                    ax.set_title(f"rule: {facet}")
                else:
                    ax.set_xlabel("fit_cost (bin mean)")
                ax.set_ylim(-0.05, 1.1)
                ax.grid(alpha=0.3)
            grid[row][0].set_ylabel(f"achieved {axis}")
        axes = grid[0]
        handles, labels = [], []
        for ax in axes:  # the legend of the top row covers every panel
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
        fig.legend(handles, labels, loc="outside right center", fontsize=7)

    return ReportFigure(
        "signalling_fit_cost",
        "Achieved fit and posterior by fit_cost bin (paper Fig. 3, §IV-D)",
        table,
        draw,
        caption=(
            "Top: achieved fit_norm (Fig. 3); bottom: achieved post_norm (§IV-D). Dotted: a "
            "salience chooser; dashed: the Bayes oracle; dash-dot band: uniform random ±1 SD "
            "across items. The slopes on fit_cost are in the table below."
        ),
        width=3.2 * len(facets) + 2.8,
        height=6.4,
    )


def excess_figure(records: Sequence[ExcessPoint], r_text: str) -> ReportFigure:
    """§IV-C: excess consistency against distance of post_norm from random, one point a cell."""
    table = ReportTable.from_records(
        "signalling_excess_vs_distance",
        "Excess over the marginal null against distance from random, per chooser x rule cell",
        [asdict(r) for r in records],
        computed=EXCESS,
    )
    choosers = list(dict.fromkeys(r.chooser for r in records))
    style = _style(choosers)

    def draw(fig: Figure) -> None:
        ax = fig.add_subplot()
        labels: dict[tuple[float, float], list[str]] = {}
        for r in records:
            marker, colour = style[r.chooser]
            xy = (float(r.excess), float(r.distance_from_random))
            hollow = r.kind == "reference"  # shown for context, outside r
            ax.plot(*xy, marker, color=colour, ms=7, alpha=0.85, mfc="white" if hollow else colour)
            labels.setdefault((round(xy[0], 6), round(xy[1], 6)), []).append(
                f"{r.chooser}/{r.rule}"
            )
        for xy, names in labels.items():  # coincident cells share one label
            ax.annotate(", ".join(names), xy, xytext=(5, 3), textcoords="offset points", fontsize=7)
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_xlabel("excess consistency (item-sensitivity)")
        ax.set_ylabel("|post_norm − random|")
        ax.set_title(r_text, fontsize=9)
        ax.grid(alpha=0.3)

    return ReportFigure(
        "signalling_excess_vs_distance",
        "Consistency is not alignment: excess against distance from random (§IV-C)",
        table,
        draw,
        caption=(
            "One point per chooser x rule cell of the analysis set; r is over the model cells "
            "(filled); reference choosers (hollow) are shown for context."
        ),
        width=5.6,
        height=3.8,
    )
