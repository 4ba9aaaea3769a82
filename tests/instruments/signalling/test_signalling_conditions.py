"""Conditions 1–7 from the audit layer and the command line (§I-K), SWOW in the pool (§I-B), the
tile screen deciding the tiles (§I-C), user filters recorded and the unselected candidates
written beside the items (§I-F). SWOW and ConceptNet come from small files written here in
their published formats (SWOW-EN strength table; ConceptNet 5 assertions CSV)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import TypedDict

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from choiceaudit.audit import analyse_runs, build_instrument, run_signalling
from choiceaudit.cli import app
from choiceaudit.errors import InputError
from choiceaudit.instruments.signalling import (
    RobustnessConfig,
    SignallingAnalysis,
    build_signalling_items,
    load_instrument,
)
from choiceaudit.instruments.signalling._association_choosers import option_content_words
from choiceaudit.instruments.signalling._build import TileScreenMismatchError
from choiceaudit.instruments.signalling._lancaster import load_lancaster
from choiceaudit.instruments.signalling._norms import Dimension, NormsBundle
from choiceaudit.instruments.signalling._rsa import IneligibleBaseError
from choiceaudit.types import ItemSet

runner = CliRunner()


def _write_swow(path: Path, links: dict[str, list[str]]) -> Path:
    """A SWOW-EN ``strength.SWOW-EN.R123.csv``: tab-separated, one row per cue x response."""
    lines = ["cue\tresponse\tR123\tN\tR123.Strength"]
    for cue, responses in links.items():
        n = 3 * len(responses)
        for response in responses:
            count = 3  # equal counts: strength = 3 / n
            lines.append(f"{cue}\t{response}\t{count}\t{n}\t{count / n:.6f}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _write_conceptnet(path: Path, edges: list[tuple[str, str]]) -> Path:
    """ConceptNet 5 assertions: URI, relation, start, end, JSON info; tab-separated."""
    lines = []
    for a, b in edges:
        sa, sb = a.replace(" ", "_"), b.replace(" ", "_")
        lines.append(
            f"/a/[/r/RelatedTo/,/c/en/{sa}/,/c/en/{sb}/]\t/r/RelatedTo\t/c/en/{sa}/n\t"
            f'/c/en/{sb}\t{{"dataset": "/d/test", "weight": 1.0}}'
        )
    lines.append(
        '/a/[/r/Synonym/,/c/de/haus/,/c/en/house/]\t/r/Synonym\t/c/de/haus\t/c/en/house\t{"weight": 1.0}'
    )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _association_files(items: ItemSet, tmp: Path) -> tuple[Path, Path]:
    """Cue and edge lists linking every listed concept to a few option content words, chosen
    by a hash of the word so the choosers have item-dependent preferences."""
    swow: dict[str, list[str]] = {}
    edges: list[tuple[str, str]] = []
    for item in items:
        words = sorted({w for ws in option_content_words(item.options) for w in ws})
        for concept in (*item.meta["means"], *item.meta["clues"]):
            h = zlib.crc32(str(concept).encode())
            linked = [words[h % len(words)], words[(h // 7) % len(words)]]
            swow[str(concept)] = list(dict.fromkeys(linked))
            edges += [(str(concept), w) for w in dict.fromkeys(linked)]
        for w in words:
            swow.setdefault(w, [words[(zlib.crc32(w.encode())) % len(words)]])
            edges.append((w, words[0]))
    return _write_swow(tmp / "strength.SWOW-EN.R123.csv", swow), _write_conceptnet(
        tmp / "conceptnet-assertions-5.7.0.csv", edges
    )


@pytest.fixture(scope="module")
def conditions(tmp_path_factory: pytest.TempPathFactory) -> tuple[SignallingAnalysis, Path]:
    tmp = tmp_path_factory.mktemp("cond")
    frozen = build_instrument(
        "lancaster", out=tmp / "items", seed=3, n_items=32, n_candidates=8_000
    )
    swow, conceptnet = _association_files(frozen.items, tmp)
    runs = run_signalling(
        [],
        ["swow", "conceptnet", "rsa:swow", "rsa:conceptnet", "bayes", "uniform"],
        out=tmp / "runs",
        items=frozen.path,
        conditions=("4",),
        formats=("V",),
        swow=swow,
        conceptnet=conceptnet,
        # the synthetic sources cover only some items: §I-B's check would refuse them
        allow_partial_coverage=True,
    )
    (analysis,) = [r for r in analyse_runs(runs) if isinstance(r, SignallingAnalysis)]
    return analysis, tmp


def test_conditions_are_labelled_as_conditions(
    conditions: tuple[SignallingAnalysis, Path],
) -> None:
    analysis, _ = conditions
    cond = {c.chooser: c.condition for c in analysis.cells}
    assert cond == {
        "swow": "2",
        "conceptnet": "3",
        "rsa:swow": "6",
        "rsa:conceptnet": "6",
        "bayes": "7",
        "uniform": "reference",
    }
    assert all(c.kind == "reference" for c in analysis.cells)  # none is a model x rule cell
    assert {a.chooser: a.condition for a in analysis.arms}["rsa:swow"] == "6"
    # no model cell: nothing is counted against random
    assert analysis.random_comparison == ()


def test_every_condition_states_its_coverage(conditions: tuple[SignallingAnalysis, Path]) -> None:
    analysis, _ = conditions
    cells = {c.chooser: c for c in analysis.cells}
    assert cells["bayes"].n_uncovered_rows == 0
    # every listed concept and option word is in both files: full coverage, stated as such
    assert cells["swow"].n_covered_items == cells["bayes"].n_covered_items
    assert cells["conceptnet"].n_covered_items == cells["bayes"].n_covered_items


def test_rsa_alpha_and_conceptnet_decay_are_inert(
    conditions: tuple[SignallingAnalysis, Path],
) -> None:
    analysis, _ = conditions
    inert = {(r.chooser, r.parameter): r for r in analysis.inert}
    assert inert[("rsa:swow", "alpha")].identical_share == 1.0
    assert inert[("rsa:conceptnet", "alpha")].identical_share == 1.0
    assert inert[("conceptnet", "d")].identical_share == 1.0
    assert inert[("rsa:swow", "alpha")].values == (0.5, 1.0, 2.0, 5.0, 10.0)
    assert inert[("conceptnet", "d")].n_cells > 0


def test_ineligible_rsa_bases_are_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(IneligibleBaseError, match="signed, unbounded below"):
        run_signalling([], ["rsa:cosine"], out=tmp_path, n_items=8)
    with pytest.raises(IneligibleBaseError, match="speaker likelihood"):
        run_signalling([], ["rsa:smollm2"], out=tmp_path, n_items=8)
    with pytest.raises(InputError, match="needs --swow FILE"):
        run_signalling([], ["swow"], out=tmp_path, n_items=8)
    result = runner.invoke(
        app, ["run", "signalling", "--chooser", "rsa:cosine", "--out", str(tmp_path / "r")]
    )
    assert result.exit_code != 0 and "refused" in result.output


def test_swow_enters_the_pool_intersection_before_filtering(tmp_path: Path) -> None:
    norms = load_lancaster()
    rng = np.random.default_rng(0)
    cues = sorted(rng.choice(np.array(norms.words), size=600, replace=False).tolist())
    swow = _write_swow(tmp_path / "strength.SWOW-EN.R123.csv", {c: ["sound"] for c in cues})
    plain = build_signalling_items("lancaster", seed=1, n_candidates=4_000, n_items=32)
    with_swow = build_signalling_items(
        "lancaster", seed=1, n_candidates=4_000, n_items=32, swow=swow
    )
    pool = with_swow.items.config["pool"]
    assert pool["sources"][-1] == "swow"
    assert pool["swow"]["concepts_matched"] == 600
    assert pool["size"] <= 600 < plain.items.config["pool"]["size"]
    words = set(cues)
    assert all(w in words for i in with_swow.items for w in (*i.meta["means"], *i.meta["clues"]))
    assert with_swow.instrument_hash != plain.instrument_hash


def _synthetic_bundle(n: int = 400) -> NormsBundle:
    rng = np.random.default_rng(5)
    base = rng.uniform(1, 7, n)
    dims = {
        # a and b are redundant (r > 0.9); b has the lower rater-disagreement ratio
        "a": Dimension("a", np.clip(base + rng.normal(0, 0.3, n), 1, 7), (1, 7), np.full(n, 0.9)),
        "b": Dimension("b", np.clip(base + rng.normal(0, 0.3, n), 1, 7), (1, 7), np.full(n, 0.4)),
        "c": Dimension("c", rng.uniform(1, 7, n), (1, 7), np.full(n, 0.5)),
    }
    return NormsBundle(
        name="synthetic",
        concepts=tuple(f"c{i}" for i in range(n)),
        words=tuple(f"w{i}" for i in range(n)),
        dimensions=dims,
        noun=np.ones(n, dtype=bool),
        homograph=np.zeros(n, dtype=bool),
    )


def _tiles(path: Path, dims: tuple[str, str]) -> Path:
    body = ""
    for d in dims:
        body += (
            f'[[tile]]\nname = "{d}"\ndimension = "{d}"\nquestion = "How {d}?"\n'
            f'edges = [1.0, 3.0, 5.0, 7.0]\noptions = ["low {d}", "mid {d}", "high {d}"]\n\n'
        )
    path.write_text(body, encoding="utf-8")
    return path


class _Sizes(TypedDict):
    seed: int
    n_candidates: int
    n_items: int


def test_tile_screen_decides_or_the_build_refuses(tmp_path: Path) -> None:
    bundle = _synthetic_bundle()
    kw: _Sizes = {"seed": 1, "n_candidates": 4_000, "n_items": 40}
    ok = build_signalling_items(bundle, tiles=_tiles(tmp_path / "ok.toml", ("b", "c")), **kw)
    assert ok.items.config["tile_screen"]["decision"]["decided_by"] == "screen"
    wrong = _tiles(tmp_path / "wrong.toml", ("a", "c"))
    with pytest.raises(TileScreenMismatchError, match=r"selects \['b', 'c'\]"):
        build_signalling_items(bundle, tiles=wrong, **kw)
    forced = build_signalling_items(bundle, tiles=wrong, override_tile_screen=True, **kw)
    decision = forced.items.config["tile_screen"]["decision"]
    assert decision["overridden"] is True and decision["screen_selected"] == ["b", "c"]
    assert forced.instrument_hash != ok.instrument_hash


def test_unselected_candidates_and_user_filters_are_recorded(tmp_path: Path) -> None:
    frozen = build_instrument(
        "lancaster", out=tmp_path / "plain", seed=2, n_items=40, n_candidates=6_000
    )
    table = pq.read_table(tmp_path / "plain" / "candidates.parquet")
    assert table.num_rows == 6_000
    selected = table.column("selected").to_pylist()
    candidates = frozen.record["candidates"]
    assert sum(selected) == 40 and candidates is not None and candidates["unselected"] == 5_960
    ids = set(table.filter(table.column("selected")).column("candidate").to_pylist())
    assert ids == {i.meta["candidate"] for i in frozen.items}
    # each candidate carries what regenerating it needs: the selected ones match their items
    rows = {r["candidate"]: r for r in table.to_pylist() if r["selected"]}
    for item in frozen.items:
        row = rows[item.meta["candidate"]]
        assert row["means_ids"] == list(item.meta["means_ids"])
        assert row["clues_ids"] == list(item.meta["clues_ids"])
        assert [row["target_means"], row["target_clue"]] == list(item.meta["target"])
        assert row["option_ids"] == [f"{item.meta['tile']}:{k}" for k in range(len(item.options))]
    assert frozen.items.config["selection_filters"] == {}
    filtered = build_instrument(
        "lancaster",
        out=tmp_path / "filtered",
        seed=2,
        n_items=40,
        n_candidates=6_000,
        filters=RobustnessConfig(min_fit_cost=0.1),
    )
    assert filtered.items.config["selection_filters"] == {"min_fit_cost": 0.1}
    assert filtered.hash != frozen.hash
    costs = [i.meta["fit_cost"] for i in filtered.items if i.meta["conflict"]]
    assert min(costs) >= 0.1
    record = json.loads((tmp_path / "filtered" / "instrument.json").read_text())
    assert "candidates.parquet" in record["files"]
    assert load_instrument(tmp_path / "filtered").hash == filtered.hash
    # the per-item robustness report travels with every item
    items = pq.read_table(tmp_path / "plain" / "items.parquet").to_pylist()
    assert all(r["bayes_margin"] is not None and r["decay_agrees"] is not None for r in items)


def test_bfloat16_warns_with_the_measured_noise_floor(tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match=r"bfloat16 .* 1\.17 .* 0\.094"):
        run_signalling(
            [],
            ["uniform"],
            out=tmp_path,
            n_items=8,
            n_candidates=2_000,
            formats=("V",),
            conditions=("4",),
            scorer_options={"dtype": "bfloat16"},
        )


def test_default_chat_template_follows_the_papers_scoring_environment(tmp_path: Path) -> None:
    from choiceaudit.audit import default_chat_template

    instruct = tmp_path / "Qwen3-1.7B"
    base = tmp_path / "Qwen3-1.7B-Base"
    orphan = tmp_path / "Other-Base"
    for d in (instruct, base, orphan):
        d.mkdir()
    (instruct / "tokenizer_config.json").write_text(
        json.dumps({"chat_template": "{{ messages[0]['content'] }}"}), encoding="utf-8"
    )
    (base / "tokenizer_config.json").write_text("{}", encoding="utf-8")
    assert default_chat_template(f"hf:{instruct}") == (
        "own",
        "instruct model: its own chat template",
    )
    template, why = default_chat_template(f"hf:{base}")
    assert template == str(instruct) and "instruct sibling" in why and "verbatim" in why
    assert default_chat_template(f"hf:{orphan}")[0] is None
    assert default_chat_template("smollm2")[0] == "own"  # SmolLM2-135M-Instruct
    assert default_chat_template("gemma3-270m")[0] is None  # base, no sibling offline
