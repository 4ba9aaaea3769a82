"""Suite-wide settings: offline hub, one thread per torch op pool, and the shared data dir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shared_paths import require_shared_data

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return require_shared_data()
