"""The command line explains itself: ``choiceaudit --help`` groups the commands in panels in
the order a user meets them, each with a one-line summary that fits 80 columns; every command's
help has an example; no help text loses a word, a bracket or a sentence at 60, 80 or 120
columns, and none is broken mid-sentence where the line had room; ``--version`` prints the
version and the commit."""

from __future__ import annotations

import inspect
import itertools
import re
from collections.abc import Iterator

import pytest
import typer
from typer.testing import CliRunner

import choiceaudit
from choiceaudit.cli import app
from choiceaudit.cli._app import PANELS, summary

WIDTHS = (60, 80, 120)
ROOT = typer.main.get_command(app)


def _commands(command: object = ROOT, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command and group path below the root, the root included."""
    yield path
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


def _command(path: tuple[str, ...]) -> object:
    command: object = ROOT
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    return command


def _help(path: tuple[str, ...], width: int) -> str:
    done = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": str(width)})
    assert done.exit_code == 0, done.output
    return done.output


#: a row of a definition list (a name, two spaces or more, its text); prose has single spaces
_NEW_ROW = re.compile(r"\S {2,}\S")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text.replace("\b", ""))


def test_the_top_level_help_shows_the_panels_in_the_order_a_user_meets_them() -> None:
    for width in WIDTHS:
        text = _help((), width)
        titles = [line[:-1] for line in text.splitlines() if line.endswith(":") and line[0] != " "]
        assert titles[titles.index("Options") + 1 :] == list(PANELS), width
        listed = [
            line.split()[0]
            for line in text.split("Options:")[1].splitlines()
            if line.startswith("  ") and not line.startswith("   ") and "--" not in line
        ]
        assert listed == [name for names in PANELS.values() for name in names], width


def test_every_top_level_command_is_in_a_panel() -> None:
    panelled = {name for names in PANELS.values() for name in names}
    assert set(ROOT.commands) == panelled  # type: ignore[attr-defined]


def test_every_summary_is_one_line_at_80_columns() -> None:
    text = _help((), 80)
    for names in PANELS.values():
        for name in names:
            line = next(line for line in text.splitlines() if line.split()[:1] == [name])
            text_of = summary(_command((name,)).help or "")  # type: ignore[attr-defined]
            assert line.rstrip().endswith(text_of), f"{name}: {line!r}"
            assert len(line.rstrip()) <= 80


@pytest.mark.parametrize("width", WIDTHS)
def test_no_help_text_loses_a_word_or_breaks_mid_sentence(width: int) -> None:
    for path in _commands():
        command = _command(path)
        text = _help(path, width)
        flat = _squeezed(text)
        name = " ".join(path) or "choiceaudit"
        sources = [command.help or ""]  # type: ignore[attr-defined]
        sources += [getattr(p, "help", None) or "" for p in command.params]  # type: ignore[attr-defined]
        for source in sources:
            assert _squeezed(inspect.cleandoc(source)) in flat, f"{name} at {width}: {source!r}"
        for a, b in itertools.pairwise(text.splitlines()):
            words = b.split()
            if not a.strip() or a.rstrip().endswith(":") or not words:
                continue  # a paragraph or a section starts
            if not words[0][0].islower() or _indent(b) < _indent(a) or _NEW_ROW.search(b):
                continue  # not a sentence going on: a new row, option or sentence
            if b.startswith("    choiceaudit"):
                continue  # an example command, laid out as written
            assert len(a.rstrip()) + 1 + len(words[0]) > min(width, 80), (
                f"{name} at {width}: a line broken where it had room:\n{a}\n{b}"
            )


def test_every_command_has_an_example() -> None:
    for path in _commands():
        command = _command(path)
        if hasattr(command, "commands"):
            continue
        help_text = command.help or ""  # type: ignore[attr-defined]
        assert "Example:" in help_text, " ".join(path)
        assert f"choiceaudit {' '.join(path)}" in help_text, " ".join(path)


def test_version_prints_the_version_and_the_commit() -> None:
    done = CliRunner().invoke(app, ["--version"])
    assert done.exit_code == 0
    pattern = (
        rf"choiceaudit {re.escape(choiceaudit.__version__)} \(commit ([0-9a-f]{{40}}|unknown)\)\n"
    )
    assert re.fullmatch(pattern, done.output), done.output
