"""The commercial design's E4 (Bengali control against the English ceiling's d-rand on the same
items) is built, contrasted with McNemar and drawn in Figure 6; two runs of one model are told
apart by their run paths in every table."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from choiceaudit.audit import analyse_runs, run_meaning
from choiceaudit.instruments.meaning import MeaningAnalysis, meaning_rows
from choiceaudit.report import build_report
from choiceaudit.stats import mcnemar_exact
from choiceaudit.store import open_run


def record(i: int) -> dict[str, Any]:
    colours = ("red", "blue", "green", "amber")
    return {
        "id": i + 1,
        "idiom": f"বাগধারা{i} এক দুই তিন",
        "alternative_idioms": None,
        "literal_meaning": f"আক্ষরিক{i} অর্থ (literal plain sense of thing {i})",
        "figurative_meaning_bn": f"রূপক{i} {colours[i % 4]} অর্থ",
        "figurative_meaning_en": f"{colours[i % 4]} figurative gloss {i}",
        "similar_in_english": [f"english equivalent {i}"],
        "example_sentences_in_bangla": None,
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


def english_content(text: str) -> float:
    """Content by gloss: the even items' glosses attract, so the two cells differ by item."""
    digits = "".join(ch for ch in text if ch.isdigit())
    return 1.0 if digits and int(digits) % 2 == 0 else 0.0


@pytest.fixture(scope="module")
def jev(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("jev")
    corpus = root / "bagdhara.jsonl"
    corpus.write_text("\n".join(json.dumps(record(i), ensure_ascii=False) for i in range(14)))
    options = {"name": "fake", "content": english_content, "position_bias": [0.4, 0, 0, 0]}
    runs = []
    for name in ("full", "subset"):
        (run,) = run_meaning(
            ["fake"],
            out=root / name,
            corpus=f"bagdhara:{corpus}",
            design="jev",
            n_items=None,
            embedder="none",
            scorer_options={"fake": options},
            experiments=("e1", "e7"),
        )
        runs.append(run)
    (analysis,) = analyse_runs(runs)
    assert isinstance(analysis, MeaningAnalysis)
    index = build_report((analysis,), out=root / "report")
    return {"runs": runs, "analysis": analysis, "out": root / "report", "index": index}


def test_jev_e4_is_read_from_the_bengali_control_and_the_english_ceiling(
    jev: dict[str, Any],
) -> None:
    analysis: MeaningAnalysis = jev["analysis"]
    bn = next(a for a in analysis.arms if a.language == "bn" and a.source == str(jev["runs"][0]))
    assert bn.analysis is not None and bn.analysis.e4 is not None
    e4 = bn.analysis.e4
    assert e4.built_from == ("j4_bn_control", "j3_ceiling_en")
    rows = meaning_rows(open_run(jev["runs"][0]).arm())
    control = rows.where(block="j4_bn_control", family="d-rand")
    ceiling = rows.where(block="j3_ceiling_en", family="d-rand")
    items = sorted(set(control.item_id.tolist()) & set(ceiling.item_id.tolist()))
    assert len(items) == 14

    def per_item(part: Any) -> np.ndarray:
        order = {str(i): k for k, i in enumerate(part.item_id.tolist())}
        return np.array([part.correct[order[i]] for i in items])

    a, b = per_item(control), per_item(ceiling)
    assert e4.accuracy["bn"].estimate == pytest.approx(a.mean())
    assert e4.accuracy["en"].estimate == pytest.approx(b.mean())
    # the paper's sign (§5.7): the gain from asking in English, English minus Bengali
    assert e4.contrast_languages == ("en", "bn") and e4.contrast_label == "en_minus_bn"
    assert e4.contrast is not None and e4.contrast.difference == pytest.approx(b.mean() - a.mean())
    whole = (np.isin(a, (0.0, 1.0))) & (np.isin(b, (0.0, 1.0)))
    test = mcnemar_exact(b[whole] == 1, a[whole] == 1)
    assert (e4.contrast.mcnemar_b, e4.contrast.mcnemar_c) == (test.b, test.c)
    assert e4.contrast.mcnemar_p == pytest.approx(test.p)
    assert not any("task-language swap" in s.analysis for s in analysis.skipped)


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_figure_6_has_the_jev_bars_and_the_table_says_where_e4_came_from(
    jev: dict[str, Any],
) -> None:
    table = _csv(jev["out"] / "tables" / "meaning_task_language.csv")
    models = {r["model"] for r in table}
    assert models == {"fake (full/meaning-fake) [bn]", "fake (subset/meaning-fake) [bn]"}
    assert {r["built_from"] for r in table} == {"j4_bn_control, j3_ceiling_en"}
    figure = _csv(jev["out"] / "figures" / "meaning_task_language.csv")
    bars = [r for r in figure if "minus" not in r["task_language"]]
    assert len(bars) == 4 and {r["task_language"] for r in bars} == {"bn", "en"}


def test_two_runs_of_one_model_are_told_apart_everywhere(jev: dict[str, Any]) -> None:
    analysis: MeaningAnalysis = jev["analysis"]
    labels = {a.display for a in analysis.arms}
    assert "fake (full/meaning-fake) [bn]" in labels
    assert "fake (subset/meaning-fake) [en, j3_ceiling_en]" in labels
    for c in analysis.model_contrasts:
        assert c.model_a != c.model_b
    for p in analysis.pairing:
        assert p.model_a != p.model_b
    for name in ("meaning_model_contrasts", "meaning_pairing", "meaning_ladder"):
        for row in _csv(jev["out"] / "tables" / f"{name}.csv"):
            for key in ("model", "model_a", "model_b"):
                if key in row:
                    assert "/meaning-fake)" in row[key], (name, row)
