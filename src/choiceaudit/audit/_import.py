"""``choiceaudit import lm-eval|inspect``: per-item outputs of other harnesses as run directories.

Both importers read the harness's files with the standard library only (``json``, ``zipfile``),
turn every multiple-choice row into a :class:`~choiceaudit.types.Query` and a
:class:`~choiceaudit.types.Decision` and store them with the ordinary scoring loop (a replay
scorer hands back the decisions), so every generic analysis applies: accuracy with intervals,
calibration, risk–coverage, the gate, and the order audit where an item appears under several
orderings.

What the manifest records (``config``): the source and its version, each file's name and
sha256, every field of the harness's rows that was *not* mapped (with the number of rows that
carried it), every row that could not be mapped (counted by reason, and listed with file and
row), and how the fields were mapped. The rows' own fields are described in the package's
README (``src/choiceaudit/instruments/scoring/README.md``, "Importers").

Identity across orderings: an item is its task, its prompt (state) and its *set* of options;
the first rendering read fixes the canonical option order and every rendering records its
permutation of it, so an item the harness showed under two orders is one item with two
renderings (``perm``), and its gold option keeps one canonical index.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from choiceaudit.audit._scoring import RunSummary, run_scoring
from choiceaudit.errors import InputError
from choiceaudit.files import sha256_file
from choiceaudit.types import Decision, Query

__all__ = ["ImportResult", "import_inspect", "import_lm_eval"]

#: Rows listed one by one in the manifest (the counts by reason are always complete).
MAX_LISTED = 500
#: Scalar fields of a document / sample metadata lifted into the query meta (longer text is not).
MAX_META_TEXT = 200
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class ImportResult:
    """What one import did: the scoring session's summary, the source and its version, the rows
    mapped, and the rows that could not be (reason → count)."""

    summary: RunSummary
    source: str
    version: str | None
    model: str
    mapped: int
    unmappable: Mapping[str, int]
    unmapped_fields: Mapping[str, int]


class _Unmappable(Exception):
    """A row that cannot become a query and decision; the message is the reason."""


@dataclass
class _Collector:
    """Rows mapped so far, rows refused, fields seen but not mapped, notes on the mapping."""

    source: str
    rows: list[tuple[Query, Decision]] = field(default_factory=list)
    refused: dict[str, int] = field(default_factory=dict)
    listed: list[dict[str, Any]] = field(default_factory=list)
    unmapped: dict[str, int] = field(default_factory=dict)
    notes: dict[str, int] = field(default_factory=dict)
    canonical: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def refuse(self, file: str, row: int | str, reason: str) -> None:
        self.refused[reason] = self.refused.get(reason, 0) + 1
        if len(self.listed) < MAX_LISTED:
            self.listed.append({"file": file, "row": row, "reason": reason})

    def unmapped_field(self, name: str) -> None:
        self.unmapped[name] = self.unmapped.get(name, 0) + 1

    def note(self, text: str) -> None:
        self.notes[text] = self.notes.get(text, 0) + 1

    def item(self, task: str, state: str, options: Sequence[str]) -> tuple[str, tuple[int, ...]]:
        """The item id of (task, state, option set) and this rendering's permutation of the
        item's canonical order (the order first read)."""
        key = json.dumps([task, state, sorted(options)], ensure_ascii=False)
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
        item_id = f"{task}:{digest}"
        canonical = self.canonical.setdefault(item_id, tuple(options))
        return item_id, tuple(canonical.index(o) for o in options)


def _scalar_meta(prefix: str, data: Mapping[str, Any], collector: _Collector) -> dict[str, Any]:
    """Short scalar fields as ``<prefix>.<name>`` meta; the rest recorded as unmapped."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        short = isinstance(value, bool | int | float) or (
            isinstance(value, str) and len(value) <= MAX_META_TEXT
        )
        if value is None or (short and not (isinstance(value, float) and not math.isfinite(value))):
            out[f"{prefix}.{key}"] = value
        else:
            collector.unmapped_field(f"{prefix}.{key}")
    return out


def _softmax(values: Sequence[float]) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    z = np.exp(v - v.max())
    return np.asarray(z / z.sum(), dtype=np.float64)


def _dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (harness files vary by version)."""
    return value if isinstance(value, dict) else {}


