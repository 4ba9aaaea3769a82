"""The ``choiceaudit`` command line (typer + rich). Every command has ``--help``.

A command parses its options, calls one function of :mod:`choiceaudit.audit` (or the report
writer on what it returned) and prints. ``_app`` holds what the commands share (the typer app,
the consoles, :func:`guarded`); each command module registers its commands on the app when it
is imported, which this module does.
"""

from __future__ import annotations

import os

# ``--help`` lists the commands in the order they are registered: models, score and repair
# first, then each module's in the order below
from choiceaudit.cli._score import models, repair, score  # isort: split

from choiceaudit.cli import (
    _data,
    _demo,
    _gate,
    _groups,
    _human,
    _import_harness,
    _meaning,
    _plugins,
    _precision,
    _report,
    _serve,
    _signalling,
)
from choiceaudit.cli._app import (
    RayGpusOpt,
    RayOpt,
    RayWorkersOpt,
    WorkersOpt,
    app,
    console,
    guarded,
    out,
    parse_options,
    progress_bar,
    ray_settings,
)

__all__ = [
    "RayGpusOpt",
    "RayOpt",
    "RayWorkersOpt",
    "WorkersOpt",
    "app",
    "console",
    "guarded",
    "main",
    "models",
    "out",
    "parse_options",
    "progress_bar",
    "ray_settings",
    "repair",
    "score",
]

#: the command modules, imported for the commands they register on ``app``
_COMMAND_MODULES = (
    _data,
    _demo,
    _gate,
    _groups,
    _human,
    _import_harness,
    _meaning,
    _precision,
    _report,
    _serve,
    _signalling,
    _plugins,
)

# plug-in instruments' run commands come after the built-in ones
_plugins.add_plugin_commands()


def main() -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # Progress is shown with rich; the libraries' own tqdm bars would interleave with it.
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    app()
