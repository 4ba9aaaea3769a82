"""The signalling report: Fig. 2, Fig. 3, Table I, excess against distance, condition
4 vs 5 and format L, computed from run directories of the reference choosers and the fake
scorer, whose coordinates are known exactly."""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from choiceaudit.audit import analyse_runs, run_signalling
from choiceaudit.instruments.signalling import (
    InstrumentMismatchError,
    analyse_signalling_runs,
    build_signalling_items,
    freeze_instrument,
)
from choiceaudit.instruments.signalling.analysis import analyse_arm
from choiceaudit.instruments.signalling.frozen import default_analysis
from choiceaudit.report import build_report
from choiceaudit.report._signalling import signalling_sections
from choiceaudit.scorers import hashed_content
from choiceaudit.store import open_run as load_run
from choiceaudit.types import Decision, Query, Skipped
from shared_paths import require_shared_data


def _shared() -> Path:
    return require_shared_data("things", "things_concepts.tsv")


def _csv(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _freeze(tmp: Path, name: str, seed: int) -> Path:
    items = build_signalling_items(
        "things", seed=seed, data=_shared(), n_candidates=8000, n_items=160
    ).items
    analysis = default_analysis(items, n_resamples=400)
    return freeze_instrument(items, tmp / name, analysis=analysis).path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    tmp = tmp_path_factory.mktemp("sig")
    items = _freeze(tmp, "items", seed=11)
    return run_signalling(["fake"], ["uniform", "salience", "bayes"], out=tmp / "runs", items=items)


@pytest.fixture(scope="module")
def report(runs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    build_report(analyse_runs(runs), out=out)
    return out


def test_poles_are_exact_on_every_item(runs: list[Path]) -> None:
    by_label = {a.label: a for a in (analyse_arm(load_run(p).arm()) for p in runs)}
    assert all(r.fit_norm == 1.0 for r in by_label["salience"].rows)
    assert all(r.post_norm == 1.0 for r in by_label["bayes"].rows)
    uniform = by_label["uniform"].rows
    assert all(r.n_tied == r.n_options for r in uniform)  # uniform is one tied set
    assert all(r.post_norm == pytest.approx(r.random_post_norm) for r in uniform)


def test_fig2_values(report: Path) -> None:
    rows = {r["point"]: r for r in _csv(report / "figures" / "signalling_coordinates.csv")}
    assert float(rows["salience"]["fit_norm"]) == 1.0
    assert float(rows["bayes"]["post_norm"]) == 1.0
    assert float(rows["salience pole (S)"]["fit_norm"]) == 1.0
    assert float(rows["Bayes pole (B)"]["post_norm"]) == 1.0
    # the chooser sits where its pole is drawn
    assert rows["salience"]["post_norm"] == rows["salience pole (S)"]["post_norm"]
    assert rows["bayes"]["fit_norm"] == rows["Bayes pole (B)"]["fit_norm"]
    assert float(rows["uniform"]["post_norm"]) == pytest.approx(
        float(rows["random (R)"]["post_norm"]), abs=1e-12
    )
    assert float(rows["random (R)"]["post_norm_sd"]) > 0  # the reference is drawn with its SD
    assert {r["facet"] for r in rows.values()} == {"probs"}  # no LM rules in these runs


def test_table1_values(report: Path) -> None:
    cells = {r["chooser"]: r for r in _csv(report / "tables" / "signalling_table1.csv")}
    assert set(cells) == {"fake", "uniform", "salience", "bayes"}
    assert all(int(c["n"]) == 20 for c in cells.values())  # size conflict items
    u = cells["uniform"]
    assert abs(float(u["delta"])) < 1e-12
    # every rendering is the whole menu tied: split credit (§I-H) keeps all 20 items and
    # gives the indifferent chooser an excess of exactly 0
    assert float(u["excess"]) == 0.0
    assert (u["excess_n"], u["excess_tied"], u["excess_unpaired_out"]) == ("20", "20", "0")
    for c in cells.values():
        assert int(c["excess_n"]) == 20
        assert int(c["excess_unpaired_out"]) == 0
    b, s = cells["bayes"], cells["salience"]
    assert float(b["o_bayes"]) == 1.0 and float(b["o_fit"]) == 0.0  # conflict items
    assert float(s["o_fit"]) == 1.0
    assert b["sig"] == "True" and b["sig_bonf"] == "True"
    # Bonferroni counts the model x rule cells only (the fake model's one cell), never the
    # reference choosers (§I-H2)
    assert (
        "level 0.9500 (Bonferroni across the 1 model x rule cells"
        in (report / "tables" / "signalling_table1.md").read_text()
    )
    assert (cells["fake"]["condition"], cells["bayes"]["condition"]) == ("4", "7")
    assert cells["uniform"]["condition"] == cells["salience"]["condition"] == "reference"
    # the fit axis has its own interval (§IV-B): salience is the top of it, Bayes gives fit up
    assert float(s["delta_fit"]) > float(b["delta_fit"]) and s["sig_fit"] == "True"
    assert float(s["delta_fit"]) - float(b["delta_fit"]) == pytest.approx(
        float(s["fit_mean"]) - float(b["fit_mean"])
    )
    assert float(s["o_fit_both"]) == 1.0 and float(b["o_fit_both"]) == 0.0
    assert float(s["r_to_s"]) == pytest.approx(1.0) and float(b["s_to_b"]) == pytest.approx(1.0)
    comparison = {
        r["axis"]: r for r in _csv(report / "tables" / "signalling_random_comparison.csv")
    }
    assert comparison["post_norm"]["n_cells"] == "1"
    assert float(b["excess"]) > 0.5  # item-determined choices are consistent across orders
    # the fake scorer scores option text only: the same option on every item, so its
    # consistency is perfect and its excess over the marginal null exactly zero (§IV-A)
    assert float(cells["fake"]["consist"]) == 1.0
    assert float(cells["fake"]["excess"]) == 0.0


def test_references_table(report: Path) -> None:
    refs = {r["reference"]: r for r in _csv(report / "tables" / "signalling_references.csv")}
    assert float(refs["salience pole"]["fit_norm"]) == 1.0
    assert float(refs["Bayes pole"]["post_norm"]) == 1.0
    assert 0 < float(refs["random"]["post_norm"]) < float(refs["salience pole"]["post_norm"])


def test_decay_family_table(report: Path) -> None:
    rows = {r["chooser"]: r for r in _csv(report / "tables" / "signalling_decay_families.csv")}
    # each pole is exact under its own family: salience fit 1 and Bayes post 1 under both
    assert float(rows["salience"]["fit_exp"]) == float(rows["salience"]["fit_gauss"]) == 1.0
    assert float(rows["bayes"]["post_exp"]) == 1.0
    assert float(rows["uniform"]["delta_gauss"]) == pytest.approx(0.0, abs=1e-12)
    assert rows["salience"]["post_exp"] != rows["salience"]["post_gauss"]


def test_fig3_values(report: Path) -> None:
    rows = _csv(report / "figures" / "signalling_fit_cost.csv")
    sal = [r for r in rows if r["chooser"] == "salience"]
    bay = [r for r in rows if r["chooser"] == "bayes"]
    assert len(sal) == 10 and all(float(r["achieved_fit_norm"]) == 1.0 for r in sal)
    assert all(r["achieved_fit_norm"] == r["bayes_fit_norm"] for r in bay)
    costs = [float(r["fit_cost"]) for r in bay]
    assert costs == sorted(costs)
    assert float(bay[0]["bayes_slope"]) < 0 and float(sal[0]["slope"]) == 0.0
    slopes = {r["chooser"]: r for r in _csv(report / "tables" / "signalling_fit_cost_slopes.csv")}
    assert float(slopes["salience"]["slope"]) == 0.0
    assert slopes["bayes"]["slope"] == slopes["bayes"]["bayes_slope"]  # the oracle is its line
    # intervals use the frozen battery's resamples (400 in this freeze), never a fixed 1,000
    assert {r["n_resamples"] for r in slopes.values()} == {"400"}
    # §IV-E: the Bayes oracle's coordinate is 1 on every item, so its post slope is 0 and its
    # predicted change over the fit_cost range is 0, against the smallest effect of interest
    assert float(slopes["bayes"]["post_slope"]) == pytest.approx(0.0, abs=1e-12)
    assert float(slopes["bayes"]["predicted_change"]) == pytest.approx(0.0, abs=1e-12)
    assert slopes["bayes"]["sesoi"] == "0.05"
    # both axes by decile (§IV-D): the fit-axis separation is 1 - the Bayes pole's fit, the
    # posterior-axis one 1 - the salience pole's post_norm; salience never departs from o_fit
    deciles = _csv(report / "tables" / "signalling_fit_cost_deciles.csv")
    for r in deciles:
        assert float(r["fit_separation"]) == pytest.approx(1 - float(r["bayes_fit_norm"]))
        assert float(r["post_separation"]) == pytest.approx(1 - float(r["salience_post_norm"]))
    sal_bins = [r for r in deciles if r["chooser"] == "salience"]
    assert all(float(r["departure_from_o_fit"]) == 0.0 for r in sal_bins)
    assert all(float(r["achieved_post_norm"]) == float(r["salience_post_norm"]) for r in sal_bins)
    gauss = _csv(report / "tables" / "signalling_fit_cost_slopes_gaussian.csv")
    assert {r["chooser"] for r in gauss} == set(slopes)  # the whole battery under both families


def test_excess_against_distance(report: Path) -> None:
    rows = _csv(report / "figures" / "signalling_excess_vs_distance.csv")
    # uniform is in the scatter now: split credit gives it an excess (0) instead of none
    assert {r["chooser"] for r in rows} == {"fake", "salience", "bayes", "uniform"}
    assert {r["kind"] for r in rows if r["chooser"] == "fake"} == {"model"}
    for r in rows:
        assert float(r["distance_from_random"]) == abs(float(r["delta_post_vs_random"]))
        assert r["n_items"] == "20"  # every printed excess shows its n


def test_condition_and_format_l_tables(report: Path) -> None:
    agree = _csv(report / "tables" / "signalling_condition_agreement.csv")
    # only models read the instruction; the fake scorer reads option text only, so the added
    # sentence cannot move it: full agreement, no shift in its option distribution
    assert {r["chooser"] for r in agree} == {"fake"}
    assert agree[0]["tile"] == "all"
    assert int(agree[0]["n_matched"]) == 160 * 2
    assert all(float(r["agreement"]) == 1.0 for r in agree)
    assert agree[0]["tvd"] == ""  # THINGS menus differ in size: no pooled TVD
    assert all(float(r["tvd"]) == 0.0 for r in agree[1:])
    fmt_l = _csv(report / "tables" / "signalling_format_l.csv")
    assert {r["chooser"] for r in fmt_l} == {"fake"}
    # item-insensitive: one canonical option on every item of a tile, so consistency 1 and
    # excess 0 exactly, and the canonical distribution as far from uniform as it can be
    for r in fmt_l:
        k = round(1 / float(r["chance"]))
        assert float(r["consistency"]) == 1.0 and float(r["excess"]) == 0.0
        assert float(r["canonical_dev"]) == pytest.approx(1 - 1 / k)
    html = (report / "index.html").read_text()
    assert "Signalling: consistency without alignment" in html
    assert "§IV-A" in html
    assert "excess for uniform/probs" not in html  # a tie no longer leaves a cell out
    assert "needs at least 3 model x rule cells with an excess, got 1" in html


def test_report_refuses_a_run_with_another_hash(runs: list[Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(runs[1], bad)
    manifest = json.loads((bad / "manifest.json").read_text())
    manifest["config"]["items_hash"] = "f" * 64
    (bad / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InstrumentMismatchError, match="records items hash ffffffffffff"):
        build_report(analyse_runs([bad]), out=tmp_path / "r")


def test_analysis_refuses_items_other_than_the_run_used(runs: list[Path], tmp_path: Path) -> None:
    from choiceaudit.instruments.signalling import load_instrument

    other = load_instrument(_freeze(tmp_path, "other", seed=14))
    with pytest.raises(InstrumentMismatchError, match="analyse a run with the item set it used"):
        analyse_arm(load_run(runs[0]).arm(), other)
    copy = tmp_path / "copy"
    shutil.copytree(runs[0], copy)
    (copy / "instrument" / "prompts.parquet").write_bytes(b"edited")
    with pytest.raises(InstrumentMismatchError, match=r"prompts\.parquet: changed after freezing"):
        build_report(analyse_runs([copy]), out=tmp_path / "r")


def test_runs_on_different_items_get_separate_sections(runs: list[Path], tmp_path: Path) -> None:
    other = _freeze(tmp_path, "other", seed=12)
    extra = run_signalling([], ["salience"], out=tmp_path / "runs", items=other)
    analyses = analyse_signalling_runs([load_run(p).arm() for p in [runs[2], *extra]])
    assert len(analyses) == 2
    assert all(isinstance(s, Skipped) for a in analyses for s in a.skipped)
    sections = signalling_sections(analyses)
    assert len(sections) == 2
    assert all(s.key.startswith("signalling-") for s in sections)
    assert any("needs at least 3 model x rule cells" in x for s in sections for x in s.skipped)


class ThreeRuleScorer:
    """A causal-LM-shaped scorer: item-dependent scores under pmi, sum and mean (each rule its
    own pseudo-random function of the prompt and the option), probs = softmax of sum."""

    name = "three-rule"

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        out = []
        for q in queries:
            scores = {
                rule: np.array([hashed_content(f"{rule}|{q.state}|{o}") for o in q.options])
                for rule in ("pmi", "sum", "mean")
            }
            z = np.exp(scores["sum"] - scores["sum"].max())
            out.append(Decision(query_id=q.id, probs=z / z.sum(), scores=scores))
        return out

    def describe(self) -> dict[str, Any]:
        return {"backend": "test", "model": "three-rule"}


def test_model_rules_are_facets_and_references_repeat(tmp_path: Path) -> None:
    items = _freeze(tmp_path, "items", seed=13)
    dirs = run_signalling(
        [ThreeRuleScorer()], ["salience"], out=tmp_path / "runs", items=items, formats=("V",)
    )
    assert [d.name for d in dirs] == ["three-rule", "salience"]
    out = tmp_path / "report"
    build_report(analyse_runs(dirs), out=out)
    coords = _csv(out / "figures" / "signalling_coordinates.csv")
    assert [r["facet"] for r in coords if r["point"] == "salience"] == ["pmi", "sum", "mean"]
    model = {r["facet"]: r for r in coords if r["point"] == "three-rule"}
    assert set(model) == {"pmi", "sum", "mean"}
    assert len({r["post_norm"] for r in model.values()}) == 3  # each rule its own choices
    table = _csv(out / "tables" / "signalling_table1.csv")
    assert [(r["chooser"], r["rule"]) for r in table if r["chooser"] == "three-rule"] == [
        ("three-rule", "mean"),
        ("three-rule", "pmi"),
        ("three-rule", "sum"),
    ]
    html = (out / "index.html").read_text()
    assert "interval of r: 3 model x rule cells" in html
    assert "format L: no model run holds format-L renderings" in html
    fit = _csv(out / "figures" / "signalling_fit_cost.csv")
    assert {r["facet"] for r in fit if r["chooser"] == "salience"} == {"pmi", "sum", "mean"}


def test_analysis_results_are_typed_and_frozen(runs: list[Path]) -> None:
    import dataclasses

    (analysis,) = analyse_signalling_runs([load_run(p).arm() for p in runs])
    cells = {c.chooser: c for c in analysis.cells}
    assert cells["salience"].fit_norm_mean == 1.0
    assert cells["bayes"].post_norm_mean == 1.0
    assert [a.chooser for a in analysis.arms] == ["fake", "uniform", "salience", "bayes"]
    assert all(isinstance(s, Skipped) for s in analysis.skipped)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cells["bayes"].excess = 0.0  # type: ignore[misc]
