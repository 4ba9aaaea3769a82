"""The demo's library call refuses what the command refuses, before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from choiceaudit.audit import DEMO_SIZES, run_demo
from choiceaudit.audit._demo import demo_models
from choiceaudit.errors import InputError


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"size": "huge"}, "--size must be one of small, default, full"),
        ({"norms": "swow"}, "--norms must be one of lancaster, things"),
        ({"norms": "things"}, "--norms things needs --data DIR"),
    ],
)
def test_run_demo_refuses_bad_options_before_writing(
    tmp_path: Path, kwargs: dict[str, str], message: str
) -> None:
    out = tmp_path / "demo"
    with pytest.raises(InputError, match=message):
        run_demo(out=out, lm=["fake"], decision_model=["fake"], **kwargs)  # type: ignore[arg-type]
    assert not out.exists()


def test_named_models_replace_the_installed_defaults() -> None:
    lms, decision, choosers = demo_models(["fake", "fake-2"], ["fake"], gemma=True)
    assert lms == ["fake", "fake-2"] and decision == ["fake"]
    assert choosers[:3] == ["uniform", "salience", "bayes"]
    assert set(choosers) <= {"uniform", "salience", "bayes", "cosine"}


def test_the_sizes_split_evenly_over_tiles_and_conflict() -> None:
    # signalling selection balances 4 tiles x conflict/control, so item counts divide by 8
    assert DEMO_SIZES["small"].signalling_items == 16
    assert all(size.signalling_items % 8 == 0 for size in DEMO_SIZES.values())


def test_small_leaves_gemma_out_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    # the smoke run's two-minute budget leaves out the slowest model; asking still includes it
    import choiceaudit.audit._demo as demo

    seen: list[bool] = []

    def models(lm: object, decision_model: object, *, gemma: bool) -> tuple[list[str], ...]:
        seen.append(gemma)
        raise InputError("stop before any run")

    monkeypatch.setattr(demo, "demo_models", models)
    for size, gemma in [("small", None), ("small", True), ("default", None), ("default", False)]:
        with pytest.raises(InputError, match="stop before any run"):
            run_demo(out=Path("unused"), size=size, gemma=gemma)
    assert seen == [False, True, True, False]
    assert not DEMO_SIZES["small"].gemma and DEMO_SIZES["default"].gemma
