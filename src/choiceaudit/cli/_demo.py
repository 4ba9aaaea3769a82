"""``choiceaudit demo``: the README's main command (grown by later issues into the full audit)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from choiceaudit.cli import app, out


@app.command()
def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="Where runs and the report go.")] = Path(
        "runs/demo"
    ),
) -> None:
    """Run the audits that exist on the embedded default models."""
    out.print(f"demo output would go to {out_dir}")
