"""The service's links to the rest of the host: preflight status and the reapers."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sandbox_agent.sandbox.base import Runtime
from sandbox_agent.service.models import PreflightStatus

log = logging.getLogger(__name__)

PreflightFunction = Callable[[], PreflightStatus]
ReapFunction = Callable[[], list[str]]


def default_preflight(runtime: Runtime) -> PreflightStatus:
    """``sandbox-agent preflight``'s checks for ``runtime``, summarised."""
    try:
        from sandbox_agent.sandbox.docker.preflight import run_preflight

        report = run_preflight(runtime)
    except Exception as error:  # a check that cannot run is a finding, not a server error
        return PreflightStatus(status="unknown", detail=f"{type(error).__name__}: {error}"[:500])
    failed = [check.name for check in report.checks if not check.ok]
    detail = "all checks passed" if report.ok else "failed: " + ", ".join(failed)
    return PreflightStatus(
        status="ok" if report.ok else "failed", detail=detail, report=report.model_dump()
    )


def default_reap() -> list[str]:
    """``sandbox-agent reap``: remove containers and workspaces whose owner process is gone.

    Raises:
        DockerUnavailable: the daemon does not answer.
    """
    from sandbox_agent.workspace.reap import reap_all

    removed, failures = reap_all()
    for failure in failures:
        log.warning("not reaped: %s", failure)
    return removed


PREFLIGHT_CACHE_S = 30.0


class PreflightCache:
    """Runs the preflight check at most once per ``PREFLIGHT_CACHE_S``, one at a time.

    While a check runs (it talks to the Docker daemon, up to its own timeouts), other
    callers get the last result, or ``unknown``, at once: they used to wait for it, each
    on one of the server's worker threads (SR-8 S8-10).
    """

    def __init__(self, check: PreflightFunction) -> None:
        self._check = check
        self._lock = threading.Lock()
        self._value: PreflightStatus | None = None
        self._at = 0.0

    def get(self) -> PreflightStatus:
        if not self._lock.acquire(blocking=False):
            return self._value or PreflightStatus(
                status="unknown", detail="a preflight check is running: ask again shortly"
            )
        try:
            if self._value is None or time.monotonic() - self._at > PREFLIGHT_CACHE_S:
                self._value = self._check()
                self._at = time.monotonic()
            return self._value
        finally:
            self._lock.release()
