"""The audit layer: orchestration, and the functions the command line calls.

The API for users is :mod:`choiceaudit.api`, which re-exports the entry points defined here and
their result types. This package also exports what the command line, the benchmarks and the
tests use of the layer (the worker and Ray fan-outs, the meaning plan's parts, the run loop).

It builds or loads an instrument's items, turns the instrument's plan into the queries a given
backend reads, scores them into run directories through one run loop (:func:`run_jobs`:
resume, progress callbacks) and runs the instruments' analyses on stored runs, dispatched by the
table of instrument declarations (``audit/_registry.py``). Every ``choiceaudit`` command is a thin wrapper over one
function here, so a Python user and a command-line user run the same code.
"""

from choiceaudit.audit._analysis import AnalysisResult, analyse_runs
from choiceaudit.audit._backend import ProcessSettings, RaySettings, available_cores
from choiceaudit.audit._demo import (
    DEMO_DTYPES,
    DEMO_SIZES,
    SIGNALLING_VARIANTS,
    DemoResult,
    DemoSize,
    run_demo,
)
from choiceaudit.audit._demo_timing import PhaseTimer
from choiceaudit.audit._fanout import RayFanout
from choiceaudit.audit._gate import GateResult, ThresholdsFile, gate_runs
from choiceaudit.audit._human import HumanImport, import_human
from choiceaudit.audit._import import ImportResult
from choiceaudit.audit._import_decisions import import_decisions
from choiceaudit.audit._import_inspect import import_inspect
from choiceaudit.audit._import_lm_eval import import_lm_eval
from choiceaudit.audit._meaning import (
    DEFAULT_MEANING_EXPERIMENTS,
    QUERIES_FILE,
    build_meaning_plan,
    load_meaning_corpus,
    meaning_run_dir,
    queries_for,
    resolve_embedder,
    run_meaning,
)
from choiceaudit.audit._meaning_dry import MeaningDryRun, dry_run_meaning
from choiceaudit.audit._plugin_run import run_instrument
from choiceaudit.audit._precision import REFERENCE_TOLERANCE, PrecisionReport, check_precision
from choiceaudit.audit._precision_gate import (
    MAX_FLIP_RATE,
    PrecisionGate,
    PrecisionGateError,
    gate_summary,
    precision_summaries,
)
from choiceaudit.audit._processes import ProcessFanout
from choiceaudit.audit._runs import by_prompt
from choiceaudit.audit._score import ScoreFileResult, repair_run, score_file
from choiceaudit.audit._scoring import RunSummary, git_commit, run_scoring
from choiceaudit.audit._signalling import default_chat_template, run_signalling
from choiceaudit.audit._signalling_build import DEFAULT_SEED, build_instrument, check_signalling

__all__ = [
    "DEFAULT_MEANING_EXPERIMENTS",
    "DEFAULT_SEED",
    "DEMO_DTYPES",
    "DEMO_SIZES",
    "MAX_FLIP_RATE",
    "QUERIES_FILE",
    "REFERENCE_TOLERANCE",
    "SIGNALLING_VARIANTS",
    "AnalysisResult",
    "DemoResult",
    "DemoSize",
    "GateResult",
    "HumanImport",
    "ImportResult",
    "MeaningDryRun",
    "PhaseTimer",
    "PrecisionGate",
    "PrecisionGateError",
    "PrecisionReport",
    "ProcessFanout",
    "ProcessSettings",
    "RayFanout",
    "RaySettings",
    "RunSummary",
    "ScoreFileResult",
    "ThresholdsFile",
    "analyse_runs",
    "available_cores",
    "build_instrument",
    "build_meaning_plan",
    "by_prompt",
    "check_precision",
    "check_signalling",
    "default_chat_template",
    "dry_run_meaning",
    "gate_runs",
    "gate_summary",
    "git_commit",
    "import_decisions",
    "import_human",
    "import_inspect",
    "import_lm_eval",
    "load_meaning_corpus",
    "meaning_run_dir",
    "precision_summaries",
    "queries_for",
    "repair_run",
    "resolve_embedder",
    "run_demo",
    "run_instrument",
    "run_meaning",
    "run_scoring",
    "run_signalling",
    "score_file",
]
