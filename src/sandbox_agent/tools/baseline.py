"""The baseline: which tests the original repository had, so the final verdict covers them.

A hostile tree can steer what the runner collects without touching a protected file (a
package's ``load_tests``, a module-level skip in the code under test, a deleted
``__init__.py``, files that make pytest skip a folder). So, at the start of a run, the
controller collects the original tree's suite (``run_tests RUNNER --collect-only`` on the
pristine copy, ``base/``, mounted read-only) in a background thread while the model
thinks; before the final verdict it joins that run and requires the final run to have run
every test id the original collected, and at least one test of every module the original
could not import (issue 20, SR-8 C8-1).

The ids come from the trusted runner, which shares its process with the code under test:
code under test can still forge the final run's report (the SR-2 residual). What this
closes is the honest runner being steered into not running the tests.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import NamedTuple

from sandbox_agent.policy import RunnerCommand, collect_command, runner_command
from sandbox_agent.sandbox.base import (
    CancelToken,
    EnvironmentMount,
    RunnerReport,
    Runtime,
    SandboxBackend,
    SandboxLimits,
    SandboxRequest,
    SandboxResult,
)

BASELINE_LABEL = "baseline"
FAILED_IMPORT = "unittest.loader._FailedTest."
"""The id unittest gives, in a run, to a test module it could not import (a collect-only
run reports the module as ``broken`` instead)."""
MISSING_SHOWN = 5
"""Missing ids named in the reason; the count says how many there are."""


class BaselineCheck(NamedTuple):
    """The final run against the baseline: None when it covers it, else why not."""

    tests: int
    """Test ids the original collected (0 when no baseline could be had)."""
    missing: tuple[str, ...]
    """Those the final run did not run (and ``broken:<module>`` for modules none of whose
    tests ran), all of them."""
    reason: str | None
    """One line; None when the final run covers the baseline."""


class Baseline:
    """One collect-only run of the original tree, started now, joined when it is needed."""

    def __init__(
        self,
        original: Path,
        runner: str,
        sandbox: SandboxBackend,
        *,
        runtime: Runtime,
        limits: SandboxLimits,
        cancel: CancelToken | None,
        environment: EnvironmentMount | None = None,
    ) -> None:
        """Start the collect-only run of ``original`` (a workspace's pristine copy,
        ``Workspace.base``, or an evaluation's pristine tree) in a background thread,
        with the repository's dependency environment as every other run has it (without
        it a test module that imports a dependency is not collected, and its tests are
        not required: SR-14 F1).

        Raises:
            ToolDenied: ``command.not_allowlisted`` for an unknown runner.
        """
        self.runner = runner
        self._sandbox = sandbox

        def request(command: RunnerCommand) -> SandboxRequest:
            return SandboxRequest(
                argv=command.argv,
                workspace=original,
                runtime=runtime,
                limits=limits,
                workload_env=command.workload_env,
                labels={"sandbox-agent.purpose": BASELINE_LABEL},
                environment=environment,
            )

        self._request = request(collect_command(runner))
        self._run_request = request(runner_command(runner))
        """The original's whole suite, run only when the final run skipped tests it has, or
        the collect-only run could not import a test module."""
        # Its own token: the run's cancellation and deadline reach it, and the run can
        # stop it alone when the verdict will not be needed.
        self._cancel = CancelToken(parent=cancel)
        self._result: SandboxResult | None = None
        self._original: SandboxResult | None = None
        """The original's own run (``_original_run``), once made."""
        self._error: BaseException | None = None
        self.waited_ms = 0.0
        """How long ``result`` waited for the run: the baseline's cost on the critical path."""
        self._thread = threading.Thread(target=self._run, args=(sandbox,), name="baseline")
        self._thread.start()

    def _run(self, sandbox: SandboxBackend) -> None:
        try:
            self._result = sandbox.run(self._request, self._cancel)
        except BaseException as error:  # re-raised in the caller's thread by ``result``
            self._error = error

    def result(self) -> SandboxResult:
        """Wait for the collect-only run (bounded by its own sandbox limits, cancellation
        and the run's deadline).

        Raises:
            InfrastructureError: the sandbox backend could not be reached.
        """
        began = time.monotonic()
        self._thread.join()
        self.waited_ms += (time.monotonic() - began) * 1000
        if self._error is not None:
            raise self._error
        assert self._result is not None  # noqa: S101 - set whenever no error was
        return self._result

    def stop(self) -> None:
        """Cancel the collect-only run if it still runs, and wait for it to end (its
        sandbox removed) before the workspace goes."""
        self._cancel.cancel()
        self._thread.join()

    def collected(self) -> tuple[str, ...] | None:
        """The test ids the original collected (waiting for the collect-only run); None
        when it gave none in full (ended otherwise, no report, another runner).

        Raises:
            InfrastructureError: the sandbox backend could not be reached.
        """
        baseline = self.result()
        report = baseline.runner_report
        if baseline.status != "completed" or not baseline.attested or report is None:
            return None
        if report.runner != self.runner or report.mode != "collect" or report.ids is None:
            return None
        return report.ids

    def check(self, final: SandboxResult) -> BaselineCheck:
        """Whether ``final`` (the final run, fresh or reused) ran every test the original
        collected. Fails closed: no baseline, or no ids, is a failed check. A test module
        the collect-only run could not import has its tests listed by a run of the
        original instead (SR-14 F3: an import that fails only when collected, or one time
        in two, left its tests unlisted and their skips unchecked).

        Raises:
            InfrastructureError: the sandbox backend could not be reached.
        """
        baseline = self.result()
        report = baseline.runner_report
        if baseline.status != "completed" or not baseline.attested or report is None:
            why = report is None and baseline.status == "completed"
            detail = "it wrote no report" if why else f"it ended '{baseline.status}'"
            return _failed(0, f"the original's tests could not be collected ({detail})")
        if report.runner != self.runner or report.mode != "collect" or report.ids is None:
            return _failed(0, "the original's test ids could not be collected in full")
        if not report.ids and not report.broken:
            return BaselineCheck(0, (), None)  # the original had no test: nothing to cover
        ran_report = final.runner_report
        if ran_report is None or ran_report.mode != "run" or ran_report.ids is None:
            return _failed(len(report.ids), "the final run did not report the tests it ran")
        collected, broken = report.ids, report.broken
        if broken:
            listed = self._original_run()
            if isinstance(listed, str):
                modules = ", ".join(broken[:MISSING_SHOWN])
                return _failed(
                    len(collected),
                    f"the original's collect-only run could not import {modules}, and its "
                    f"own run, which would list their tests, {listed}",
                )
            ids = listed.ids or ()
            run_ids = [test for test in ids if not test.startswith(FAILED_IMPORT)]
            still = {test.removeprefix(FAILED_IMPORT) for test in ids if test not in run_ids}
            collected = tuple(dict.fromkeys([*collected, *run_ids]))
            broken = tuple(m for m in broken if m in listed.broken or m in still)
        ran = set(ran_report.ids)
        missing = [test for test in collected if test not in ran]
        missing += [
            f"broken:{module}"
            for module in broken
            if not any(test.startswith(_prefixes(module)) for test in ran)
        ]
        if missing:
            reason = f"{_count(missing)} of the original suite did not run: {_listed(missing)}"
            return BaselineCheck(len(collected), tuple(missing), reason[:2000])
        return self._check_skips(collected, broken, ran_report)

    def _original_run(self) -> RunnerReport | str:
        """The original's own run of its whole suite, on its read-only copy, made once and
        only when needed: its report, or why it has none to give in full."""
        if self._original is None:
            self._original = self._sandbox.run(self._run_request, self._cancel)
        original = self._original
        report = original.runner_report
        if original.status != "completed" or not original.attested or report is None:
            return f"ended '{original.status}'"
        if report.runner != self.runner or report.mode != "run" or report.skipped_ids is None:
            return "did not list its tests and skips in full"
        return report

    def _check_skips(
        self, collected: tuple[str, ...], broken: tuple[str, ...], final: RunnerReport
    ) -> BaselineCheck:
        """Whether the final run skipped only tests the original skips too (SR-13 F1: code
        under test that raises ``SkipTest``, ``pytest.skip`` or ``pytest.xfail`` turns its
        failing test into a skip). The original's suite is run, on its read-only copy,
        only when the final run skipped a test it collected. A skip in a module no run of
        the original could import is no pass: nothing says the original skips it."""
        tests = len(collected)
        if final.skipped_ids is None:
            if final.skipped == 0:
                return BaselineCheck(tests, (), None)
            return _failed(tests, "the final run did not report which tests it skipped")
        known = set(collected)
        skipped = [test for test in final.skipped_ids if test in known]
        unknown = [
            f"skipped:{test}"
            for test in final.skipped_ids
            if test not in known and any(test.startswith(_prefixes(m)) for m in broken)
        ]
        if unknown:
            reason = (
                f"{_count(unknown)} skipped in modules the original could not import "
                f"({_listed(unknown)}): nothing says the original skips them, and a skip is "
                "not a pass"
            )
            return BaselineCheck(tests, tuple(unknown), reason[:2000])
        if not skipped:
            return BaselineCheck(tests, (), None)
        report = self._original_run()
        if isinstance(report, str):
            return _failed(
                tests,
                f"the final run skipped {_count(skipped)} of the original suite, and the "
                f"original's own run, which would say whether it skips them too, {report}",
            )
        allowed = set(report.skipped_ids or ())
        new = [f"skipped:{test}" for test in skipped if test not in allowed]
        if not new:
            return BaselineCheck(tests, (), None)
        reason = (
            f"{_count(new)} of the original suite skipped, which the original runs: "
            f"{_listed(new)} (a skip is not a pass)"
        )
        return BaselineCheck(tests, tuple(new), reason[:2000])


def _count(tests: list[str]) -> str:
    return f"{len(tests)} test{'s' if len(tests) != 1 else ''}"


def _listed(tests: list[str]) -> str:
    """The first ``MISSING_SHOWN`` ids, without their ``skipped:`` mark, and how many more."""
    shown = ", ".join(test.removeprefix("skipped:") for test in tests[:MISSING_SHOWN])
    more = len(tests) - MISSING_SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


def _prefixes(module: str) -> tuple[str, ...]:
    """Ids of tests inside ``module``: a unittest module name or a pytest collector id."""
    return (f"{module}.", f"{module}::", f"{module}/")


def _failed(tests: int, reason: str) -> BaselineCheck:
    return BaselineCheck(tests, (), reason)
