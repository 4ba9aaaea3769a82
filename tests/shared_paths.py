"""Where the tests find the shared research data: ``<repo>/../shared/data`` (or
``$CHOICEAUDIT_SHARED_DATA``). The project never copies it; tests that need it skip without it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    env = os.environ.get("CHOICEAUDIT_SHARED_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


def require_shared_data(*parts: str) -> Path:
    """The shared data directory, or skip the calling test when ``parts`` under it is absent."""
    root = shared_data_dir()
    if not root.joinpath(*parts).exists():
        pytest.skip(f"shared test data not found at {root}")
    return root
