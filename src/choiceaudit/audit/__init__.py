"""The audit layer: orchestration, and the Python API the command line calls.

It builds or loads an instrument's items, turns the instrument's plan into the queries a given
backend reads, scores them into run directories through one run loop (:func:`run_jobs`:
resume, progress callbacks) and runs the instruments' analyses on stored runs, dispatched by the
table of instrument declarations (:data:`INSTRUMENTS`). Every ``choiceaudit`` command is a thin wrapper over one
function here, so a Python user and a command-line user run the same code.
"""

from choiceaudit.audit._analysis import AnalysisResult, analyse_runs
from choiceaudit.audit._backend import ProcessSettings, RaySettings, available_cores, open_scorer
from choiceaudit.audit._demo import (
    DEMO_SIZES,
    SIGNALLING_VARIANTS,
    DemoResult,
    DemoSize,
    demo_models,
    run_demo,
)
from choiceaudit.audit._demo_timing import TIMING_FILE, Phase, PhaseTimer
from choiceaudit.audit._fanout import RayFanout, RestartCounter
from choiceaudit.audit._gate import GateResult, ThresholdsFile, gate_runs, parse_where
from choiceaudit.audit._human import HumanImport, import_human
from choiceaudit.audit._import import ImportResult
from choiceaudit.audit._import_decisions import DECISION_INSTRUMENTS, import_decisions
from choiceaudit.audit._import_inspect import import_inspect
from choiceaudit.audit._import_lm_eval import import_lm_eval
from choiceaudit.audit._meaning import (
    DEFAULT_MEANING_EXPERIMENTS,
    QUERIES_FILE,
    build_meaning_plan,
    load_meaning_corpus,
    meaning_run_dir,
    queries_for,
    record_choice_check,
    resolve_embedder,
    run_meaning,
)
from choiceaudit.audit._meaning_dry import BlockVolume, MeaningDryRun, dry_run_meaning
from choiceaudit.audit._plugin_run import run_instrument
from choiceaudit.audit._processes import ProcessFanout, start_worker_server, worker_cpu_seconds
from choiceaudit.audit._registry import INSTRUMENTS, instrument_named, read_config
from choiceaudit.audit._runs import (
    ReplayScorer,
    RunJob,
    by_prompt,
    loaded,
    made,
    model_scorer,
    run_jobs,
)
from choiceaudit.audit._score import ScoreFileResult, repair_run, score_file
from choiceaudit.audit._scoring import ChunkExecutor, ProgressCallback, RunSummary, run_scoring
from choiceaudit.audit._signalling import (
    CHOOSERS,
    default_chat_template,
    make_chooser,
    run_signalling,
)
from choiceaudit.audit._signalling_build import DEFAULT_SEED, build_instrument, check_signalling

__all__ = [
    "CHOOSERS",
    "DECISION_INSTRUMENTS",
    "DEFAULT_MEANING_EXPERIMENTS",
    "DEFAULT_SEED",
    "DEMO_SIZES",
    "INSTRUMENTS",
    "QUERIES_FILE",
    "SIGNALLING_VARIANTS",
    "TIMING_FILE",
    "AnalysisResult",
    "BlockVolume",
    "ChunkExecutor",
    "DemoResult",
    "DemoSize",
    "GateResult",
    "HumanImport",
    "ImportResult",
    "MeaningDryRun",
    "Phase",
    "PhaseTimer",
    "ProcessFanout",
    "ProcessSettings",
    "ProgressCallback",
    "RayFanout",
    "RaySettings",
    "ReplayScorer",
    "RestartCounter",
    "RunJob",
    "RunSummary",
    "ScoreFileResult",
    "ThresholdsFile",
    "analyse_runs",
    "available_cores",
    "build_instrument",
    "build_meaning_plan",
    "by_prompt",
    "check_signalling",
    "default_chat_template",
    "demo_models",
    "dry_run_meaning",
    "gate_runs",
    "import_decisions",
    "import_human",
    "import_inspect",
    "import_lm_eval",
    "instrument_named",
    "load_meaning_corpus",
    "loaded",
    "made",
    "make_chooser",
    "meaning_run_dir",
    "model_scorer",
    "open_scorer",
    "parse_where",
    "queries_for",
    "read_config",
    "record_choice_check",
    "repair_run",
    "resolve_embedder",
    "run_demo",
    "run_instrument",
    "run_jobs",
    "run_meaning",
    "run_scoring",
    "run_signalling",
    "score_file",
    "start_worker_server",
    "worker_cpu_seconds",
]
