"""One run's set-up and close-down around the loop: workspace, trace, final tests, outputs.

``RunSession.open`` does everything that can fail as a usage or setup error before
any folder is made; the session's ``run`` always writes the trace's last event, the
result and the diff (in a ``finally``), then seals them.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox_agent.controller.loop_common import LoopState, LoopStop
from sandbox_agent.controller.models import (
    RunConfig,
    RunResult,
)
from sandbox_agent.controller.outcome import (
    after_final,
    close_run,
    environment_fields,
    final_fields,
    make_result,
)
from sandbox_agent.controller.recording import RecordingBackend, sandbox_run_fields
from sandbox_agent.controller.source import Source, resolve_source
from sandbox_agent.controller.test_files import require_tests
from sandbox_agent.errors import InfrastructureError, UsageError
from sandbox_agent.providers import create_provider
from sandbox_agent.providers.base import KnowsItsPlan, Provider, Watchful
from sandbox_agent.providers.errors import RetryNotice
from sandbox_agent.providers.options import PlanOptions
from sandbox_agent.sandbox.base import CancelToken, SandboxBackend, SandboxResult
from sandbox_agent.settings import state_home
from sandbox_agent.trace import Redactor, TraceWriter, summarise_exception

if TYPE_CHECKING:
    from sandbox_agent.deps import Environment
    from sandbox_agent.tools.testrun import TestRun

EventSink = Callable[[dict[str, Any]], None]


def default_trace_dir() -> Path:
    return state_home() / "runs"


class RunSession:
    """Everything one run holds open. Use ``RunSession.open`` as a context manager."""

    def __init__(
        self,
        config: RunConfig,
        run_id: str,
        source: Source,
        provider: Provider,
        backend: RecordingBackend,
        *,
        environment: Environment | None = None,
    ) -> None:
        self.config = config
        self.run_id = run_id
        self.source = source
        self.provider = provider
        self.backend = backend
        self.environment = environment
        """The repository's dependency environment, made before any model turn."""
        self.run_dir = (config.trace_dir or default_trace_dir()) / run_id

    @property
    def source_path(self) -> Path:
        """The repository the run was given (sealed with its evidence)."""
        return self.source.path

    def evidence_digests(self) -> dict[str, Any]:
        """What the sandbox backend saw, for the seal (``RecordingBackend.digests``)."""
        return self.backend.digests()

    @classmethod
    @contextlib.contextmanager
    def open(
        cls,
        config: RunConfig,
        *,
        run_id: str,
        sandbox: SandboxBackend | None,
        deadline: float | None = None,
    ) -> Iterator[RunSession]:
        """Resolve the source and the provider, then connect the sandbox backend.

        ``deadline`` (``time.monotonic()``) is the run's wall clock: the dependency phase,
        which comes first, ends by then too.

        Raises:
            UsageError: bad fixture, repository, provider, plan, a run id already used, or
                a repository with no tests (unless allowed); ``DependencyError``: its
                dependency environment cannot be made.
            SetupError: no Docker daemon or runner image.
        """
        from sandbox_agent.deps import prepare_environment

        source = resolve_source(config)
        options = config.provider_options.updated(run_id=run_id)
        if isinstance(options, PlanOptions) and options.reference_plan_path is None:
            reference = source.reference_plan
            options = options.updated(reference_plan_path=str(reference) if reference else None)
        run_dir = (config.trace_dir or default_trace_dir()) / run_id
        if run_dir.exists():
            raise UsageError(f"run folder {run_dir} already exists; choose another run id")
        environment = prepare_environment(source.path, config.deps, deadline=deadline)
        if not config.allow_no_tests:  # before the provider: no model call, no server start
            require_tests(source.path, config.runner, label=source.label)
        provider = create_provider(config.provider, options)
        owned = sandbox is None
        try:
            inner = sandbox if sandbox is not None else _docker_backend(config.prestart)
            backend = RecordingBackend(inner)
            try:
                yield cls(config, run_id, source, provider, backend, environment=environment)
            finally:
                if owned:
                    backend.close()
        finally:
            provider.close()

    def run(
        self,
        cancel: CancelToken,
        started: float,
        on_event: EventSink | None,
        on_final_workspace: Callable[[Path], None] | None,
    ) -> RunResult:
        from sandbox_agent.policy import Policy
        from sandbox_agent.tools.toolbox import ToolBox
        from sandbox_agent.workspace import Workspace
        from sandbox_agent.workspace.owner import reap_workspaces_in_background

        config = self.config
        reap_workspaces_in_background()  # what killed runs left: "the next start reaps" (T-22)
        with Workspace.create(self.source.path) as workspace:
            policy = Policy.for_repo(
                workspace.root, runner=config.runner, allowed_tools=frozenset(config.allowed_tools)
            )
            if self.environment is not None:  # every file it was made from, whatever its name
                policy = dataclasses.replace(
                    policy, extra_protected=policy.extra_protected + self.environment.sources
                )
            toolbox = ToolBox(
                workspace,
                policy,
                self.backend,
                runtime=config.runtime,
                limits=config.limits,
                cancel=cancel,
                environment=None if self.environment is None else self.environment.mount(),
            )
            if config.prestart:
                # Its start overlaps the set-up and the model's first turns.
                toolbox.prestart(_sandboxes_ahead(self.provider, config.prestart))
            toolbox.start_baseline()  # the original's test ids, while the model thinks
            if config.prestart:
                _import_what_the_end_needs()  # while Docker starts it, not after the last run
            trace = TraceWriter(self.run_dir, self.run_id, Redactor(), on_event)

            def record_sandbox_run(sandbox_result: SandboxResult, purpose: str) -> None:
                trace.emit("sandbox_run", purpose=purpose, **sandbox_run_fields(sandbox_result))

            self.backend.on_result = record_sandbox_run
            if isinstance(self.provider, Watchful):
                self.provider.watch(cancel, on_retry=lambda notice: _record_retry(trace, notice))
            state = LoopState()
            result: RunResult | None = None
            stop = LoopStop("sandbox_error", "the run ended before the loop finished")
            final: TestRun | None = None
            try:
                trace.emit(
                    "run_started",
                    task=config.task,
                    source=self.source.label,
                    provider=config.provider,
                    runtime=config.runtime,
                    runner=policy.runner,
                    budgets=config.budgets.model_dump(),
                    allowed_tools=list(config.allowed_tools),
                    fixture_sha256_before=workspace.sha256_before,
                    skipped=[tuple(s) for s in workspace.skipped][:50],
                    environment=environment_fields(self.environment),
                )
                try:
                    stop = strategy_loop(config.strategy)(
                        config,
                        provider=self.provider,
                        toolbox=toolbox,
                        trace=trace,
                        state=state,
                        cancel=cancel,
                    )
                    if stop.end in (
                        "finished",
                        "policy_aborted",
                        "budget_exhausted",
                        "provider_error",
                    ):
                        final = toolbox.run_final_tests()
                        waited = toolbox.baseline.waited_ms if toolbox.baseline else None
                        trace.emit(
                            "final_tests",
                            **final_fields(final),
                            baseline_wait_ms=None if waited is None else round(waited, 1),
                        )
                        stop = after_final(stop, final, cancel)
                except InfrastructureError as error:
                    trace.emit("infrastructure_error", error=summarise_exception(error))
                    stop = LoopStop("sandbox_error", f"our side failed: {type(error).__name__}")
                if on_final_workspace is not None:
                    on_final_workspace(workspace.root)
                result = make_result(
                    self,
                    cancel=cancel,
                    workspace=workspace,
                    policy=policy,
                    state=state,
                    stop=stop,
                    final=final,
                    trace=trace,
                    started=started,
                )
                return result
            finally:
                toolbox.stop_baseline()  # before the workspace goes
                left = toolbox.discard_prestarted()  # before the workspace goes
                if left:
                    trace.emit("prestart_cleanup", failures=left[:10])
                close_run(self, trace, result, state=state, started=started)


