"""Concurrent runs sharing one ledger file cannot reserve past a budget: threads and processes."""

from __future__ import annotations

import multiprocessing
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ledger_workers import LIMITS, UNIT_MICROS, hammer

from sandbox_agent.ledger import Ledger
from sandbox_agent.ledger.store import usd_to_micros

CAPACITY = usd_to_micros(LIMITS.experiment_budget_usd) // UNIT_MICROS


def committed_micros(ledger: Ledger) -> int:
    (spend,) = ledger.summary("shared")
    return round((spend.reserved_usd + spend.settled_usd) * 1_000_000)


def test_threads_cannot_overspend(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.sqlite3")
    watching = threading.Event()
    watching.set()
    peaks: list[int] = []

    def watch() -> None:
        while watching.is_set():
            summary = ledger.summary("shared")
            if summary:
                peaks.append(committed_micros(ledger))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            granted = list(pool.map(hammer, [str(ledger.path)] * 8, range(8), range(8)))
    finally:
        watching.clear()
        watcher.join()

    assert sum(granted) == CAPACITY  # all of the budget, and not one reservation more
    assert committed_micros(ledger) == CAPACITY * UNIT_MICROS
    assert max(peaks, default=0) <= usd_to_micros(LIMITS.experiment_budget_usd)


def test_processes_cannot_overspend(tmp_path: Path) -> None:
    path = str(tmp_path / "ledger.sqlite3")
    Ledger(Path(path))
    # spawn, not fork: forking a process that runs threads (pytest's) is unsafe.
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        granted = pool.starmap(hammer, [(path, worker, worker) for worker in range(4)])

    assert sum(granted) == CAPACITY
    assert committed_micros(Ledger(Path(path))) == CAPACITY * UNIT_MICROS
