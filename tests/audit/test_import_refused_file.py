"""Refused rows are stored once, in the run's ``refused.jsonl``: the configuration (copied into
every part's metadata) and the manifest count them by reason (at most 50 reasons by name) and
digest the file, list the first 20, and so stay the same size however many rows are refused."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq

from choiceaudit.audit import import_decisions
from choiceaudit.store import REFUSED, RunStore

MAPPING = [
    "item_id=id",
    "state=q",
    "options=o1,o2,o3,o4",
    "probs=pA,pB,pC,pD",
    "gold_position=gold",
]


def released(path: Path, n: int) -> Path:
    """``n`` rows; every second one's vector sums to a value of its own (a reason per row)."""
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "q", "o1", "o2", "o3", "o4", "pA", "pB", "pC", "pD", "gold"])
        for i in range(n):
            top = 0.7 if i % 2 == 0 else round(0.8 + i / (10 * n), 6)
            writer.writerow(
                [i, f"item {i}?", "red", "blue", "green", "amber", top, 0.1, 0.1, 0.1, i % 4]
            )
    return path


def imported(tmp_path: Path, n: int) -> Path:
    run = tmp_path / f"run-{n}"
    import_decisions(
        [released(tmp_path / f"r{n}.csv", n)],
        out=run,
        instrument="scoring",
        mapping=MAPPING,
        constants=["experiment=e1", "condition=plain"],
        language="en",
        model="released",
    )
    return run


def test_every_refused_row_is_in_the_file_and_the_config_only_counts_them(tmp_path: Path) -> None:
    run = imported(tmp_path, 400)
    lines = (run / REFUSED).read_text(encoding="utf-8").splitlines()
    refused = [json.loads(line) for line in lines]
    assert len(refused) == 200 and [r["row"] for r in refused] == list(range(3, 402, 2))
    assert all("sums to" in r["reason"] for r in refused)
    config = RunStore(run).manifest().config
    record = config["refused_rows"]
    assert record["count"] == 200 and record["file"] == REFUSED
    assert record["sha256"] == hashlib.sha256((run / REFUSED).read_bytes()).hexdigest()
    assert config["unmappable_listed"] == refused[:20]
    counts = config["unmappable_rows"]
    assert len(counts) == 51 and sum(counts.values()) == 200
    assert counts["(other reasons)"] == 150


def test_parts_and_manifest_do_not_grow_with_the_refused_rows(tmp_path: Path) -> None:
    sizes = []
    for n in (200, 2000):
        run = imported(tmp_path, n)
        (part,) = RunStore(run).part_paths()[:1]
        meta = pq.read_schema(part).metadata
        sizes.append(
            (sum(len(k) + len(v) for k, v in meta.items()), (run / "manifest.json").stat().st_size)
        )
    (meta_small, manifest_small), (meta_large, manifest_large) = sizes
    # ten times the refused rows: the same size, but for the digits of the counts
    assert meta_large - meta_small < 200 and manifest_large - manifest_small < 400
