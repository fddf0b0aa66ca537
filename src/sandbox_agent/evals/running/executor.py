"""Many runs of an evaluation on this machine: every case ``repeats`` times, ``jobs`` at
once, each run kept in the journal as it finishes and not run again when it holds it.

Threads are enough: the work happens in containers. Each worker thread has its own
sandbox backend. Every (case, repeat) is one run and one record; nothing is averaged.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from sandbox_agent.evals.results.journal import Journal
from sandbox_agent.evals.results.records import RunRecord
from sandbox_agent.evals.running.one_run import run_case
from sandbox_agent.evals.running.options import BackendFactory, EvalOptions, RunTaskFn
from sandbox_agent.evals.running.progress import ProgressBar
from sandbox_agent.evals.tasks.cases import EvalCase
from sandbox_agent.sandbox.base import CancelToken, SandboxBackend

SIGNAL_POLL_S = 0.2
"""How often the main thread, waiting for runs, wakes to let a Ctrl-C through."""


def _kept(
    cases: Sequence[EvalCase],
    work: list[tuple[int, int]],
    journal: Journal | None,
    progress: ProgressBar | None,
) -> dict[tuple[int, int], RunRecord]:
    """The runs the journal already holds (resumed), counted on the progress bar."""
    kept: dict[tuple[int, int], RunRecord] = {}
    if journal is None:
        return kept
    for index, repeat in work:
        record = journal.finished(cases[index], repeat)
        if record is not None:
            kept[index, repeat] = record
            if progress is not None:
                progress.advance(record.passed)
    for why, count in sorted(journal.not_reused.items()):
        print(f"resume: {count} journal line(s) not used (a run without a usable line runs "
              f"again): {why}", file=sys.stderr)  # fmt: skip
    return kept


def run_all(
    cases: Sequence[EvalCase],
    options: EvalOptions,
    *,
    backend_factory: BackendFactory,
    run_task: RunTaskFn,
    progress: ProgressBar | None = None,
    journal: Journal | None = None,
) -> list[RunRecord]:
    """Run every case ``options.repeats`` times, up to ``options.jobs`` at once.

    Records come back in (case, repeat) order. Ctrl-C cancels every run in flight. With
    a ``journal``, a run it already holds is not run again, and each run is added to it
    as it finishes.

    Raises:
        UsageError: a case cannot run here.
        SetupError: the host lacks what the runs need.
    """
    local = threading.local()
    backends: list[SandboxBackend] = []
    backends_lock = threading.Lock()
    stopping = threading.Event()
    in_flight: set[CancelToken] = set()

    def backend() -> SandboxBackend:
        if not hasattr(local, "backend"):
            local.backend = backend_factory()
            with backends_lock:
                backends.append(local.backend)
        made: SandboxBackend = local.backend
        return made

    def one(index: int, repeat: int) -> RunRecord:
        # One token per run: the controller sets the run's own deadline on it.
        cancel = CancelToken()
        with backends_lock:
            if stopping.is_set():
                cancel.cancel()
            in_flight.add(cancel)
        try:
            inputs = journal.inputs(cases[index])[0] if journal is not None else None
            return run_case(
                cases[index], repeat, options, backend(), run_task, cancel=cancel, inputs=inputs
            )
        finally:
            with backends_lock:
                in_flight.discard(cancel)

    work = [(index, repeat) for index in range(len(cases)) for repeat in range(options.repeats)]
    records = _kept(cases, work, journal, progress)
    pool = ThreadPoolExecutor(max_workers=options.jobs, thread_name_prefix="eval")
    try:
        futures: dict[Future[RunRecord], tuple[int, int]] = {
            pool.submit(one, index, repeat): (index, repeat)
            for index, repeat in work
            if (index, repeat) not in records
        }
        pending = set(futures)
        while pending:
            # In short steps: a Ctrl-C that a worker thread takes sets Python's flag but
            # does not wake a main thread blocked without a time-out.
            done, pending = wait(pending, timeout=SIGNAL_POLL_S, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=futures.__getitem__):
                record = future.result()
                records[futures[future]] = record
                if journal is not None:
                    journal.append(cases[futures[future][0]], record)
                if progress is not None:
                    progress.advance(record.passed)
    except BaseException:
        with backends_lock:
            stopping.set()
            for token in in_flight:
                token.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)
        if progress is not None:
            progress.close()
        for made in backends:
            made.close()
    return [records[key] for key in work]
