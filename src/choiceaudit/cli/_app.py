"""What every command of the ``choiceaudit`` command line shares: the typer ``app`` the command
modules register on, the two consoles (errors and progress on stderr, results on stdout), the
progress bar, :func:`guarded` (a :class:`~choiceaudit.errors.ChoiceAuditError` becomes one
``error:`` line and exit code 1; any other exception is a bug and shows its traceback), the
scorer options parser and the Ray and worker options."""

from __future__ import annotations

import functools
import inspect
import json
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
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
from typer.core import TyperGroup

from choiceaudit.audit import PrecisionGate, RaySettings, precision_summaries
from choiceaudit.errors import ChoiceAuditError

__all__ = [
    "PANELS",
    "CommandGroup",
    "RayGpusOpt",
    "RayOpt",
    "RayWorkersOpt",
    "WorkersOpt",
    "app",
    "console",
    "guarded",
    "labelled_progress",
    "out",
    "panel",
    "parse_options",
    "progress_bar",
    "ray_settings",
    "summary",
]

_P = ParamSpec("_P")
_R = TypeVar("_R")

#: The command line's panels in the order a user meets them, each with its commands in order;
#: ``choiceaudit --help`` lists them so, and every command registers under its panel.
PANELS: dict[str, tuple[str, ...]] = {
    "Run an audit": ("demo", "run", "score", "report"),
    "Bring results in": ("import", "data", "build"),
    "Deploy": ("gate", "serve-model"),
    "People": ("serve-human", "withdraw-human"),
    "Maintain": ("repair", "check", "models"),
}


def panel(command: str) -> str:
    """The panel of ``command`` in :data:`PANELS`."""
    for title, commands in PANELS.items():
        if command in commands:
            return title
    raise KeyError(f"the command {command!r} has no panel in PANELS")


def summary(help_text: str) -> str:
    """A command's one-line summary: the first paragraph of its help, on one line."""
    return " ".join(inspect.cleandoc(help_text).split("\n\n")[0].split())


class CommandGroup(TyperGroup):
    """A group that lists its commands with their whole summaries (click would cut a summary to
    fit beside the longest name): the top level in the order of :data:`PANELS` (typer lists
    commands as registered, the order the command modules happen to be imported in), one
    section per panel; a sub-group under "Commands", as registered."""

    def list_commands(self, ctx: object) -> list[str]:
        order = [name for commands in PANELS.values() for name in commands]
        return sorted(self.commands, key=lambda n: order.index(n) if n in order else len(order))

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        sections: dict[str, list[tuple[str, str]]] = {}
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            title = next((t for t, names in PANELS.items() if name in names), "Commands")
            sections.setdefault(title, []).append((name, summary(command.help or "")))
        # names padded to the longest, so every section's summaries start in one column
        width = max((len(name) for rows in sections.values() for name, _ in rows), default=0)
        for title, rows in sections.items():
            with formatter.section(title):
                formatter.write_dl([(name.ljust(width), text) for name, text in rows])


# Plain help (click's): every paragraph is reflowed to the terminal's width and no word is cut
# or dropped at any width. Rich help kept the source's line breaks, cut long words in narrow
# columns with an ellipsis and read "[ray]" as a style tag.
app = typer.Typer(
    name="choiceaudit",
    help="Audit models that choose among caller-supplied options.",
    cls=CommandGroup,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        from choiceaudit import __version__
        from choiceaudit.audit import git_commit

        typer.echo(f"choiceaudit {__version__} (commit {git_commit() or 'unknown'})")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and the commit, and exit.",
            is_eager=True,
            callback=_print_version,
        ),
    ] = False,
) -> None:
    """Audit models that choose among caller-supplied options."""


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


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """A warning as one ``warning:`` line on standard error: what it says, not the library's
    source file and line, which tell a user of the command nothing."""
    console.print(f"[yellow]warning:[/yellow] {_escape(str(message))}", highlight=False)


def guarded(command: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run ``command`` with choiceaudit's errors shown as one ``error:`` line (exit 1) and its
    warnings as ``warning:`` lines."""

    @functools.wraps(command)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
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

PrecisionGateOpt = Annotated[
    bool,
    typer.Option(
        "--precision-gate/--no-precision-gate",
        help="With -o dtype=bfloat16 or float16: measure the precision's noise floor and flip "
        "rate on a sample of the run's queries against float32, and float32 against float64, "
        "before scoring (stored in the manifest, shown in the report). --no-precision-gate "
        "skips it; the skip is recorded.",
    ),
]
MaxFlipRateOpt = Annotated[
    float,
    typer.Option(
        help="Refuse a reduced-precision run whose gate flips more than this share of the "
        "choices under any rule (the tool's threshold, not the paper's)."
    ),
]
AcceptFlipsOpt = Annotated[
    bool,
    typer.Option(
        "--accept-precision-flips",
        help="Score a reduced-precision run whose flip rate is above --max-flip-rate anyway "
        "(recorded in the manifest and the report).",
    ),
]


def precision_settings(
    gate: bool, max_flip_rate: float, accept_flips: bool
) -> PrecisionGate | None:
    """The precision-gate options as a :class:`~choiceaudit.audit.PrecisionGate` (``None``:
    opted out)."""
    if not gate:
        return None
    return PrecisionGate(max_flip_rate=max_flip_rate, accept_flips=accept_flips)


def print_precision(runs: Sequence[Path]) -> None:
    """What each reduced-precision run's gate measured, a line per run (nothing for a run in
    float32): the manifest and the report hold it too, but a user reads the terminal first."""
    lines = precision_summaries(runs)
    if lines:
        out.print("precision gate (the noise floor against float32, stored in each manifest):")
        for run, line in lines:
            out.print(f"  {run.name}: {line}", highlight=False)


def ray_settings(ray: str | None, workers: int | None, gpus: float) -> RaySettings | None:
    """The ``--ray`` options as :class:`~choiceaudit.audit.RaySettings` (``None``: in process)."""
    return None if ray is None else RaySettings(ray, workers, gpus)
