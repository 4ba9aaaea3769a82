"""Ray is an optional extra: the core imports without it, and ``--ray`` without it names the
pip command instead of failing with an ImportError."""

from __future__ import annotations

import builtins
import subprocess
import sys
from typing import Any

import pytest

from choiceaudit.audit import RayFanout
from choiceaudit.scorers import FakeScorer, MissingBackendError


def test_the_core_and_the_score_command_import_without_ray() -> None:
    code = (
        "import sys\n"
        "import choiceaudit.audit, choiceaudit.cli, choiceaudit.scorers\n"
        "print('ray' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_ray_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_ray(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(MissingBackendError, match=r"pip install 'choiceaudit\[ray\]'"):
        RayFanout(FakeScorer, workers=2).__enter__()
