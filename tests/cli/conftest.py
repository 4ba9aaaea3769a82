"""Fixtures of the command-line tests."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A fresh directory per test (fuzz examples make their own subdirectories in it)."""
    path = Path(tempfile.mkdtemp(prefix="choiceaudit-fuzz-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
