"""``choiceaudit data``: fetch the paper norms bundles to local files, checksums recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import httpx
import typer

from choiceaudit.cli._app import CommandGroup, _fail, app, out, panel
from choiceaudit.errors import InputError

data_app = typer.Typer(
    cls=CommandGroup, help="Fetch norms and corpora to local files.", no_args_is_help=True
)
app.add_typer(data_app, name="data", rich_help_panel=panel("data"))


@data_app.command("fetch")
def fetch(
    name: Annotated[
        str, typer.Argument(help="Bundle to fetch: 'things' (THINGS + THINGSplus + SPoSE).")
    ],
    dest: Annotated[Path, typer.Option("--dest", help="Directory to write into.")] = Path("data"),
    base_url: Annotated[
        str | None,
        typer.Option(help="A mirror laid out like --dest (default: the canonical OSF project)."),
    ] = None,
) -> None:
    """Download a data bundle and verify its checksums.

    Writes the bundle's files into DEST and records their sha256 sums in
    DEST/SHA256SUMS.json; a file whose sum differs from the bundle's is refused.

    Example:

    \b
      choiceaudit data fetch things --dest data
    """
    if name != "things":
        raise _fail(f"unknown bundle {name!r}; available: things")
    from choiceaudit.instruments.signalling import fetch_things

    try:
        report = fetch_things(dest, base_url=base_url)
    except (InputError, httpx.HTTPError) as exc:  # InputError: a checksum differs
        raise _fail(str(exc)) from None
    for rel, status in report.status.items():
        out.print(f"{status:>10}  {report.sha256[rel]}  {report.dest / rel}")
    out.print(f"checksums recorded in {report.checksum_file}")
