"""A fake sandbox backend for tests: a real ``SandboxBackend`` that returns scripted results.

Ship the double (a test double ships with the code it stands in for): the controller
and the tools are tested against this, not against patched internals. It runs nothing;
it records every request, honours cancellation the way a real backend must (nothing
created when already cancelled), and answers each run with the next scripted result
(or a function of the request).
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
from sandbox_supervisor.run_tests import COLLECT_ONLY
from sandbox_supervisor.spectrum import SPECTRUM_ARG

ScriptedResult = SandboxResult | Callable[[SandboxRequest], SandboxResult]


class FakeBackend(SandboxBackend):
    """Answers each ``run`` with the next scripted result; refuses once the script runs out."""

    def __init__(
        self,
        results: Iterable[ScriptedResult] = (),
        *,
        collected: ScriptedResult | None = None,
        spectrum: ScriptedResult | None = None,
    ) -> None:
        """Args:
        results: one result (or a function of the request) per expected run, in order.
        collected: the answer to every collect-only run (the controller's baseline of the
            original's test ids, made in the background); a suite of no tests by default.
            These runs take nothing from ``results`` and are listed in ``collect_requests``.
        spectrum: the answer to every spectrum run (the repair strategy's localisation
            hint, ``run_tests RUNNER --spectrum``); by default one that prints none.
            These runs take nothing from ``results`` either (``spectrum_requests``).
        """
        self._script = list(results)
        self._collected = collected or _no_tests
        self.requests: list[SandboxRequest] = []
        """Every request received, in order (collect-only runs apart)."""
        self.collect_requests: list[SandboxRequest] = []
        self._spectrum = spectrum or _no_spectrum
        self.spectrum_requests: list[SandboxRequest] = []
        self.closed = False

    def add(self, *results: ScriptedResult) -> None:
        """Append more scripted results."""
        self._script.extend(results)

    @override
    def run(self, request: SandboxRequest, cancel: CancelToken | None = None) -> SandboxResult:
        # the controller's own side runs: answered apart, never from the script
        side = {
            COLLECT_ONLY: (self._collected, self.collect_requests),
            SPECTRUM_ARG: (self._spectrum, self.spectrum_requests),
        }.get(request.argv[-1])
        if side is not None:
            scripted, seen = side
            seen.append(request)
            result = scripted(request) if callable(scripted) else scripted
            return result.model_copy(update={"runtime": request.runtime})
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
    ids: list[str] | None = None,
) -> SandboxResult:
    """A verified, attested, completed run with the given exit code and runner report
    (with the ids of the tests that ran, when ``ids`` is given)."""
    runner_report = (
        RunnerReport(
            runner=runner,
            tests_run=tests_run,
            failures=failures,
            errors=errors,
            skipped=skipped,
            mode=None if ids is None else "run",
            ids=None if ids is None else tuple(ids),
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


def collected_ids(
    ids: list[str], *, broken: list[str] | None = None, runner: str = "unittest"
) -> SandboxResult:
    """A completed collect-only run that found ``ids`` (and could not import ``broken``)."""
    return completed(exit_code=0, tests_run=0, runner=runner).model_copy(
        update={
            "runner_report": RunnerReport(
                runner=runner,
                tests_run=0,
                failures=0,
                errors=0,
                mode="collect",
                ids=tuple(ids),
                broken=tuple(broken or ()),
            )
        }
    )


def _no_tests(request: SandboxRequest) -> SandboxResult:
    """The default collect-only answer: the runner asked for found no test."""
    return collected_ids([], runner=request.argv[-2])


def _no_spectrum(request: SandboxRequest) -> SandboxResult:
    """The default spectrum answer: the suite ran and printed no spectrum (no hint)."""
    return completed(exit_code=1, failures=1, runner=request.argv[-2])
