"""``import decisions``: a run the tool produced, written out as a per-item file under other
column names and another canonical order (gold at canonical 2), re-imported, gives the same
meaning analysis, pairs with the original by item, and records what it could not map."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from choiceaudit.audit import analyse_runs, import_decisions, run_meaning
from choiceaudit.errors import InputError
from choiceaudit.files import sha256_file
from choiceaudit.instruments.meaning import MeaningAnalysis
from choiceaudit.instruments.scoring import ScoringAnalysis
from choiceaudit.store import open_run

KEYS = "ABCD"
#: tool canonical index -> the file's: gold (0) goes to 2, the others keep their order in 0, 1, 3
SIGMA = {0: 2, 1: 0, 2: 1, 3: 3}
MAPPING = [
    "item_id=id",
    "experiment=exp",
    "condition=cond",
    "family=fam",
    "language=lang",
    "block=blk",
    "state=idiom",
    "options=o1,o2,o3,o4",
    "probs=pA,pB,pC,pD",
    "predicted_key=answer",
    "gold_position=gold_pos",
    "literal_key=lit",
    "perm=order",
    "conf_head=head",
]


def record(i: int) -> dict[str, Any]:
    colours = ("red", "blue", "green", "amber")
    return {
        "id": i + 1,
        "idiom": f"বাগধারা{i} এক দুই তিন",
        "alternative_idioms": [f"বাগধারা{i} বিকল্প"] if i % 2 else None,
        "literal_meaning": f"আক্ষরিক{i} অর্থ (literal plain sense of thing {i})",
        "figurative_meaning_bn": f"রূপক{i} {colours[i % 4]} অর্থ",
        "figurative_meaning_en": f"{colours[i % 4]} figurative gloss {i}",
        "similar_in_english": [f"english equivalent {i}"],
        "example_sentences_in_bangla": [f"একটি বাক্য বাগধারা{i} দিয়ে।"],
        "example_sentences_in_english": None,
        "usage_domain": None,
        "tags": [f"t{i % 4}"],
        "frequency": "common",
        "sentiment": None,
        "historical_significance": 0,
        "religious_significance": 0,
        "cultural_significance": 0,
        "scape": None,
        "note": None,
        "history": None,
    }


def literal_content(text: str) -> float:
    return 2.0 if "literal plain" in text else 0.0


@pytest.fixture(scope="module")
def tool_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("decisions")
    corpus = root / "bagdhara.jsonl"
    corpus.write_text("\n".join(json.dumps(record(i), ensure_ascii=False) for i in range(16)))
    options = {"name": "fake", "content": literal_content, "position_bias": [0.5, 0, 0.3, 0]}
    (run,) = run_meaning(
        ["fake"],
        out=root / "runs",
        corpus=f"bagdhara:{corpus}",
        n_items=10,
        n_order_items=2,
        embedder="none",
        scorer_options={"fake": options},
        e7_keys=("slot",),
    )
    return run


def export(run: Path) -> list[dict[str, Any]]:
    """The run's rows as a released per-item file would hold them, canonical order remapped."""
    out = []
    for row in open_run(run).rows:
        q, d = row.query, row.decision
        meta = q.meta
        assert q.perm is not None
        perm = [SIGMA[c] for c in q.perm]
        vector = d.scores.get("prob", d.probs)
        lit = meta["literal_slot"]
        out.append(
            {
                "id": meta["item_id"],
                "exp": meta["experiment"].upper(),
                "cond": meta["condition"],
                "fam": meta["family"].upper(),
                "lang": meta["language"],
                "blk": meta["block"],
                "idiom": q.state,
                **{f"o{s + 1}": o for s, o in enumerate(q.options)},
                **{f"p{KEYS[s]}": float(v) for s, v in enumerate(vector)},
                "answer": d.aux.get("reported_choice", d.aux.get("choice_key")),
                "gold_pos": meta["gold_slot"],
                "lit": KEYS[lit] if lit is not None else "",
                "order": "".join(map(str, perm)),
                "frequency": meta.get("frequency") or "",
                "head": d.aux.get("conf_head"),
                "extra_column": "ignored",
            }
        )
    return out


def write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _strip(value: Any) -> str:
    """A result as comparable text (NaN equals NaN), per-item tables and labels left in."""
    return repr(dataclasses.asdict(value))


def test_a_reimported_run_gives_the_same_analysis_and_pairs_by_item(
    tool_run: Path, tmp_path: Path
) -> None:
    rows = export(tool_run)
    assert {r["order"][open_run(tool_run).rows[0].query.meta["gold_slot"]] for r in rows[:1]} == {
        "2"
    }  # the file keeps the gold at canonical 2
    source = write_csv(tmp_path / "released.csv", rows)
    result = import_decisions(
        [source],
        out=tmp_path / "imported",
        mapping=MAPPING,
        model="released",
        corpus_language="bn",
    )
    assert result.mapped == len(rows) and not result.unmappable
    (analysis,) = analyse_runs([tool_run, tmp_path / "imported"])
    assert isinstance(analysis, MeaningAnalysis)
    tool, imported = analysis.arms[0].analysis, analysis.arms[1].analysis
    assert tool is not None and imported is not None
    for name in ("e1", "e2", "e3", "e4", "e6", "e7", "matrix"):
        assert getattr(tool, name) is not None, name
        assert _strip(getattr(tool, name)) == _strip(getattr(imported, name)), name
    assert all(
        p.n_shared == len(rows) and p.gold_slot == p.literal_slot == p.state == 1.0
        for p in analysis.pairing
    )
    assert analysis.model_contrasts and all(
        c.contrast.difference == 0.0 for c in analysis.model_contrasts
    )
    config = open_run(tmp_path / "imported").manifest.config
    assert config["files"][0]["sha256"] == sha256_file(source)
    assert config["mapping"]["gold_position"] == "gold_pos"
    assert config["mapping"]["probs"] == "pA,pB,pC,pD"
    assert "extra_column" in config["unmapped_fields"]


