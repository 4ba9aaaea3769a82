"""``choiceaudit.api`` is the Python API: its examples run as written, and it exports the entry
points every command calls (so a user of Python reaches what a user of the shell reaches)."""

from __future__ import annotations

import doctest
import inspect
import re

import choiceaudit.api
from choiceaudit import api


def test_the_api_examples_run_as_written() -> None:
    result = doctest.testmod(choiceaudit.api, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 10 and result.failed == 0


#: entry points whose runnable example is on a page of the docs (run by tests/test_docs.py)
#: rather than in their docstring, because it needs more than a docstring holds
EXAMPLED_ELSEWHERE = {
    "register_backend": "extending.md",
    "register_instrument": "extending.md",
    "run_instrument": "extending.md",
}
#: an entry point with no example that runs offline: it reads what people answered in a study
#: served by ``choiceaudit serve-human``; tests/human builds one and imports it
WITHOUT_EXAMPLE = {"import_human"}


def _functions() -> list[str]:
    return [n for n in api.__all__ if inspect.isfunction(getattr(api, n))]


def test_every_entry_point_has_an_example_that_runs_as_written() -> None:
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for name in _functions():
        if name in EXAMPLED_ELSEWHERE or name in WITHOUT_EXAMPLE:
            continue
        tests = [t for t in finder.find(getattr(api, name), name) if t.examples]
        assert tests, f"{name} has no example"
        for test in tests:
            runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_the_examples_on_docs_pages_call_their_entry_points() -> None:
    from test_docs import DOCS, RUN, python_blocks

    for name, page in EXAMPLED_ELSEWHERE.items():
        assert page in RUN, f"{page} is not run by the docs test"
        code = "\n".join(python_blocks(DOCS / page))
        assert re.search(rf"\b{name}\(", code), f"{page} has no runnable call of {name}"


def test_every_entry_point_takes_the_shared_arguments_by_the_same_names() -> None:
    runners = (api.score_file, api.run_meaning, api.run_signalling, api.run_instrument)
    for runner in runners:
        names = inspect.signature(runner).parameters
        assert "out" in names, runner.__name__
        assert "progress" in names, runner.__name__
        assert "workers" in names, runner.__name__
    for runner in (api.score_file, api.run_meaning, api.run_signalling):
        assert "ray" in inspect.signature(runner).parameters, runner.__name__


def test_the_output_directory_is_one_keyword_only_argument_named_out() -> None:
    """What a function reads is positional; where it writes is ``out=``, in every entry point."""
    for name in _functions():
        parameters = inspect.signature(getattr(api, name)).parameters
        assert "out_dir" not in parameters, name
        if "out" in parameters:
            assert parameters["out"].kind is inspect.Parameter.KEYWORD_ONLY, name
