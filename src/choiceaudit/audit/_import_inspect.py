"""``choiceaudit import inspect``: inspect eval logs (``.json``, or ``.eval`` archives the
standard library can read) of multiple-choice tasks as a run.

Each sample becomes a query over its choices under the letters A, B, … and a decision from the
letters' log-probabilities at the answer token where every letter is there (else a hard choice
of the answer letter); the shared collector and writer are in ``_import``.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from typing_extensions import TypedDict

from choiceaudit.audit._import import (
    _LETTERS,
    MAX_META_TEXT,
    ImportResult,
    Mapped,
    MetaValue,
    _Collector,
    _dict,
    _expand,
    _scalar_meta,
    _softmax,
    _Unmappable,
)
from choiceaudit.audit._import_write import check_rows, write_rows
from choiceaudit.errors import InputError
from choiceaudit.types import Decision, Query

__all__ = ["import_inspect"]

_INSPECT_MAPPED = {
    "id",
    "epoch",
    "input",
    "choices",
    "target",
    "output",
    "scores",
    "metadata",
    "error",
}

_INSPECT_MAPPING = {
    "state": "the sample's input (its text when it is a list of messages)",
    "options": "the sample's choices, in the order the multiple_choice solver showed them under "
    "the letters A, B, …",
    "keys": "A, B, … (answer_format key)",
    "choice": "the scorer's answer letter(s), else ANSWER: <letter> in the completion",
    "probs": "_softmax over the letters' log-probabilities at the answer token (output logprobs "
    "top_logprobs) when every letter is there; otherwise the chosen letter(s) get probability 1 "
    "(a hard choice, no confidence information)",
    "scores.letter_logprob": "the letters' log-probabilities, where present",
    "meta.gold": "the target letter as a choice index",
    "meta.metadata.*": f"scalar sample metadata up to {MAX_META_TEXT} characters",
    "meta.score.*": "each scorer's value for the sample",
}


class _UnreadableLog(InputError):
    pass


@dataclass(frozen=True)
class _Log:
    """What the import reads from a log's header — the inspect_ai version, the model, the task,
    the status and log format version, whether the solver shuffled the choices, the header
    fields it does not map — and the samples (each checked where it becomes a row)."""

    version: str | None
    model: str | None
    task: str | None
    status: object
    log_format_version: object
    shuffled: bool
    unmapped: tuple[str, ...]
    samples: list[object]

    @classmethod
    def of(cls, header: Mapping[str, object], samples: list[object]) -> _Log:
        ev = _dict(header.get("eval"))
        packages = _dict(ev.get("packages"))
        mapped = ("eval", "samples", "status", "version", "plan")
        return cls(
            version=str(packages["inspect_ai"]) if packages.get("inspect_ai") else None,
            model=str(ev["model"]) if ev.get("model") else None,
            task=str(ev["task"]) if ev.get("task") else None,
            status=header.get("status"),
            log_format_version=header.get("version"),
            shuffled=_shuffled(header),
            unmapped=tuple(key for key in header if key not in mapped),
            samples=samples,
        )


class _InspectTask(TypedDict):
    """A task as the run's config records it (``tasks``)."""

    status: object
    log_format_version: object
    solver_shuffled_choices: bool
    samples: int


def _inspect_log(path: Path) -> _Log:
    """The header and samples of a JSON log or of an ``.eval`` archive."""
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
        return _Log.of(_dict(header), samples)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _UnreadableLog(f"{path}: not a JSON inspect log ({exc})") from None
    if not isinstance(data, dict) or "eval" not in data:
        raise _UnreadableLog(f"{path}: not an inspect eval log (no 'eval' header)")
    return _Log.of(data, list(data.get("samples") or []))


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
    choices = output.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    content = _dict(_dict(first).get("logprobs")).get("content")
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


def _inspect_sample(
    sample: object, task: str, shuffled: bool, collector: _Collector
) -> tuple[Query, Decision]:
    """One sample of a log as :func:`_inspect_row` maps it, once it is a JSON object."""
    if not isinstance(sample, dict):
        raise _Unmappable("the sample is not a JSON object")
    return _inspect_row(sample, task, shuffled, collector)


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
    meta: dict[str, MetaValue] = {
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
    aux: dict[str, str | bool | list[int]] = {
        "confidence_source": source,
        "answer_slots": list(slots),
    }
    if logprobs is not None and tuple(np.flatnonzero(probs == probs.max())) != slots:
        aux["answer_differs_from_argmax"] = True
        collector.note("the answer letter is not the most probable letter")
    return query, Decision(query_id=query.id, probs=probs, scores=scores, aux=aux)


def _shuffled(header: Mapping[str, object]) -> bool:
    steps = _dict(header.get("plan")).get("steps")
    for step in steps if isinstance(steps, list) else []:
        params = step.get("params") if isinstance(step, dict) else None
        if isinstance(params, dict) and params.get("shuffle"):
            return True
    return False


def import_inspect(
    files: Sequence[Path | str],
    *,
    out: Path | str,
    model: str | None = None,
    command: Sequence[str] | None = None,
) -> ImportResult:
    """Import inspect eval logs (``.json``, or ``.eval`` archives the standard library can
    read; directories are searched for both) of multiple-choice tasks into the run directory
    ``out``.

    >>> import json, pathlib, tempfile
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> sample = {"id": 1, "epoch": 1, "input": "2 + 2 =", "choices": ["4", "5"], "target": "A",
    ...           "output": {"completion": "ANSWER: A"}, "scores": {"choice": {"value": "C"}}}
    >>> log = {"version": 2, "status": "success", "samples": [sample],
    ...        "eval": {"task": "arith", "model": "openai/my-model"}}
    >>> _ = (tmp / "arith.json").write_text(json.dumps(log), encoding="utf-8")
    >>> result = import_inspect([tmp / "arith.json"], out=tmp / "run")
    >>> result.mapped, result.model
    (1, 'openai/my-model')
    """
    paths = _expand(files, ["*.eval", "*.json"])
    versions: set[str] = set()
    models: set[str] = set()
    tasks: dict[str, _InspectTask] = {}

    def read(collector: _Collector) -> Iterator[Mapped]:
        for path in paths:
            log = _inspect_log(path)
            if log.version:
                versions.add(log.version)
            if log.model:
                models.add(log.model)
            task = log.task or path.stem
            shuffled = log.shuffled
            tasks[task] = {
                "status": log.status,
                "log_format_version": log.log_format_version,
                "solver_shuffled_choices": shuffled,
                "samples": len(log.samples),
            }
            for key in log.unmapped:
                collector.unmapped_field(f"log.{key}")
            for number, sample in enumerate(log.samples, start=1):
                where = (
                    f"sample {sample.get('id')} epoch {sample.get('epoch')}"
                    if isinstance(sample, dict)
                    else number
                )
                pair = collector.mapped_or_refused(
                    path.name, where, partial(_inspect_sample, sample, task, shuffled, collector)
                )
                if pair is not None:
                    yield Mapped(path.name, where, *pair)

    collector = _Collector("inspect", spool=True)
    ledger = check_rows(read, collector)
    if len(models) > 1 and model is None:
        raise InputError(
            f"the logs come from several models ({', '.join(sorted(models))}); import each "
            "model into its own run, or name one with --model-name"
        )
    version = ",".join(sorted(versions)) or None
    return write_rows(
        read,
        collector,
        ledger,
        out,
        model=model or (models.pop() if models else "inspect"),
        version=version,
        files=paths,
        mapping=_INSPECT_MAPPING,
        extra={"tasks": tasks},
        command=command,
    )
