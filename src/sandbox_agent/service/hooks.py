"""The service's links to other parts of the host: preflight status and the reapers.

Each is looked up when called, so the service starts (and reports "unknown") on a
host or a version where that part is missing, and never fails because of it.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from sandbox_agent.service.models import PreflightStatus

log = logging.getLogger(__name__)

PreflightFunction = Callable[[], PreflightStatus]
ReapFunction = Callable[[], list[str]]


def _find(candidates: tuple[tuple[str, str], ...]) -> Callable[..., Any] | None:
    for module_name, attribute in candidates:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        found = getattr(module, attribute, None)
        if callable(found):
            return found  # type: ignore[no-any-return]
    return None


def default_preflight() -> PreflightStatus:
    """Run the host's preflight checks when that code is present; "unknown" otherwise."""
    check = _find(
        (
            ("sandbox_agent.commands.preflight", "preflight_report"),
            ("sandbox_agent.sandbox.preflight", "preflight_report"),
            ("sandbox_agent.sandbox.preflight", "run_preflight"),
        )
    )
    if check is None:
        return PreflightStatus(status="unknown", detail="preflight is not available in this build")
    try:
        report = check()
    except Exception as error:  # preflight failing to run is a finding, not a server error
        return PreflightStatus(status="failed", detail=f"{type(error).__name__}: {error}"[:500])
    data: dict[str, Any] = report.model_dump() if hasattr(report, "model_dump") else dict(report)
    checks = data.get("checks") or []
    ok = bool(data.get("ok", checks and all(item.get("ok") for item in checks)))
    failed = [str(item.get("name")) for item in checks if not item.get("ok")]
    detail = "all checks passed" if ok else "failed: " + ", ".join(failed)
    return PreflightStatus(status="ok" if ok else "failed", detail=detail, report=data)


def default_reap() -> list[str]:
    """Remove the sandboxes and workspaces that crashed runs left behind, with what is present."""
    removed: list[str] = []
    for module_name, attribute in (
        ("sandbox_agent.workspace", "reap_workspaces"),
        ("sandbox_agent.sandbox", "reap_sandboxes"),
        ("sandbox_agent.sandbox.docker", "reap_sandboxes"),
    ):
        reaper = _find(((module_name, attribute),))
        if reaper is None:
            continue
        try:
            removed.extend(str(item) for item in reaper())
        except Exception:  # one reaper failing must not stop the other
            log.exception("reaper %s.%s failed", module_name, attribute)
    return removed


PREFLIGHT_CACHE_S = 30.0


class PreflightCache:
    """Runs the preflight check at most once per ``PREFLIGHT_CACHE_S``."""

    def __init__(self, check: PreflightFunction) -> None:
        self._check = check
        self._lock = threading.Lock()
        self._value: PreflightStatus | None = None
        self._at = 0.0

    def get(self) -> PreflightStatus:
        with self._lock:  # one check at a time: it may talk to the Docker daemon
            if self._value is None or time.monotonic() - self._at > PREFLIGHT_CACHE_S:
                self._value = self._check()
                self._at = time.monotonic()
            return self._value
