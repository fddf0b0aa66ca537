"""The ToolBox: the model's only hands. One call in, one bounded ``ToolOutcome`` out."""

from __future__ import annotations

import time

from sandbox_agent import denials
from sandbox_agent.errors import ToolDenied, WorkspaceError
from sandbox_agent.policy import Policy, RunnerCommand, runner_command, spectrum_command
from sandbox_agent.sandbox.base import (
    CancelToken,
    EnvironmentMount,
    Runtime,
    SandboxBackend,
    SandboxLimits,
    SandboxRequest,
)
from sandbox_agent.tools import files, patch
from sandbox_agent.tools.baseline import Baseline
from sandbox_agent.tools.contracts import (
    ARGS_MODELS,
    ApplyPatchArgs,
    FinishArgs,
    ListFilesArgs,
    ReadFileArgs,
    RunTestsArgs,
    SearchArgs,
    ToolArgs,
    ToolCall,
    ToolOutcome,
)
from sandbox_agent.tools.files import ToolResult
from sandbox_agent.tools.limits import ToolLimits
from sandbox_agent.tools.testrun import TestRun
from sandbox_agent.workspace import Workspace
from sandbox_agent.workspace.hashing import mounted_tree_sha256

RUN_LABEL = "sandbox-agent.purpose"


