"""``choiceaudit report``: HTML + tables + figures from run directories."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from choiceaudit.cli._app import app, guarded, out, panel


@app.command(rich_help_panel=panel("report"))
@guarded
def report(
    runs: Annotated[list[Path], typer.Argument(help="Run directories to report on.")],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Report directory (index.html, figures/, tables/).")
    ],
    title: Annotated[str, typer.Option(help="Report title.")] = "choiceaudit report",
    screenshot: Annotated[
        Path | None, typer.Option(help="Also save a full-page PNG of the report (needs chromium).")
    ] = None,
    docs_url: Annotated[
        str | None,
        typer.Option(
            help="Documentation site each table's definition links into (default: the site "
            "`make docs` serves)."
        ),
    ] = None,
) -> None:
    """Write the HTML report of run directories.

    Analyses the runs (each by its instrument) and writes a self-contained index.html with
    every table (CSV, Markdown, LaTeX) and figure (PNG, SVG, and the CSV it plots) beside it.

    Example:

    \b
      choiceaudit report runs/mc --out report
      choiceaudit report runs/sig/* --out report/sig
    """
    from choiceaudit.audit import analyse_runs
    from choiceaudit.report import DOCS_URL, build_report

    index = build_report(
        analyse_runs(runs), out=out_dir, title=title, docs_url=docs_url or DOCS_URL
    )
    out.print(f"report: {index}")
    if screenshot is not None:
        from choiceaudit.report import screenshot as take

        out.print(f"screenshot: {take(index, screenshot)}")
