"""Bounded lifecycle stress straight on a sandbox backend: many short runs, some of them
cancelled or killed from outside, idle and under host CPU load, then a count of what was
reported completed without evidence and of what was left behind.
"""

from __future__ import annotations

import random
import secrets
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sandbox_agent.sandbox.base import CancelToken, Runtime, SandboxBackend, SandboxRequest
from sandbox_agent.stress.actions import OutsideAction
from sandbox_agent.stress.load import busy_loops
from sandbox_agent.stress.report import RunOutcome, StressReport, build_report
from sandbox_agent.stress.scenarios import PYTHON, SCENARIOS, Scenario

DEFAULT_RUNS = 100
DEFAULT_CONCURRENCY = 2
MAX_RUNS = 10_000
MAX_CONCURRENCY = 32
LABEL_STRESS = "sandbox-agent.stress"
"""On every container of one stress session (value: the session id), to count leftovers."""
LABEL_STRESS_RUN = "sandbox-agent.stress-run"
"""Names one run's container, so an outside action can find it."""

BackendFactory = Callable[[], SandboxBackend]


class StressConfig(BaseModel):
    """One stress session."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    runs: int = Field(DEFAULT_RUNS, ge=1, le=MAX_RUNS)
    concurrency: int = Field(DEFAULT_CONCURRENCY, ge=1, le=MAX_CONCURRENCY)
    runtime: Runtime = "runc"
    seed: int = 0
    cpu_load: bool = False
    """Run the second half of the runs under a host busy loop in ``concurrency`` processes."""


def plan(config: StressConfig) -> list[tuple[int, Scenario, str]]:
    """The runs in order: every scenario once per block (shuffled), idle then under load."""
    rng = random.Random(config.seed)  # noqa: S311 - a reproducible schedule, not a secret
    order: list[Scenario] = []
    while len(order) < config.runs:
        block = list(SCENARIOS)
        rng.shuffle(block)
        order.extend(block)
    loaded_from = config.runs // 2 if config.cpu_load else config.runs
    return [
        (index, scenario, "cpu_load" if index >= loaded_from else "idle")
        for index, scenario in enumerate(order[: config.runs])
    ]


def judge(scenario: Scenario, result: Any, *, action_done: bool = True) -> tuple[bool, str | None]:
    """(unverified completion?, why the outcome is not one the scenario allows or None)."""
    acceptable = scenario.acceptable | (frozenset() if action_done else scenario.unacted)
    verified = bool(
        result.attested
        and result.exit_report_valid
        and result.attestation_sha256
        and result.exit_report_sha256
    )
    unverified = result.status == "completed" and not verified
    problem: str | None = None
    budget = scenario.limits.output_budget_bytes
    if result.status not in acceptable:
        allowed = ", ".join(sorted(acceptable))
        problem = f"{result.status} ({result.reason[:160]}); allowed: {allowed}"
    elif result.status == "completed":
        if scenario.expected_exit is not None and result.exit_code != scenario.expected_exit:
            problem = f"completed with exit {result.exit_code}, expected {scenario.expected_exit}"
        elif scenario.expected_output is not None and result.output != scenario.expected_output:
            problem = f"completed with {len(result.output)} output bytes, not the expected ones"
    elif result.status == "output_limit" and len(result.output) != budget:
        problem = f"output_limit relayed {len(result.output)} bytes, not the exact budget"
    if unverified:
        problem = f"completed without verified evidence; {problem or ''}".rstrip("; ")
    return unverified, problem


class _Session:
    def __init__(self, config: StressConfig, factory: BackendFactory, api: Any, root: Path) -> None:
        self.config = config
        self.id = secrets.token_hex(6)
        self._factory = factory
        self._api = api
        self._local = threading.local()
        self._backends: list[SandboxBackend] = []
        self._lock = threading.Lock()
        self.source = root / "source"
        self.source.mkdir()
        (self.source / "module.py").write_text("VALUE = 1\n")
        self.workspaces = root / "workspaces"
        self.workspaces.mkdir()

    def backend(self) -> SandboxBackend:
        backend: SandboxBackend | None = getattr(self._local, "backend", None)
        if backend is None:
            backend = self._factory()
            self._local.backend = backend
            with self._lock:
                self._backends.append(backend)
        return backend

    def close(self) -> None:
        for backend in self._backends:
            backend.close()

    def run_one(self, index: int, scenario: Scenario, load: str) -> RunOutcome:
        from sandbox_agent.workspace import Workspace

        rng = random.Random(self.config.seed * 1_000_003 + index)  # noqa: S311 - reproducible
        cancel = CancelToken()
        run_label = f"{self.id}-{index}"
        with Workspace.create(self.source, base_dir=self.workspaces) as workspace:
            request = SandboxRequest(
                argv=(PYTHON, "-c", scenario.code),
                workspace=workspace.root,
                runtime=self.config.runtime,
                limits=scenario.limits,
                labels={LABEL_STRESS: self.id, LABEL_STRESS_RUN: run_label},
            )
            label = f"{LABEL_STRESS_RUN}={run_label}"
            began = time.monotonic()
            with OutsideAction(scenario.action, self._api, label, cancel, rng) as action:
                try:
                    result = self.backend().run(request, cancel)
                except Exception as error:  # reported as an unexpected outcome, never hidden
                    return _crashed(index, scenario, load, began, error)
            latency_ms = (time.monotonic() - began) * 1000
        unverified, problem = judge(scenario, result, action_done=action.done)
        return RunOutcome(
            index=index,
            scenario=scenario.name,
            load=load,
            status=result.status,
            started=result.started,
            attested=result.attested,
            exit_report_valid=result.exit_report_valid,
            exit_code=result.exit_code,
            latency_ms=round(latency_ms, 1),
            action_done=action.done,
            action_detail=action.detail,
            cleanup=result.cleanup,
            unverified=unverified,
            problem=problem,
        )

    def leftover_containers(self) -> int:
        filters = {"label": f"{LABEL_STRESS}={self.id}"}
        return len(self._api.containers(all=True, filters=filters))

    def leftover_workspaces(self) -> int:
        from sandbox_agent.workspace.owner import WORKSPACE_PREFIX

        return len(list(self.workspaces.glob(f"{WORKSPACE_PREFIX}*")))


def _crashed(
    index: int, scenario: Scenario, load: str, began: float, error: Exception
) -> RunOutcome:
    return RunOutcome(
        index=index,
        scenario=scenario.name,
        load=load,
        status="error",
        started=False,
        attested=False,
        exit_report_valid=False,
        exit_code=None,
        latency_ms=round((time.monotonic() - began) * 1000, 1),
        action_done=False,
        cleanup="unknown",
        unverified=False,
        problem=f"the backend raised {type(error).__name__}: {str(error)[:200]}",
    )


def _docker_api() -> Any:
    import docker

    from sandbox_agent.sandbox.docker.docker_backend import DOCKER_API_VERSION

    return docker.from_env(version=DOCKER_API_VERSION).api


def _docker_backend() -> SandboxBackend:
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

    return DockerBackend()


def run_stress(
    config: StressConfig,
    *,
    backend_factory: BackendFactory | None = None,
    on_outcome: Callable[[RunOutcome], None] | None = None,
) -> StressReport:
    """Run the session and report.

    Args:
        config: runs, concurrency, runtime, seed, CPU load.
        backend_factory: makes one backend per worker thread; ``DockerBackend`` by default.
        on_outcome: called after each run (progress).

    Raises:
        SetupError: the runner image is missing.
        DockerUnavailable: Docker does not answer.
    """
    api = _docker_api()
    factory = backend_factory or _docker_backend
    outcomes: list[RunOutcome] = []
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-stress-") as folder:
        session = _Session(config, factory, api, Path(folder))
        try:
            runs = plan(config)
            for load in ("idle", "cpu_load"):
                batch = [run for run in runs if run[2] == load]
                if not batch:
                    continue
                busy = config.concurrency if load == "cpu_load" else 0
                with busy_loops(busy), ThreadPoolExecutor(config.concurrency) as pool:
                    for outcome in pool.map(lambda run: session.run_one(*run), batch):
                        outcomes.append(outcome)
                        if on_outcome is not None:
                            on_outcome(outcome)
            leftover_containers = session.leftover_containers()
            leftover_workspaces = session.leftover_workspaces()
        finally:
            session.close()
    return build_report(
        sorted(outcomes, key=lambda outcome: outcome.index),
        runtime=config.runtime,
        concurrency=config.concurrency,
        seed=config.seed,
        cpu_load=config.cpu_load,
        wall_seconds=time.monotonic() - began,
        leftover_containers=leftover_containers,
        leftover_workspaces=leftover_workspaces,
    )
