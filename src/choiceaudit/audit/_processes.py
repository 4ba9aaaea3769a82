"""Worker processes on this machine: a run's chunks scored by several copies of one model.

On a CPU the in-process engine's forward passes are small (a 135M–270M model, a few thousand
tokens per call), and one process running torch on two threads keeps two cores only about 1.4–1.6
times as busy as one thread does. Two processes of one thread each, scoring different chunks,
use both cores fully: 1.18–1.42 times the throughput of one process on two threads on this
project's 2-core machine (``benchmarks/bench_workers.py``, both built-in models). :class:`ProcessFanout` is that executor:
``workers`` processes (forked from a server process that imported torch but never ran it, or
started fresh where the platform has no such server; never forked from a process that runs torch),
each building one scorer with ``make_scorer`` and scoring the chunks it is sent, at most
``in_flight_per_worker`` at a time, with ``threads`` torch threads. Results come back to the
driver, which alone writes parts, exactly as with :class:`~choiceaudit.audit.RayFanout`, so the
run loop's guarantees hold unchanged: a part is written whole or not at all, a chunk is
committed once, parts are numbered in completion order and rows read back in input order.

Scoring is a pure function of a chunk, and on one thread the engine's numbers for a query do not
depend on the queries batched with it, so which worker scores which chunk changes no score.
A worker that fails to open its model, or dies, stops the run with the worker's reason and the
parts already written are kept; a worker whose driver ends (killed with SIGKILL included) ends
within a second, whatever it was computing.
"""

from __future__ import annotations

import contextlib
import importlib.util
import multiprocessing
import os
import signal
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from types import TracebackType
from typing import Any, cast

from choiceaudit.audit._scoring import (
    chunk_outcome,
    outcome_result,
    score_as_one_chunk,
)
from choiceaudit.errors import InputError, ScorerError
from choiceaudit.scorers import MissingBackendError, PartialScoreError, Scorer
from choiceaudit.types import Decision, Query

__all__ = ["ProcessFanout", "hand_out", "start_worker_server", "worker_cpu_seconds"]

#: What the process that starts workers imports once (where they are installed), so a worker
#: starts with torch, the engine's scorers and the parts of transformers that load the built-in
#: models already imported instead of importing them again for every model opened.
#: transformers imports its submodules lazily, on first use: without the model, tokenizer and
#: loading modules here a worker spent about 2.6 s of a 3.2 s SmolLM2 open importing them (0.5 s
#: with them), on this project's machine. A module this transformers lacks is skipped.
_PRELOAD = (
    "torch",
    "transformers",
    "transformers.modeling_utils",
    "transformers.core_model_loading",
    "transformers.models.auto.modeling_auto",
    "transformers.models.auto.tokenization_auto",
    "transformers.tokenization_utils_tokenizers",
    "transformers.models.llama.modeling_llama",
    "transformers.models.gemma3.modeling_gemma3",
    "safetensors.torch",
    "choiceaudit.scorers._hf",
    "choiceaudit.scorers._lm_choice",
)


def _start_context() -> Any:
    """How workers start: forked from a clean server process that imported :data:`_PRELOAD`
    and has never run torch (so no thread pool is forked), where the platform has one; else a
    fresh interpreter each."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    top = {name.partition(".")[0] for name in _PRELOAD}
    present = {name for name in top if importlib.util.find_spec(name) is not None}
    context.set_forkserver_preload([m for m in _PRELOAD if m.partition(".")[0] in present])
    return context


def start_worker_server() -> None:
    """Start the server process workers fork from, without waiting for it: it imports
    :data:`_PRELOAD` on its own core while this process goes on (the demo builds its plans and
    runs its reference choosers meanwhile), so the first workers need not wait for the imports.
    Nothing to do where workers start as fresh interpreters."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return
    from multiprocessing import forkserver

    _start_context()  # sets what the server imports
    forkserver.ensure_running()


def hand_out(
    waiting: deque[int], load: list[int], bound: int, send: Callable[[int, int], None]
) -> None:
    """Give the waiting chunks, in order, each to the least-loaded worker (``load[w]``: its
    chunks in flight), while that worker holds fewer than ``bound``: ``send(worker, chunk)``.
    The one way both fan-outs, worker processes and Ray actors, share their chunks out."""
    while waiting:
        worker = min(range(len(load)), key=load.__getitem__)
        if load[worker] >= bound:
            return
        send(worker, waiting.popleft())
        load[worker] += 1


#: Exception types a worker's failure to open is raised as again in the driver, by name, so a
#: missing package or a bad option reads the same as it would in process.
_KNOWN = {cls.__name__: cls for cls in (InputError, ScorerError, MissingBackendError)}

#: CPU seconds the workers of every fan-out of this process reported (timing records add them
#: to the process's own CPU time, so a phase run in workers is not counted as free).
_WORKER_CPU = [0.0]
_WORKER_CPU_LOCK = threading.Lock()


