"""The service's request and response contracts. Every request body has ``extra="forbid"``.

A run seen through the service has the run result's fields at the top level (so
``GET /runs/{id}`` reads like ``run --json``), plus the service's own: its ``status``
is ``QUEUED`` or ``RUNNING`` until it holds the result's terminal status, or
``INTERRUPTED`` when the server stopped while the run was in flight.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sandbox_agent.controller.models import (
    MAX_REDRAWS,
    Budgets,
    BudgetUsed,
    CandidateRecord,
    Feedback,
    FinalTests,
    FixtureIntegrity,
    Focus,
    RepairOptions,
    RunStatus,
    Strategy,
    ToolCallRecord,
)

ServiceStatus = Literal["QUEUED", "RUNNING", "INTERRUPTED"] | RunStatus
"""The run result's statuses, plus the service's own: waiting, running, cut by a restart."""
IN_FLIGHT: frozenset[str] = frozenset({"QUEUED", "RUNNING"})
TERMINAL: frozenset[str] = frozenset(get_args(RunStatus)) | {"INTERRUPTED"}

RUN_ID_PATTERN = r"^[0-9a-f]{32}$"
FIXTURE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"
MAX_TASK_CHARS = 20_000
MAX_PLAN_STEPS = 200
MAX_RAW_STEP_CHARS = 64 * 1024
MAX_REPO_PATH_CHARS = 4096
MAX_ARGS_DEPTH = 32
"""How deep a plan step's ``args`` may nest (a tool's arguments need three levels); past
about 250 the stored plan could not be serialised, a 500 (SR-8 S8-7)."""


class ToolStep(BaseModel):
    """A plan step naming a tool and its arguments (validated by the controller, not here)."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1, max_length=100)
    args: dict[str, Any] = Field(default_factory=dict)

    @field_validator("args")
    @classmethod
    def _storable(cls, args: dict[str, Any]) -> dict[str, Any]:
        if _depth(args) > MAX_ARGS_DEPTH:
            raise ValueError(f"args nest deeper than {MAX_ARGS_DEPTH} levels")
        # Any-typed values skip pydantic's string checks: a lone surrogate (valid in JSON
        # escapes, not in UTF-8) would pass here and fail when the run is stored.
        try:
            json.dumps(args, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            raise ValueError("args hold a lone surrogate: send valid Unicode text") from None
        return args


def _depth(value: Any) -> int:
    """How deep ``value`` nests, counted without recursion (it may be thousands deep)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_ARGS_DEPTH:
            break
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        )
        stack.extend((child, depth + 1) for child in children)
    return deepest


class RawStep(BaseModel):
    """A plan step given as the model's raw output, parsed as real model output would be."""

    model_config = ConfigDict(extra="forbid")

    raw: str = Field(max_length=MAX_RAW_STEP_CHARS)


class Plan(BaseModel):
    """An inline plan file (docs/CONTRACT.md section 4, "Plan files")."""

    model_config = ConfigDict(extra="forbid")

    steps: list[ToolStep | RawStep] = Field(max_length=MAX_PLAN_STEPS)


class BudgetRequest(BaseModel):
    """``budgets`` of a run request: each absent one is the run's default, capped by the
    server's maximum; one over its maximum is refused (422) naming the ``serve`` flag."""

    model_config = ConfigDict(extra="forbid")

    max_iterations: int | None = Field(None, ge=1)
    """Model turns (at most ``serve --max-run-iterations``)."""
    max_tool_calls: int | None = Field(None, ge=1)
    """Tool calls executed or denied (at most ``serve --max-run-tool-calls``)."""
    max_wall_seconds: float | None = Field(None, gt=0, allow_inf_nan=False)
    """Wall clock of the whole run (at most ``serve --max-run-wall-seconds``)."""
    max_denials: int | None = Field(None, ge=0)
    """Policy denials tolerated (at most ``serve --max-run-denials``)."""
    max_invalid_outputs: int | None = Field(None, ge=0)
    """Invalid model outputs tolerated (at most ``serve --max-run-invalid-outputs``)."""


class RepairRequest(BaseModel):
    """``repair`` of a run request (strategy ``repair`` only): as ``run``'s flags."""

    model_config = ConfigDict(extra="forbid")

    candidates: int | None = Field(None, ge=1)
    """First-round candidates (at most ``serve --max-run-candidates``)."""
    rounds: int | None = Field(None, ge=0)
    """Repair rounds after the first (at most ``serve --max-run-rounds``)."""
    round_candidates: int | None = Field(None, ge=1)
    """Candidates per later round (at most ``serve --max-run-round-candidates``)."""
    candidate_tokens: int | None = Field(None, ge=64)
    """Reply cap of one candidate (at most ``serve --max-run-candidate-tokens``)."""
    temperature: float | None = Field(None, gt=0, le=2.0, allow_inf_nan=False)
    seed: int | None = Field(None, ge=0, le=2**31 - 1_000)
    focus: Focus | None = None
    """``rotate`` or ``off``, as ``run --focus``."""
    feedback: Feedback | None = None
    """``replay`` or ``tried``, as ``run --feedback``."""
    redraws: int | None = Field(None, ge=0, le=MAX_REDRAWS)
    """As ``run --redraws``: its cost is model turns, which the run's turn budget (at most
    ``serve --max-run-iterations``) bounds; a slot still makes at most one test run."""


class SubmitRequest(BaseModel):
    """``POST /runs``: a fixture by name or, under ``serve --repo-root``, a folder by path;
    the task; and optionally the provider, strategy, budgets and repair options."""

    model_config = ConfigDict(extra="forbid")

    fixture: Annotated[str, Field(pattern=FIXTURE_NAME_PATTERN)] | None = None
    """The name of one sub-folder of the server's fixtures folder (``GET /fixtures``)."""
    repo: str | None = Field(None, min_length=1, max_length=MAX_REPO_PATH_CHARS)
    """Instead of ``fixture``: the absolute path of a folder strictly under one of the
    server's ``--repo-root`` folders (``GET /fixtures`` lists them), with no link in it."""
    task: str = Field(min_length=1, max_length=MAX_TASK_CHARS)
    provider: str | None = Field(None, min_length=1, max_length=50)
    """Absent: the server's default provider (``GET /fixtures``: ``default_provider``)."""
    plan: Plan | None = None
    """For ``scripted``: the steps; without it the fixture's reference plan is used."""
    strategy: Strategy | None = None
    """Absent: ``repair`` for the ``local`` provider, ``tools`` otherwise (as ``run``)."""
    budgets: BudgetRequest | None = None
    repair: RepairRequest | None = None
    allow_no_tests: bool = False
    """Run on a repository with no test file, for a task that needs none (``run
    --allow-no-tests``): such a run cannot end ``SUCCEEDED``. Absent or false: a
    repository with no tests is refused before the first model call (``FAILED``,
    ``rejected: ...``)."""

    @model_validator(mode="after")
    def _one_source(self) -> SubmitRequest:
        if (self.fixture is None) == (self.repo is None):
            raise ValueError(
                "give exactly one of fixture (a name from GET /fixtures) or repo (a folder "
                "under the server's serve --repo-root DIR)"
            )
        return self


class SubmitResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str


class CancelResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    status: ServiceStatus
    """The status right after the request: a queued run is ``CANCELLED`` at once; a
    running one stays ``RUNNING`` until its sandbox has stopped."""


class RunSummary(BaseModel):
    """One line of ``GET /runs``."""

    model_config = ConfigDict(extra="forbid")

    id: str
    status: ServiceStatus
    reason: str
    fixture_name: str
    """The fixture's name; empty for a run of a ``repo``."""
    provider: str
    task: str
    strategy: Strategy = "tools"
    """The strategy the run was given (runs recorded before strategies: ``tools``)."""
    repo: str | None = None
    """The folder the request named (a run of a fixture: None)."""
    submitted_at: float
    """Unix time."""
    started_at: float | None
    finished_at: float | None
    duration_s: float | None
    """From start to finish (or to now while running)."""
    budget_used: BudgetUsed | None


class RunView(RunSummary):
    """``GET /runs/{id}``: the summary, and the run result's fields once it has finished."""

    run_id: str | None = None
    diff: str = ""
    files_changed: list[str] = Field(default_factory=list)
    final_tests: FinalTests | None = None
    fixture: FixtureIntegrity | None = None
    trace_path: str | None = None
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    model: str = ""
    runtime: str | None = None
    model_summary: str | None = None
    node: str | None = None
    """``serve --ray``: the cluster node that ran the run."""
    candidates: list[CandidateRecord] = Field(default_factory=list)
    """``repair``: every candidate tried, in order."""
    budgets: Budgets | None = None
    """The limits the run was given (the request's, else the defaults, within the
    server's maxima); None for runs recorded before requests carried budgets."""
    repair: RepairOptions | None = None
    """Strategy ``repair``: the options the run was given."""
    allow_no_tests: bool = False
    """The request's ``allow_no_tests`` (false for runs recorded before it)."""


class RunList(BaseModel):
    model_config = ConfigDict(extra="forbid")

    runs: list[RunSummary]
    total: int


class FixtureList(BaseModel):
    """``GET /fixtures``: what a run request may name, and the server's defaults."""

    model_config = ConfigDict(extra="forbid")

    fixtures: list[str]
    providers: list[str]
    default_provider: str = ""
    """A request without ``provider`` gets this: the first real provider the server was
    started with, else the first one."""
    strategies: list[Strategy] = Field(default_factory=list)
    default_strategies: dict[str, Strategy] = Field(default_factory=dict)
    """Per provider: the strategy a request without ``strategy`` gets."""
    repo_roots: list[str] = Field(default_factory=list)
    """Folders under which a request may name a ``repo`` (``serve --repo-root``)."""
    maxima: dict[str, int | float] = Field(default_factory=dict)
    """The most a request may ask for, by ``budgets``/``repair`` field name."""


class Health(BaseModel):
    """``GET /health``: 200 ``{"status": "ok"}`` when the service can run work, else 503."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["ok", "unavailable"]
    detail: str | None = None
    """Why the service cannot run work (stopping, no worker, the database refusing writes)."""


class PreflightStatus(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: Literal["ok", "failed", "unknown"]
    detail: str = ""
    report: dict[str, Any] | None = None
    """The ``preflight --json`` report when the check could run."""


class ErrorBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    detail: str
