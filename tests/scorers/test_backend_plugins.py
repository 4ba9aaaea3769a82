"""A backend is added without editing this project: by ``register_backend`` in process, or by a
``choiceaudit.backends`` entry point of an installed distribution, which the command line then
lists, scores with and reports on. An incomplete declaration is refused when it is registered,
naming what is missing. The plug-in distribution is built in the test."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from choiceaudit.audit import run_scoring
from choiceaudit.scorers import (
    Backend,
    Capabilities,
    ScorerError,
    _backends,
    load_scorer,
    parse_model_spec,
    register_backend,
)
from choiceaudit.store import open_run
from choiceaudit.types import Decision, Query
from plugin_dist import cli, install_plugin


class LengthScorer:
    """Chooses the longest option: probabilities proportional to each option's length."""

    name = "length"

    def __init__(self, unit: str = "characters") -> None:
        self.unit = unit

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        out = []
        for q in queries:
            lengths = np.array([float(len(o)) for o in q.options])
            out.append(Decision(q.id, lengths / lengths.sum(), scores={"length": lengths}))
        return out

    def describe(self) -> dict[str, Any]:
        return {"backend": "length", "model": "length", "unit": self.unit}


LENGTH = Backend(
    "length",
    "length:",
    ("length",),
    f"{__name__}:LengthScorer",
    "unit",
    Capabilities("menu", ("length",), ("backend", "model", "unit")),
    example="length",
    description="chooses the longest option (a plug-in built in the test)",
)


@pytest.fixture
def table() -> Iterator[None]:
    """The backend table as it was before the test, restored after it."""
    saved = dict(_backends._BY_NAME)
    yield
    _backends._BY_NAME.clear()
    _backends._BY_NAME.update(saved)


def queries() -> list[Query]:
    return [
        Query(state=f"q{i}", options=("a", "bbb", "cc"), meta={"item_id": str(i), "gold": 1})
        for i in range(5)
    ]


def test_a_registered_backend_is_resolved_loaded_and_scored(table: None, tmp_path: Path) -> None:
    register_backend(LENGTH)
    assert parse_model_spec("length").backend == "length"
    assert parse_model_spec("length:words").target == "words"
    scorer = load_scorer("length:words")
    summary = run_scoring(scorer, queries(), tmp_path / "run")
    assert summary.scored == 5
    run = open_run(tmp_path / "run")
    assert {r.decision.choice() for r in run.rows} == {(1,)}
    assert run.manifest.scorer["unit"] == "words"


def test_a_backend_registered_from_python_may_name_its_loader_itself(
    table: None, tmp_path: Path
) -> None:
    register_backend(dataclasses.replace(LENGTH, loader=LengthScorer))
    summary = run_scoring(load_scorer("length:words"), queries(), tmp_path / "run")
    assert summary.scored == 5
    assert open_run(tmp_path / "run").manifest.scorer["unit"] == "words"


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"prefix": None, "names": ()}, "a prefix or names"),
        ({"description": ""}, "description"),
        ({"example": "other"}, "example 'other'"),
        ({"prefix": "hf:"}, "a prefix of its own ('hf:' is hf's)"),
        ({"names": ("fake",)}, "names of its own ('fake' is fake's)"),
        ({"loader": "no colon"}, "loader 'no colon'"),
        ({"loader": 3}, "loader 3 as 'module:attribute' or a callable"),
        ({"target_param": None}, "target_param"),
        ({"capabilities": Capabilities("menu", (), ("backend",))}, "capabilities.rules"),
        ({"capabilities": Capabilities("menu", ("p",), ("model",))}, "including 'backend'"),
        ({"capabilities": None}, "capabilities (a Capabilities)"),
    ],
)
def test_an_incomplete_declaration_is_refused_naming_what_is_missing(
    table: None, change: dict[str, Any], named: str
) -> None:
    with pytest.raises(ScorerError, match="backend 'length' is incomplete") as caught:
        register_backend(dataclasses.replace(LENGTH, **change))
    assert named in str(caught.value)
    assert "length" not in _backends._BY_NAME


def test_a_second_backend_of_one_name_needs_replace(table: None) -> None:
    register_backend(LENGTH)
    with pytest.raises(ScorerError, match="registered already"):
        register_backend(LENGTH)
    register_backend(dataclasses.replace(LENGTH, description="again"), replace=True)
    assert _backends._BY_NAME["length"].description == "again"


PLUGIN = """
import numpy as np
from choiceaudit.scorers import Backend, Capabilities
from choiceaudit.types import Decision


class Longest:
    name = "longest"

    def score(self, queries):
        out = []
        for q in queries:
            lengths = np.array([float(len(o)) for o in q.options])
            out.append(Decision(q.id, lengths / lengths.sum(), scores={"length": lengths}))
        return out

    def describe(self):
        return {"backend": "longest", "model": "longest"}


def backend():
    return Backend(
        "longest", None, ("longest",), "choiceaudit_longest:Longest", None,
        Capabilities("menu", ("length",), ("backend", "model")),
        example="longest", description="chooses the longest option (an installed plug-in)",
    )
"""


def install(root: Path) -> Path:
    return install_plugin(
        root,
        "choiceaudit_longest",
        PLUGIN,
        "choiceaudit.backends",
        "longest = choiceaudit_longest:backend",
    )


def test_an_installed_plugin_is_listed_scored_with_and_reported(tmp_path: Path) -> None:
    plugin = install(tmp_path / "site")
    listed = cli(["models", "--json"], plugin)
    assert listed.returncode == 0, listed.stderr
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert rows["longest"]["backend"] == "longest" and rows["longest"]["installed"]
    qfile = tmp_path / "q.jsonl"
    lines = [
        {"state": f"q{i}", "options": ["a", "bbb", "cc"], "meta": {"item_id": str(i), "gold": 1}}
        for i in range(6)
    ]
    qfile.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    scored = cli(["score", str(qfile), "-m", "longest", "--out", str(tmp_path / "run")], plugin)
    assert scored.returncode == 0, scored.stderr
    assert open_run(tmp_path / "run").manifest.scorer["backend"] == "longest"
    report = cli(["report", str(tmp_path / "run"), "--out", str(tmp_path / "report")], plugin)
    assert report.returncode == 0, report.stderr
    # gold is the longest option, and the plug-in's own score rule is reported beside probs
    accuracy = (tmp_path / "report" / "tables" / "accuracy.csv").read_text("utf-8")
    assert accuracy.splitlines()[1:] == [
        "longest,6,6,1.0,1.0,1.0,probs",
        "longest,6,6,1.0,1.0,1.0,length",
    ]


def test_a_plugin_that_declares_an_incomplete_backend_stops_every_command_by_name(
    tmp_path: Path,
) -> None:
    plugin = install(tmp_path / "site")
    module = plugin / "choiceaudit_longest.py"
    declared = 'description="chooses the longest option (an installed plug-in)"'
    module.write_text(module.read_text("utf-8").replace(declared, 'description=""'), "utf-8")
    listed = cli(["models"], plugin)
    assert listed.returncode == 1
    message = listed.stderr + listed.stdout
    assert "entry point 'longest'" in message and "description" in message
