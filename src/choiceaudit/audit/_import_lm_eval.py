"""``choiceaudit import lm-eval``: lm-evaluation-harness ``--log_samples`` files as a run.

Each samples line of a multiple-choice task (one loglikelihood request per choice, one shared
context) becomes a query whose options are the continuations and a decision whose probabilities
are the _softmax of lm-eval's per-choice log-likelihoods; the shared collector and writer are in
``_import``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from typing_extensions import TypedDict

from choiceaudit.audit._import import (
    MAX_META_TEXT,
    ImportResult,
    Mapped,
    MetaValue,
    _Collector,
    _dict,
    _expand,
    _jsonl,
    _scalar_meta,
    _softmax,
    _Unmappable,
)
from choiceaudit.audit._import_write import check_rows, write_rows
from choiceaudit.errors import InputError
from choiceaudit.types import Decision, Query

__all__ = ["import_lm_eval"]

#: ``samples_<task>_<timestamp>.jsonl``, as ``lm_eval --log_samples`` names its files.
_LM_EVAL_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T[\d.\-]+)\.jsonl$")

#: Fields of a samples line the importer reads (everything else is recorded as unmapped).
_LM_EVAL_MAPPED = {
    "doc_id",
    "doc",
    "target",
    "arguments",
    "filtered_resps",
    "filter",
    "metrics",
}

_LM_EVAL_MAPPING = {
    "state": "the context of the loglikelihood requests (arguments.gen_args_i.arg_0), the same "
    "for every choice",
    "options": "the continuations (arg_1) without lm-eval's target delimiter (one leading space)",
    "template": "{state}: a causal LM re-scoring the query sees exactly lm-eval's context",
    "probs": "_softmax of the per-choice log-likelihoods (filtered_resps[i][0]), the distribution "
    "whose argmax is lm-eval's acc",
    "scores.sum": "the per-choice log-likelihoods",
    "scores.char_mean": "log-likelihood / len(choice) in characters, whose argmax is acc_norm",
    "aux.is_greedy": "filtered_resps[i][1]",
    "meta.gold": "target as an index of the choices (or the choice text it names)",
    "meta.doc.*": f"scalar fields of the document up to {MAX_META_TEXT} characters",
    "meta.metric.*": "lm-eval's own per-sample metrics (named in the line's metrics)",
    "meta.task": "from the file name samples_<task>_<timestamp>.jsonl",
}


@dataclass(frozen=True)
class _Results:
    """What the import reads from a ``results_<timestamp>.json``: the lm-eval version, the model
    name (else the model arguments), and each task's configuration and version. ``found`` is
    false when there was no readable results file."""

    found: bool = False
    version: str | None = None
    model: str | None = None
    configs: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    versions: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def of(cls, data: Mapping[str, object]) -> _Results:
        version = data.get("lm_eval_version")
        model = data.get("model_name") or _dict(data.get("config")).get("model_args")
        configs = _dict(data.get("configs"))
        return cls(
            found=bool(data),
            version=str(version) if version else None,
            model=str(model) if model else None,
            configs={task: _dict(value) for task, value in configs.items()},
            versions=_dict(data.get("versions")),
        )


class _TaskRecord(TypedDict):
    """A task as the run's config records it (``tasks``): from the results file, else null."""

    output_type: object
    num_fewshot: object
    version: object
    results_file: bool


