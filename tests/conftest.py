"""Suite-wide settings: offline hub, one thread per torch op pool, and the shared data dir."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# The checkout's own source comes first, whatever an editable install elsewhere points at (a
# second worktree sharing one virtual environment tests its own code).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from shared_paths import require_shared_data

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return require_shared_data()
