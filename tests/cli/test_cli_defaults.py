"""Every command's defaults are its library function's: an option the command shares with the
function it calls (by name, or through the explicit renames below) has the same default, after
reading the command line's forms the way the command does (a comma-separated list is a
sequence; 0 items is every item). A command that disagreed with its function ran a different
audit from Python than from the shell under the same label."""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from choiceaudit.audit import (
    PrecisionGate,
    RaySettings,
    build_instrument,
    check_precision,
    check_signalling,
    dry_run_meaning,
    import_decisions,
    import_human,
    run_demo,
    run_meaning,
    run_signalling,
    score_file,
)
from choiceaudit.cli import score
from choiceaudit.cli._demo import demo
from choiceaudit.cli._gate import gate
from choiceaudit.cli._human import import_human_cmd
from choiceaudit.cli._import_harness import decisions
from choiceaudit.cli._meaning import run_command
from choiceaudit.cli._precision import check_precision_command
from choiceaudit.cli._signalling import (
    build_signalling,
    check_signalling_command,
    run_signalling_command,
)
from choiceaudit.gate import GateSpec

#: command line -> library, for options the two name differently
RENAMES = {"n_matrix_items": "matrix_items", "out_dir": "out", "n": "n_queries"}


def _normalised(value: Any) -> Any:
    """A default as the command reads it: a comma-separated text is its items; a list, a tuple;
    0 items and ``None`` alike ask for every item; a path, its text; the precision gate's
    settings, the gate switched on (their fields are compared with the command's own options
    below)."""
    if isinstance(value, PrecisionGate):
        return True
    if isinstance(value, str) and "," in value:
        return tuple(v.strip() for v in value.split(","))
    if isinstance(value, list | tuple):
        return tuple(value)
    if isinstance(value, Path):
        return str(value)
    return value


def _defaults(func: Callable[..., Any]) -> dict[str, Any]:
    return {
        RENAMES.get(name, name): p.default
        for name, p in inspect.signature(func).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def _compare(cli: Mapping[str, Any], lib: Mapping[str, Any], *, at_least: set[str]) -> None:
    shared = set(cli) & set(lib)
    assert at_least <= shared, f"expected to compare {sorted(at_least - shared)} too"
    for name in sorted(shared):
        a, b = _normalised(cli[name]), _normalised(lib[name])
        if name == "matrix_items" and {a, b} <= {0, None}:
            continue  # both ask for the whole capture pool
        if isinstance(a, str) and isinstance(b, tuple):
            a = (a,)  # a one-item comma list
        if a is None and b == ():
            continue  # an option not given is an empty sequence
        assert a == b, f"{name}: command {cli[name]!r}, library {lib[name]!r}"


@pytest.mark.parametrize(
    ("command", "function", "at_least"),
    [
        (
            run_command,
            run_meaning,
            {
                "corpus",
                "experiments",
                "n_items",
                "n_order_items",
                "design",
                "languages",
                "matrix_items",
                "e7_keys",
                "embedder",
                "chunk_size",
                "split_seed",
            },
        ),
        (
            run_command,
            dry_run_meaning,
            {
                "experiments",
                "n_items",
                "n_order_items",
                "design",
                "matrix_items",
                "e7_keys",
                "embedder",
            },
        ),
        (
            run_signalling_command,
            run_signalling,
            {
                "norms",
                "seed",
                "n_items",
                "n_candidates",
                "allow_loss",
                "chunk_size",
                "allow_partial_coverage",
                "batch_one",
            },
        ),
        (
            check_signalling_command,
            check_signalling,
            {"norms", "seed", "n_candidates", "n_items", "seeds", "allow_loss"},
        ),
        (
            build_signalling,
            build_instrument,
            {"seed", "n_items", "n_candidates", "allow_loss", "override_tile_screen"},
        ),
        (
            decisions,
            import_decisions,
            {"instrument", "position_base", "sum_tolerance", "mapping", "constants"},
        ),
        (score, score_file, {"chunk_size", "skip_invalid", "workers"}),
        (demo, run_demo, {"size", "workers", "gemma", "lm", "decision_model", "norms", "data"}),
        (import_human_cmd, import_human, {"keep_failed_attention", "finished_only", "label"}),
        (
            check_precision_command,
            check_precision,
            {"dtype", "n_queries", "n_reference", "tolerance"},
        ),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_a_command_and_its_function_share_their_defaults(
    command: Callable[..., Any], function: Callable[..., Any], at_least: set[str]
) -> None:
    _compare(_defaults(command), _defaults(function), at_least=at_least)


def test_the_ray_options_share_the_ray_settings_defaults() -> None:
    """Every command with ``--ray`` builds :class:`RaySettings` from its options, so its
    defaults are the settings' own."""
    settings = {f"ray_{f.name}": f.default for f in dataclasses.fields(RaySettings)}
    for command in (score, run_command, run_signalling_command):
        _compare(_defaults(command), settings, at_least={"ray_workers", "ray_gpus_per_worker"})


def test_gate_shares_the_gate_specs_defaults() -> None:
    spec = {
        f.name: f.default
        for f in dataclasses.fields(GateSpec)
        if f.default is not dataclasses.MISSING
    }
    _compare(_defaults(gate), spec, at_least={"n_resamples", "seed", "folds", "repeats"})


def test_a_design_asks_its_full_item_sets_from_python_as_from_the_command(
    tmp_path: Path,
) -> None:
    from bagdhara_synthetic import bagdhara_record
    from choiceaudit.audit import build_meaning_plan

    records = [{**bagdhara_record(i), "similar_in_english": [f"an idiom {i}"]} for i in range(150)]
    corpus = tmp_path / "b.jsonl"
    corpus.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    spec = f"bagdhara:{corpus}"
    default = build_meaning_plan(spec, design="laya", experiments=("e1",), embedder="none")[1]
    every = build_meaning_plan(
        spec, design="laya", experiments=("e1",), n_items=0, embedder="none"
    )[1]
    items = {q.meta["item_id"] for q in default.queries()}
    assert len(items) == 150  # not a sample of 100
    assert [q.id for q in default.queries()] == [q.id for q in every.queries()]
    plain = build_meaning_plan(spec, experiments=("e1",), embedder="none")[1]
    assert len({q.meta["item_id"] for q in plain.queries()}) == 100


def test_the_precision_gate_options_share_the_gates_defaults() -> None:
    """Every command that scores a model gates a reduced precision as Python does."""
    spec = {f.name: f.default for f in dataclasses.fields(PrecisionGate)}
    for command in (score, run_command, run_signalling_command):
        _compare(_defaults(command), spec, at_least={"max_flip_rate", "accept_flips"})
        assert _defaults(command)["precision_gate"] is True
    for function in (score_file, run_meaning, run_signalling):
        assert _defaults(function)["precision_gate"] == PrecisionGate()
