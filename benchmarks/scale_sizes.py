"""The toolkit's own costs against run size: time and peak memory of each step a large audit
takes, at several sizes, with the log-log slope between the two largest.

Every step is the command a user runs, in a child process timed and measured there
(``/usr/bin/time``: wall seconds and peak resident memory), on inputs built here:

* ``score``   — ``choiceaudit score`` with ``--model fake`` (a model-free scorer, so only the
  toolkit's costs are measured) on N queries of four options;
* ``resume``  — the same command again, with nothing left to do;
* ``report``  — ``choiceaudit report`` on that run;
* ``import decisions`` — a released per-item CSV of N rows, every second row refused (a
  probability vector that does not sum to 1), into a scoring run;
* ``import lm-eval``   — an lm-evaluation-harness samples file of N multiple-choice samples;
* ``dry-run`` — ``choiceaudit run meaning --dry-run`` on a synthetic corpus of N/10 idioms
  whose glosses share common words and tags (the plan of the design's full item set).

Run: ``python benchmarks/bench_scale.py --sizes 10000 100000 1000000`` (``make bench-scale``
runs the worker benchmark; the sizes are slow at 1M: tens of minutes on two cores); add
``--steps 'import decisions' 'import lm-eval'`` to time only some steps.
"""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HARNESS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "harness" / "lm_eval"
KEYS = "ABCD"


def write_queries(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            record = {
                "state": f"item {i}: which one?",
                "options": ["red", "blue", "green", "amber"],
                "meta": {"item_id": str(i), "gold": i % 4},
            }
            fh.write(json.dumps(record) + "\n")


def write_decisions(path: Path, n: int) -> list[str]:
    """A released scoring file; every second row's vector sums to 1.2 (refused)."""
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "q", "o1", "o2", "o3", "o4", "pA", "pB", "pC", "pD", "gold"])
        for i in range(n):
            top = 0.7 if i % 2 == 0 else 0.9
            writer.writerow(
                [i, f"item {i}?", "red", "blue", "green", "amber", top, 0.1, 0.1, 0.1, i % 4]
            )
    return [
        "item_id=id",
        "state=q",
        "options=o1,o2,o3,o4",
        "probs=pA,pB,pC,pD",
        "gold_position=gold",
    ]


def write_lm_eval(folder: Path, n: int) -> None:
    """``n`` samples made from the fixture's first sample, each its own document."""
    folder.mkdir(parents=True, exist_ok=True)
    (sample_file,) = sorted(HARNESS.glob("samples_*.jsonl"))
    (results,) = sorted(HARNESS.glob("results_*.json"))
    template = json.loads(sample_file.read_text("utf-8").splitlines()[0])
    (folder / results.name).write_text(results.read_text("utf-8"), encoding="utf-8")
    with (folder / sample_file.name).open("w", encoding="utf-8") as fh:
        for i in range(n):
            sample = dict(template)
            sample["doc_id"] = i
            sample["doc"] = {
                **template["doc"],
                "question": f"{template['doc'].get('question', '')} {i}",
            }
            sample["doc_hash"] = f"{i:064x}"
            fh.write(json.dumps(sample) + "\n")


def write_corpus(path: Path, n: int) -> None:
    """Bagdhara-shaped records whose glosses share common words and tags."""
    common = ["the", "of", "a", "to", "in", "and", "with", "for"]
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            words = " ".join(common[(i + k) % len(common)] for k in range(4))
            record = {
                "id": i + 1,
                "idiom": f"বাগধারা{i} এক দুই তিন",
                "alternative_idioms": None,
                "literal_meaning": f"আক্ষরিক{i} অর্থ (literal {words} thing {i})",
                "figurative_meaning_bn": f"রূপক{i} অর্থ {words}",
                "figurative_meaning_en": f"{words} figurative gloss {i}",
                "similar_in_english": None,
                "example_sentences_in_bangla": None,
                "example_sentences_in_english": None,
                "usage_domain": None,
                "tags": [f"t{i % 7}", "common"],
                "frequency": "common",
                "sentiment": None,
                "historical_significance": 0,
                "religious_significance": 0,
                "cultural_significance": 0,
                "scape": None,
                "note": None,
                "history": None,
            }
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")


