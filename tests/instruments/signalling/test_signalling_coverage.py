"""§I-B coverage: an association chooser that cannot score every frozen item is refused, or
scored with an explicit ``allow_partial_coverage`` that its run records and Table I shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from choiceaudit.audit import analyse_runs, build_instrument, run_signalling
from choiceaudit.errors import InputError
from choiceaudit.instruments.signalling import FrozenInstrument, SignallingAnalysis
from choiceaudit.instruments.signalling._words import option_content_words
from choiceaudit.store import RunStore


def _swow_file(frozen: FrozenInstrument, path: Path, *, leave_out: str | None) -> Path:
    """A SWOW strength table in the published format whose cues are every word of the items
    (each cue answered by the next word), except ``leave_out``."""
    words: list[str] = []
    for item in frozen.items:
        words += [str(w) for w in (*item.meta["means"], *item.meta["clues"])]
        words += [w for ws in option_content_words(list(item.options)) for w in ws]
    cues = [w for w in dict.fromkeys(words) if w != leave_out]
    lines = ["cue\tresponse\tR123\tN\tR123.Strength"]
    for i, cue in enumerate(cues):
        lines.append(f"{cue}\t{cues[(i + 1) % len(cues)]}\t1\t1\t1")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def frozen(tmp_path_factory: pytest.TempPathFactory) -> FrozenInstrument:
    out = tmp_path_factory.mktemp("cov") / "items"
    return build_instrument("lancaster", out=out, n_items=8, n_candidates=4000, seed=3)


def test_partial_coverage_is_refused_then_recorded_and_shown(
    frozen: FrozenInstrument, tmp_path: Path
) -> None:
    item = next(i for i in frozen.items if i.meta["conflict"])
    missing = str(item.meta["target_words"][0])
    swow = _swow_file(frozen, tmp_path / "swow.tsv", leave_out=missing)
    args = {"items": frozen.path, "swow": swow, "formats": ("V",)}
    with pytest.raises(InputError, match=r"coverage check: chooser swow can score \d+ of the 8"):
        run_signalling([], ["swow"], out=tmp_path / "refused", **args)  # type: ignore[arg-type]
    assert not (tmp_path / "refused" / "swow").exists()  # refused before any row
    runs = run_signalling(
        [],
        ["swow", "uniform"],
        out=tmp_path / "runs",
        allow_partial_coverage=True,
        **args,  # type: ignore[arg-type]
    )
    coverage = RunStore(runs[0]).manifest().config["coverage"]
    assert coverage["partial_allowed"] is True and coverage["n_items"] == 8
    assert coverage["n_covered"] < 8 and item.id in coverage["uncovered_examples"]
    (analysis,) = [a for a in analyse_runs(runs) if isinstance(a, SignallingAnalysis)]
    cells = {c.chooser: c for c in analysis.cells}
    sw, un = cells["swow"], cells["uniform"]
    assert sw.partial_coverage and not un.partial_coverage
    assert un.n_items == un.n_analysis_items == sw.n_analysis_items
    assert sw.n_items == coverage["n_analysis_covered"] < sw.n_analysis_items
    # every uncovered analysis-set rendering is counted (two permutations per item)
    assert sw.n_uncovered_rows == 2 * (sw.n_analysis_items - sw.n_items)
    assert un.n_uncovered_rows == 0


def test_full_coverage_runs_without_permission(frozen: FrozenInstrument, tmp_path: Path) -> None:
    swow = _swow_file(frozen, tmp_path / "swow.tsv", leave_out=None)
    (run,) = run_signalling(
        [], ["swow"], out=tmp_path / "runs", items=frozen.path, swow=swow, formats=("V",)
    )
    coverage = RunStore(run).manifest().config["coverage"]
    assert coverage["n_covered"] == coverage["n_items"] == 8
    assert coverage["partial_allowed"] is False


def test_a_chooser_that_covers_nothing_is_shown_with_its_coverage(
    frozen: FrozenInstrument, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from choiceaudit.cli import app

    swow = tmp_path / "swow.tsv"  # one cue no item uses: no rendering can be scored
    swow.write_text("cue\tresponse\tR123\tN\tR123.Strength\nzyzzyva\tquux\t1\t1\t1\n", "utf-8")
    out = tmp_path / "runs"
    args = [
        "run",
        "signalling",
        "--items",
        str(frozen.path),
        "--chooser",
        "swow",
        "--chooser",
        "uniform",
        "--swow",
        str(swow),
        "--format",
        "V",
        "--allow-partial-coverage",
        "--out",
        str(out),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (analysis,) = [
        a
        for a in analyse_runs([out / "swow", out / "uniform"])
        if isinstance(a, SignallingAnalysis)
    ]
    assert {c.chooser for c in analysis.cells} == {"uniform"}
    arms = {a.chooser: a for a in analysis.arms}
    assert arms["swow"].n_covered_items == 0
    assert arms["swow"].n_analysis_items == arms["uniform"].n_covered_items > 0
    text = " ".join(result.output.split())
    assert f"* swow: scored 0 of the {arms['swow'].n_analysis_items} analysis-set items" in text


def test_a_model_run_of_one_condition_is_labelled_with_it(tmp_path: Path) -> None:
    runs = run_signalling(
        ["fake"],
        [],
        out=tmp_path / "runs",
        norms="lancaster",
        n_items=8,
        conditions=["4"],
        formats=("V",),
    )
    (analysis,) = [a for a in analyse_runs(runs) if isinstance(a, SignallingAnalysis)]
    (arm,) = analysis.arms
    assert arm.condition == "4"
