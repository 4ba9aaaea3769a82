"""``choiceaudit demo``: the plan's wiring, the printed order, the timing record, the report and
resume. The fast tests run the demo on a plan cut to one balanced signalling set and a few
idioms, as on a machine without MiniLM (no cosine chooser, no embedder), so they need no model
load; the full ``--size small`` demo, MiniLM included, run twice, is the slow test in
``test_demo_small.py`` (its own module: this one's plan cut lasts until the module ends)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from choiceaudit.audit import DEMO_SIZES, DemoSize, run_demo
from choiceaudit.cli import app
from choiceaudit.report import ReportFigure
from choiceaudit.scorers import BUILTIN_MODELS
from cli.demo_helpers import assert_phases_printed_and_timed, demo_args, manifests

runner = CliRunner()

#: the smallest plan the demo's wiring accepts: 4 tiles × conflict/control, a few idioms, and
#: one order item so E7 (both key bindings) is planned
TINY = DemoSize(signalling_items=8, meaning_items=8, meaning_order_items=1)


def unpainted_write(figure: ReportFigure, directory: Path) -> dict[str, Path]:
    """A figure's files with its plotted values but no picture: drawing and saving the demo's
    figures is most of its time, and the report tests check the pictures."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {kind: directory / f"{figure.name}.{kind}" for kind in ("png", "svg", "csv")}
    paths["png"].write_bytes(b"")
    paths["svg"].write_text("<svg/>", encoding="utf-8")
    paths["csv"].write_text(figure.data.to_csv(), encoding="utf-8")
    return paths


@pytest.fixture(scope="module")
def tiny_plan() -> Iterator[None]:
    """``--size small`` cut to :data:`TINY`, MiniLM reported as not installed, and figures
    written without their pictures."""
    absent = (("choiceaudit_test_absent_module", "pip install minilm-absent-in-this-test"),)
    minilm = dataclasses.replace(BUILTIN_MODELS["minilm"], requires=absent)
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(DEMO_SIZES, "small", TINY)
        mp.setitem(BUILTIN_MODELS, "minilm", minilm)
        mp.setattr(ReportFigure, "write", unpainted_write)
        yield


@pytest.fixture(scope="module")
def tiny_demo(tiny_plan: None, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The tiny demo's output directory and its printed output (words joined by one space)."""
    out = tmp_path_factory.mktemp("tiny-demo") / "demo"
    result = runner.invoke(app, demo_args(out))
    assert result.exit_code == 0, result.output
    return out, " ".join(result.output.split())


def test_the_demo_prints_each_phase_in_order_and_times_it(tiny_demo: tuple[Path, str]) -> None:
    out, text = tiny_demo
    assert_phases_printed_and_timed(out, text, 8 * 8)  # 8 items, 8 queries each


def test_the_demo_plans_each_chooser_and_model_into_its_run(tiny_demo: tuple[Path, str]) -> None:
    out, _ = tiny_demo
    runs = manifests(out)
    # without MiniLM there is no cosine chooser and d-sem / d-hard have no embedder
    expected = {"signalling/fake", "signalling/uniform", "signalling/salience", "signalling/bayes"}
    assert set(runs) == expected | {"meaning/meaning-fake"}
    meaning = runs["meaning/meaning-fake"]
    assert meaning["status"] == "complete" and meaning["config"]["instrument"] == "meaning"
    html = (out / "report" / "index.html").read_text()
    assert 'id="signalling' in html and 'id="meaning' in html
    assert (out / "report" / "figures" / "meaning_ladder.csv").is_file()


def test_a_second_demo_resumes_every_run_and_scores_nothing(
    tiny_demo: tuple[Path, str], tiny_plan: None
) -> None:
    out, _ = tiny_demo
    before = manifests(out)
    # the same plan through the library call the command makes (the command adds the report)
    again = run_demo(out=out, size="small", lm=["fake"], decision_model=["fake"])
    after = manifests(out)
    assert set(after) == set(before)
    for name, manifest in after.items():
        assert manifest["sessions"][-1]["scored"] == 0, name
        assert len(manifest["sessions"]) == len(before[name]["sessions"]) + 1, name
    assert {p.relative_to(out).as_posix() for p in again.meaning_runs} == {"meaning/meaning-fake"}


def test_with_two_models_signalling_is_shown_after_the_first(
    tiny_plan: None, tmp_path: Path
) -> None:
    """The first table comes after one LM and the references, before the second LM is scored;
    the full table then covers every run, models first as one call would order them."""
    seen: list[str] = []
    scored_before: list[int] = []

    def on_phase(name: str, results: Any, timer: Any) -> None:
        seen.append(name)
        scored_before.append(sum(1 for phase in timer.phases if phase.kind == "score"))

    done = run_demo(
        out=tmp_path / "demo",
        size="small",
        lm=["fake", "fake"],
        decision_model=[],
        on_phase=on_phase,
    )
    assert seen == ["signalling: first model", "signalling", "meaning"]
    assert [p.name for p in done.signalling_runs] == [
        "fake",
        "fake",
        "uniform",
        "salience",
        "bayes",
    ]
    # the first table comes after the first LM and the three references only (the second LM,
    # the same spec here, resumes the first's directory), and before meaning is scored
    assert scored_before[0] == 4 and scored_before[2] > scored_before[1]
    # the references are scored first, while a worker server would still be importing
    scored = [p.name for p in done.timer.phases if p.kind == "score"]
    assert scored[:4] == [
        "signalling · uniform: scoring",
        "signalling · salience: scoring",
        "signalling · bayes: scoring",
        "signalling · fake: scoring",
    ]


def test_demo_sizes_split_evenly_over_tiles_and_conflict() -> None:
    # Signalling selection balances 4 tiles × conflict/control, so item counts must divide by 8.
    for size in DEMO_SIZES.values():
        assert size.signalling_items % 8 == 0
