"""Bad input through the command line: each case ends in exactly one ``error:`` line naming the
file (or option) and no traceback; ``meta.gold`` is validated where it is read, in a query file
and in a run read back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from choiceaudit.cli import app
from choiceaudit.errors import StoreError
from choiceaudit.store import RunStore, open_run, read_queries

runner = CliRunner()
SHARED = Path("/work/shared/data")


def _line(gold: str) -> str:
    head = '{"state": "s", "options": ["a", "b"], "meta": {"item_id": "1", "gold": '
    return head + gold + "}}"


def _one_error(args: list[str]) -> str:
    result = runner.invoke(app, args)
    text = result.output
    assert result.exit_code == 1, text
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), repr(result.exception)
    assert "Traceback" not in text
    assert sum(line.startswith("error:") for line in text.splitlines()) == 1, text
    return " ".join(text.split())


@pytest.mark.parametrize(
    ("gold", "why"),
    [
        ("NaN", "got nan"),
        ("Infinity", "got inf"),
        ("1e999", "got inf"),
        ("7", "is 7, outside the 2 options"),
        ("-1", "is -1, outside the 2 options"),
        ('"0"', "got '0'"),
        ("0.5", "got 0.5"),
        ("true", "got True"),
    ],
)
def test_score_refuses_every_bad_gold_naming_line_and_field(
    tmp_path: Path, gold: str, why: str
) -> None:
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(_line("0") + "\n" + _line(gold) + "\n", encoding="utf-8")
    text = _one_error(["score", str(qfile), "-m", "fake", "--out", str(tmp_path / "run")])
    assert f"{qfile}:2: meta.gold:" in text
    assert why in text
    assert not (tmp_path / "run").exists()


def test_a_valid_gold_and_a_null_gold_are_read(tmp_path: Path) -> None:
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(_line("1") + "\n" + _line("null").replace('"1"', '"2"') + "\n")
    golds = [q.meta["gold"] for q in read_queries(qfile).queries]
    assert golds == [1, None]


def _scored_run(tmp_path: Path) -> Path:
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(_line("0") + "\n", encoding="utf-8")
    result = runner.invoke(app, ["score", str(qfile), "-m", "fake", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    return tmp_path / "run"


def test_a_run_read_back_with_a_bad_gold_is_refused_by_report_and_gate(tmp_path: Path) -> None:
    run = _scored_run(tmp_path)
    part = RunStore(run).part_paths()[0]
    table = pq.read_table(part)
    meta = json.loads(table.column("meta")[0].as_py())
    meta["gold"] = float("nan")
    column = pa.array([json.dumps(meta)], type=pa.string())
    table = table.set_column(table.schema.get_field_index("meta"), "meta", column)
    pq.write_table(table, part)
    with pytest.raises(StoreError, match=r"row 0 .*Query\.meta\.gold"):
        open_run(run)
    text = _one_error(["report", str(run), "--out", str(tmp_path / "rep")])
    assert "row 0" in text and "meta.gold" in text
    text = _one_error(
        [
            "gate",
            str(run),
            "--fit",
            "item_id=1",
            "--out",
            str(tmp_path / "t.json"),
            "--target-accuracy",
            "0.9",
        ]
    )
    assert "meta.gold" in text


def _hostile_cases(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    """Every input of the hostile review: (arguments, text the error must contain)."""
    t = tmp_path
    qfile = t / "q.jsonl"
    qfile.write_text(_line("0") + "\n", encoding="utf-8")
    not_utf8 = t / "bagdhara.jsonl"
    not_utf8.write_bytes(b'\xff\xfe{"id": 1}\n')
    frozen = t / "frozen"
    frozen.mkdir()
    (frozen / "instrument.json").write_bytes(b"\xff\xfe{}")
    wrong = t / "wrong"
    wrong.mkdir()
    (wrong / "manifest.json").write_text("[1, 2, 3]", encoding="utf-8")
    a_file = t / "a_file"
    a_file.write_text("x", encoding="utf-8")
    empty = t / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    study = t / "study"
    study.mkdir()
    (study / "study.json").write_text(
        json.dumps({"study": {}, "items_hash": "x", "instrument": "meaning"}), encoding="utf-8"
    )
    (study / "responses.sqlite").write_bytes(b"this is not a database" * 100)
    return {
        "non-UTF-8 Bagdhara": (
            [
                "run",
                "meaning",
                "-m",
                "fake",
                "--out",
                str(t / "m1"),
                "--corpus",
                "bagdhara",
                "--data",
                str(not_utf8),
            ],
            f"{not_utf8}: is not UTF-8",
        ),
        "missing --data": (
            [
                "build",
                "signalling",
                "--out",
                str(t / "s1"),
                "--norms",
                "things",
                "--data",
                str(t / "nope"),
            ],
            f"{t / 'nope'}: no such directory",
        ),
        "non-UTF-8 instrument.json": (
            [
                "run",
                "signalling",
                "--out",
                str(t / "s2"),
                "--items",
                str(frozen),
                "--chooser",
                "cosine",
            ],
            f"{frozen / 'instrument.json'}: is not UTF-8",
        ),
        "score DIR": (
            ["score", str(t), "-m", "fake", "--out", str(t / "r0")],
            "is a directory",
        ),
        "--chunk-size 0": (
            ["score", str(qfile), "-m", "fake", "--out", str(t / "r1"), "--chunk-size", "0"],
            "chunk_size: must be at least 1",
        ),
        "--chunk-size -5": (
            ["score", str(qfile), "-m", "fake", "--out", str(t / "r2"), "--chunk-size", "-5"],
            "got -5",
        ),
        "run meaning --n-items -3": (
            ["run", "meaning", "-m", "fake", "--out", str(t / "m2"), "--n-items", "-3"],
            "n_items: must be 0",
        ),
        "build --n-items 0": (
            ["build", "signalling", "--out", str(t / "s3"), "--n-items", "0"],
            "n_items: must be at least 1",
        ),
        "manifest of the wrong type": (
            ["report", str(wrong), "--out", str(t / "rep")],
            "a manifest is a JSON object, this file holds a list",
        ),
        "report --out a file": (
            ["report", str(wrong), "--out", str(a_file)],
            "",  # the manifest is refused first; the next case reaches --out
        ),
        "empty query file": (
            ["score", str(empty), "-m", "fake", "--out", str(t / "r3")],
            "no queries to score",
        ),
    }


def test_no_listed_input_ends_in_a_traceback(tmp_path: Path) -> None:
    for name, (args, expected) in _hostile_cases(tmp_path).items():
        text = _one_error(args)
        assert expected in text, (name, text)


def test_report_out_naming_a_file_is_one_error(tmp_path: Path) -> None:
    run = _scored_run(tmp_path)
    a_file = tmp_path / "a_file"
    a_file.write_text("x", encoding="utf-8")
    text = _one_error(["report", str(run), "--out", str(a_file)])
    assert f"{a_file}: is a file" in text


@pytest.mark.slow
def test_build_more_items_than_candidates_is_one_error(tmp_path: Path) -> None:
    text = _one_error(["build", "signalling", "--out", str(tmp_path / "s"), "--n-items", "1000000"])
    assert "n_items: tile" in text and "ask for fewer items" in text


@pytest.mark.skipif(not (SHARED / "things").is_dir(), reason="needs the shared THINGS files")
def test_non_utf8_things_file_is_one_error(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(SHARED, data, ignore=shutil.ignore_patterns("bagdhara"))
    bad = data / "things" / "things_concepts.tsv"
    bad.write_bytes(b"\xff\xfe\x00bad")
    text = _one_error(
        [
            "build",
            "signalling",
            "--out",
            str(tmp_path / "s"),
            "--norms",
            "things",
            "--data",
            str(data),
        ]
    )
    assert f"{bad}: is not UTF-8" in text


def test_a_corrupt_responses_file_is_an_input_error_naming_it(tmp_path: Path) -> None:
    from choiceaudit.errors import InputError
    from choiceaudit.human import ResponsesDB

    path = tmp_path / "responses.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(InputError, match=r"responses\.sqlite: not a readable SQLite"):
        ResponsesDB(path)


def test_a_new_responses_file_is_owner_only(tmp_path: Path) -> None:
    from choiceaudit.human import ResponsesDB

    db = ResponsesDB(tmp_path / "responses.sqlite")
    db.close()
    assert (tmp_path / "responses.sqlite").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("suffix", ["\n", "\r\n", " ", "\t", "\x00", "\u00a0", "\u200b", "\u2028"])
def test_a_panel_id_with_an_invisible_tail_is_not_a_panel_id(suffix: str) -> None:
    from choiceaudit.human import PANEL_ID_PATTERN

    assert PANEL_ID_PATTERN.fullmatch("X") is not None
    assert PANEL_ID_PATTERN.fullmatch("X" + suffix) is None
    assert PANEL_ID_PATTERN.fullmatch(suffix + "X") is None


def test_out_naming_a_file_is_one_error_in_every_command_that_writes(tmp_path: Path) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("x", encoding="utf-8")
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"state": "s", "options": ["a", "b"]}\n', encoding="utf-8")
    decisions = tmp_path / "d.jsonl"
    row = {
        "item_id": "1",
        "experiment": "e1",
        "condition": "d-rand",
        "language": "en",
        "options": ["w", "x", "y", "z"],
        "probs": [0.7, 0.1, 0.1, 0.1],
        "gold_position": 0,
    }
    decisions.write_text(json.dumps(row) + "\n", encoding="utf-8")
    commands = {
        "score": ["score", str(queries), "-m", "fake"],
        "import decisions": ["import", "decisions", str(decisions)],
        "run meaning": ["run", "meaning", "-m", "fake", "--n-items", "4"],
        "build signalling": ["build", "signalling"],
    }
    for name, args in commands.items():
        for out in (a_file, a_file / "below"):
            text = _one_error([*args, "--out", str(out)])
            assert f"{a_file} is a file" in text or f"{a_file}: is a file" in text, (name, text)
    assert a_file.read_text(encoding="utf-8") == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file", "d.jsonl", "q.jsonl"]


def test_a_warning_is_one_line_that_says_what_it_warns_of(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A library warning reaches the terminal as ``warning: …``, without the library's source
    file, line and code, and the caller's own warning handling is left as it was."""
    import warnings

    from choiceaudit.cli import guarded

    @guarded
    def command() -> int:
        warnings.warn("bfloat16 scoring: the paper rules it out", UserWarning, stacklevel=1)
        return 7

    before = warnings.showwarning
    assert command() == 7
    err = capsys.readouterr().err
    assert "warning: bfloat16 scoring: the paper rules it out" in err
    assert "UserWarning" not in err and ".py:" not in err
    assert warnings.showwarning is before
