"""Imports stream: the files are checked in a first reading that keeps a few dozen bytes per
row, and written in a second that hands the scoring loop one chunk at a time, so parts are
written as the file is read and a killed import resumes. Every file is built in the test."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from choiceaudit.audit import _import_write, import_decisions, import_lm_eval
from choiceaudit.errors import InputError
from choiceaudit.store import RunStore, open_run

HARNESS = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "lm_eval"
MAPPING = [
    "item_id=id",
    "state=q",
    "options=o1,o2,o3,o4",
    "probs=pA,pB,pC,pD",
    "gold_position=gold",
]


def released(path: Path, n: int, *, repeat_every: int = 0) -> Path:
    """A released scoring file of ``n`` rows; every third row's vector sums to 1.2 (refused),
    and with ``repeat_every`` every so many rows repeat an earlier one exactly."""
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "q", "o1", "o2", "o3", "o4", "pA", "pB", "pC", "pD", "gold"])
        for i in range(n):
            j = i - 1 if repeat_every and i % repeat_every == repeat_every - 1 else i
            top = 0.9 if j % 3 == 2 else 0.7
            writer.writerow(
                [j, f"item {j}?", "red", "blue", "green", "amber", top, 0.1, 0.1, 0.1, j % 4]
            )
    return path


def do_import(path: Path, out: Path) -> Any:
    return import_decisions(
        [path],
        out=out,
        instrument="scoring",
        mapping=MAPPING,
        model="released",
        language="en",
        constants=["experiment=e1", "condition=plain"],
    )


def rows_of(run: Path) -> list[dict[str, Any]]:
    table = RunStore(run).read_table()
    rows: list[dict[str, Any]] = table.select(["row", "query_id", "probs", "choice"]).to_pylist()
    return rows


def test_a_killed_import_resumes_to_the_rows_of_an_uninterrupted_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = released(tmp_path / "released.csv", 5000, repeat_every=7)
    whole = do_import(source, tmp_path / "whole")
    assert whole.mapped > 2000 and whole.identical_duplicates > 0
    write_part = RunStore.write_part
    written: list[int] = []

    def dies_on_the_third(self: RunStore, rows: Any, **kw: Any) -> Any:
        if len(written) == 2:
            raise KeyboardInterrupt
        written.append(len(rows))
        return write_part(self, rows, **kw)

    monkeypatch.setattr(RunStore, "write_part", dies_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        do_import(source, tmp_path / "killed")
    monkeypatch.setattr(RunStore, "write_part", write_part)
    assert written == [1000, 1000]  # parts were written as the file was read
    assert len(RunStore(tmp_path / "killed").done_ids()) == 2000
    again = do_import(source, tmp_path / "killed")
    assert (again.summary.already_done, again.summary.scored) == (2000, whole.mapped - 2000)
    assert rows_of(tmp_path / "killed") == rows_of(tmp_path / "whole")
    assert (tmp_path / "killed" / "refused.jsonl").read_bytes() == (
        tmp_path / "whole" / "refused.jsonl"
    ).read_bytes()
    manifest = open_run(tmp_path / "killed").manifest
    assert manifest.status == "complete" and manifest.rows == whole.mapped
    assert manifest.config == open_run(tmp_path / "whole").manifest.config


def test_the_replay_holds_at_most_one_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = released(tmp_path / "released.csv", 4500)
    score = _import_write._Replay.score
    held: list[int] = []

    def counting(self: Any, queries: Any) -> Any:
        held.append(len(self.waiting))
        return score(self, queries)

    monkeypatch.setattr(_import_write._Replay, "score", counting)
    result = do_import(source, tmp_path / "run")
    assert result.mapped == 3000 and len(held) == 3
    assert max(held) <= 1000


def test_a_file_changed_between_the_two_readings_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = released(tmp_path / "released.csv", 300)
    write_import = _import_write.write_import

    def edits_first(*args: Any, **kw: Any) -> Any:
        text = source.read_text("utf-8").replace("item 150?", "item 150 (edited)?")
        source.write_text(text, "utf-8")
        return write_import(*args, **kw)

    monkeypatch.setattr(_import_write, "write_import", edits_first)
    with pytest.raises(InputError, match="changed while they were imported") as caught:
        do_import(source, tmp_path / "run")
    assert caught.value.row == 152  # the header is line 1; row 150 is line 152


def test_a_killed_lm_eval_import_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (samples,) = sorted(HARNESS.glob("samples_*.jsonl"))
    template = json.loads(samples.read_text("utf-8").splitlines()[0])
    folder = tmp_path / "in"
    folder.mkdir()
    with (folder / samples.name).open("w", encoding="utf-8") as fh:
        for i in range(2500):
            sample = json.loads(json.dumps(template))
            sample["doc_id"] = i
            sample["doc"]["question"] = f"{template['doc'].get('question', '')} {i}"
            fh.write(json.dumps(sample) + "\n")
    whole = import_lm_eval([folder], out=tmp_path / "whole")
    write_part = RunStore.write_part

    def dies_on_the_second(self: RunStore, rows: Any, **kw: Any) -> Any:
        if self.part_paths():
            raise KeyboardInterrupt
        return write_part(self, rows, **kw)

    monkeypatch.setattr(RunStore, "write_part", dies_on_the_second)
    with pytest.raises(KeyboardInterrupt):
        import_lm_eval([folder], out=tmp_path / "killed")
    monkeypatch.setattr(RunStore, "write_part", write_part)
    again = import_lm_eval([folder], out=tmp_path / "killed")
    assert (again.summary.already_done, again.mapped) == (1000, whole.mapped)
    assert rows_of(tmp_path / "killed") == rows_of(tmp_path / "whole")


def test_repeats_are_found_as_a_direct_comparison_finds_them() -> None:
    rng = random.Random(5)
    for _ in range(200):
        n = rng.randrange(0, 40)
        keys = np.array([[rng.randrange(3), rng.randrange(3)] for _ in range(n)], dtype=np.uint64)
        keys = keys.reshape(n, 2)
        positions = np.array(sorted(rng.sample(range(100), n)), dtype=np.int64)
        expected = []
        for b in range(n):
            first = next(a for a in range(n) if (keys[a] == keys[b]).all())
            if first != b:
                expected.append((int(positions[b]), int(positions[first])))
        assert sorted(_import_write._repeats(keys, positions)) == sorted(expected)
