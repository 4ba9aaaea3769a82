"""Imports refuse what they cannot justify: every file here is built in the test, each case a
reproducer of a plausible wrong value that an import once accepted. A refusal names file, row
and field and leaves nothing on disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from choiceaudit.audit import import_decisions, import_lm_eval
from choiceaudit.errors import InputError
from choiceaudit.store import open_run

HARNESS = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "lm_eval"


def decision_row(item: str = "i1", **changes: Any) -> dict[str, Any]:
    """One meaning row of the import's default columns (the gold at slot 0, the literal at 1)."""
    row: dict[str, Any] = {
        "item_id": item,
        "experiment": "e1",
        "condition": "d-rand",
        "language": "en",
        "state": f"idiom {item}",
        "options": ["the gold sense", "the literal sense", "a third", "a fourth"],
        "probs": [0.7, 0.1, 0.1, 0.1],
        "gold_position": 0,
        "literal_position": 1,
    }
    row.update(changes)
    return row


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_identical_duplicate_rows_are_dropped_and_counted(tmp_path: Path) -> None:
    rows = [decision_row("i1"), decision_row("i2"), decision_row("i1")]
    result = import_decisions([write_jsonl(tmp_path / "d.jsonl", rows)], out=tmp_path / "run")
    assert result.mapped == 2 and result.identical_duplicates == 1
    assert open_run(tmp_path / "run").manifest.rows == 2


def test_differing_duplicate_rows_are_refused_by_name(tmp_path: Path) -> None:
    rows = [
        decision_row("i1"),
        decision_row("i2"),
        decision_row("i1", probs=[0.1, 0.7, 0.1, 0.1]),  # the same rendering, another choice
    ]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    with pytest.raises(InputError) as caught:
        import_decisions([path], out=tmp_path / "run")
    message = str(caught.value)
    assert message.startswith(f"{path}:3: probs: a second row for item i1 condition d-rand")
    assert "than row 1" in message
    assert (caught.value.row, caught.value.field) == (3, "probs")
    assert not (tmp_path / "run").exists()


def test_differing_duplicate_lm_eval_lines_are_refused(tmp_path: Path) -> None:
    (samples,) = sorted(HARNESS.glob("samples_*.jsonl"))
    lines = [json.loads(x) for x in samples.read_text("utf-8").splitlines() if x]
    changed = json.loads(json.dumps(lines[0]))
    changed["filtered_resps"][0][0] = str(float(changed["filtered_resps"][0][0]) - 3.0)
    folder = tmp_path / "in"
    folder.mkdir()
    target = folder / samples.name
    target.write_text("".join(json.dumps(x) + "\n" for x in [*lines, lines[0]]), "utf-8")
    again = import_lm_eval([target], out=tmp_path / "same")
    assert again.identical_duplicates == 1 and again.mapped == len(lines)
    target.write_text("".join(json.dumps(x) + "\n" for x in [*lines, changed]), "utf-8")
    with pytest.raises(InputError, match=rf"^{samples.name}:{len(lines) + 1}: probs: "):
        import_lm_eval([target], out=tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("5.0", "a log-likelihood is above 0 (not the log of a probability)"),
        (0.5, "a log-likelihood is above 0 (not the log of a probability)"),
        (True, "a log-likelihood is not a number (True)"),
    ],
)
def test_lm_eval_log_likelihoods_that_are_not_log_probabilities_are_refused(
    tmp_path: Path, value: object, reason: str
) -> None:
    (samples,) = sorted(HARNESS.glob("samples_*.jsonl"))
    lines = [json.loads(x) for x in samples.read_text("utf-8").splitlines() if x]
    lines[0]["filtered_resps"][1][0] = value
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / samples.name).write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    result = import_lm_eval([folder / samples.name], out=tmp_path / "run")
    assert result.unmappable == {reason: 1}
    assert result.mapped == len(lines) - 1
    # a zero log-likelihood (a certain continuation) is a probability of one, and is kept
    lines[0]["filtered_resps"][1][0] = "0.0"
    (folder / samples.name).write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    assert import_lm_eval([folder / samples.name], out=tmp_path / "zero").unmappable == {}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"options": "abc"}, 'options "abc" is not a list'),
        ({"keys": "ABCD"}, 'keys "ABCD" is not a list'),
        ({"gold_position": True}, "gold_position true is not a number"),
        ({"gold_position": "0"}, 'gold_position "0" is text, not a number'),
        ({"probs": [True, False, False, False]}, "probs entry true is not a number"),
        ({"probs": ["0.7", "0.1", "0.1", "0.1"]}, 'probs entry "0.7" is text, not a number'),
        ({"item_id": {"id": 1}}, 'item_id {"id": 1} is not text'),
        ({"item_id": 1.5}, "item_id 1.5 is not text"),
        ({"options": ["a", {"b": 1}, "c", "d"]}, 'options holds {"b": 1}, which is not text'),
        ({"perm": [True, 0, 2, 3]}, "perm [true, 0, 2, 3] is not a display order"),
        ({"identity_perturbation": "yes"}, 'identity_perturbation "yes" is not true or false'),
        ({"conf_head": "0.9"}, 'conf_head "0.9" is text, not a number'),
    ],
)
def test_a_jsonl_value_of_another_type_is_refused_never_coerced(
    tmp_path: Path, change: dict[str, Any], reason: str
) -> None:
    rows = [decision_row("i1"), decision_row("i2", **change)]
    result = import_decisions([write_jsonl(tmp_path / "d.jsonl", rows)], out=tmp_path / "run")
    assert result.mapped == 1
    ((got, n),) = result.unmappable.items()
    assert n == 1 and got.startswith(reason), got
    (listed,) = open_run(tmp_path / "run").manifest.config["unmappable_listed"]
    assert listed["row"] == 2 and listed["file"].endswith("d.jsonl")


