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
        ({"dtype": "int8"}, "--dtype must be one of float32, bfloat16, float16"),
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


def test_a_reduced_precision_reaches_every_causal_lm_run_with_its_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``dtype`` goes to the causal LMs of both instruments (and their keyed-menu arm), never to
    the decision models, and each of their runs is gated as asked."""
    from choiceaudit.audit import PrecisionGate, _demo

    calls: list[tuple[str, dict[str, object]]] = []

    def record(name: str) -> object:
        def run(models: object, *args: object, **kwargs: object) -> list[Path]:
            calls.append((name, kwargs))
            return []

        return run

    monkeypatch.setattr(_demo, "run_signalling", record("signalling"))
    monkeypatch.setattr(_demo, "run_meaning", record("meaning"))
    monkeypatch.setattr(_demo, "analyse_runs", lambda runs: [])
    monkeypatch.setattr(_demo, "capabilities_of", lambda spec: _Engine())
    gate = PrecisionGate(n_queries=8, n_reference=2)
    run_demo(
        out=tmp_path,
        size="small",
        lm=["lm"],
        decision_model=["dm"],
        workers=1,
        dtype="bfloat16",
        precision_gate=gate,
    )
    signalling = [kw for name, kw in calls if name == "signalling"]
    (meaning,) = [kw for name, kw in calls if name == "meaning"]
    assert all(kw["scorer_options"] == {"dtype": "bfloat16"} for kw in signalling)
    assert meaning["scorer_options"] == {
        "lm-choice:lm": {"dtype": "bfloat16"},
        "lm": {"dtype": "bfloat16"},
    }
    assert all(kw["precision_gate"] is gate for _, kw in calls)


class _Engine:
    engine = True
    local_compute = True
