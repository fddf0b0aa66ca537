"""Pre-started sandboxes: created, verified, started and attested before they are needed.

A sandbox run pays for a container start (~200 ms under runc, ~300 ms under runsc on
the 2-core machines here) and PID 1's attestation before the workload can begin. When
the next request is known ahead (the tool box's whole-suite ``run_tests``), the backend
does all of that in the background, exactly as for a run: create from the one spec,
inspect and verify, attach, start, and read PID 1's attestation, which the host checks
as it checks every attestation. Then it holds: PID 1 forks nothing until the host's go
(``protocol.GO``), and gives up by itself after ``go_timeout_s``. The run that takes the
sandbox sends the go, and the workload's deadline starts there. Same container, same
checks, same evidence; only when they happen moves.

Rules, each tested (``tests/sandbox/conformance/test_sandbox_prestart.py``):

- a pre-started sandbox serves only a request equal to the one it was made for;
- one past its go timeout (less a margin) is never used, only discarded;
- a failure while pre-starting is dropped: the run then starts cold and reports
  whatever goes wrong there, as any run does;
- ``discard`` closes PID 1's stdin (it exits having run nothing) and removes each
  container, waiting for one still starting; its cleanup failures are returned.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Protocol

from sandbox_agent.sandbox.base import CancelToken, PreparedSandbox, SandboxRequest, SandboxResult
from sandbox_agent.sandbox.docker.waiting import StartedSandbox, read_frames

DEFAULT_PRESTARTED = 1
"""Sandboxes the ``run`` command keeps ready (``--prestart N``; 0 turns it off)."""
GO_MARGIN_S = 5.0
"""A pre-started sandbox this close to its go timeout is discarded, not used."""
TAKE_POLL_S = 0.05
"""How often a run waiting for a sandbox still starting checks its cancellation."""
DISCARD_WAIT_S = 60.0
"""The longest ``discard`` waits for a pre-start still under way (Docker's own time-outs
end one sooner)."""


class StartingBackend(Protocol):
    """What pre-starting needs of its backend: the phases before the go, and removal.

    ``docker_backend.DockerBackend`` is one; a Protocol, so this module does not import
    the backend that imports it (issue 31).
    """

    @property
    def api(self) -> Any: ...

    def prepare(
        self, request: SandboxRequest, cancel: CancelToken | None = None
    ) -> PreparedSandbox | SandboxResult: ...

    def start(
        self, prepared: PreparedSandbox, cancel: CancelToken | None = None
    ) -> StartedSandbox | SandboxResult: ...

    def remove(self, container_id: str) -> str: ...


class _Slot:
    """One pre-start: its request, and once done, the ready sandbox (or nothing)."""

    def __init__(self, request: SandboxRequest) -> None:
        self.request = request
        self.done = threading.Event()
        self.started: StartedSandbox | None = None
        self.ready_at = 0.0


class Prestarter:
    """At most ``size`` pre-started sandboxes of one backend, each for one exact request."""

    def __init__(self, backend: StartingBackend, size: int, go_timeout_s: float) -> None:
        self._backend = backend
        self._size = size
        self._go_timeout_s = go_timeout_s
        self._lock = threading.Lock()
        self._slots: list[_Slot] = []
        self._stop = CancelToken()
        self.failures: list[str] = []
        """Cleanup failures of discarded sandboxes, for the caller to report."""

    def offer(self, request: SandboxRequest, count: int = 1) -> None:
        """Have ``count`` sandboxes for ``request`` made in the background, counting those
        already waiting for it, as far as there is room."""
        with self._lock:
            if self._stop.cancelled:
                return
            waiting = sum(slot.request == request for slot in self._slots)
            wanted = min(count - waiting, self._size - len(self._slots))
            slots = [_Slot(request) for _ in range(max(wanted, 0))]
            self._slots.extend(slots)
        for slot in slots:
            threading.Thread(
                target=self._prestart, args=(slot,), name="sandbox-prestart", daemon=True
            ).start()

    def take(self, request: SandboxRequest, cancel: CancelToken) -> StartedSandbox | None:
        """The ready sandbox for ``request``, waiting for one still starting; else None.

        None also when ``cancel`` fires while waiting (the sandbox stays, to be
        discarded), or when the one found is too old to use (it is discarded).
        """
        with self._lock:
            slot = next((s for s in self._slots if s.request == request), None)
            if slot is None:
                return None
        while not slot.done.wait(TAKE_POLL_S):
            if cancel.cancelled or cancel.deadline_passed():
                return None
        with self._lock:
            if slot not in self._slots:
                return None
            self._slots.remove(slot)
        started = slot.started
        if started is None:
            return None
        if time.monotonic() - slot.ready_at > self._go_timeout_s - GO_MARGIN_S:
            self._discard(started)
            return None
        return started

    def discard(self) -> list[str]:
        """Discard every pre-started sandbox, and stop making new ones until ``reopen``."""
        self._stop.cancel()
        with self._lock:
            slots, self._slots = self._slots, []
        for slot in slots:
            slot.done.wait(DISCARD_WAIT_S)
            if slot.started is not None:
                self._discard(slot.started)
        failures, self.failures = self.failures, []
        return failures

    def reopen(self) -> None:
        """Allow pre-starts again after ``discard``."""
        self._stop = CancelToken()

    def _prestart(self, slot: _Slot) -> None:
        backend, stop = self._backend, self._stop
        started: StartedSandbox | None = None
        try:
            prepared = backend.prepare(slot.request, stop)
            if isinstance(prepared, SandboxResult):
                return  # refused or stopped: nothing left behind
            outcome = backend.start(prepared, stop)
            if isinstance(outcome, SandboxResult):
                return
            started = outcome
            read_frames(backend.api, started, stop, hold=True)
            if started.ready and not stop.cancelled:
                slot.started, slot.ready_at = started, time.monotonic()
                started = None
        except Exception:  # noqa: S110 - a failed pre-start only means a cold start later
            pass
        finally:
            if started is not None:
                self._discard(started)
            slot.done.set()

    def _discard(self, started: StartedSandbox) -> None:
        started.withhold()
        started.close()
        cleanup = self._backend.remove(started.prepared.container_id)
        if cleanup != "removed":
            self.failures.append(f"{started.prepared.container_id[:12]}: {cleanup}")
