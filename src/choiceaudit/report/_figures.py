"""Report figures: drawn from already-computed values, saved as PNG and SVG beside a CSV of
exactly the values plotted (so every number in a figure can be re-read)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from choiceaudit.report._tables import ReportTable

__all__ = ["ReportFigure", "new_figure"]

plt.rcParams.update(
    {
        "figure.dpi": 110,
        "savefig.dpi": 110,
        "font.size": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "svg.fonttype": "none",
        "svg.hashsalt": "choiceaudit",  # deterministic SVG ids
    }
)


def new_figure(width: float = 6.4, height: float = 3.6) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


@dataclass(frozen=True)
class ReportFigure:
    """``draw(fig)`` paints ``data`` onto a fresh figure; ``caption`` says how to read it."""

    name: str
    title: str
    data: ReportTable
    draw: Callable[[Figure], Any]
    caption: str = ""
    width: float = 6.4
    height: float = 3.6

    def render(self) -> Figure:
        fig = new_figure(self.width, self.height)
        self.draw(fig)
        fig.suptitle(self.title, fontsize=10)
        return fig

    def write(self, directory: Path) -> dict[str, Path]:
        """Write ``<name>.png``, ``.svg`` and ``.csv`` (the plotted values)."""
        directory.mkdir(parents=True, exist_ok=True)
        fig = self.render()
        paths = {
            "png": directory / f"{self.name}.png",
            "svg": directory / f"{self.name}.svg",
            "csv": directory / f"{self.name}.csv",
        }
        fig.savefig(paths["png"], format="png", metadata={"Software": None})
        fig.savefig(paths["svg"], format="svg", metadata={"Date": None})
        paths["csv"].write_text(self.data.to_csv(), encoding="utf-8")
        return paths
