"""``choiceaudit demo``: both instruments on the embedded default models, then the report.

The README's main command. Sizes are chosen so the whole audit finishes in about 26 minutes on
two CPU cores (measured with five models: 25.7 min); ``--size small`` is a smoke run and ``--size full`` the instruments'
own defaults. Every run directory resumes, so an interrupted demo continues where it stopped.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from choiceaudit.cli import _fail, app, console, guarded, out, progress_bar
from choiceaudit.scorers import BUILTIN_MODELS, capabilities_of

__all__ = ["DEMO_SIZES", "SIGNALLING_VARIANTS", "DemoSize", "demo"]

#: What the demo's signalling run is, by norms: which variant of the instrument ran.
SIGNALLING_VARIANTS = {
    "lancaster": "on the lancaster norms: the instrument on other norms (Lancaster sensorimotor "
    "tiles, offline), not the paper's THINGS item set",
    "things": "on the paper's THINGS/THINGSplus norms (§I-B, §I-C)",
}


@dataclass(frozen=True)
class DemoSize:
    signalling_items: int
    meaning_items: int
    meaning_order_items: int


DEMO_SIZES = {
    "small": DemoSize(signalling_items=16, meaning_items=20, meaning_order_items=4),
    # Measured on 2 cores (see README): the whole default demo, five models, 25.7 min (E7 now
    # has slot-bound and travelling keys, SmolLM2 reads its chat template).
    "default": DemoSize(signalling_items=64, meaning_items=80, meaning_order_items=8),
    "full": DemoSize(signalling_items=1000, meaning_items=0, meaning_order_items=50),
}


def _installed(name: str) -> bool:
    return not BUILTIN_MODELS[name].missing()


def _advance_factory(bar: Any, prefix: str) -> Any:
    tasks: dict[str, Any] = {}

    def advance(name: str, done: int, total: int) -> None:
        if name not in tasks:
            tasks[name] = bar.add_task(f"{prefix} · {name}", total=total)
        bar.update(tasks[name], completed=done, total=total)

    return advance


@app.command()
@guarded
def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="Where runs and the report go.")] = Path(
        "runs/demo"
    ),
    size: Annotated[
        str,
        typer.Option(help="small (a smoke run), default (≈26 min on 2 cores, measured) or full."),
    ] = "default",
    gemma: Annotated[
        bool, typer.Option(help="Include gemma3-270m when installed (the slowest model).")
    ] = True,
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
) -> None:
    """Audit the embedded default models with both instruments and write the report."""
    from choiceaudit.audit import PhaseTimer, analyse_runs, run_meaning, run_signalling
    from choiceaudit.cli._meaning import print_meaning_summary
    from choiceaudit.cli._signalling import print_signalling_summary
    from choiceaudit.instruments.meaning import MeaningAnalysis
    from choiceaudit.instruments.signalling import SignallingAnalysis
    from choiceaudit.report import build_report

    if size not in DEMO_SIZES:
        raise _fail(f"--size must be one of {', '.join(DEMO_SIZES)}")
    if norms not in SIGNALLING_VARIANTS:
        raise _fail(f"--norms must be one of {', '.join(SIGNALLING_VARIANTS)}")
    if norms == "things" and data is None:
        raise _fail("--norms things needs --data DIR (see `choiceaudit data fetch things`)")
    variant = SIGNALLING_VARIANTS[norms]
    plan = DEMO_SIZES[size]
    if lm is None:
        lms = ["smollm2"] if _installed("smollm2") else []
        if gemma and _installed("gemma3-270m"):
            lms.append("gemma3-270m")
    else:
        lms = list(lm)
    if decision_model is None:
        decision_models = ["sparrow"] if _installed("sparrow") else []
    else:
        decision_models = list(decision_model)
    choosers = ["uniform", "salience", "bayes"] + (["cosine"] if _installed("minilm") else [])
    timer = PhaseTimer()
    command = ["choiceaudit", *sys.argv[1:]]
    results: list[Any] = []
    with progress_bar() as bar:
        signalling = run_signalling(
            lms,
            choosers,
            out_dir / ("signalling" if norms == "lancaster" else f"signalling-{norms}"),
            norms=norms,
            data=data,
            n_items=plan.signalling_items,
            # the demo keeps format L to the bare label form so its timing holds; `run
            # signalling` scores both label forms by default (§IV-H4)
            label_forms=("bare",),
            progress=timer.progress("signalling", _advance_factory(bar, "signalling")),
        )
        # each phase's summary as soon as it is done: the first table comes before meaning runs
        results.extend(analyse_runs(signalling))
        console.print(f"signalling variant: {variant}", highlight=False)
        print_signalling_summary([r for r in results if isinstance(r, SignallingAnalysis)])
        timer.lap("signalling: analysis and summary", "analyse")
        console.print(f"first table after {timer.elapsed():.0f} s", highlight=False)
        # lm-choice wraps a causal LM loaded in process: the keyed-menu arm of each LM
        marker = [f"lm-choice:{m}" for m in lms if capabilities_of(m).engine]
        meaning_models = list(dict.fromkeys(decision_models + marker + lms))
        meaning = run_meaning(
            meaning_models,
            out_dir / "meaning",
            corpus="idioms-en",
            n_items=plan.meaning_items or None,
            n_order_items=plan.meaning_order_items,
            # both bindings, so the demo shows the label component beside the paper's E7
            e7_keys=("slot", "travelling"),
            progress=timer.progress("meaning", _advance_factory(bar, "meaning")),
            command=command,
        )
        meaning_results = analyse_runs(meaning)
        results.extend(meaning_results)
        print_meaning_summary(
            [rec for r in meaning_results if isinstance(r, MeaningAnalysis) for rec in r.summary()]
        )
        timer.lap("meaning: analysis and summary", "analyse")
    index = build_report(
        results,
        out_dir / "report",
        title=f"choiceaudit demo: embedded default models; signalling {variant}",
    )
    timer.lap("report: tables, figures, HTML", "report")
    record = timer.write(out_dir)
    console.print("time by phase (every phase of a second or more):", highlight=False)
    for line in timer.lines():
        console.print(f"  {line}", highlight=False)
    console.print(f"finished in {timer.elapsed() / 60:.1f} min (per-phase record: {record})")
    out.print(f"report: {index}")