def worker_cpu_seconds() -> float:
    """CPU seconds used so far by the worker processes of this process's fan-outs."""
    with _WORKER_CPU_LOCK:
        return _WORKER_CPU[0]


def _add_cpu(seconds: float) -> None:
    with _WORKER_CPU_LOCK:
        _WORKER_CPU[0] += seconds


def _set_threads(threads: int | None) -> None:
    if threads is None:
        return
    try:
        import torch
    except ImportError:  # a backend without torch: nothing to pin
        return
    torch.set_num_threads(threads)


#: How often a worker looks whether its driver still runs, where it cannot be told at once.
DRIVER_POLL_S = 0.5


def _driver_gone(pid: int) -> bool:
    """Whether process ``pid`` has ended: gone, or a zombie its parent has not yet reaped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # it exists, under another user: not ours, so ours is gone
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False  # no /proc: existing is all that can be known


def _watch_driver(pid: int) -> None:
    """End this worker as soon as the driver process ``pid`` has ended. A killed driver
    (SIGKILL runs no clean-up) closes its end of the pipe, but a worker learns that only when it
    next reads, after the chunks it holds: minutes of computing nobody will read. The worker
    writes nothing, so ending it at once loses nothing. A pidfd (Linux) wakes this thread the
    moment the driver ends; elsewhere it looks every :data:`DRIVER_POLL_S` seconds."""
    import select

    try:
        descriptor = os.pidfd_open(pid)
    except ProcessLookupError:
        os._exit(0)
    except (AttributeError, OSError):  # no pidfd on this platform or kernel
        while not _driver_gone(pid):
            time.sleep(DRIVER_POLL_S)
        os._exit(0)
    select.select([descriptor], [], [])
    os._exit(0)


def _worker_main(
    make_scorer: Callable[[], Scorer], threads: int | None, conn: Connection, driver: int
) -> None:
    """The worker body: open the scorer, say so (with its description), then score each chunk
    sent until told to stop, the driver's end of the pipe closes or the driver process
    ``driver`` ends (:func:`_watch_driver`). Every answer carries the CPU seconds used since
    the previous one."""
    threading.Thread(target=_watch_driver, args=(driver,), daemon=True).start()
    # Ctrl-C reaches the whole process group: the driver stops the workers itself
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if threads is not None:  # before anything imports torch, so its pools start this size
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[name] = str(threads)
    mark = time.process_time()

    def spent() -> float:
        nonlocal mark
        now = time.process_time()
        used, mark = now - mark, now
        return used

    try:
        scorer = make_scorer()
        _set_threads(threads)
        description = scorer.describe()
    except BaseException as exc:  # reported to the driver, which raises it there
        conn.send(("failed", type(exc).__name__, str(exc), traceback.format_exc(), spent()))
        return
    conn.send(("ready", description, os.getpid(), spent()))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):  # the driver is gone
            return
        if message is None:
            return
        index, queries = message
        try:
            answer: tuple[Any, ...] = ("chunk", index, chunk_outcome(scorer, queries))
        except Exception as exc:  # a bug in a scorer: its traceback goes to the driver
            answer = ("crash", index, f"{type(exc).__name__}: {exc}", traceback.format_exc())
        conn.send((*answer, spent()))


class ProcessFanout:
    """``with ProcessFanout(make_scorer, workers=2, threads=1) as fan: run_scoring(fan, queries,
    run, executor=fan.execute)``. ``make_scorer`` must be picklable (``functools.partial`` of
    :func:`~choiceaudit.scorers.load_scorer`); ``threads`` is each worker's torch thread count
    (``None``: torch's default). The fan-out is also the run's :class:`Scorer`: ``describe`` is
    the first worker's scorer description plus a ``processes`` entry, ``score`` runs on the
    workers."""

    def __init__(
        self,
        make_scorer: Callable[[], Scorer],
        *,
        workers: int,
        threads: int | None = None,
        in_flight_per_worker: int = 2,
        start_timeout_s: float = 600.0,
    ) -> None:
        if workers < 1:
            raise InputError(f"needs at least one worker process, got {workers}", field="workers")
        if threads is not None and threads < 1:
            raise InputError(
                f"threads per worker must be 1 or more, got {threads}", field="threads"
            )
        if in_flight_per_worker < 1:
            raise ScorerError("in_flight_per_worker must be >= 1")
        self.make_scorer = make_scorer
        self.requested_workers = workers
        self.threads = threads
        self.in_flight_per_worker = in_flight_per_worker
        self.start_timeout_s = start_timeout_s
        self.name = "process-fanout"
        self._processes: list[Any] = []
        self._conns: list[Connection] = []
        self._pids: list[int] = []
        self._chunks_by_worker: list[int] = []
        self._load: list[int] = []  # chunks sent to each worker and not yet answered
        self._description: dict[str, Any] | None = None

    # -- lifetime ------------------------------------------------------------------------------

    def __enter__(self) -> ProcessFanout:
        context = _start_context()
        try:
            for _ in range(self.requested_workers):
                mine, theirs = context.Pipe()
                process = context.Process(
                    target=_worker_main,
                    args=(self.make_scorer, self.threads, theirs, os.getpid()),
                    daemon=True,
                )
                process.start()
                theirs.close()
                self._processes.append(process)
                self._conns.append(mine)
            for worker in range(len(self._conns)):
                self._await_ready(worker)
        except BaseException:
            self._stop()
            raise
        self._chunks_by_worker = [0] * len(self._conns)
        self._load = [0] * len(self._conns)
        self.name = str(self.describe().get("name") or self.name)
        return self

    def _await_ready(self, worker: int) -> None:
        conn = self._conns[worker]
        if not conn.poll(self.start_timeout_s):
            raise ScorerError(
                f"worker process {worker} did not open its model within "
                f"{self.start_timeout_s:.0f} s"
            )
        try:
            answer = conn.recv()
        except (EOFError, OSError):
            raise ScorerError(self._death(worker, "while opening its model")) from None
        _add_cpu(answer[-1])
        if answer[0] == "failed":
            _, kind, message, trace, _ = answer
            known = _KNOWN.get(kind)
            if known is not None:
                raise known(message)
            raise ScorerError(
                f"worker process {worker} could not open its model: {kind}: {message}\n{trace}"
            )
        _, description, pid, _ = answer
        self._pids.append(pid)
        if worker == 0:
            self._description = dict(description)

    def _death(self, worker: int, when: str) -> str:
        process = self._processes[worker]
        process.join(timeout=5)
        code = process.exitcode
        how = (
            "still running"
            if code is None
            else f"killed by signal {-code}"
            if code < 0
            else f"exit code {code}"
        )
        return (
            f"worker process {worker} (pid {process.pid}) died {when} ({how}); the parts already "
            "written are kept and a resume scores the rest"
        )

    def _drain(self) -> None:
        """Wait out the answers to chunks of an earlier ``execute`` that was closed before they
        came back, so they are never taken for this call's chunks."""
        for worker, conn in enumerate(self._conns):
            while self._load[worker]:
                try:
                    answer = conn.recv()
                except (EOFError, OSError):
                    raise ScorerError(self._death(worker, "while finishing a chunk")) from None
                self._load[worker] -= 1
                _add_cpu(answer[-1])

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop()

    def _stop(self) -> None:
        for conn in self._conns:
            with contextlib.suppress(OSError, BrokenPipeError):
                conn.send(None)
        for process in self._processes:
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()
                process.join(timeout=5)
        for conn in self._conns:
            conn.close()
        self._processes, self._conns = [], []

    @property
    def workers(self) -> int:
        return len(self._conns)

    # -- the Scorer protocol -------------------------------------------------------------------

    @property
    def pids(self) -> tuple[int, ...]:
        """The worker processes' ids, in worker order (empty outside the ``with`` block)."""
        return tuple(self._pids)

    def describe(self) -> dict[str, Any]:
        if self._description is None:
            raise ScorerError("ProcessFanout is used outside its `with` block")
        description = dict(self._description)
        description["processes"] = {
            "workers": self.workers,
            "threads_per_worker": self.threads,
            "chunks_by_worker": list(self._chunks_by_worker),
            "described_by": "worker 0",
        }
        return description

    def score(self, queries: Sequence[Query]) -> list[Decision]:
        return score_as_one_chunk(self.execute, queries)

    # -- the executor --------------------------------------------------------------------------

    def execute(
        self, chunks: Sequence[Sequence[Query]]
    ) -> Iterator[tuple[int, list[Decision | None] | PartialScoreError]]:
        """Score ``chunks`` on the workers, at most ``in_flight_per_worker`` per worker; yield
        each chunk as it returns. A worker's error stops the run (after what it returned)."""
        if not self._conns:
            raise ScorerError("ProcessFanout is used outside its `with` block")
        self._drain()
        waiting = deque(range(len(chunks)))
        load = self._load

        def send(worker: int, index: int) -> None:
            self._conns[worker].send((index, list(chunks[index])))

        def submit() -> None:
            hand_out(waiting, load, self.in_flight_per_worker, send)

        submit()
        while any(load):
            busy = [self._conns[w] for w in range(len(load)) if load[w]]
            for conn in cast(list[Connection], wait(busy)):
                worker = self._conns.index(conn)
                try:
                    answer: tuple[Any, ...] = conn.recv()
                except (EOFError, OSError):
                    raise ScorerError(self._death(worker, "while scoring")) from None
                load[worker] -= 1
                _add_cpu(answer[-1])
                kind, index = answer[0], answer[1]
                if kind == "crash":
                    raise ScorerError(
                        f"worker process {worker} failed scoring chunk {index}: {answer[2]}\n"
                        f"{answer[3]}"
                    )
                result = outcome_result(answer[2])  # a scorer's error is raised here
                self._chunks_by_worker[worker] += 1
                yield index, result
                submit()
