"""Suite-wide settings: offline hub, one thread per torch op pool, and the shared data dir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path | None:
    """``../shared/data`` beside the repository (or ``$CHOICEAUDIT_SHARED_DATA``)."""
    env = os.environ.get("CHOICEAUDIT_SHARED_DATA")
    path = Path(env) if env else REPO_ROOT.parent / "shared" / "data"
    return path if path.is_dir() else None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if path is None:
        pytest.skip("../shared/data is not present beside the repository")
    return path
