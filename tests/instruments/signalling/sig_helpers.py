"""Shared helpers for the signalling tests: locating ``<repo>/../shared/data``."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


def shared_data() -> Path:
    """The shared test data directory, or skip the test with the reason."""
    if not (SHARED_DATA / "things" / "things_concepts.tsv").is_file():
        pytest.skip(f"shared test data not found at {SHARED_DATA}")
    return SHARED_DATA
