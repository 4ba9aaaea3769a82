"""Suite-wide settings: offline hub, torch threads shared out among xdist workers, and the
shared data dir."""

from __future__ import annotations

import os
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

# The checkout's own source comes first, whatever an editable install elsewhere points at (a
# second worktree sharing one virtual environment tests its own code).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from shared_paths import require_shared_data

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Under pytest-xdist (`make test` runs two workers) each worker is one process with its own
# torch: left alone, every worker would start a thread per core and the workers would fight
# over the cores. Unless the caller chose, the cores are shared out, which on two cores is one
# thread per worker. Set before any test module imports torch.
_workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
if _workers and "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // int(_workers)))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return require_shared_data()


# -- CPU seconds per test -----------------------------------------------------------------------
# On a shared machine a test's wall time says more about the load than about the test; its CPU
# seconds (this process and the subprocesses it waited for) do not. `--durations-cpu=N` lists the
# N tests that used the most, summed over setup, call and teardown, with xdist workers too.


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--durations-cpu",
        type=int,
        default=None,
        metavar="N",
        help="list the N tests that used the most CPU seconds (0: all)",
    )


def _cpu_seconds() -> float:
    import resource

    own, waited = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    start = item.stash.get(_CPU_START, None)
    if start is not None:  # the phase's seconds travel with its report (xdist workers too)
        report.user_properties.append(("cpu_s", _cpu_seconds() - start))
    item.stash[_CPU_START] = _cpu_seconds()
    return report


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    item.stash[_CPU_START] = _cpu_seconds()
    yield


_CPU_START = pytest.StashKey[float]()
_CPU_BY_TEST: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for name, value in report.user_properties:
        if name == "cpu_s" and isinstance(value, float):
            _CPU_BY_TEST[report.nodeid] = _CPU_BY_TEST.get(report.nodeid, 0.0) + value


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    n = config.getoption("--durations-cpu")
    if n is None or not _CPU_BY_TEST:
        return
    ranked = sorted(_CPU_BY_TEST.items(), key=lambda kv: -kv[1])
    terminalreporter.write_sep("=", f"most CPU seconds ({sum(_CPU_BY_TEST.values()):.1f} s in all)")
    for nodeid, seconds in ranked[:n] if n else ranked:
        terminalreporter.write_line(f"{seconds:8.2f}s cpu  {nodeid}")