def test_an_integer_item_id_is_its_digits(tmp_path: Path) -> None:
    rows = [decision_row("i1", item_id=31)]
    import_decisions([write_jsonl(tmp_path / "d.jsonl", rows)], out=tmp_path / "run")
    (row,) = open_run(tmp_path / "run").rows
    assert row.meta["item_id"] == "31"


def csv_text(rows: list[dict[str, Any]]) -> str:
    header = [
        "item_id",
        "experiment",
        "condition",
        "language",
        "state",
        "gold_position",
        "literal_position",
        "o1",
        "o2",
        "o3",
        "o4",
        "p1",
        "p2",
        "p3",
        "p4",
    ]
    lines = [",".join(header)]
    for r in rows:
        cells = [str(r[h]) for h in header[:7]] + list(r["options"]) + [str(p) for p in r["probs"]]
        lines.append(",".join(cells))
    return "\r\n".join(lines) + "\r\n"


CSV_MAP = ["options=o1,o2,o3,o4", "probs=p1,p2,p3,p4"]


def test_a_csv_with_a_byte_order_mark_reads_like_one_without(tmp_path: Path) -> None:
    text = csv_text([decision_row("i1"), decision_row("i2")])
    (tmp_path / "plain.csv").write_text(text, encoding="utf-8")
    (tmp_path / "excel.csv").write_text(text, encoding="utf-8-sig")  # Excel's "CSV UTF-8"
    assert (tmp_path / "excel.csv").read_bytes()[:3] == b"\xef\xbb\xbf"
    plain = import_decisions([tmp_path / "plain.csv"], out=tmp_path / "a", mapping=CSV_MAP)
    excel = import_decisions([tmp_path / "excel.csv"], out=tmp_path / "b", mapping=CSV_MAP)
    assert plain.mapped == excel.mapped == 2 and excel.unmappable == {}
    rows_a = [(r.query.id, r.decision.probs.tolist()) for r in open_run(tmp_path / "a").rows]
    rows_b = [(r.query.id, r.decision.probs.tolist()) for r in open_run(tmp_path / "b").rows]
    assert rows_a == rows_b


def test_csv_cells_are_text_and_their_numbers_are_read(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text(csv_text([decision_row("i1", gold_position=2)]), "utf-8")
    result = import_decisions([tmp_path / "d.csv"], out=tmp_path / "run", mapping=CSV_MAP)
    assert result.unmappable == {} and result.mapped == 1
    (row,) = open_run(tmp_path / "run").rows
    assert row.meta["gold_slot"] == 2


@pytest.mark.parametrize("tolerance", [float("nan"), float("inf"), -0.01])
def test_a_sum_tolerance_that_would_switch_the_check_off_is_refused(
    tmp_path: Path, tolerance: float
) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [decision_row("i1")])
    with pytest.raises(InputError, match=r"^--sum-tolerance: must be a finite number"):
        import_decisions([path], out=tmp_path / "run", sum_tolerance=tolerance)
    assert not (tmp_path / "run").exists()