class ToolBox:
    """Executes validated tool calls against one workspace, under one policy."""

    def __init__(
        self,
        workspace: Workspace,
        policy: Policy,
        sandbox: SandboxBackend,
        *,
        runtime: Runtime = "runc",
        limits: SandboxLimits = SandboxLimits(),  # noqa: B008 - frozen, immutable default
        cancel: CancelToken | None = None,
        tool_limits: ToolLimits | None = None,
        environment: EnvironmentMount | None = None,
    ) -> None:
        """Args:
        workspace: the private copy every tool works on.
        policy: tools, protected paths and the runner.
        sandbox: where ``run_tests`` runs.
        runtime: ``runc`` or ``runsc``.
        limits: resource limits of each sandbox run.
        cancel: cancellation and deadline, passed to every sandbox run.
        tool_limits: bounds on what each tool reads and writes.
        environment: the repository's dependency environment, mounted in every sandbox.
        """
        self.workspace = workspace
        self.policy = policy
        self.sandbox = sandbox
        self.runtime: Runtime = runtime
        self.limits = limits
        self.cancel = cancel
        self.tool_limits = tool_limits or ToolLimits()
        self.environment = environment
        self.finish_summary: str | None = None
        """What the model said in ``finish``: recorded, never believed."""
        self.test_runs: list[TestRun] = []
        """Every test run of this tool box, ``run_tests`` calls and the final run."""
        self._last_suite_run: tuple[str, TestRun] | None = None
        """The last whole-suite run that completed attested, and the tree hash it ran on."""
        self.baseline: Baseline | None = None
        """The original tree's collected test ids (``start_baseline``); None: not checked."""

    def execute(self, call: ToolCall) -> ToolOutcome:
        """Run one call. Never raises for anything the model did: a refusal is a denial.

        Raises:
            WorkspaceError: a file operation failed on our side (e.g. the disk is full).
            InfrastructureError: our own side failed (Docker).
        """
        started = time.monotonic()
        try:
            if call.tool not in self.policy.allowed_tools:
                raise ToolDenied(
                    denials.TOOL_NOT_ALLOWED, f"'{call.tool}' is not allowed in this task"
                )
            message, result = self._dispatch(_args_for(call))
            outcome = ToolOutcome(tool=call.tool, ok=True, message=message, result=result)
        except OSError as error:
            raise WorkspaceError(f"{call.tool} failed on our side: {error}") from error
        except ToolDenied as denied:
            outcome = ToolOutcome(
                tool=call.tool, ok=False, denial=denied.code, message=denied.message
            )
        outcome.duration_ms = (time.monotonic() - started) * 1000
        return outcome

    def repository_files(self, most: int) -> tuple[list[str], bool]:
        """The workspace's regular files (sorted, at most ``most``) and whether there were
        more: the controller shows them with the task, so a model need not guess paths."""
        listed = self.workspace.fs.list_files(".", most)
        return list(listed.files), bool(listed.truncated)

    def _dispatch(self, args: ToolArgs) -> ToolResult:
        fs, limits = self.workspace.fs, self.tool_limits
        if isinstance(args, ListFilesArgs):
            return files.list_files(fs, args, limits)
        if isinstance(args, ReadFileArgs):
            return files.read_file(fs, args, limits)
        if isinstance(args, SearchArgs):
            return files.search(fs, args, limits)
        if isinstance(args, ApplyPatchArgs):
            applied = patch.apply_patch(fs, self.policy, args, limits)
            self.prestart()  # an edit is usually followed by a test run
            return applied
        if isinstance(args, RunTestsArgs):
            return self._run_tests(args)
        return self._finish(args)

    def _run_tests(self, args: RunTestsArgs) -> ToolResult:
        run = self.run_tests(args.selector)
        return run.summary.splitlines()[0], run.evidence()

    def _finish(self, args: FinishArgs) -> ToolResult:
        self.finish_summary = args.summary
        return "finished; the controller now runs the tests itself", {"summary": args.summary}

    def run_tests(self, selector: str | None = None) -> TestRun:
        """Run the policy's runner (optionally one selector) in a fresh sandbox and judge it.

        Raises:
            ToolDenied: ``command.not_allowlisted`` or ``command.bad_selector``.
            InfrastructureError: the sandbox backend cannot be reached.
        """
        request = self._request(selector)
        # The container mounts the workspace read-only and only this tool box writes
        # it, so the bytes hashed here are the bytes the tests run on (a sandbox
        # pre-started before an edit sees the edit: the mount is the live folder).
        tree = None if selector else mounted_tree_sha256(self.workspace.root)
        result = self.sandbox.run(request, self.cancel)
        run = TestRun.from_result(
            result,
            runner=self.policy.runner,
            selector=selector or None,
            max_summary_bytes=self.tool_limits.max_test_summary_bytes,
            summary_lines=self.tool_limits.test_summary_lines,
        )
        self.test_runs.append(run)
        if tree is not None and run.attested and run.sandbox.status == "completed":
            self._last_suite_run = (tree, run)
        return run

    def run_spectrum(self) -> str:
        """The whole suite once more with the runner's spectrum of which functions the
        failing tests ran (``sandbox_supervisor.spectrum``), in a fresh sandbox under the
        same rules; its output, for ``repair.spectrum`` to read as a localisation hint.
        No verdict is taken from it and the model is never shown it.

        Raises:
            ToolDenied: ``command.not_allowlisted``.
            InfrastructureError: the sandbox backend cannot be reached.
        """
        request = self._request_for(spectrum_command(self.policy.runner), "spectrum")
        result = self.sandbox.run(request, self.cancel)
        return result.output.decode("utf-8", errors="replace")

    def prestart(self, count: int = 1) -> None:
        """Have the sandboxes of the next ``count`` whole-suite runs made ahead (the backend
        may; those already waiting count).

        Called when a test run is likely next: at the start, and after each applied
        edit. While the model thinks (seconds), the container is created, verified,
        started and attested, so ``run_tests`` only sends the go. Not after a test run:
        a finish or an edit usually follows, and an unused sandbox is a wasted start.
        A hint only: it never fails the call it follows.
        """
        try:
            request = self._request(None)
        except ToolDenied:
            return  # no allowlisted runner: run_tests will say so itself
        self.sandbox.prestart(request, count)

    def start_baseline(self) -> None:
        """Collect the original tree's test ids in the background (``tools.baseline``), so
        the final verdict can require them; it overlaps the model's turns. ``baseline`` is None
        when the runner is not allowlisted (then no test run can pass anyway)."""
        try:
            self.baseline = Baseline(
                self.workspace.base,
                self.policy.runner,
                self.sandbox,
                runtime=self.runtime,
                limits=self.limits,
                cancel=self.cancel,
                environment=self.environment,
            )
        except ToolDenied:
            self.baseline = None

    def stop_baseline(self) -> None:
        """End the baseline run if it still runs (before the workspace goes)."""
        if self.baseline is not None:
            self.baseline.stop()

    def discard_prestarted(self) -> list[str]:
        """Remove sandboxes made ahead and not used; cleanup failures, if any."""
        return self.sandbox.discard_prestarted()

    def _request(self, selector: str | None) -> SandboxRequest:
        """The sandbox request of one test run (equal requests for equal runs).

        Raises:
            ToolDenied: ``command.not_allowlisted`` or ``command.bad_selector``.
        """
        return self._request_for(runner_command(self.policy.runner, selector), "run_tests")

    def _request_for(self, command: RunnerCommand, purpose: str) -> SandboxRequest:
        return SandboxRequest(
            argv=command.argv,
            workspace=self.workspace.root,
            runtime=self.runtime,
            limits=self.limits,
            workload_env=command.workload_env,
            labels={RUN_LABEL: purpose},
            environment=self.environment,
        )

    def run_final_tests(self) -> TestRun:
        """The controller's own final run: the whole suite, same runner, same sandbox rules.

        When the last whole-suite run of this tool box completed attested on exactly the
        bytes the workspace holds now (same tree hash), that run *is* the controller's
        verified run of this tree, and it is returned marked ``reused`` instead of
        paying for an identical sandbox run. Any edit since, a selector, or an
        unverified run means a fresh run.

        Either way, with a baseline, the verdict passes only when the run ran every test
        the original tree collected (``tools.baseline``).

        Raises:
            InfrastructureError: the sandbox backend cannot be reached.
        """
        final = self._reusable() or self.run_tests(None)
        if self.baseline is None:
            return final
        check = self.baseline.check(final.sandbox)
        update: dict[str, object] = {
            "baseline_tests": check.tests,
            "missing_tests": check.missing[:20],
        }
        if check.reason is not None and final.passed:
            update |= {"passed": False, "reason": check.reason, "baseline_failure": check.reason}
        return final.model_copy(update=update)

    def _reusable(self) -> TestRun | None:
        """The last whole-suite run, when it ran on exactly the bytes mounted now."""
        if self._last_suite_run is None:
            return None
        tree, run = self._last_suite_run
        if tree != mounted_tree_sha256(self.workspace.root):
            return None
        return run.model_copy(update={"reused": True})


def _args_for(call: ToolCall) -> ToolArgs:
    """The call's arguments as its own tool's model (the union may have picked another)."""
    model = ARGS_MODELS[call.tool]
    if isinstance(call.args, model):
        return call.args
    from pydantic import ValidationError

    from sandbox_agent.tools.parse import describe

    try:
        return model.model_validate(call.args.model_dump())  # type: ignore[return-value]
    except ValidationError as error:
        raise ToolDenied(denials.ARGS_INVALID, f"{call.tool}: {describe(error)}") from None
