"""An instrument is added without editing this project: a ``choiceaudit.instruments`` entry
point of an installed distribution gives ``choiceaudit run <name>`` its command, and ``report``
(through ``analyse_runs``) its analysis and layout. A declaration missing any of these is
refused when it is registered, naming what is missing. The plug-in is built in the test."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from choiceaudit.errors import InputError
from choiceaudit.instruments import Instrument, _plugins, register_instrument
from choiceaudit.store import open_run
from choiceaudit.types import Arm, Query, RunConfig
from plugin_dist import cli, install_plugin

PLUGIN = """
from collections.abc import Mapping
from dataclasses import dataclass

from choiceaudit.instruments import Instrument
from choiceaudit.report import Section
from choiceaudit.types import Query, RunConfig


@dataclass(frozen=True)
class PickConfig(RunConfig):
    plan_options: Mapping[str, str] | None = None


@dataclass(frozen=True)
class PickResult:
    model: str
    rows: int
    longest: float


def plan(n="4"):
    return [
        Query(state=f"pick {i}", options=("a", "bb" * (i % 3 + 1), "ccc"), meta={"item_id": str(i)})
        for i in range(int(n))
    ]


def analyse(arms):
    results = []
    for arm in arms:
        picks = 0.0
        for query, decision in arm.rows:
            longest = max(range(query.n_options), key=lambda s: len(query.options[s]))
            picks += float(decision.choice() == (longest,))
        results.append(PickResult(arm.label, len(arm.rows), picks / len(arm.rows)))
    return results


def layout(results):
    text = ", ".join(f"{r.model} picked the longest in {r.longest:.2f} of {r.rows}" for r in results)
    return [Section(key="lengthpick", title="Length pick", method=text)]


def instrument():
    return Instrument("lengthpick", PickConfig, analyse, plan, run_prefix="lengthpick-",
                      layouts={PickResult: layout})
"""


def install(root: Path) -> Path:
    return install_plugin(
        root,
        "choiceaudit_lengthpick",
        PLUGIN,
        "choiceaudit.instruments",
        "lengthpick = choiceaudit_lengthpick:instrument",
    )


def test_an_installed_instrument_is_run_analysed_and_reported(tmp_path: Path) -> None:
    plugin = install(tmp_path / "site")
    runs = tmp_path / "runs"
    done = cli(["run", "lengthpick", "-m", "fake", "--out", str(runs), "-p", "n=6"], plugin)
    assert done.returncode == 0, done.stderr
    run = open_run(runs / "lengthpick-fake")
    assert run.manifest.config["instrument"] == "lengthpick"
    assert run.manifest.config["plan_options"] == {"n": "6"}
    assert len(run.rows) == 6
    longest = sum(
        r.decision.choice() == (max(range(3), key=lambda s: len(r.query.options[s])),)
        for r in run.rows
    )
    report = cli(["report", str(runs / "lengthpick-fake"), "--out", str(tmp_path / "rep")], plugin)
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "rep" / "index.html").read_text("utf-8")
    assert "Length pick" in page
    assert f"fake picked the longest in {longest / 6:.2f} of 6" in page


def test_a_run_of_a_plugin_instrument_is_refused_by_name_where_it_is_not_installed(
    tmp_path: Path,
) -> None:
    plugin = install(tmp_path / "site")
    runs = tmp_path / "runs"
    assert cli(["run", "lengthpick", "-m", "fake", "--out", str(runs)], plugin).returncode == 0
    bare = subprocess.run(
        [
            sys.executable,
            "-m",
            "choiceaudit.cli",
            "report",
            str(runs / "lengthpick-fake"),
            "--out",
            str(tmp_path / "rep"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert bare.returncode == 1
    assert "no analysis for instrument 'lengthpick'" in bare.stderr


@dataclasses.dataclass(frozen=True)
class Result:
    n: int


def plan(n: str = "2") -> list[Query]:
    return [Query(state=f"s{i}", options=("a", "b")) for i in range(int(n))]


def analyse(arms: Sequence[Arm]) -> list[Result]:
    return [Result(len(a.rows)) for a in arms]


GOOD: Instrument[Any, Any] = Instrument(
    "mine", RunConfig, analyse, plan, layouts={Result: lambda results: []}
)


@pytest.fixture
def table() -> Iterator[None]:
    saved = dict(_plugins._PLUGINS)
    yield
    _plugins._PLUGINS.clear()
    _plugins._PLUGINS.update(saved)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"layouts": {}}, "layouts: the report layout of each result type"),
        ({"analyse": None}, "analyse"),
        ({"plan": None}, "plan"),
        ({"config_type": dict}, "config_type: a RunConfig subclass"),
        ({"name": "meaning"}, "a name of its own ('meaning' is built in)"),
        ({"name": "Has Spaces"}, "a name of lower-case letters"),
        ({"layouts": {"Result": lambda r: []}}, "a result type -> a layout function"),
    ],
)
def test_an_incomplete_instrument_is_refused_naming_what_is_missing(
    table: None, change: dict[str, Any], named: str
) -> None:
    with pytest.raises(InputError, match="is incomplete") as caught:
        register_instrument(dataclasses.replace(GOOD, **change))
    assert named in str(caught.value)
    assert register_instrument(GOOD) is GOOD
    with pytest.raises(InputError, match="registered already"):
        register_instrument(GOOD)


def test_a_report_of_a_result_no_layout_knows_is_refused_by_name(tmp_path: Path) -> None:
    from choiceaudit.report import build_report

    with pytest.raises(InputError, match="no report layout for Result"):
        build_report([Result(1)], out=tmp_path / "rep")