class _Replay:
    """A scorer that returns the imported decisions (so imports use the one scoring loop)."""

    def __init__(self, decisions: Mapping[str, Decision], description: dict[str, Any]) -> None:
        self._decisions = decisions
        self._description = description
        self.name = str(description["model"])

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        return [self._decisions[q.id] for q in queries]

    def describe(self) -> dict[str, Any]:
        return dict(self._description)


def _write(
    collector: _Collector,
    out: Path | str,
    *,
    model: str,
    version: str | None,
    files: Sequence[Path],
    mapping: Mapping[str, str],
    extra: Mapping[str, Any],
    command: Sequence[str] | None,
) -> ImportResult:
    if not collector.rows:
        reasons = "; ".join(f"{n} × {r}" for r, n in sorted(collector.refused.items()))
        raise InputError(
            f"no row of {', '.join(str(f) for f in files)} could be imported"
            + (f" ({reasons})" if reasons else " (the files hold no rows)")
        )
    decisions = {q.id: d for q, d in collector.rows}
    description = {
        "backend": f"import:{collector.source}",
        "model": model,
        "source": collector.source,
        "source_version": version,
    }
    config = {
        "kind": "import",
        "source": collector.source,
        "source_version": version,
        "files": [{"name": f.name, "sha256": sha256_file(f)} for f in files],
        "mapping": dict(mapping),
        "unmapped_fields": dict(sorted(collector.unmapped.items())),
        "unmappable_rows": dict(sorted(collector.refused.items())),
        "unmappable_listed": list(collector.listed),
        "notes": dict(sorted(collector.notes.items())),
        **dict(extra),
    }
    summary = run_scoring(
        _Replay(decisions, description),
        [q for q, _ in collector.rows],
        out,
        chunk_size=1000,
        command=command,
        config=config,
        skipped=dict(collector.refused),
    )
    return ImportResult(
        summary=summary,
        source=collector.source,
        version=version,
        model=model,
        mapped=len(decisions),
        unmappable=dict(collector.refused),
        unmapped_fields=dict(collector.unmapped),
    )


def _expand(paths: Iterable[Path | str], patterns: Sequence[str]) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted({p for pattern in patterns for p in path.rglob(pattern)})
            if not found:
                raise InputError(f"{path}: no file matching {' or '.join(patterns)}")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise InputError(f"{path}: no such file or directory")
    if not files:
        raise InputError("give at least one file")
    return files


# -- lm-evaluation-harness ----------------------------------------------------------------------

#: ``samples_<task>_<timestamp>.jsonl``, as ``lm_eval --log_samples`` names its files.
_LM_EVAL_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T[\d.\-]+)\.jsonl$")

#: Fields of a samples line the importer reads (everything else is recorded as unmapped).
_LM_EVAL_MAPPED = {
    "doc_id", "doc", "target", "arguments", "filtered_resps", "filter", "metrics",
}  # fmt: skip

_LM_EVAL_MAPPING = {
    "state": "the context of the loglikelihood requests (arguments.gen_args_i.arg_0), the same "
    "for every choice",
    "options": "the continuations (arg_1) without lm-eval's target delimiter (one leading space)",
    "template": "{state}: a causal LM re-scoring the query sees exactly lm-eval's context",
    "probs": "softmax of the per-choice log-likelihoods (filtered_resps[i][0]), the distribution "
    "whose argmax is lm-eval's acc",
    "scores.sum": "the per-choice log-likelihoods",
    "scores.char_mean": "log-likelihood / len(choice) in characters, whose argmax is acc_norm",
    "aux.is_greedy": "filtered_resps[i][1]",
    "meta.gold": "target as an index of the choices (or the choice text it names)",
    "meta.doc.*": f"scalar fields of the document up to {MAX_META_TEXT} characters",
    "meta.metric.*": "lm-eval's own per-sample metrics (named in the line's metrics)",
    "meta.task": "from the file name samples_<task>_<timestamp>.jsonl",
}


