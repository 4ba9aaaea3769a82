"""``import decisions --instrument signalling``: runs the tool produced (a three-rule stand-in
LM and two tie-prone reference choosers on lancaster items built in the test), written out as
released per-item files under other column names and other option orders, re-import to the
same analysis, exactly; rows that do not match the frozen item set are refused and listed."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from choiceaudit.audit import analyse_runs, import_decisions, run_signalling
from choiceaudit.cli import app
from choiceaudit.errors import InputError
from choiceaudit.files import sha256_file
from choiceaudit.instruments.signalling import SignallingAnalysis, load_instrument
from choiceaudit.report import build_report
from choiceaudit.store import open_run
from choiceaudit.types import Decision, Query


def _h(text: str) -> float:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


class ThreeRuleLM:
    """A deterministic stand-in for a causal LM: PMI, sum and mean scores per option."""

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        out = []
        for q in queries:
            base = np.array([_h(q.state + o) for o in q.options])
            scores = {"pmi": base, "sum": base[::-1].copy(), "mean": np.roll(base, 1)}
            z = np.exp(base - base.max())
            out.append(Decision(query_id=q.id, probs=z / z.sum(), scores=scores))
        return out

    def describe(self) -> dict[str, Any]:
        return {"backend": "test", "model": "three-rule-lm"}


@pytest.fixture(scope="module")
def tool_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("signalling-import") / "runs"
    runs = run_signalling(
        # a stand-in with the scorer's methods, not declared as the protocol
        [ThreeRuleLM()],  # type: ignore[list-item]
        ["salience", "uniform"],
        out=root,
        norms="lancaster",
        n_items=12,
        n_candidates=2000,
        formats=("V", "L"),
        label_forms=("bare",),
    )
    return {"model": runs[0], "salience": runs[1], "uniform": runs[2], "items": root / ".items"}


def _ids(q: Query, tile: str) -> list[str]:
    return [f"{tile}:{c}" for c in range(q.n_options)]


def _rotated(k: int) -> list[int]:
    # another option order than both the display and the canonical one
    return [(c + 1) % k for c in range(k)][::-1]


def export_model(run: Path, path: Path) -> None:
    """The model run as a CSV: probabilities as columns and rule scores as JSON lists, both in
    a rotated canonical order given by option id, the display order as option texts."""
    rows = []
    for r in open_run(run).rows:
        q, d = r.query, r.decision
        tile = str(q.meta["tile"])
        order = _rotated(q.n_options)
        slot_of = {c: s for s, c in enumerate(q.perm or ())}
        entry = {
            "stim": q.meta["item_id"],
            "prompt_cond": f"C{q.meta['condition']}",
            "fmt": q.meta["format"].lower(),
            "labels": q.meta.get("label_form", ""),
            "shown": json.dumps(list(q.options)),
            "vec_ids": json.dumps([_ids(q, tile)[c] for c in order]),
        }
        for n, c in enumerate(order):
            entry[f"q{n + 1}"] = repr(float(d.probs[slot_of[c]]))
        for rule in ("pmi", "sum", "mean"):
            entry[f"{rule}_v"] = json.dumps([float(d.scores[rule][slot_of[c]]) for c in order])
        rows.append(entry)
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


MODEL_MAP = [
    "item_id=stim",
    "condition=prompt_cond",
    "format=fmt",
    "label_form=labels",
    "display_order=shown",
    "option_order=vec_ids",
    "probs=q1,q2,q3,q4",
    "score_pmi=pmi_v",
    "score_sum=sum_v",
    "score_mean=mean_v",
]


def export_chosen(run: Path, path: Path) -> None:
    """A chooser's run as JSONL holding only the chosen (tied) set, as option ids, and which
    stored permutation was shown."""
    with path.open("w", encoding="utf-8") as fh:
        for r in open_run(run).rows:
            q, d = r.query, r.decision
            tile = str(q.meta["tile"])
            picked = [_ids(q, tile)[q.canonical(s)] for s in d.choice()]
            line = {
                "item": q.meta["item_id"],
                "cond": q.meta["condition"],
                "f": q.meta["format"],
                "lf": q.meta.get("label_form"),
                "shown_as": q.meta["perm_index"],
                "picked": picked,
            }
            fh.write(json.dumps(line) + "\n")


def export_parquet(run: Path, path: Path) -> None:
    """A chooser's run as Parquet: the vector as a list in canonical order, the display order
    as canonical indices."""
    rows = []
    for r in open_run(run).rows:
        q, d = r.query, r.decision
        perm = list(q.perm or ())
        vector = [float(d.probs[perm.index(c)]) for c in range(q.n_options)]
        rows.append(
            {
                "item_id": q.meta["item_id"],
                "condition": q.meta["condition"],
                "format": q.meta["format"],
                "label_form": q.meta.get("label_form"),
                "display_order": perm,
                "option_order": list(range(q.n_options)),
                "probs": vector,
            }
        )
    pq.write_table(pa.Table.from_pylist(rows), path)


def _same(a: SignallingAnalysis, b: SignallingAnalysis) -> None:
    # every computed result; the arms differ only in where the runs are and how they were made
    assert repr(dataclasses.replace(a, arms=())) == repr(dataclasses.replace(b, arms=()))
    assert [(x.chooser, x.kind, x.rules, x.n_rows) for x in a.arms] == [
        (x.chooser, x.kind, x.rules, x.n_rows) for x in b.arms
    ]


def _one(runs: Sequence[Path]) -> SignallingAnalysis:
    (analysis,) = [a for a in analyse_runs(runs) if isinstance(a, SignallingAnalysis)]
    return analysis


@pytest.fixture(scope="module")
def imported(
    tool_runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("released")
    items = tool_runs["items"]
    export_model(tool_runs["model"], root / "model.csv")
    export_chosen(tool_runs["salience"], root / "salience.jsonl")
    export_parquet(tool_runs["uniform"], root / "uniform.parquet")
    mapping = root / "map.json"
    mapping.write_text(json.dumps({"values": {"condition": {"C4": "4", "C5": "5"}}}))
    out = root / "runs"
    model = import_decisions(
        [root / "model.csv"],
        out=out / "three-rule-lm",
        instrument="signalling",
        items=items,
        mapping=MODEL_MAP,
        mapping_file=mapping,
        model="three-rule-lm",
    )
    salience = import_decisions(
        [root / "salience.jsonl"],
        out=out / "salience",
        instrument="signalling",
        items=items,
        chooser="salience",
        mapping=[
            "item_id=item",
            "condition=cond",
            "format=f",
            "label_form=lf",
            "perm_index=shown_as",
            "chosen=picked",
        ],
    )
    uniform = import_decisions(
        [root / "uniform.parquet"],
        out=out / "uniform",
        instrument="signalling",
        items=items,
        chooser="uniform",
    )
    return {"model": model, "salience": salience, "uniform": uniform, "root": root}


def test_reimport_gives_the_same_analysis_exactly(
    tool_runs: dict[str, Any], imported: dict[str, Any]
) -> None:
    original = _one([tool_runs[k] for k in ("model", "salience", "uniform")])
    again = _one([imported[k].summary.path for k in ("model", "salience", "uniform")])
    _same(original, again)
    # the tie-prone choosers carry tied renderings, scored by split credit, none left out
    cells = {(c.chooser, c.rule): c for c in again.cells}
    assert cells[("uniform", "probs")].excess == 0.0
    assert cells[("uniform", "probs")].excess_tied_items == cells[("uniform", "probs")].n_items
    assert cells[("uniform", "probs")].excess_excluded_unpaired == 0
    assert cells[("uniform", "probs")].n_tied_renderings == 16  # 8 analysis items x 2
    assert {c.rule for c in again.cells if c.kind == "model"} == {"pmi", "sum", "mean"}
    assert again.format_l and again.tile_excess
    assert [a.mapped for a in (imported["model"], imported["salience"])] == [96, 96]


def test_imported_arm_pairs_with_tool_runs(
    tool_runs: dict[str, Any], imported: dict[str, Any]
) -> None:
    both = _one([tool_runs["model"], tool_runs["salience"], imported["uniform"].summary.path])
    assert {c.chooser for c in both.cells} == {"three-rule-lm", "salience", "uniform"}
    original = _one([tool_runs[k] for k in ("model", "salience", "uniform")])
    _same(original, both)


def test_report_lays_out_an_imported_arm(imported: dict[str, Any], tmp_path: Path) -> None:
    analysis = _one([imported[k].summary.path for k in ("model", "salience", "uniform")])
    index = build_report([analysis], out=tmp_path / "report")
    assert index.is_file()
    assert any("signalling" in p.name for p in (tmp_path / "report" / "tables").iterdir())


def _unstored(perms: Sequence[str], k: int) -> list[int]:
    stored = {tuple(map(int, p)) for p in perms}
    return list(next(p for p in itertools.permutations(range(k)) if p not in stored))


def test_manifest_records_files_mapping_and_refusals(
    tool_runs: dict[str, Any], tmp_path: Path
) -> None:
    items = load_instrument(tool_runs["items"]).items.items
    first, second = items[0], items[1]
    perm = list(map(int, first.meta["perms"][0]))
    good = {
        "item_id": first.id,
        "condition": "4",
        "format": "V",
        "display_order": perm,
        "probs": [1.0] + [0.0] * (len(perm) - 1),
    }
    bad = [
        {**good, "item_id": "sig-nowhere"},
        {**good, "display_order": _unstored(first.meta["perms"], len(perm))},
        {**good, "display_order": ["not an option", *perm[1:]]},
        {**good, "item_id": second.id, "means_ids": first.meta["means_ids"]},
        {**good, "condition": "6"},
        {**good, "chosen": f"{first.meta['tile']}:{perm[1]}"},
        {**good, "probs": [0.5, 0.6] + [0.0] * (len(perm) - 2)},
        good,  # the same row again: dropped and counted
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [good, *bad]))
    result = import_decisions(
        [path],
        out=tmp_path / "run",
        instrument="signalling",
        items=tool_runs["items"],
        model="released",
    )
    assert result.mapped == 1 and result.identical_duplicates == 1
    config = open_run(tmp_path / "run").manifest.config
    assert config["instrument"] == "signalling"
    assert config["files"][0]["sha256"] == sha256_file(path)
    assert config["mapping"]["item_id"] == "item_id"
    listed = config["unmappable_listed"]
    assert [r["row"] for r in listed] == [2, 3, 4, 5, 6, 7, 8]
    reasons = [r["reason"] for r in listed]
    assert "is not in the frozen item set" in reasons[0]
    assert "is not one of item" in reasons[1] and "stored permutations" in reasons[1]
    assert "'not an option' is not an option of item" in reasons[2]
    assert "means_ids" in reasons[3] and "another item under this id" in reasons[3]
    assert "condition '6' is not 4 or 5" in reasons[4]
    assert "chosen is not among the maxima of probs" in reasons[5]
    assert "sums to 1.1" in reasons[6]
    assert (tmp_path / "run" / "instrument" / "instrument.json").is_file()
    # the same rendering with another vector: neither row is chosen, the import stops
    other = {**good, "probs": [0.0, 1.0] + [0.0] * (len(perm) - 2)}
    path.write_text("".join(json.dumps(r) + "\n" for r in [good, other]))
    with pytest.raises(InputError, match=r"mixed\.jsonl:2: probs: a second row for item"):
        import_decisions(
            [path],
            out=tmp_path / "stopped",
            instrument="signalling",
            items=tool_runs["items"],
            model="released",
        )
    assert not (tmp_path / "stopped").exists()


def test_signalling_import_needs_the_item_set(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"item_id": "a"}\n')
    with pytest.raises(InputError, match="--items ITEMS is needed"):
        import_decisions([path], out=tmp_path / "run", instrument="signalling")
    with pytest.raises(InputError, match="unknown field"):
        import_decisions(
            [path],
            out=tmp_path / "run",
            instrument="signalling",
            items=tmp_path,
            mapping=["experiment=exp"],
        )


def test_command_line_import(
    tool_runs: dict[str, Any], imported: dict[str, Any], tmp_path: Path
) -> None:
    runner = CliRunner()
    args = [
        "import",
        "decisions",
        str(imported["root"] / "uniform.parquet"),
        "--instrument",
        "signalling",
        "--items",
        str(tool_runs["items"]),
        "--chooser",
        "uniform",
        "--out",
        str(tmp_path / "uniform"),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert open_run(tmp_path / "uniform").manifest.config["chooser"] == "uniform"
    refused = runner.invoke(app, [*args[:-1], str(tmp_path / "u2"), "--model-name", "m"])
    assert refused.exit_code != 0
    assert "error: give --model or --chooser" in refused.output
