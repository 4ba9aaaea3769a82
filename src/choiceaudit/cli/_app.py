"""What every command of the ``choiceaudit`` command line shares: the typer ``app`` the command
modules register on, the two consoles (errors and progress on stderr, results on stdout), the
progress bar, :func:`guarded` (a :class:`~choiceaudit.errors.ChoiceAuditError` becomes one
``error:`` line and exit code 1; any other exception is a bug and shows its traceback), the
scorer options parser and the Ray and worker options."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Annotated, Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from choiceaudit.audit import RaySettings
from choiceaudit.errors import ChoiceAuditError

__all__ = [
    "RayGpusOpt",
    "RayOpt",
    "RayWorkersOpt",
    "WorkersOpt",
    "app",
    "console",
    "guarded",
    "labelled_progress",
    "out",
    "parse_options",
    "progress_bar",
    "ray_settings",
]

_P = ParamSpec("_P")
_R = TypeVar("_R")

app = typer.Typer(
    name="choiceaudit",
    help="Audit models that choose among caller-supplied options.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# soft_wrap: an error message is never broken inside a path or a token, whatever the width.
console = Console(stderr=True, soft_wrap=True)
# Summaries are tables: when stdout is a file or pipe, keep them whole rather than at 80 columns.
out = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 160)


def parse_options(pairs: list[str]) -> dict[str, Any]:
    """``key=value`` pairs for a scorer; values are JSON literals when they parse, else strings."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{pair!r} is not key=value", param_hint="--option")
        try:
            options[key] = json.loads(raw)
        except json.JSONDecodeError:
            options[key] = raw
    return options


class _RateColumn(ProgressColumn):
    """Queries per second over rich's recent window ('–' until it has two samples)."""

    def render(self, task: Any) -> Text:
        speed = task.finished_speed or task.speed
        return Text("–/s" if speed is None else f"{speed:.1f}/s", style="progress.data.speed")


def progress_bar() -> Progress:
    """One bar per model and phase: done/total, rate (queries/s) and the time remaining."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        _RateColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


def labelled_progress(bar: Progress, prefix: str = "") -> Callable[[str, int, int], None]:
    """``progress(label, done, total)`` drawing one task of ``bar`` per label (``prefix ·
    label``, or the label alone without a prefix), added when the label is first reported."""
    tasks: dict[str, TaskID] = {}

    def advance(name: str, done: int, total: int) -> None:
        if name not in tasks:
            tasks[name] = bar.add_task(f"{prefix} · {name}" if prefix else name, total=total)
        bar.update(tasks[name], completed=done, total=total)

    return advance


def _fail(message: str, code: int = 1) -> typer.Exit:
    console.print(f"[red]error:[/red] {message}", highlight=False, markup=True)
    return typer.Exit(code)


def guarded(command: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run ``command`` with choiceaudit's errors shown as one ``error:`` line (exit 1)."""

    @functools.wraps(command)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return command(*args, **kwargs)
        except ChoiceAuditError as exc:
            raise _fail(_escape(str(exc))) from None

    return wrapper


def _escape(text: str) -> str:
    # Messages quote paths and values; rich markup in them must print literally.
    from rich.markup import escape

    return escape(text)


RayOpt = Annotated[
    str | None,
    typer.Option(
        "--ray",
        help="Score the parts on Ray actors, one model each: 'auto' (a cluster on this machine, "
        "else a local one) or a cluster ADDRESS; parts are written here (needs "
        "choiceaudit[ray]).",
    ),
]
RayWorkersOpt = Annotated[
    int | None, typer.Option(help="Ray actors (default: one per CPU of the cluster).")
]
RayGpusOpt = Annotated[
    float, typer.Option(help="GPUs Ray reserves per actor (with -o device=cuda).")
]
WorkersOpt = Annotated[
    int,
    typer.Option(
        "--workers",
        help="Processes of this machine scoring a causal LM loaded in process (hf, lm-choice), "
        "each loading it and taking its share of the cores as torch threads; 1: this process.",
    ),
]


def ray_settings(ray: str | None, workers: int | None, gpus: float) -> RaySettings | None:
    """The ``--ray`` options as :class:`~choiceaudit.audit.RaySettings` (``None``: in process)."""
    return None if ray is None else RaySettings(ray, workers, gpus)