def _lm_eval_results(path: Path) -> dict[str, Any]:
    """The ``results_<timestamp>.json`` written beside a samples file, if any."""
    match = _LM_EVAL_NAME.match(path.name)
    if match is None:
        return {}
    candidate = path.with_name(f"results_{match.group('stamp')}.json")
    if not candidate.is_file():
        return {}
    try:
        data = json.loads(candidate.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _lm_eval_requests(line: Mapping[str, Any]) -> list[tuple[str, str]]:
    args = line.get("arguments")
    pairs: list[Any]
    if isinstance(args, dict):  # 0.4.x: {"gen_args_0": {"arg_0": ctx, "arg_1": cont}, ...}
        keys = sorted(args, key=lambda k: int(re.sub(r"\D", "", k) or 0))
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
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise _Unmappable(f"a log-likelihood is not a number ({value!r})") from None
    if not math.isfinite(number):
        raise _Unmappable("a log-likelihood is not finite")
    return number


def _lm_eval_row(
    line: Mapping[str, Any], task: str, output_type: str | None, collector: _Collector
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
    meta: dict[str, Any] = {
        "item_id": item_id,
        "gold": perm[gold],
        "task": task,
        "doc_id": line.get("doc_id"),
        "filter": line.get("filter"),
    }
    if isinstance(doc, dict):
        meta.update(_scalar_meta("doc", doc, collector))
    metrics = line.get("metrics")
    metrics = metrics if isinstance(metrics, list) else []
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
        aux={"is_greedy": greedy, "confidence_source": "softmax of log-likelihoods"},
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


def _jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 ({exc})") from None
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.strip():
            try:
                yield number, json.loads(raw)
            except json.JSONDecodeError as exc:
                yield number, _Unmappable(f"invalid JSON ({exc.msg})")


def import_lm_eval(
    files: Sequence[Path | str],
    out: Path | str,
    *,
    model: str | None = None,
    command: Sequence[str] | None = None,
) -> ImportResult:
    """Import lm-evaluation-harness ``--log_samples`` files (``samples_<task>_<time>.jsonl``,
    or directories holding them) into the run directory ``out``. The version, model and task
    configuration come from the ``results_<time>.json`` beside each file when it is there."""
    paths = _expand(files, ["samples_*.jsonl"])
    collector = _Collector("lm-eval")
    versions: set[str] = set()
    models: set[str] = set()
    tasks: dict[str, Any] = {}
    for path in paths:
        results = _lm_eval_results(path)
        if results.get("lm_eval_version"):
            versions.add(str(results["lm_eval_version"]))
        name = results.get("model_name") or (results.get("config") or {}).get("model_args")
        if name:
            models.add(str(name))
        match = _LM_EVAL_NAME.match(path.name)
        task = match.group("task") if match else path.stem
        config = (results.get("configs") or {}).get(task) or {}
        output_type = config.get("output_type")
        tasks[task] = {
            "output_type": output_type,
            "num_fewshot": config.get("num_fewshot"),
            "version": (results.get("versions") or {}).get(task),
            "results_file": bool(results),
        }
        for number, line in _jsonl(path):
            try:
                if isinstance(line, _Unmappable):
                    raise line
                if not isinstance(line, dict):
                    raise _Unmappable("the line is not a JSON object")
                collector.rows.append(_lm_eval_row(line, task, output_type, collector))
            except _Unmappable as exc:
                collector.refuse(path.name, number, str(exc))
            except ValueError as exc:  # a Query or Decision refused the mapped values
                collector.refuse(path.name, number, f"not a valid query ({exc})")
    if len(models) > 1 and model is None:
        raise InputError(
            f"the files come from several models ({', '.join(sorted(models))}); import each "
            "model into its own run, or name one with --model-name"
        )
    version = ",".join(sorted(versions)) or None
    if version is None:
        collector.note("no results_<timestamp>.json beside the samples: lm-eval version unknown")
    return _write(
        collector,
        out,
        model=model or (models.pop() if models else "lm-eval"),
        version=version,
        files=paths,
        mapping=_LM_EVAL_MAPPING,
        extra={"tasks": tasks},
        command=command,
    )


# -- inspect ------------------------------------------------------------------------------------

_INSPECT_MAPPED = {
    "id", "epoch", "input", "choices", "target", "output", "scores", "metadata", "error",
}  # fmt: skip

_INSPECT_MAPPING = {
    "state": "the sample's input (its text when it is a list of messages)",
    "options": "the sample's choices, in the order the multiple_choice solver showed them under "
    "the letters A, B, …",
    "keys": "A, B, … (answer_format key)",
    "choice": "the scorer's answer letter(s), else ANSWER: <letter> in the completion",
    "probs": "softmax over the letters' log-probabilities at the answer token (output logprobs "
    "top_logprobs) when every letter is there; otherwise the chosen letter(s) get probability 1 "
    "(a hard choice, no confidence information)",
    "scores.letter_logprob": "the letters' log-probabilities, where present",
    "meta.gold": "the target letter as a choice index",
    "meta.metadata.*": f"scalar sample metadata up to {MAX_META_TEXT} characters",
    "meta.score.*": "each scorer's value for the sample",
}


class _UnreadableLog(InputError):
    pass


def _inspect_log(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, samples) of a JSON log or of an ``.eval`` archive."""
    if path.suffix == ".eval":
        try:
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
                header = json.loads(archive.read("header.json")) if "header.json" in names else {}
                if not header and "_journal/start.json" in names:
                    header = json.loads(archive.read("_journal/start.json"))
                samples = [
                    json.loads(archive.read(n))
                    for n in sorted(names)
                    if n.startswith("samples/") and n.endswith(".json")
                ]
        except NotImplementedError:
            raise _UnreadableLog(
                f"{path}: this .eval log is zstd-compressed, which Python's standard library reads "
                "only from Python 3.14 on; convert it first with `inspect log convert "
                f"{path} --to json --output-dir DIR` and import the .json"
            ) from None
        except (zipfile.BadZipFile, json.JSONDecodeError, KeyError) as exc:
            raise _UnreadableLog(f"{path}: not a readable inspect .eval log ({exc})") from None
        return header, samples
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _UnreadableLog(f"{path}: not a JSON inspect log ({exc})") from None
    if not isinstance(data, dict) or "eval" not in data:
        raise _UnreadableLog(f"{path}: not an inspect eval log (no 'eval' header)")
    return data, list(data.get("samples") or [])


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    parts.append(part["text"])
                elif "content" in part:
                    parts.append(_text(part["content"]))
        return "\n".join(p for p in parts if p)
    return ""


_ANSWER = re.compile(r"ANSWER\s*:\s*([A-Za-z](?:\s*,\s*[A-Za-z])*)\b")


def _answer_slots(sample: Mapping[str, Any], k: int) -> tuple[int, ...]:
    letters: list[str] = []
    scores = sample.get("scores")
    if isinstance(scores, dict):
        for score in scores.values():
            answer = score.get("answer") if isinstance(score, dict) else None
            if isinstance(answer, str) and answer.strip():
                letters = [a.strip() for a in answer.split(",") if a.strip()]
                break
    if not letters:
        output = _dict(sample.get("output"))
        match = _ANSWER.search(str(output.get("completion") or ""))
        if match:
            letters = [a.strip() for a in match.group(1).split(",")]
    if not letters:
        raise _Unmappable("no answer letter in the output")
    slots = []
    for letter in letters:
        index = _LETTERS.find(letter.upper()) if len(letter) == 1 else -1
        if not 0 <= index < k:
            raise _Unmappable(f"answer {letter!r} is not one of the {k} choice letters")
        slots.append(index)
    return tuple(sorted(set(slots)))


def _letter_logprobs(sample: Mapping[str, Any], k: int) -> list[float] | None:
    """The letters' log-probabilities at the last output token that is a choice letter, or
    ``None`` when the output has none or its top_logprobs miss a letter."""
    output = _dict(sample.get("output"))
    choices = output.get("choices") or []
    logprobs = (
        (choices[0].get("logprobs") or {}) if choices and isinstance(choices[0], dict) else {}
    )
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list):
        return None
    keys = _LETTERS[:k]
    for entry in reversed(content):
        if not isinstance(entry, dict) or str(entry.get("token", "")).strip().upper() not in keys:
            continue
        found: dict[str, list[float]] = {}
        candidates = [entry, *(entry.get("top_logprobs") or [])]
        seen: set[str] = set()
        for cand in candidates:
            token = str(cand.get("token", ""))
            letter = token.strip().upper()
            if letter in keys and token not in seen and cand.get("logprob") is not None:
                seen.add(token)
                found.setdefault(letter, []).append(float(cand["logprob"]))
        if len(found) < k:
            return None
        # Variants of one letter (" B", "B") are one answer: add their probabilities.
        return [float(np.logaddexp.reduce(found[letter])) for letter in keys]
    return None


def _inspect_gold(target: Any, options: Sequence[str]) -> int:
    if isinstance(target, list):
        if len(target) != 1:
            raise _Unmappable("several gold choices (target lists several letters)")
        target = target[0]
    if not isinstance(target, str) or not target.strip():
        raise _Unmappable("no gold choice (target)")
    text = target.strip()
    if len(text) == 1 and text.upper() in _LETTERS[: len(options)]:
        return _LETTERS.index(text.upper())
    if text in options:
        return list(options).index(text)
    raise _Unmappable("target is neither a choice letter nor a choice text")


def _inspect_row(
    sample: Mapping[str, Any], task: str, shuffled: bool, collector: _Collector
) -> tuple[Query, Decision]:
    if sample.get("error"):
        message = sample["error"].get("message") if isinstance(sample["error"], dict) else None
        raise _Unmappable(f"the sample errored{': ' + str(message)[:80] if message else ''}")
    choices = sample.get("choices")
    if not isinstance(choices, list) or len(choices) < 2:
        raise _Unmappable("the sample has no choices (not a multiple-choice task)")
    if not all(isinstance(c, str) and c.strip() for c in choices):
        raise _Unmappable("a choice is empty or not text")
    if len(set(choices)) != len(choices):
        raise _Unmappable("two choices have the same text")
    if len(choices) > len(_LETTERS):
        raise _Unmappable("more choices than letters A–Z")
    k = len(choices)
    state = _text(sample.get("input"))
    if not state.strip():
        raise _Unmappable("the sample input has no text")
    gold = _inspect_gold(sample.get("target"), choices)
    slots = _answer_slots(sample, k)
    logprobs = None if shuffled else _letter_logprobs(sample, k)
    if logprobs is not None:
        probs = _softmax(logprobs)
        scores = {"letter_logprob": np.array(logprobs)}
        source = "letter log-probabilities"
    else:
        collector.note(
            "hard choice: the solver shuffled the choices, so the letters' log-probabilities "
            "do not name them"
            if shuffled
            else "hard choice: no log-probability for every choice letter at the answer token"
        )
        probs = Decision.uniform_over("", k, slots).probs
        scores = {}
        source = "none (hard choice)"
    item_id, perm = collector.item(task, state, choices)
    meta: dict[str, Any] = {
        "item_id": item_id,
        "gold": perm[gold],
        "task": task,
        "sample_id": sample.get("id"),
        "epoch": sample.get("epoch"),
    }
    if isinstance(sample.get("metadata"), dict):
        meta.update(_scalar_meta("metadata", sample["metadata"], collector))
    if isinstance(sample.get("scores"), dict):
        for name, score in sample["scores"].items():
            value = score.get("value") if isinstance(score, dict) else None
            if isinstance(value, str | bool | int | float):
                meta[f"score.{name}"] = value
    for key in sample:
        if key not in _INSPECT_MAPPED:
            collector.unmapped_field(key)
    query = Query(
        state=state,
        options=tuple(choices),
        keys=tuple(_LETTERS[:k]),
        template="{state}",
        answer_format="key",
        perm=perm,
        meta=meta,
    )
    aux: dict[str, Any] = {"confidence_source": source, "answer_slots": list(slots)}
    if logprobs is not None and tuple(np.flatnonzero(probs == probs.max())) != slots:
        aux["answer_differs_from_argmax"] = True
        collector.note("the answer letter is not the most probable letter")
    return query, Decision(query_id=query.id, probs=probs, scores=scores, aux=aux)


def _shuffled(header: Mapping[str, Any]) -> bool:
    plan = _dict(header.get("plan"))
    for step in plan.get("steps") or []:
        params = step.get("params") if isinstance(step, dict) else None
        if isinstance(params, dict) and params.get("shuffle"):
            return True
    return False


def import_inspect(
    files: Sequence[Path | str],
    out: Path | str,
    *,
    model: str | None = None,
    command: Sequence[str] | None = None,
) -> ImportResult:
    """Import inspect eval logs (``.json``, or ``.eval`` archives the standard library can
    read; directories are searched for both) of multiple-choice tasks into the run directory
    ``out``."""
    paths = _expand(files, ["*.eval", "*.json"])
    collector = _Collector("inspect")
    versions: set[str] = set()
    models: set[str] = set()
    tasks: dict[str, Any] = {}
    for path in paths:
        header, samples = _inspect_log(path)
        ev = _dict(header.get("eval"))
        packages = _dict(ev.get("packages"))
        if packages.get("inspect_ai"):
            versions.add(str(packages["inspect_ai"]))
        if ev.get("model"):
            models.add(str(ev["model"]))
        task = str(ev.get("task") or path.stem)
        shuffled = _shuffled(header)
        tasks[task] = {
            "status": header.get("status"),
            "log_format_version": header.get("version"),
            "solver_shuffled_choices": shuffled,
            "samples": len(samples),
        }
        for key in header:
            if key not in ("eval", "samples", "status", "version", "plan"):
                collector.unmapped_field(f"log.{key}")
        for number, sample in enumerate(samples, start=1):
            where = (
                f"sample {sample.get('id')} epoch {sample.get('epoch')}"
                if isinstance(sample, dict)
                else number
            )
            try:
                if not isinstance(sample, dict):
                    raise _Unmappable("the sample is not a JSON object")
                collector.rows.append(_inspect_row(sample, task, shuffled, collector))
            except _Unmappable as exc:
                collector.refuse(path.name, where, str(exc))
            except ValueError as exc:
                collector.refuse(path.name, where, f"not a valid query ({exc})")
    if len(models) > 1 and model is None:
        raise InputError(
            f"the logs come from several models ({', '.join(sorted(models))}); import each "
            "model into its own run, or name one with --model-name"
        )
    version = ",".join(sorted(versions)) or None
    return _write(
        collector,
        out,
        model=model or (models.pop() if models else "inspect"),
        version=version,
        files=paths,
        mapping=_INSPECT_MAPPING,
        extra={"tasks": tasks},
        command=command,
    )