def measure(args: Sequence[str], timeout: float) -> dict[str, Any]:
    """Wall seconds and peak resident MiB of ``choiceaudit args`` in a child process."""
    command = ["/usr/bin/time", "-f", "%e %M", sys.executable, "-m", "choiceaudit.cli", *args]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"seconds": None, "peak_mib": None, "error": f"over {timeout:.0f} s"}
    last = done.stderr.strip().splitlines()[-1].split()
    out: dict[str, Any] = {"seconds": float(last[0]), "peak_mib": round(int(last[1]) / 1024, 1)}
    if done.returncode != 0:
        out["error"] = (done.stderr.strip().splitlines() or ["?"])[-2][:200]
    return out


def steps(root: Path, n: int) -> dict[str, list[str]]:
    write_queries(root / "q.jsonl", n)
    mapping = write_decisions(root / "released.csv", n)
    write_lm_eval(root / "lm_eval", n)
    write_corpus(root / "corpus.jsonl", max(n // 10, 100))
    return {
        "score": ["score", str(root / "q.jsonl"), "-m", "fake", "--out", str(root / "run")],
        "resume": ["score", str(root / "q.jsonl"), "-m", "fake", "--out", str(root / "run")],
        "report": ["report", str(root / "run"), "--out", str(root / "report")],
        "import decisions": [
            "import",
            "decisions",
            str(root / "released.csv"),
            "--instrument",
            "scoring",
            "--out",
            str(root / "imported"),
            "--model-name",
            "released",
            "--language",
            "en",
            "--set",
            "experiment=e1",
            "--set",
            "condition=plain",
            *[a for m in mapping for a in ("--map", m)],
        ],
        "import lm-eval": [
            "import",
            "lm-eval",
            str(root / "lm_eval"),
            "--out",
            str(root / "lm-eval-run"),
        ],
        "dry-run": [
            "run",
            "meaning",
            "-m",
            "fake",
            "--corpus",
            f"bagdhara:{root / 'corpus.jsonl'}",
            "--n-items",
            "0",
            "--dry-run",
            "--out",
            str(root / "meaning"),
        ],
    }


def slope(rows: Sequence[dict[str, Any]], step: str) -> float | None:
    points = sorted((r["n"], r["seconds"]) for r in rows if r["step"] == step and r.get("seconds"))
    if len(points) < 2:
        return None
    (n1, t1), (n2, t2) = points[-2], points[-1]
    return math.log(t2 / t1) / math.log(n2 / n1) if t1 > 0 and t2 > 0 else None


def run_sizes(
    sizes: Sequence[int], timeout: float, only: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Each step (``only``: those named; ``resume`` and ``report`` need ``score`` before them)
    at each size, one after another."""
    rows: list[dict[str, Any]] = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            for step, args in steps(Path(tmp), n).items():
                if only is not None and step not in only:
                    continue
                rows.append({"step": step, "n": n, **measure(args, timeout)})
                print(json.dumps(rows[-1]), flush=True)
    return rows


def markdown(rows: Sequence[dict[str, Any]], sizes: Sequence[int]) -> str:
    head = "| step | " + " | ".join(f"{n:,} rows: s / MiB" for n in sizes) + " | slope |"
    lines = [head, "|---|" + "---:|" * (len(sizes) + 1)]
    for step in dict.fromkeys(r["step"] for r in rows):
        cells = []
        for n in sizes:
            r = next((x for x in rows if x["step"] == step and x["n"] == n), None)
            if r is None or r.get("seconds") is None:
                cells.append(r.get("error", "—") if r else "—")
            else:
                cells.append(
                    f"{r['seconds']:.1f} / {r['peak_mib']:.0f}"
                    + (" (error)" if "error" in r else "")
                )
        s = slope(rows, step)
        lines.append(
            f"| {step} | " + " | ".join(cells) + f" | {'—' if s is None else f'{s:.2f}'} |"
        )
    return "\n".join(lines)