def test_jsonl_and_parquet_read_the_same_rows(tool_run: Path, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = export(tool_run)[:40]
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), "utf-8")
    parquet = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    a = import_decisions([jsonl], out=tmp_path / "a", mapping=MAPPING, model="m")
    b = import_decisions([parquet], out=tmp_path / "b", mapping=MAPPING, model="m")
    assert a.mapped == b.mapped == 40
    ra = [(r.query.meta["perm"], r.decision.probs.tolist()) for r in open_run(tmp_path / "a").rows]
    rb = [(r.query.meta["perm"], r.decision.probs.tolist()) for r in open_run(tmp_path / "b").rows]
    assert ra == rb


def test_rows_that_cannot_be_validated_are_listed_with_their_reason(
    tool_run: Path, tmp_path: Path
) -> None:
    rows = export(tool_run)
    e7 = [i for i, r in enumerate(rows) if r["exp"] == "E7"]
    bad = [dict(r) for r in rows]
    bad[0] = {**bad[0], "pA": 0.5, "pB": 0.2, "pC": 0.1, "pD": 0.1}  # sums to 0.9
    bad[1] = {**bad[1], "gold_pos": 7}
    bad[2] = {**bad[2], "answer": "Z"}
    # an E7 rendering whose display order moves the gold to another canonical index
    r = bad[e7[3]]
    order = list(r["order"])
    slot = int(r["gold_pos"])
    other = (slot + 1) % 4
    order[slot], order[other] = order[other], order[slot]
    bad[e7[3]] = {**r, "order": "".join(order)}
    mapping_file = tmp_path / "map.toml"
    mapping_file.write_text(
        "[map]\n"
        + "\n".join(
            f"{f} = {json.dumps(c.split(',')) if ',' in c else json.dumps(c)}"
            for f, c in (pair.split("=") for pair in MAPPING)
        )
        + '\n[values.experiment]\n"E1" = "e1"\n',
        encoding="utf-8",
    )
    result = import_decisions(
        [write_csv(tmp_path / "bad.csv", bad)],
        out=tmp_path / "run",
        mapping_file=mapping_file,
        model="m",
        sum_tolerance=0.02,
    )
    assert result.mapped == len(rows) - 4
    listed = open_run(tmp_path / "run").manifest.config["unmappable_listed"]
    by_row = {entry["row"]: entry["reason"] for entry in listed}
    assert "sums to 0.9" in by_row[2] and "tolerance 0.02" in by_row[2]
    assert "gold_position 7" in by_row[3]
    assert "predicted_key 'Z'" in by_row[4]
    assert f"item {rows[e7[3]]['id']}: gold / literal at canonical" in by_row[e7[3] + 2]


def test_a_mapping_naming_an_unknown_field_is_refused(tool_run: Path, tmp_path: Path) -> None:
    source = write_csv(tmp_path / "x.csv", export(tool_run)[:2])
    with pytest.raises(InputError, match=r"unknown field.*golden"):
        import_decisions([source], out=tmp_path / "r", mapping=["golden=gold_pos"])


def test_plain_scoring_import_reads_the_gold_at_canonical_two(
    tool_run: Path, tmp_path: Path
) -> None:
    rows = [r for r in export(tool_run) if r["exp"] == "E1"]
    source = write_csv(tmp_path / "e1.csv", rows)
    import_decisions([source], out=tmp_path / "s", instrument="scoring", mapping=MAPPING, model="m")
    (analysis,) = analyse_runs([tmp_path / "s"])
    (meaning,) = analyse_runs([tool_run])
    assert isinstance(meaning, MeaningAnalysis)
    tool = meaning.arms[0].analysis
    assert tool is not None and tool.e1 is not None
    tool_e1 = tool.e1
    expected = sum(c.estimate * c.n_rows for c in tool_e1.accuracy.values()) / sum(
        c.n_rows for c in tool_e1.accuracy.values()
    )
    assert isinstance(analysis, ScoringAnalysis)
    # an imported vector is stored as probs and as the returned prob: the same choices
    cells = {c.rule: c for c in analysis.accuracy}
    assert list(cells) == ["probs", "prob"]
    assert cells["probs"].accuracy == pytest.approx(expected)
    assert cells["prob"].accuracy == pytest.approx(expected)


def test_the_command_line_imports_and_prints_the_refused_rows(
    tool_run: Path, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from choiceaudit.cli import app

    rows = export(tool_run)[:10]
    rows[0] = {**rows[0], "gold_pos": ""}
    source = write_csv(tmp_path / "cli.csv", rows)
    args = [
        "import",
        "decisions",
        str(source),
        "--out",
        str(tmp_path / "run"),
        "--model-name",
        "m",
        *[a for pair in MAPPING for a in ("--map", pair)],
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "9 row(s) imported" in result.output
    assert "not imported: 1 row(s): no gold option" in result.output
    bad = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "r2"), "--instrument", "signals"])
    assert bad.exit_code == 1 and "error:" in bad.output and "--instrument" in bad.output
