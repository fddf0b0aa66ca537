"""How every run of one evaluation is configured, and the controller configuration of
each run (``build_config``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from pydantic import ConfigDict, Field

from sandbox_agent.controller.models import (
    Budgets,
    RepairOptions,
    RunConfig,
    RunResult,
    Strategy,
)
from sandbox_agent.deps.models import DepsOptions
from sandbox_agent.evals.tasks.cases import EvalCase
from sandbox_agent.providers import ChosenProvider
from sandbox_agent.sandbox.base import CancelToken, Runtime, SandboxBackend, SandboxLimits

DEFAULT_JOBS = 1
MAX_JOBS = 32
DEFAULT_REPEATS = 1
MAX_REPEATS = 100


class RunTaskFn(Protocol):
    """``sandbox_agent.controller.run_task``'s shape (a fake controller in unit tests)."""

    def __call__(
        self,
        config: RunConfig,
        *,
        cancel: CancelToken | None = ...,
        on_final_workspace: Callable[[Path], None] | None = ...,
        sandbox: SandboxBackend | None = ...,
    ) -> RunResult: ...


BackendFactory = Callable[[], SandboxBackend]


class EvalOptions(ChosenProvider):
    """How every run of one eval is configured: the provider and its options
    (``ChosenProvider``: from the real-model flags, base URL, prices, caps, ledger, tool
    protocol, for every run; the plan, run id and model are set per run), and the rest."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = None
    runtime: Runtime = "runc"
    repeats: int = Field(DEFAULT_REPEATS, ge=1, le=MAX_REPEATS)
    jobs: int = Field(DEFAULT_JOBS, ge=1, le=MAX_JOBS)
    trace_dir: Path | None = None
    """Parent of every run's trace folder (``<results>/traces`` from the command)."""
    max_iterations: int | None = Field(None, ge=1, le=1000)
    """``--max-iterations``: every task's turn budget instead of its own (a real model
    may need other budgets than the reference plans; the report records them)."""
    max_wall_seconds: float | None = Field(None, gt=0, le=86400)
    """``--max-wall-seconds``: every task's wall clock instead of its own (a local model
    on 2 cores takes minutes where a plan takes a second)."""
    deps: DepsOptions = DepsOptions()
    """How each task's repository gets its dependency environment (``--deps*``)."""
    strategy: Strategy = "tools"
    """``--strategy`` of every run."""
    repair: RepairOptions = RepairOptions()
    """The ``repair`` strategy's limits; repeat r samples with seed ``seed + r *
    SEED_STRIDE`` (independent samples, not copies of one run)."""


SEED_STRIDE = 1000
"""Seeds between two repeats of one task: more than any run's candidates, so no sampled
candidate of one repeat shares a seed with another's."""


def build_config(case: EvalCase, options: EvalOptions, run_id: str, repeat: int = 0) -> RunConfig:
    """The controller configuration of run ``repeat`` of ``case``."""
    task = case.task
    plan = str(case.plan) if case.plan else None
    return RunConfig(
        task=task.prompt,
        fixture=None if case.repo else task.fixture,
        fixtures_dir=case.fixtures_dir,
        repo=case.repo,
        provider=options.provider,
        provider_options=options.provider_options.updated(
            plan_path=plan if options.provider == "scripted" else None,
            reference_plan_path=plan,
            run_id=run_id,
            model=options.model,
        ),
        runtime=options.runtime,
        budgets=Budgets(
            max_iterations=options.max_iterations or task.max_iterations,
            max_wall_seconds=options.max_wall_seconds or task.max_wall_seconds,
            max_denials=task.policy.max_denials,
        ),
        limits=SandboxLimits(timeout_s=task.test_timeout_s),
        allowed_tools=task.allowed_tools,
        deps=options.deps,
        trace_dir=options.trace_dir,
        run_id=run_id,
        strategy=options.strategy,
        repair=options.repair.model_copy(
            update={"seed": options.repair.seed + repeat * SEED_STRIDE}
        ),
    )
