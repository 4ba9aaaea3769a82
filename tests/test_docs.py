"""The documentation's examples run as written: every ``python`` block of a page listed here is
run, the page's blocks in order in one fresh interpreter (so what one block defines the next can
use, and nothing a page registers reaches another test), in an empty working directory, offline.
A documented example that stops working fails the suite."""

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

_FENCE = re.compile(r"^( *)```python\n(.*?)^\1```", re.MULTILINE | re.DOTALL)


def python_blocks(page: Path) -> list[str]:
    """The ``python`` fenced blocks of ``page``, each dedented (a block inside a list item is
    indented with it)."""
    return [textwrap.dedent(m.group(2)) for m in _FENCE.finditer(page.read_text("utf-8"))]


def test_blocks_are_found_at_any_indent(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("a\n```python\nx = 1\n```\n1. b\n\n   ```python\n   y = 2\n   ```\n")
    assert python_blocks(page) == ["x = 1\n", "y = 2\n"]


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