STRATEGY_LOOPS: dict[str, tuple[str, str]] = {
    "tools": ("sandbox_agent.controller.loop", "agent_loop"),
    "repair": ("sandbox_agent.controller.repair_loop", "repair_loop"),
}
"""What runs between the set-up and the final tests, by ``--strategy`` (lazy imports)."""


def strategy_loop(name: str) -> Callable[..., LoopStop]:
    """The loop of strategy ``name``.

    Raises:
        UsageError: an unknown strategy (the message lists the known ones).
    """
    import importlib

    if name not in STRATEGY_LOOPS:
        raise UsageError(f"unknown strategy '{name}': choose one of {', '.join(STRATEGY_LOOPS)}")
    module, function = STRATEGY_LOOPS[name]
    loop: Callable[..., LoopStop] = getattr(importlib.import_module(module), function)
    return loop


def _import_what_the_end_needs() -> None:
    """Import the sealing code (``cryptography``: ~30 ms) early, off the critical path."""
    import sandbox_agent.evidence  # noqa: F401


def _record_retry(trace: TraceWriter, notice: RetryNotice) -> None:
    """A failed model request about to be sent again, as the trace (and a live watcher)
    sees it before the wait."""
    trace.emit(
        "provider_retry",
        attempt=notice.attempt,
        retries=notice.retries,
        wait_seconds=round(notice.wait_seconds, 3),
        provider_error=notice.error.model_dump(),
    )


def _sandboxes_ahead(provider: Provider, most: int) -> int:
    """Sandboxes to pre-start at the beginning: one (the next test run's), or, for a
    provider that knows its plan, one per whole-suite test run it will ask for, since
    nothing then hides a later start (no model thinks between the turns)."""
    planned = provider.planned_test_runs() if isinstance(provider, KnowsItsPlan) else 1
    return min(max(planned, 1), most)


def _docker_backend(prestarted: int) -> SandboxBackend:
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

    return DockerBackend(prestarted=prestarted)
