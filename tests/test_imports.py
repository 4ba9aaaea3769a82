"""The core imports without the heavy optional backends (extras stay optional)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HEAVY = ("torch", "transformers", "sentence_transformers", "sparrow_decider", "gguf")


def test_core_and_cli_import_without_heavy_backends() -> None:
    code = (
        "import sys\n"
        "import choiceaudit, choiceaudit.scorers, choiceaudit.store, choiceaudit.stats\n"
        "import choiceaudit.report, choiceaudit.cli\n"
        "import choiceaudit.instruments.meaning, choiceaudit.instruments.signalling\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def test_missing_extra_names_the_pip_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import builtins

    from choiceaudit.scorers import MissingBackendError, load_causal_lm

    real_import = builtins.__import__

    def no_torch(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "torch":
            raise ImportError("No module named 'torch'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    with pytest.raises(
        MissingBackendError, match=r"pip install 'choiceaudit\[hf\]'.*torch==2\.13\.0"
    ):
        load_causal_lm(f"hf:{tmp_path}")  # a local directory: torch is the first need
