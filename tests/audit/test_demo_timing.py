"""The demo's per-phase record: a job's first progress report ends its model's open (with a
conversion this process ran split off), its report of every row ends its scoring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from choiceaudit.audit import PhaseTimer
from choiceaudit.audit._demo_timing import TIMING_FILE


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_phases_follow_the_run_loops_progress_reports(tmp_path: Path) -> None:
    clock = Clock()
    cpu = Clock()
    timer = PhaseTimer(clock, cpu)
    passed: list[tuple[str, int, int]] = []
    advance = timer.progress("signalling", lambda *a: passed.append(a))
    clock.now = 103.0  # the model loads
    advance("smollm2", 0, 10)
    clock.now = 110.0
    advance("smollm2", 4, 10)
    clock.now = 115.0
    cpu.now = 124.0  # two threads busy while scoring: more CPU than wall time
    advance("smollm2", 10, 10)
    clock.now = 115.5
    advance("uniform", 0, 10)
    clock.now = 116.0
    advance("uniform", 10, 10)
    clock.now = 120.0
    timer.lap("signalling: analysis and summary", "analyse")
    assert passed == [
        ("smollm2", 0, 10),
        ("smollm2", 4, 10),
        ("smollm2", 10, 10),
        ("uniform", 0, 10),
        ("uniform", 10, 10),
    ]
    got = [(p.name, p.kind, p.seconds, p.ended_at, p.rows) for p in timer.phases]
    assert got == [
        ("signalling · smollm2: open", "load", 3.0, 3.0, None),
        ("signalling · smollm2: scoring", "score", 12.0, 15.0, 10),
        ("signalling · uniform: open", "load", 0.5, 15.5, None),
        ("signalling · uniform: scoring", "score", 0.5, 16.0, 10),
        ("signalling: analysis and summary", "analyse", 4.0, 20.0, None),
    ]
    assert timer.totals() == {"load": 3.5, "score": 12.5, "analyse": 4.0}
    assert [p.cpu_seconds for p in timer.phases] == [0.0, 24.0, 0.0, 0.0, 0.0]
    assert timer.lines()[-1] == (
        "by kind: load 4 s (0 s CPU), score 12 s (24 s CPU), analyse 4 s (0 s CPU); "
        "total 20 s (24 s CPU)"
    )
    # a phase under a second is left out of the printed lines, not of the record
    assert not any("uniform" in line for line in timer.lines())
    record = json.loads(timer.write(tmp_path).read_text())
    assert (tmp_path / TIMING_FILE).exists()
    assert record["total_seconds"] == 20.0 and len(record["phases"]) == 5
    assert record["total_cpu_seconds"] == 24.0 and record["by_kind_cpu"]["score"] == 24.0
    assert record["phases"][1] == {
        "name": "signalling · smollm2: scoring",
        "kind": "score",
        "seconds": 12.0,
        "cpu_seconds": 24.0,
        "ended_at": 15.0,
        "rows": 10,
    }


def test_a_resumed_job_has_an_empty_scoring_phase() -> None:
    clock = Clock()
    timer = PhaseTimer(clock)
    advance = timer.progress("meaning")
    clock.now = 102.0
    advance("sparrow", 7, 7)  # everything was stored: the first report is already complete
    assert [(p.kind, p.seconds, p.rows) for p in timer.phases] == [
        ("load", 2.0, None),
        ("score", 0.0, 7),
    ]


def test_a_conversion_and_a_precision_gate_are_split_off_the_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A model opened in bfloat16 converts its GGUF, gates the run, then loads: the record says
    how long each took, and the CPU time is shared in the same proportion."""
    conversions: list[tuple[str, float]] = []
    gates: list[tuple[str, float]] = [("earlier", 9.0)]  # measured before the timer started
    monkeypatch.setattr(
        "choiceaudit.audit._demo_timing.conversions_this_process", lambda: tuple(conversions)
    )
    monkeypatch.setattr("choiceaudit.audit._demo_timing.gates_this_process", lambda: tuple(gates))
    clock, cpu = Clock(), Clock()
    timer = PhaseTimer(clock, cpu)
    advance = timer.progress("meaning")
    conversions.append(("model.gguf", 4.0))
    gates.append(("gemma3-270m", 10.0))
    clock.now, cpu.now = 116.0, 132.0  # 16 s: 4 converting, 10 gating, 2 loading
    advance("gemma3-270m", 0, 3)
    clock.now = 120.0
    advance("gemma3-270m", 3, 3)
    got = [(p.name, p.kind, p.seconds, p.ended_at, p.cpu_seconds) for p in timer.phases]
    assert got == [
        ("meaning · gemma3-270m: convert GGUF", "convert", 4.0, 4.0, 8.0),
        ("meaning · gemma3-270m: precision gate", "gate", 10.0, 14.0, 20.0),
        ("meaning · gemma3-270m: open", "load", 2.0, 16.0, 4.0),
        ("meaning · gemma3-270m: scoring", "score", 4.0, 20.0, 0.0),
    ]
    # a second model with no gate of its own is all load
    clock.now = 121.0
    advance("sparrow", 0, 1)
    last = timer.phases[-1]
    assert (last.name, last.kind, last.seconds) == ("meaning · sparrow: open", "load", 1.0)
