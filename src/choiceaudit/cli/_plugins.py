"""``choiceaudit run <plug-in>``: one command per plug-in instrument installed or registered
when the command line starts (:func:`~choiceaudit.instruments.register_instrument`, the
``choiceaudit.instruments`` entry points). A plug-in that cannot be read adds no command here;
its error is raised, by name, wherever its instrument is asked for (``report`` on its runs)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from choiceaudit.audit import MAX_FLIP_RATE, run_instrument
from choiceaudit.cli._app import (
    AcceptFlipsOpt,
    MaxFlipRateOpt,
    PrecisionGateOpt,
    guarded,
    labelled_progress,
    out,
    parse_options,
    precision_settings,
    print_precision,
    progress_bar,
)
from choiceaudit.cli._groups import run_app
from choiceaudit.errors import ChoiceAuditError
from choiceaudit.instruments import plugin_instruments

__all__ = ["add_plugin_commands"]


def _command(name: str) -> Callable[..., None]:
    def run(
        model: Annotated[list[str], typer.Option("--model", "-m", help="Model spec (repeatable).")],
        out_dir: Annotated[
            Path, typer.Option("--out", help="Root directory: one run directory per model.")
        ] = Path("runs"),
        plan_option: Annotated[
            list[str] | None,
            typer.Option("--plan", "-p", help="key=value for the instrument's plan (repeatable)."),
        ] = None,
        option: Annotated[
            list[str] | None,
            typer.Option("--option", "-o", help="key=value for the scorer (repeatable)."),
        ] = None,
        precision_gate: PrecisionGateOpt = True,
        max_flip_rate: MaxFlipRateOpt = MAX_FLIP_RATE,
        accept_flips: AcceptFlipsOpt = False,
    ) -> None:
        plan = {k: str(v) for k, v in parse_options(plan_option or []).items()}
        with progress_bar() as bar:
            paths = run_instrument(
                name,
                model,
                out=out_dir,
                options=plan,
                scorer_options=parse_options(option or []),
                command=["choiceaudit", *sys.argv[1:]],
                progress=labelled_progress(bar, name),
                precision_gate=precision_settings(precision_gate, max_flip_rate, accept_flips),
            )
        for path in paths:
            out.print(f"{path}", highlight=False)
        print_precision(paths)

    run.__doc__ = (
        f"Run the {name} instrument (a plug-in) on each model.\n\n"
        "Plans with the -p options, scores each model into its own run directory under --out\n"
        "(resumable); `choiceaudit report` analyses and lays out the runs.\n\n"
        f"Example:\n\n\b\n  choiceaudit run {name} -m smollm2 -p key=value --out runs\n"
    )
    return guarded(run)


def add_plugin_commands() -> None:
    """Add a ``run`` command for every plug-in instrument (see the module docstring)."""
    try:
        plugins = plugin_instruments()
    except ChoiceAuditError:
        return
    for name in plugins:
        run_app.command(name)(_command(name))
