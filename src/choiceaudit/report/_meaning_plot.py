"""The drawing kit of the meaning figures: one colour per model, grouped bars with their
intervals, a 0–1 axis with room for a legend, one legend under a row of panels, the dashed
chance line. Each figure of the meaning section is drawn with these."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import SupportsFloat

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from choiceaudit.report._meaning_tables import CHANCE

__all__ = [
    "Record",
    "as_number",
    "chance_line",
    "grouped_bars",
    "model_colour",
    "model_names",
    "shared_legend",
    "unit_axis",
    "wrap_label",
]

#: A table row as column → value, as the figure reads it back from its table.
Record = Mapping[str, object]


def model_names(records: Sequence[Record], key: str = "model") -> list[str]:
    return list(dict.fromkeys(str(r[key]) for r in records))


def model_colour(models: Sequence[str], model: str) -> str:
    return f"C{models.index(model) % 10}"


def as_number(value: object) -> float:
    if value is None:
        return math.nan
    if isinstance(value, (SupportsFloat, str)):
        return float(value)
    raise TypeError(f"a plotted cell is not a number: {value!r}")


def grouped_bars(
    ax: Axes,
    records: Sequence[Record],
    *,
    group: str,
    value: str,
    low: str | None = "ci_low",
    high: str | None = "ci_high",
    groups: Sequence[str] | None = None,
    series: str = "model",
) -> None:
    """Bars of ``value`` per ``group`` on the x axis, one bar per ``series`` value, with the
    interval [low, high] as error bars where given."""
    groups = (
        list(groups) if groups is not None else list(dict.fromkeys(str(r[group]) for r in records))
    )
    names = model_names(records, series)
    width = 0.8 / max(len(names), 1)
    for s, name in enumerate(names):
        mine = {str(r[group]): r for r in records if str(r[series]) == name}
        xs = [g for g in range(len(groups)) if groups[g] in mine]
        vals = np.array([as_number(mine[groups[g]][value]) for g in xs])
        x = np.array(xs, dtype=float) - 0.4 + width * (s + 0.5)
        err = None
        if low is not None and high is not None:
            lo = np.array([as_number(mine[groups[g]][low]) for g in xs])
            hi = np.array([as_number(mine[groups[g]][high]) for g in xs])
            err = np.nan_to_num(np.vstack([vals - lo, hi - vals]).clip(min=0))
        ax.bar(x, vals, width=width * 0.95, color=f"C{s % 10}", label=name, yerr=err, capsize=2)
    ax.set_xticks(range(len(groups)), groups, fontsize=8)


def unit_axis(ax: Axes, *, legend: bool = True, title: str | None = None) -> None:
    """A 0–1 axis with headroom above 1 for a legend laid out in a row, clear of the bars."""
    ax.set_ylim(0, 1.22)
    ax.set_yticks(np.linspace(0, 1, 6))
    if legend:
        n = len(ax.get_legend_handles_labels()[1])
        ax.legend(
            fontsize=7,
            loc="upper center",
            ncols=min(n, 3),
            frameon=False,
            title=title,
            title_fontsize=7,
        )


def shared_legend(fig: Figure, *, ncols: int = 4) -> None:
    """One legend for a row of panels, below them: per-panel legends of long model names would
    squeeze the panels to nothing."""
    seen: dict[str, Artist] = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    if seen:
        fig.legend(
            list(seen.values()),
            list(seen),
            loc="outside lower center",
            ncols=min(len(seen), ncols),
            fontsize=7,
            frameon=False,
        )


def wrap_label(label: str, width: int = 14) -> str:
    return textwrap.fill(label, width, break_long_words=True)


def chance_line(ax: Axes, level: float = CHANCE, label: str = "chance 0.25") -> None:
    ax.axhline(level, color="k", linestyle="--", linewidth=0.8, label=label)
