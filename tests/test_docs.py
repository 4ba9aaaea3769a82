"""The documentation's examples run as written, offline, in an empty working directory, so a
documented command that stops working fails the suite.

A block fenced as ``bash`` or ``python`` is meant to run: ``bash`` blocks with the environment's
``choiceaudit`` first on the path, ``python`` blocks with this interpreter; a block fenced as
``console`` or ``text`` is shown, not run (a command that needs a GPU, a server or your files, or
what a command prints). On the extension guide the Python blocks of the page run in one fresh
interpreter (so what one block defines the next can use, and nothing a page registers reaches
another test); on the README and the getting-started page every runnable block runs in order,
each a process of its own, in one directory."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"

#: the pages whose Python blocks run offline on the built-in models
RUN = ("extending.md",)

ROOT = DOCS.parent

#: pages whose bash and python blocks run in order, as a reader would type them
RUN_ALL = ("README.md", "docs/getting-started.md")

_FENCE = re.compile(r"^( *)```(\w+)\n(.*?)^\1```", re.MULTILINE | re.DOTALL)


def blocks(page: Path) -> list[tuple[str, str]]:
    """Every fenced block of ``page`` as (language, code), each dedented (a block inside a list
    item is indented with it)."""
    return [
        (m.group(2), textwrap.dedent(m.group(3))) for m in _FENCE.finditer(page.read_text("utf-8"))
    ]


def python_blocks(page: Path) -> list[str]:
    return [code for language, code in blocks(page) if language == "python"]


def test_blocks_are_found_at_any_indent(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("a\n```python\nx = 1\n```\n1. b\n\n   ```bash\n   y\n   ```\n")
    assert blocks(page) == [("python", "x = 1\n"), ("bash", "y\n")]


@pytest.mark.parametrize("page", RUN)
def test_the_python_blocks_of_a_page_run_as_written(page: str, tmp_path: Path) -> None:
    blocks = python_blocks(DOCS / page)
    assert blocks, f"{page} has no python block"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        [sys.executable, "-c", "\n\n".join(blocks)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"{page}:\n{done.stderr[-4000:]}"


def _environment() -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        "HF_HUB_OFFLINE": "1",
        "PYTHONWARNINGS": "ignore",
    }


@pytest.mark.parametrize("page", RUN_ALL)
def test_the_runnable_blocks_of_the_readme_and_getting_started_run_in_order(
    page: str, tmp_path: Path
) -> None:
    runnable = [(lang, code) for lang, code in blocks(ROOT / page) if lang in ("bash", "python")]
    assert runnable, f"{page} has no runnable block"
    shown = {lang for lang, _ in blocks(ROOT / page)} - {"bash", "python"}
    assert shown <= {"console", "text"}, f"{page}: a block of unknown kind {shown}"
    for language, code in runnable:
        command = ["bash", "-euo", "pipefail", "-c", code]
        if language == "python":
            command = [sys.executable, "-c", code]
        done = subprocess.run(
            command,
            cwd=tmp_path,
            env=_environment(),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, f"{page}, block:\n{code}\n{done.stderr[-4000:]}"
