"""Fixtures for the meaning instrument: the shared test data and small synthetic corpora."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``<repo root>/../shared/data``; tests using it skip when it is absent."""
    if not (SHARED_DATA / "bagdhara").is_dir():
        pytest.skip(f"shared test data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def task_contract(shared_data: Path) -> dict[str, Any]:
    return dict(json.loads((shared_data / "bagdhara" / "task_contract.json").read_text("utf-8")))


@pytest.fixture(scope="session")
def sample_rows(shared_data: Path) -> list[dict[str, Any]]:
    lines = (shared_data / "bagdhara" / "sample_3rows.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]
