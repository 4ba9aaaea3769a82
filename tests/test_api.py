"""``choiceaudit.api`` is the Python API: its examples run as written, and it exports the entry
points every command calls (so a user of Python reaches what a user of the shell reaches)."""

from __future__ import annotations

import doctest

import choiceaudit.api
from choiceaudit import api


def test_the_api_examples_run_as_written() -> None:
    result = doctest.testmod(choiceaudit.api, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 10 and result.failed == 0


#: entry points whose own docstring carries a runnable example
EXAMPLED = (
    "score_file",
    "run_meaning",
    "run_signalling",
    "analyse_runs",
    "repair_run",
    "import_decisions",
    "gate_runs",
)


def test_the_entry_points_examples_run_as_written() -> None:
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner()
    for name in EXAMPLED:
        function = getattr(api, name)
        tests = [t for t in finder.find(function, name) if t.examples]
        assert tests, f"{name} has no example"
        for test in tests:
            runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_every_entry_point_takes_the_shared_arguments_by_the_same_names() -> None:
    import inspect

    runners = (api.score_file, api.run_meaning, api.run_signalling, api.run_instrument)
    for runner in runners:
        names = inspect.signature(runner).parameters
        assert "out" in names, runner.__name__
        assert "progress" in names, runner.__name__
        assert "workers" in names, runner.__name__
    for runner in (api.score_file, api.run_meaning, api.run_signalling):
        assert "ray" in inspect.signature(runner).parameters, runner.__name__
