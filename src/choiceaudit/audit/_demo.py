"""The demo as a library call: both instruments on the embedded default models, analysed.

``choiceaudit demo`` parses its options, calls :func:`run_demo` and prints; a Python user gets
the same runs, analyses and timing record from the same call. Sizes are chosen so the whole
audit finishes in about 14 minutes on two quiet CPU cores (measured with five models on this
project's 2-core machine: 13.6 min, its causal LMs scored in two worker processes);
``small`` is a smoke run (SmolLM2 without Gemma 3 unless asked) and ``full`` the instruments'
own defaults. Every run directory resumes, so an interrupted demo continues where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from choiceaudit.audit._analysis import AnalysisResult, analyse_runs
from choiceaudit.audit._backend import ProcessSettings, available_cores
from choiceaudit.audit._demo_timing import PhaseTimer
from choiceaudit.audit._meaning import run_meaning
from choiceaudit.audit._precision_gate import DEFAULT_PRECISION_GATE, PrecisionGate
from choiceaudit.audit._processes import start_worker_server
from choiceaudit.audit._runs import JobProgress
from choiceaudit.audit._signalling import run_signalling
from choiceaudit.errors import InputError
from choiceaudit.scorers import BUILTIN_MODELS, capabilities_of

__all__ = [
    "DEMO_DTYPES",
    "DEMO_SIZES",
    "SIGNALLING_VARIANTS",
    "DemoResult",
    "DemoSize",
    "demo_models",
    "demo_workers",
    "run_demo",
]

#: What the demo's signalling run is, by norms: which variant of the instrument ran.
SIGNALLING_VARIANTS = {
    "lancaster": "on the lancaster norms: the instrument on other norms (Lancaster sensorimotor "
    "tiles, offline), not the paper's THINGS item set",
    "things": "on the paper's THINGS/THINGSplus norms (§I-B, §I-C)",
}


#: the precisions the demo scores its causal LMs in (float32 unless asked)
DEMO_DTYPES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class DemoSize:
    """How many items each instrument of the demo plans, and whether Gemma 3 (the slowest
    model, about 60% of the default demo's scoring) is audited unless the caller says."""

    signalling_items: int
    meaning_items: int
    meaning_order_items: int
    gemma: bool = True


DEMO_SIZES = {
    # a smoke run under two minutes on 2 cores (1.8 min measured, SmolLM2's conversion
    # included): every instrument, analysis and figure, on SmolLM2 alone unless --gemma
    "small": DemoSize(signalling_items=16, meaning_items=12, meaning_order_items=2, gemma=False),
    # Measured on 2 quiet cores (docs/benchmarks.md): the whole default demo, five models, 13.6 min.
    "default": DemoSize(signalling_items=64, meaning_items=80, meaning_order_items=8),
    "full": DemoSize(signalling_items=1000, meaning_items=0, meaning_order_items=50),
}


@dataclass(frozen=True)
class DemoResult:
    """What :func:`run_demo` did: every analysis (signalling first), the run directories, the
    per-phase timer (its record not yet written, so the report can be timed too)."""

    results: tuple[AnalysisResult, ...]
    signalling_runs: tuple[Path, ...]
    meaning_runs: tuple[Path, ...]
    variant: str
    timer: PhaseTimer


def _installed(name: str) -> bool:
    return not BUILTIN_MODELS[name].missing()


def demo_models(
    lm: Sequence[str] | None, decision_model: Sequence[str] | None, *, gemma: bool
) -> tuple[list[str], list[str], list[str]]:
    """The causal LMs, decision models and reference choosers the demo audits: the installed
    defaults unless the caller names them (gemma3-270m, the slowest, only with ``gemma``)."""
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
    return lms, decision_models, choosers


def demo_workers(workers: int | None) -> ProcessSettings | None:
    """The worker processes the demo scores its causal LMs with: ``workers`` of them (``None``:
    two where this process may run on two or more cores; 0 or 1: in this process), each with
    the available cores shared out as its torch threads."""
    n = min(2, available_cores()) if workers is None else workers
    if n < 0:
        raise InputError(f"must be 0 (in this process) or more, got {n}", field="workers")
    return ProcessSettings(n) if n > 1 else None


def run_demo(
    *,
    out: Path | str,
    size: str = "default",
    workers: int | None = None,
    gemma: bool | None = None,
    lm: Sequence[str] | None = None,
    decision_model: Sequence[str] | None = None,
    norms: str = "lancaster",
    data: Path | str | None = None,
    command: Sequence[str] | None = None,
    progress: JobProgress | None = None,
    on_phase: Callable[[str, Sequence[AnalysisResult], PhaseTimer], None] | None = None,
    dtype: str = "float32",
    precision_gate: PrecisionGate | None = DEFAULT_PRECISION_GATE,
) -> DemoResult:
    """Run and analyse the signalling then the meaning instrument on the demo's models under
    ``out``. ``gemma`` includes gemma3-270m when installed; ``None`` takes the size's own
    choice (every size but ``small``). ``workers`` is how many processes score each causal LM
    (:func:`demo_workers`: two by default on two or more cores, each on its share of them). ``progress(label, done, total)`` is called after each
    written part, the label naming the instrument and the model (``"signalling · fake"``); ``on_phase(name, results, timer)`` is called as soon as
    each instrument's analysis is done, so a caller can show its summary before the next one
    starts; with more than one causal LM, signalling is also analysed once after its first LM
    and the reference choosers (``"signalling: first model"``), before the other LMs are scored.
    ``dtype`` (``bfloat16``, ``float16``) scores the causal LMs in that precision, each run
    gated first by ``precision_gate`` (see :class:`~choiceaudit.audit.PrecisionGate`; ``None``
    opts out); a demo in another precision than an earlier one needs its own ``out``.

    >>> import pathlib, tempfile
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> done = run_demo(out=tmp / "demo", size="small", lm=["fake"], decision_model=["fake"])
    >>> [type(r).__name__ for r in done.results], [p.name for p in done.meaning_runs]
    (['SignallingAnalysis', 'MeaningAnalysis'], ['meaning-fake'])
    """
    if size not in DEMO_SIZES:
        raise InputError(f"--size must be one of {', '.join(DEMO_SIZES)}")
    if norms not in SIGNALLING_VARIANTS:
        raise InputError(f"--norms must be one of {', '.join(SIGNALLING_VARIANTS)}")
    if norms == "things" and data is None:
        raise InputError("--norms things needs --data DIR (see `choiceaudit data fetch things`)")
    if dtype not in DEMO_DTYPES:
        raise InputError(f"--dtype must be one of {', '.join(DEMO_DTYPES)}", field="--dtype")
    lm_options: dict[str, object] = {} if dtype == "float32" else {"dtype": dtype}
    out = Path(out)
    plan = DEMO_SIZES[size]
    with_gemma = plan.gemma if gemma is None else gemma
    lms, decision_models, choosers = demo_models(lm, decision_model, gemma=with_gemma)
    processes = demo_workers(workers)
    if processes is not None and any(capabilities_of(m).local_compute for m in lms):
        start_worker_server()  # its imports overlap the plans and the reference choosers
    timer = PhaseTimer()

    def bar(prefix: str) -> JobProgress | None:
        if progress is None:
            return None
        report = progress
        return lambda label, done, total: report(f"{prefix} · {label}", done, total)

    def signalling_runs(models: Sequence[str], with_choosers: Sequence[str]) -> list[Path]:
        return run_signalling(
            models,
            with_choosers,
            out=out / ("signalling" if norms == "lancaster" else f"signalling-{norms}"),
            norms=norms,
            data=data,
            n_items=plan.signalling_items,
            # the demo keeps format L to the bare label form so its timing holds; `run
            # signalling` scores both label forms by default (§IV-H4)
            label_forms=("bare",),
            progress=timer.progress("signalling", bar("signalling")),
            workers=processes or 1,
            scorer_options=lm_options,
            precision_gate=precision_gate,
        )

    # The first model with the reference choosers first, analysed and shown at once, so a
    # user sees a table after one model rather than after all of them; the other models then
    # run into the same run directories, and the full table is the one every model makes.
    # The choosers run before the first model, while the worker server is still importing.
    references = signalling_runs([], choosers)
    early = [*(signalling_runs(lms[:1], []) if lms else []), *references]
    if len(lms) > 1 and on_phase is not None:
        on_phase("signalling: first model", analyse_runs(early), timer)
        timer.lap("signalling: first model's analysis and summary", "analyse")
    later = signalling_runs(lms[1:], []) if len(lms) > 1 else []
    signalling = [*early[: len(lms[:1])], *later, *early[len(lms[:1]) :]]
    signalling_results = analyse_runs(signalling)
    if on_phase is not None:
        on_phase("signalling", signalling_results, timer)
    timer.lap("signalling: analysis and summary", "analyse")
    # lm-choice wraps a causal LM loaded in process: the keyed-menu arm of each LM
    marker = [f"lm-choice:{m}" for m in lms if capabilities_of(m).engine]
    meaning = run_meaning(
        list(dict.fromkeys(decision_models + marker + lms)),
        out=out / "meaning",
        corpus="idioms-en",
        n_items=plan.meaning_items,  # 0: every usable item
        n_order_items=plan.meaning_order_items,
        # both bindings, so the demo shows the label component beside the paper's E7
        e7_keys=("slot", "travelling"),
        progress=timer.progress("meaning", bar("meaning")),
        command=command,
        workers=processes or 1,
        scorer_options={m: lm_options for m in marker + lms},
        precision_gate=precision_gate,
    )
    meaning_results = analyse_runs(meaning)
    if on_phase is not None:
        on_phase("meaning", meaning_results, timer)
    timer.lap("meaning: analysis and summary", "analyse")
    return DemoResult(
        results=(*signalling_results, *meaning_results),
        signalling_runs=tuple(Path(p) for p in signalling),
        meaning_runs=tuple(Path(p) for p in meaning),
        variant=SIGNALLING_VARIANTS[norms],
        timer=timer,
    )
