"""Command groups shared by several modules: ``choiceaudit build <instrument>``,
``choiceaudit run <instrument>`` and ``choiceaudit import <source>``."""

from __future__ import annotations

import typer

from choiceaudit.cli._app import app

__all__ = ["build_app", "import_app", "run_app"]

build_app = typer.Typer(help="Build and freeze an instrument's item set.", no_args_is_help=True)
run_app = typer.Typer(
    help="Run an instrument on one or more models into run directories.", no_args_is_help=True
)
app.add_typer(build_app, name="build")
app.add_typer(run_app, name="run")
import_app = typer.Typer(
    help="Import results made elsewhere (people, other harnesses) into run directories.",
    no_args_is_help=True,
)
app.add_typer(import_app, name="import")
