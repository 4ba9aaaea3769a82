"""Command groups shared by several modules: ``choiceaudit build <instrument>``,
``choiceaudit run <instrument>``, ``choiceaudit import <source>`` and ``choiceaudit check
<what>``."""

from __future__ import annotations

import typer

from choiceaudit.cli._app import CommandGroup, app, panel

__all__ = ["build_app", "check_app", "import_app", "run_app"]

build_app = typer.Typer(
    cls=CommandGroup, help="Build and freeze an instrument's item set.", no_args_is_help=True
)
run_app = typer.Typer(
    cls=CommandGroup, help="Run an instrument on models into run directories.", no_args_is_help=True
)
app.add_typer(build_app, name="build", rich_help_panel=panel("build"))
app.add_typer(run_app, name="run", rich_help_panel=panel("run"))
import_app = typer.Typer(
    cls=CommandGroup,
    help="Import results made elsewhere into run directories.",
    no_args_is_help=True,
)
app.add_typer(import_app, name="import", rich_help_panel=panel("import"))
check_app = typer.Typer(
    cls=CommandGroup,
    help="Checks that need no run: an instrument, a model's precision.",
    no_args_is_help=True,
)
app.add_typer(check_app, name="check", rich_help_panel=panel("check"))
