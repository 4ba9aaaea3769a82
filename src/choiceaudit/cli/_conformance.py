"""``choiceaudit check signalling``'s table: the paper against the distribution over seeds of
every model-free number (formatting only; the numbers are
:func:`choiceaudit.audit.check_signalling`'s)."""

from __future__ import annotations

from rich import box
from rich.markup import escape
from rich.table import Table

from choiceaudit.cli._app import out
from choiceaudit.instruments.signalling.conformance import TOLERANCE_SE, SeedConformanceReport

__all__ = ["print_conformance"]


def print_conformance(report: SeedConformanceReport) -> None:
    """Paper against the distribution over seeds for every model-free number (formatting
    only): independent rows first, then the rows listed apart by kind."""
    seeds = report.seeds
    title = (
        f"signalling conformance: {report.norms}, {len(seeds)} seeds ({seeds[0]}–{seeds[-1]}), "
        f"{report.n_candidates:,} candidates, {report.n_items} items"
        + ("" if report.swow else ", no SWOW")
    )
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for col in ("section", "quantity", "paper", "mean", "SD", "tol", "in tol", "status", "kind"):
        table.add_column(
            col, justify="left" if col in ("section", "quantity", "status", "kind") else "right"
        )

    def g(x: float | None) -> str:
        if x is None or x != x:
            return "–"
        return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.4g}"

    order = ("independent", "by construction", "fitted", "complement", "reading")
    for r in sorted(report.rows, key=lambda r: order.index(r.kind)):
        table.add_row(
            r.section,
            escape(r.quantity),
            g(r.paper),
            g(r.mean),
            g(r.sd),
            g(r.tolerance),
            "–" if r.share_within is None else f"{100 * r.share_within:.0f}%",
            r.status,
            r.kind,
        )
    out.print(table)
    for r in report.rows:
        if r.note and (r.status in ("outside", "unavailable") or r.kind != "independent"):
            out.print(escape(f"{r.quantity}: {r.note}"), highlight=False)
    c = report.counts()
    out.print(
        f"{c['within']} within tolerance, {c['outside']} outside, {c['unavailable']} "
        f"unavailable, over the independent rows only (tolerance = {TOLERANCE_SE:g} x the SD "
        f"of one draw over {len(seeds)} seeds); listed apart and never counted: "
        f"{c['by construction']} by construction, {c['fitted']} fitted, {c['complement']} "
        f"complements, {c['reading']} Appendix B readings; every gap is discussed in "
        "docs/instruments/signalling.md",
        highlight=False,
    )
