"""MkDocs hook: the command-line reference page is generated from the typer app itself, so it
cannot drift from what ``choiceaudit --help`` prints. The marker ``<!-- cli-reference -->`` in
a page is replaced by every command's help, rendered at 80 columns."""

from __future__ import annotations

from typing import Any

MARKER = "<!-- cli-reference -->"


def _sections() -> str:
    import typer
    from typer.testing import CliRunner

    from choiceaudit.cli import app

    runner = CliRunner()
    out: list[str] = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        done = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
        if done.exit_code != 0:
            raise RuntimeError(f"choiceaudit {' '.join(path)} --help failed:\n{done.output}")
        level = "#" * min(len(path) + 1, 4)
        out.append(f"{level} `choiceaudit{''.join(' ' + p for p in path)}`\n")
        out.append(f"```text\n{done.output.rstrip()}\n```\n")
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER in markdown:
        return markdown.replace(MARKER, _sections())
    return markdown
