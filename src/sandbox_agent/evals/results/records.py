"""What every eval run records, and the aggregate over runs (never averaged away)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sandbox_agent.evals.results.scoring import Violation
from sandbox_agent.evals.running.heldout import HeldOutResult


class Durations(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    agent_s: float = 0.0
    """``run_task`` from call to return (final test run included)."""
    held_out_s: float = 0.0
    total_s: float = 0.0
    sandbox_ms: float = 0.0
    """Sum of the durations of the agent's ``run_tests`` calls."""


class HeldOutVerdict(BaseModel):
    """docs/CONTRACT.md section 7: each run record's ``heldout: {passed, judge}``."""

    model_config = ConfigDict(extra="forbid")

    passed: bool
    judge: str
    """``out_of_process``: the check ran in the trusted judge, the code under test in
    another process (``evals.running.heldout``)."""


HARNESS_ERROR = "HARNESS_ERROR"
"""The status of a run the harness could not carry out or score (never a model result)."""
TRACES_DIR = "traces"
"""Each run's folder in an evaluation's results: ``RESULTS_DIR/traces/<run id>/``."""


class RunRecord(BaseModel):
    """One run of one task: configuration, evidence and verdict."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    task_version: int
    kind: str
    repeat: int
    provider: str
    model: str
    config: dict[str, Any]
    """Budgets, sandbox limits, runtime and tool allowlist the run was given."""
    fixture: str
    fixture_sha256: str
    status: str
    reason: str
    passed: bool
    clean: bool
    checks: dict[str, bool]
    attempted_violations: list[Violation]
    executed_violations: list[Violation]
    enforcement_held: bool
    held_out: HeldOutResult
    heldout: HeldOutVerdict | None = None
    """The held-out verdict and who judged it; filled from ``held_out`` when not given."""
    steps: int
    tool_calls: int
    invalid_outputs: int
    policy_denials: int
    input_tokens: int = 0
    """Prompt tokens the model was sent, over every turn (0 for simulated providers)."""
    output_tokens: int = 0
    timeouts: int
    """Sandbox runs that timed out, plus one when the run itself ended ``TIMEOUT``."""
    sandbox_failures: int
    """Sandbox runs refused (could not be verified), plus one for a ``SANDBOX_ERROR`` run."""
    files_changed: list[str]
    durations: Durations
    trace_path: str
    error: str | None = None
    """A harness-side failure for this run (the run still counts, as not passed)."""
    node: str | None = None
    """``eval --ray``: the cluster node that ran this run (``ip/node id``); None locally."""
    lost_on: list[str] = Field(default_factory=list)
    """``eval --ray``: nodes an earlier attempt of this run was lost with (then retried)."""
    strategy: str = "tools"
    """``tools`` or ``repair`` (records from before issue 29 are ``tools``)."""
    candidates: int = 0
    """``repair``: candidates tried."""
    rounds: int = 0
    """``repair``: the last round reached (0: the first round only)."""

    @model_validator(mode="after")
    def _heldout_from_held_out(self) -> RunRecord:
        verdict = HeldOutVerdict(passed=self.held_out.passed, judge=self.held_out.judge)
        if self.heldout is None:
            self.heldout = verdict
        elif self.heldout != verdict:
            raise ValueError("heldout disagrees with held_out")
        return self


class Summary(BaseModel):
    """docs/CONTRACT.md section 7: ``{tasks, runs, passed, clean, attempted_violations,
    executed_violations}`` (counts of violations, not of runs), plus extras."""

    model_config = ConfigDict(extra="forbid")

    tasks: int
    runs: int
    passed: int
    clean: int
    attempted_violations: int
    executed_violations: int
    runs_with_attempts: int = 0
    runs_with_executed: int = 0
    held_out_passed: int = 0
    timeouts: int = 0
    sandbox_failures: int = 0
    invalid_outputs: int = 0
    harness_errors: int = 0
    statuses: dict[str, int] = Field(default_factory=dict)


class TaskSummary(BaseModel):
    """Per task: every run's verdict kept in order, and the counts."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    task_version: int
    runs: int
    passed: int
    clean: int
    attempted_violations: int
    executed_violations: int
    outcomes: list[str]
    """One of ``clean``, ``pass``, ``fail`` per repeat, in repeat order."""


def outcome(record: RunRecord) -> str:
    if record.clean:
        return "clean"
    return "pass" if record.passed else "fail"


def summarize(records: Sequence[RunRecord]) -> Summary:
    """Aggregate counts over every run (each run counted, none averaged)."""
    statuses: dict[str, int] = {}
    for record in records:
        statuses[record.status] = statuses.get(record.status, 0) + 1
    return Summary(
        tasks=len({record.task_id for record in records}),
        runs=len(records),
        passed=sum(record.passed for record in records),
        clean=sum(record.clean for record in records),
        attempted_violations=sum(len(record.attempted_violations) for record in records),
        executed_violations=sum(len(record.executed_violations) for record in records),
        runs_with_attempts=sum(bool(record.attempted_violations) for record in records),
        runs_with_executed=sum(bool(record.executed_violations) for record in records),
        held_out_passed=sum(record.held_out.passed for record in records),
        timeouts=sum(record.timeouts for record in records),
        sandbox_failures=sum(record.sandbox_failures for record in records),
        invalid_outputs=sum(record.invalid_outputs for record in records),
        harness_errors=sum(record.error is not None for record in records),
        statuses=dict(sorted(statuses.items())),
    )


def per_task(records: Sequence[RunRecord]) -> list[TaskSummary]:
    """One summary per task, in first-seen order, runs in repeat order."""
    by_task: dict[str, list[RunRecord]] = {}
    for record in records:
        by_task.setdefault(record.task_id, []).append(record)
    summaries = []
    for task_id, unordered in by_task.items():
        runs = sorted(unordered, key=lambda record: record.repeat)
        summaries.append(
            TaskSummary(
                task_id=task_id,
                task_version=runs[0].task_version,
                runs=len(runs),
                passed=sum(run.passed for run in runs),
                clean=sum(run.clean for run in runs),
                attempted_violations=sum(len(run.attempted_violations) for run in runs),
                executed_violations=sum(len(run.executed_violations) for run in runs),
                outcomes=[outcome(run) for run in runs],
            )
        )
    return summaries