def _lm_eval_results(path: Path, collector: _Collector) -> _Results:
    """The ``results_<timestamp>.json`` written beside a samples file, if any. One that cannot
    be read is a warning, not a refusal: the samples carry every number the import stores, and
    the results file adds only the version, model name and task configuration, which are then
    recorded as unknown."""
    match = _LM_EVAL_NAME.match(path.name)
    if match is None:
        return _Results()
    candidate = path.with_name(f"results_{match.group('stamp')}.json")
    if not candidate.is_file():
        return _Results()
    unknown = "so the lm-eval version, model name and task configuration are unknown"
    try:
        data = json.loads(candidate.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        collector.warn(f"{candidate}: not UTF-8, {unknown} (the samples were imported)")
        return _Results()
    except (json.JSONDecodeError, RecursionError) as exc:
        collector.warn(
            f"{candidate}: not valid JSON ({exc}), {unknown} (the samples were imported)"
        )
        return _Results()
    except OSError as exc:
        collector.warn(
            f"{candidate}: cannot be read ({exc}), {unknown} (the samples were imported)"
        )
        return _Results()
    if not isinstance(data, dict):
        collector.warn(
            f"{candidate}: holds a JSON {type(data).__name__}, not an lm-eval results object, "
            f"{unknown} (the samples were imported)"
        )
        return _Results()
    return _Results.of(data)


def _lm_eval_requests(line: Mapping[str, Any]) -> list[tuple[str, str]]:
    args = line.get("arguments")
    pairs: list[Any]
    if isinstance(args, dict):  # 0.4.x: {"gen_args_0": {"arg_0": ctx, "arg_1": cont}, ...}
        keys = sorted(args, key=lambda k: int(re.sub(r"\D", "", k) or 0))
        if not all(isinstance(args[k], dict) for k in keys):
            raise _Unmappable("a request is not a {arg_0, arg_1} object")
        pairs = [[args[k].get("arg_0"), args[k].get("arg_1")] for k in keys]
    elif isinstance(args, list):  # older: [[ctx, cont], ...]
        pairs = args
    else:
        raise _Unmappable("no loglikelihood requests (arguments) in the line")
    out = []
    for pair in pairs:
        if not (isinstance(pair, list | tuple) and len(pair) == 2):
            raise _Unmappable("a request is not a (context, continuation) pair")
        ctx, cont = pair
        if not isinstance(ctx, str) or not isinstance(cont, str):
            raise _Unmappable(
                "requests are not (context, continuation) strings (not a multiple-choice task)"
            )
        out.append((ctx, cont))
    return out


def _float(value: Any) -> float:
    """A log-likelihood as lm-eval writes it (the text of a float, or a JSON number): finite and
    at most 0, since it is the log of a probability; a value above 0 would become a confident,
    wrong probability vector after the softmax."""
    if isinstance(value, bool):  # float(True) is 1.0: a JSON boolean is never a number here
        raise _Unmappable(f"a log-likelihood is not a number ({value!r})")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise _Unmappable(f"a log-likelihood is not a number ({value!r})") from None
    if not math.isfinite(number):
        raise _Unmappable("a log-likelihood is not finite")
    if number > 0:
        raise _Unmappable("a log-likelihood is above 0 (not the log of a probability)")
    return number


def _lm_eval_line(
    line: object, task: str, output_type: object, collector: _Collector
) -> tuple[Query, Decision]:
    """One line of a samples file as :func:`_lm_eval_row` maps it, once it is a JSON object."""
    if isinstance(line, _Unmappable):
        raise line
    if not isinstance(line, dict):
        raise _Unmappable("the line is not a JSON object")
    return _lm_eval_row(line, task, output_type, collector)


def _lm_eval_row(
    line: Mapping[str, Any], task: str, output_type: object, collector: _Collector
) -> tuple[Query, Decision]:
    if output_type is not None and output_type != "multiple_choice":
        raise _Unmappable(f"task output_type is {output_type!r}, not multiple_choice")
    requests = _lm_eval_requests(line)
    if len(requests) < 2:
        raise _Unmappable("fewer than two choices")
    contexts = {ctx for ctx, _ in requests}
    if len(contexts) != 1:
        raise _Unmappable("the choices differ in their context (a partial-evaluation task)")
    resps = line.get("filtered_resps")
    if not isinstance(resps, list) or len(resps) != len(requests):
        raise _Unmappable("filtered_resps does not hold one response per choice")
    ll, greedy = [], []
    for resp in resps:
        if isinstance(resp, list | tuple) and resp and not isinstance(resp[0], list | tuple):
            ll.append(_float(resp[0]))
            greedy.append(str(resp[1]) == "True" if len(resp) > 1 else None)
        else:
            raise _Unmappable("a response is not a (log-likelihood, is_greedy) pair")
    state = requests[0][0]
    options = [cont[1:] if cont.startswith(" ") else cont for _, cont in requests]
    if any(not o.strip() for o in options):
        raise _Unmappable("an option is empty")
    if len(set(options)) != len(options):
        raise _Unmappable("two choices have the same text")
    gold = _lm_eval_gold(line.get("target"), options)
    item_id, perm = collector.item(task, state, options)
    doc = line.get("doc")
    meta: dict[str, MetaValue] = {
        "item_id": item_id,
        "gold": perm[gold],
        "task": task,
        "doc_id": line.get("doc_id"),
        "filter": line.get("filter"),
    }
    if isinstance(doc, dict):
        meta.update(_scalar_meta("doc", doc, collector))
    listed = line.get("metrics")
    # lm-eval lists the names of the metrics it wrote beside the sample; anything else there
    # names no field of the line
    metrics = [m for m in listed if isinstance(m, str)] if isinstance(listed, list) else []
    for name in metrics:
        value = line.get(name)
        if isinstance(value, bool | int | float) and math.isfinite(float(value)):
            meta[f"metric.{name}"] = value
    for key in line:
        if key not in _LM_EVAL_MAPPED and key not in metrics:
            collector.unmapped_field(key)
    query = Query(state=state, options=tuple(options), template="{state}", perm=perm, meta=meta)
    lengths = np.array([max(len(o), 1) for o in options], dtype=np.float64)
    decision = Decision(
        query_id=query.id,
        probs=_softmax(ll),
        scores={"sum": np.array(ll), "char_mean": np.array(ll) / lengths},
        aux={"is_greedy": greedy, "confidence_source": "_softmax of log-likelihoods"},
    )
    return query, decision


def _lm_eval_gold(target: Any, options: Sequence[str]) -> int:
    if isinstance(target, list):
        if len(target) != 1:
            raise _Unmappable("several gold choices (target is a list)")
        target = target[0]
    if isinstance(target, bool) or target is None:
        raise _Unmappable("no gold choice (target)")
    text = str(target).strip()
    if re.fullmatch(r"-?\d+", text):
        index = int(text)
        if not 0 <= index < len(options):
            raise _Unmappable(f"target index {index} is out of range for {len(options)} choices")
        return index
    stripped = text.removeprefix(" ")
    if stripped in options:
        return options.index(stripped)
    raise _Unmappable("target is neither a choice index nor a choice text")


def import_lm_eval(
    files: Sequence[Path | str],
    *,
    out: Path | str,
    model: str | None = None,
    command: Sequence[str] | None = None,
) -> ImportResult:
    """Import lm-evaluation-harness ``--log_samples`` files (``samples_<task>_<time>.jsonl``,
    or directories holding them) into the run directory ``out``. The version, model and task
    configuration come from the ``results_<time>.json`` beside each file when it is there.

    >>> import json, pathlib, tempfile
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> context = "Question: 2 + 2 =\\nAnswer:"
    >>> requests = {f"gen_args_{i}": {"arg_0": context, "arg_1": c} for i, c in enumerate([" 4", " 5"])}
    >>> line = {"doc_id": 0, "target": 0, "arguments": requests,
    ...         "filtered_resps": [["-0.2", "True"], ["-1.9", "False"]]}
    >>> samples = tmp / "samples_arith_2026-12-01T08-14-59.jsonl"
    >>> _ = samples.write_text(json.dumps(line) + "\\n", encoding="utf-8")
    >>> result = import_lm_eval([samples], out=tmp / "run", model="my-model")
    >>> result.mapped, result.model
    (1, 'my-model')
    """
    paths = _expand(files, ["samples_*.jsonl"])
    versions: set[str] = set()
    models: set[str] = set()
    tasks: dict[str, _TaskRecord] = {}

    def read(collector: _Collector) -> Iterator[Mapped]:
        for path in paths:
            results = _lm_eval_results(path, collector)
            if results.version:
                versions.add(results.version)
            if results.model:
                models.add(results.model)
            match = _LM_EVAL_NAME.match(path.name)
            task = match.group("task") if match else path.stem
            config = results.configs.get(task, {})
            output_type = config.get("output_type")
            tasks[task] = {
                "output_type": output_type,
                "num_fewshot": config.get("num_fewshot"),
                "version": results.versions.get(task),
                "results_file": results.found,
            }
            for number, line in _jsonl(path):
                pair = collector.mapped_or_refused(
                    path.name, number, partial(_lm_eval_line, line, task, output_type, collector)
                )
                if pair is not None:
                    yield Mapped(path.name, number, *pair)

    collector = _Collector("lm-eval", spool=True)
    ledger = check_rows(read, collector)
    if len(models) > 1 and model is None:
        raise InputError(
            f"the files come from several models ({', '.join(sorted(models))}); import each "
            "model into its own run, or name one with --model-name"
        )
    version = ",".join(sorted(versions)) or None
    if version is None:
        collector.note("no results_<timestamp>.json beside the samples: lm-eval version unknown")
    return write_rows(
        read,
        collector,
        ledger,
        out,
        model=model or (models.pop() if models else "lm-eval"),
        version=version,
        files=paths,
        mapping=_LM_EVAL_MAPPING,
        extra={"tasks": tasks},
        command=command,
    )
