"""A plug-in distribution as pip leaves it in site-packages (a module and its dist-info with
one entry point), built in a test, and the command line run with it on the import path."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path


def install_plugin(root: Path, module: str, source: str, group: str, entry: str) -> Path:
    """``root`` holding ``<module>.py`` (``source``) and a dist-info declaring ``entry``
    (``name = module:attribute``) in the entry-point ``group``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = root / f"{module}-0.1.dist-info"
    info.mkdir()
    name = module.replace("_", "-")
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(f"[{group}]\n{entry}\n", encoding="utf-8")
    return root


def cli(args: Sequence[str], plugin: Path) -> subprocess.CompletedProcess[str]:
    """``choiceaudit args`` in a child process that finds the plug-in at ``plugin``."""
    env = {**os.environ, "PYTHONPATH": str(plugin), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "choiceaudit.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
