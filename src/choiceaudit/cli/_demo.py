"""``choiceaudit demo``: both instruments on the embedded default models, then the report.

The main command of the README: it parses its options, calls :func:`choiceaudit.audit.run_demo`,
prints each instrument's summary as soon as that instrument is analysed, and writes the report.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from choiceaudit.audit import DEMO_SIZES, MAX_FLIP_RATE, SIGNALLING_VARIANTS, DemoSize
from choiceaudit.cli._app import (
    AcceptFlipsOpt,
    MaxFlipRateOpt,
    PrecisionGateOpt,
    app,
    console,
    guarded,
    labelled_progress,
    out,
    panel,
    precision_settings,
    print_precision,
    progress_bar,
)

__all__ = ["DEMO_SIZES", "SIGNALLING_VARIANTS", "DemoSize", "demo"]


DemoWorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        help="Processes scoring each causal LM, each on its share of the cores (default: 2 on a "
        "machine with 2 or more cores; 0 or 1 scores in this process).",
    ),
]


def _phase_printer(norms: str) -> Callable[[str, Sequence[Any], Any], None]:
    """What the demo prints as each instrument's analysis is done: its summary table, and how
    long the first table took."""
    from choiceaudit.audit import AnalysisResult, PhaseTimer
    from choiceaudit.cli._meaning import print_meaning_summary
    from choiceaudit.cli._signalling import print_signalling_summary
    from choiceaudit.instruments.meaning import MeaningAnalysis
    from choiceaudit.instruments.signalling import SignallingAnalysis

    shown: list[str] = []

    def summary(name: str, results: Sequence[AnalysisResult], timer: PhaseTimer) -> None:
        if name.startswith("signalling"):
            first = name != "signalling"
            if first or not shown:
                console.print(f"signalling variant: {SIGNALLING_VARIANTS[norms]}", highlight=False)
            if first:
                console.print(
                    "signalling so far (the first model and the references; the table of "
                    "every model follows when the others are scored):",
                    highlight=False,
                )
            print_signalling_summary([r for r in results if isinstance(r, SignallingAnalysis)])
            if not shown:
                console.print(f"first table after {timer.elapsed():.0f} s", highlight=False)
            shown.append(name)
        else:
            print_meaning_summary(
                [rec for r in results if isinstance(r, MeaningAnalysis) for rec in r.summary()]
            )

    return summary


DemoDtypeOpt = Annotated[
    str,
    typer.Option(
        help="Precision of the causal LMs: float32, bfloat16 (faster on CPUs with bf16 "
        "instructions) or float16; a reduced one is gated first (see check precision). "
        "Use a new --out for it."
    ),
]


@app.command(rich_help_panel=panel("demo"))
@guarded
def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="Where runs and the report go.")] = Path(
        "runs/demo"
    ),
    size: Annotated[
        str,
        typer.Option(
            help="small (a smoke run without Gemma 3: 1.9 min on 2 cores), default (≈15 min, "
            "measured) or full."
        ),
    ] = "default",
    gemma: Annotated[
        bool | None,
        typer.Option(
            "--gemma/--no-gemma",
            help="Include gemma3-270m when installed (the slowest model); by default every "
            "size but small does.",
        ),
    ] = None,
    lm: Annotated[
        list[str] | None,
        typer.Option(
            "--lm", help="Causal LMs to audit instead of the installed defaults (repeatable)."
        ),
    ] = None,
    decision_model: Annotated[
        list[str] | None,
        typer.Option("--decision-model", help="Decision models instead of sparrow (repeatable)."),
    ] = None,
    norms: Annotated[
        str,
        typer.Option(
            "--norms",
            help="Signalling norms: lancaster (offline; the instrument on other norms) or things "
            "(the paper's THINGS/THINGSplus norms, with --data DIR).",
        ),
    ] = "lancaster",
    data: Annotated[
        Path | None,
        typer.Option("--data", help="Directory with the THINGS files (for --norms things)."),
    ] = None,
    workers: DemoWorkersOpt = None,
    dtype: DemoDtypeOpt = "float32",
    precision_gate: PrecisionGateOpt = True,
    max_flip_rate: MaxFlipRateOpt = MAX_FLIP_RATE,
    accept_flips: AcceptFlipsOpt = False,
) -> None:
    """Audit the built-in models with both instruments.

    Runs the signalling and the meaning instrument on the embedded default models (offline, on
    this machine's CPU), analyses them and writes the HTML report under OUT/report. The same
    command again resumes where it stopped.

    Example:

    \b
      choiceaudit demo
      choiceaudit demo --size small --out runs/demo
      choiceaudit demo --dtype bfloat16 --out runs/demo-bf16
    """
    from choiceaudit.audit import run_demo
    from choiceaudit.report import build_report

    with progress_bar() as bar:
        done = run_demo(
            out=out_dir,
            size=size,
            workers=workers,
            gemma=gemma,
            lm=lm,
            decision_model=decision_model,
            norms=norms,
            data=data,
            command=["choiceaudit", *sys.argv[1:]],
            progress=labelled_progress(bar),
            on_phase=_phase_printer(norms),
            dtype=dtype,
            precision_gate=precision_settings(precision_gate, max_flip_rate, accept_flips),
        )
    index = build_report(
        list(done.results),
        out=out_dir / "report",
        title=f"choiceaudit demo: embedded default models; signalling {done.variant}",
    )
    done.timer.lap("report: tables, figures, HTML", "report")
    print_precision([*done.signalling_runs, *done.meaning_runs])
    record = done.timer.write(out_dir)
    console.print("time by phase (every phase of a second or more):", highlight=False)
    for line in done.timer.lines():
        console.print(f"  {line}", highlight=False)
    console.print(f"finished in {done.timer.elapsed() / 60:.1f} min (per-phase record: {record})")
    out.print(f"report: {index}")
