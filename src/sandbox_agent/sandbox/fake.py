"""A fake sandbox backend for tests: a real ``SandboxBackend`` that returns scripted results.

Ship the double (STYLE.md): the controller and the tools are tested against this, not
against patched internals. It runs nothing; it records every request, honours
cancellation the way a real backend must (nothing created when already cancelled),
and answers each run with the next scripted result (or a function of the request).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from typing_extensions import override

from sandbox_agent.sandbox.base import (
    CancelToken,
    RunnerReport,
    Runtime,
    SandboxBackend,
    SandboxRequest,
    SandboxResult,
)

ScriptedResult = SandboxResult | Callable[[SandboxRequest], SandboxResult]


class FakeBackend(SandboxBackend):
    """Answers each ``run`` with the next scripted result; refuses once the script runs out."""

    def __init__(self, results: Iterable[ScriptedResult] = ()) -> None:
        """Args:
        results: one result (or a function of the request) per expected run, in order.
        """
        self._script = list(results)
        self.requests: list[SandboxRequest] = []
        """Every request received, in order."""
        self.closed = False

    def add(self, *results: ScriptedResult) -> None:
        """Append more scripted results."""
        self._script.extend(results)

    @override
    def run(self, request: SandboxRequest, cancel: CancelToken | None = None) -> SandboxResult:
        self.requests.append(request)
        if cancel is not None and (cancel.cancelled or cancel.deadline_passed()):
            return SandboxResult(
                status="cancelled",
                reason="cancelled before anything was created",
                started=False,
                runtime=request.runtime,
            )
        if not self._script:
            return refused("the fake backend has no scripted result left", request.runtime)
        scripted = self._script.pop(0)
        result = scripted(request) if callable(scripted) else scripted
        return result.model_copy(update={"runtime": request.runtime})

    @override
    def reap(self) -> list[str]:
        return []

    @override
    def close(self) -> None:
        self.closed = True


def completed(
    *,
    exit_code: int = 0,
    tests_run: int = 1,
    failures: int = 0,
    errors: int = 0,
    skipped: int = 0,
    runner: str = "unittest",
    output: bytes = b"",
    report: bool = True,
    runtime: Runtime = "runc",
) -> SandboxResult:
    """A verified, attested, completed run with the given exit code and runner report."""
    runner_report = (
        RunnerReport(
            runner=runner, tests_run=tests_run, failures=failures, errors=errors, skipped=skipped
        )
        if report
        else None
    )
    return SandboxResult(
        status="completed",
        reason=f"exited {exit_code}",
        started=True,
        runtime=runtime,
        attested=True,
        exit_report_valid=True,
        exit_code=exit_code,
        output=output,
        runner_report=runner_report,
        cleanup="removed",
    )


def refused(reason: str, runtime: Runtime = "runc") -> SandboxResult:
    """A run that could not be verified."""
    return SandboxResult(status="refused", reason=reason, started=False, runtime=runtime)
