"""The Python API: what the command line does, as functions, and the results they return.

Every command of ``choiceaudit`` calls one of these and prints what it returns. What a function
reads is passed by position; everything else by keyword, under the same name in every function:
``out=`` is where runs (or a report) are written, ``workers=`` the processes of this machine
that score a causal LM loaded in process (or a :class:`ProcessSettings`), ``ray=`` a
:class:`RaySettings` to score on Ray actors instead, ``progress=`` a callable
``progress(label, done, total)`` called after each written part (the label names the model, and
the instrument where one call runs several), ``scorer_options=`` the ``-o key=value`` options of
the model, ``precision_gate=`` how a model run in a reduced precision gates itself first (a
:class:`PrecisionGate`; ``None`` opts out), and ``command=`` the command line recorded in the
manifest. A second call with the same ``out`` resumes. Seeds are named by what they draw: ``seed`` is the one seed of an
instrument's item set (signalling) or of the gate's bootstrap, ``split_seed`` the meaning
paper's split seed, which a meaning run records and draws nothing with; each defaults to the
paper's value, as the command's option does.

Score a query file with a model, analyse the run and write the report:

>>> import json, pathlib, tempfile
>>> from choiceaudit import api
>>> tmp = pathlib.Path(tempfile.mkdtemp())
>>> line = {"state": "2 + 2 =", "options": ["4", "5", "22"], "meta": {"gold": 0}}
>>> _ = (tmp / "q.jsonl").write_text(json.dumps(line) + "\\n", encoding="utf-8")
>>> result = api.score_file(tmp / "q.jsonl", "fake", out=tmp / "run")
>>> result.summary.scored
1
>>> analyses = api.analyse_runs([tmp / "run"])
>>> [type(a).__name__ for a in analyses]
['ScoringAnalysis']
>>> api.build_report(analyses, out=tmp / "report").name
'index.html'
>>> len(api.open_run(tmp / "run").rows)
1

Run the meaning instrument's plan on a model without scoring it (a dry run):

>>> plan = api.dry_run_meaning(["fake"], n_items=4, embedder="none")
>>> plan.total_rows > 0
True

Import another harness's per-item outputs, and fit a confidence gate on runs: see
:func:`import_lm_eval`, :func:`import_inspect`, :func:`import_decisions` and
:func:`gate_runs`. Plug-ins add backends (:func:`register_backend`) and instruments
(:func:`register_instrument`, run by :func:`run_instrument`).
"""

from __future__ import annotations

from choiceaudit.audit import (
    AnalysisResult,
    DemoResult,
    GateResult,
    HumanImport,
    ImportResult,
    MeaningDryRun,
    PrecisionGate,
    PrecisionGateError,
    PrecisionReport,
    ProcessSettings,
    RaySettings,
    RunSummary,
    ScoreFileResult,
    analyse_runs,
    build_instrument,
    check_precision,
    check_signalling,
    dry_run_meaning,
    gate_runs,
    import_decisions,
    import_human,
    import_inspect,
    import_lm_eval,
    precision_summaries,
    repair_run,
    run_demo,
    run_instrument,
    run_meaning,
    run_signalling,
    score_file,
)
from choiceaudit.instruments import register_instrument
from choiceaudit.instruments.meaning import MeaningAnalysis
from choiceaudit.instruments.scoring import ScoringAnalysis
from choiceaudit.instruments.signalling import HumanAnalysis, SignallingAnalysis
from choiceaudit.report import build_report
from choiceaudit.scorers import load_scorer, model_status, register_backend
from choiceaudit.store import Run, open_run

__all__ = [
    "AnalysisResult",
    "DemoResult",
    "GateResult",
    "HumanAnalysis",
    "HumanImport",
    "ImportResult",
    "MeaningAnalysis",
    "MeaningDryRun",
    "PrecisionGate",
    "PrecisionGateError",
    "PrecisionReport",
    "ProcessSettings",
    "RaySettings",
    "Run",
    "RunSummary",
    "ScoreFileResult",
    "ScoringAnalysis",
    "SignallingAnalysis",
    "analyse_runs",
    "build_instrument",
    "build_report",
    "check_precision",
    "check_signalling",
    "dry_run_meaning",
    "gate_runs",
    "import_decisions",
    "import_human",
    "import_inspect",
    "import_lm_eval",
    "load_scorer",
    "model_status",
    "open_run",
    "precision_summaries",
    "register_backend",
    "register_instrument",
    "repair_run",
    "run_demo",
    "run_instrument",
    "run_meaning",
    "run_signalling",
    "score_file",
]
