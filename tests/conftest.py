"""Suite-wide settings: offline hub, torch threads shared out among xdist workers, and the
shared data dir."""

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
# Under pytest-xdist (`make test` runs two workers) each worker is one process with its own
# torch: left alone, every worker would start a thread per core and the workers would fight
# over the cores. Unless the caller chose, the cores are shared out, which on two cores is one
# thread per worker. Set before any test module imports torch.
_workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
if _workers and "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // int(_workers)))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return require_shared_data()