def test_set_gives_a_field_one_value_for_every_row_and_is_recorded(tmp_path: Path) -> None:
    rows = [decision_row("i1"), decision_row("i2")]
    for row in rows:
        del row["experiment"]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    with pytest.raises(InputError, match="2 × no experiment"):
        import_decisions([path], out=tmp_path / "without")
    result = import_decisions([path], out=tmp_path / "run", constants=["experiment=E7"])
    assert result.mapped == 2 and result.unmappable == {}
    run = open_run(tmp_path / "run")
    assert {r.meta["experiment"] for r in run.rows} == {"e7"}
    assert run.manifest.config["set_fields"] == {"experiment": "E7"}


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (["experiment"], "give field=value"),
        (["probs=0.5"], "probs cannot be set to one value for every row"),
        (["experiment=e1", "experiment=e2"], "experiment is set twice"),
        (["condition=x"], "condition is both mapped to column 'cond' and set to 'x'"),
    ],
)
def test_set_refuses_what_it_cannot_mean(tmp_path: Path, pairs: list[str], message: str) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [decision_row("i1")])
    with pytest.raises(InputError, match=r"^--set: " + message):
        import_decisions([path], out=tmp_path / "run", constants=pairs, mapping=["condition=cond"])
    assert not (tmp_path / "run").exists()


def e2_row(item: str, condition: str, state: str) -> dict[str, Any]:
    return decision_row(item, experiment="E2", condition=condition, state=state)


def test_a_misnamed_e2_condition_is_refused_at_import_with_the_names_expected(
    tmp_path: Path,
) -> None:
    rows = [e2_row("31", "canonical", "kick the bucket"), e2_row("31", "alt-1", "kick it")]
    result = import_decisions([write_jsonl(tmp_path / "d.jsonl", rows)], out=tmp_path / "run")
    assert result.unmappable == {
        "condition 'alt-1' is not an E2 condition (canonical, alt1, alt2, …)": 1
    }
    (listed,) = open_run(tmp_path / "run").manifest.config["unmappable_listed"]
    assert listed["row"] == 2


def test_two_rows_for_one_item_and_condition_stop_the_import_before_the_report(
    tmp_path: Path,
) -> None:
    rows = [
        e2_row("31", "canonical", "kick the bucket"),
        e2_row("31", "alt1", "kick it"),
        e2_row("31", "alt1", "buy the farm"),  # should have been alt2
    ]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    with pytest.raises(InputError) as caught:
        import_decisions([path], out=tmp_path / "run")
    assert str(caught.value).startswith(
        f"{path}:3: condition: a second row for item 31 of e2 condition alt1"
    )
    assert "besides row 2" in str(caught.value)
    assert not (tmp_path / "run").exists()
    rows[2]["condition"] = "alt2"
    result = import_decisions([write_jsonl(path, rows)], out=tmp_path / "run")
    assert result.mapped == 3 and result.unmappable == {}


@pytest.mark.parametrize(("experiment", "bad"), [("E3", "intact"), ("E6", "o9")])
def test_e3_and_e6_conditions_are_the_names_their_analyses_read(
    tmp_path: Path, experiment: str, bad: str
) -> None:
    good = "v0" if experiment == "E3" else "o0"
    rows = [
        decision_row("1", experiment=experiment, condition=good),
        decision_row("2", experiment=experiment, condition=bad),
    ]
    result = import_decisions([write_jsonl(tmp_path / "d.jsonl", rows)], out=tmp_path / "run")
    ((reason, n),) = result.unmappable.items()
    assert n == 1 and reason.startswith(f"condition '{bad}' is not an {experiment} condition")


def test_an_imported_e4_is_oriented_by_the_corpus_language_not_the_row_order(
    tmp_path: Path,
) -> None:
    from choiceaudit.audit import analyse_runs
    from choiceaudit.instruments.meaning import MeaningAnalysis

    rows = []
    for language in ("en", "bn"):  # the other language's rows first in the file
        for i in range(8):
            right = language == "en" or i < 2  # English 8 of 8, Bengali 2 of 8
            probs = [0.7, 0.1, 0.1, 0.1] if right else [0.1, 0.7, 0.1, 0.1]
            rows.append(
                decision_row(
                    f"i{i}", experiment="e4", condition=language, language=language, probs=probs
                )
            )
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    import_decisions([path], out=tmp_path / "run", corpus_language="bn")
    (analysis,) = analyse_runs([tmp_path / "run"])
    assert isinstance(analysis, MeaningAnalysis)
    (e4,) = [a.analysis.e4 for a in analysis.arms if a.analysis and a.analysis.e4]
    assert e4.contrast_label == "en_minus_bn"  # the paper's sign: the gain in English
    assert e4.contrast is not None and e4.contrast.difference == pytest.approx(1.0 - 0.25)
