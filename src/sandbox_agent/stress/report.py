"""The stress report: per-run outcomes folded into the counts the issue asks for."""

from __future__ import annotations

import math
from collections import Counter

from pydantic import BaseModel, ConfigDict, Field

from sandbox_agent.sandbox.base import Runtime

MAX_PROBLEMS_LISTED = 20


class RunOutcome(BaseModel):
    """One lifecycle run, as the stress harness saw it."""

    model_config = ConfigDict(extra="forbid")

    index: int
    scenario: str
    load: str
    """``idle`` or ``cpu_load``."""
    status: str
    started: bool
    attested: bool
    exit_report_valid: bool
    exit_code: int | None
    latency_ms: float
    action_done: bool
    action_detail: str = ""
    """Why an outside action missed, when it did."""
    cleanup: str
    unverified: bool
    """Reported ``completed`` without a valid attestation and a matching exit report."""
    problem: str | None = None
    """Why the outcome was not one the scenario allows, if it was not."""


class Latency(BaseModel):
    model_config = ConfigDict(extra="forbid")

    p50: float
    p90: float
    p99: float
    max: float


class StressReport(BaseModel):
    """The JSON of ``sandbox-agent stress`` (docs/CONTRACT.md section 3 names the first fields)."""

    model_config = ConfigDict(extra="forbid")

    unverified_completions: int
    leftover_containers: int
    leftover_workspaces: int
    by_classification: dict[str, int]
    unexpected_outcomes: int
    runtime: Runtime
    runs: int
    concurrency: int
    seed: int
    cpu_load: bool
    wall_seconds: float
    latency_ms: Latency
    rapid_exit_latency_ms: Latency | None
    by_scenario: dict[str, dict[str, int]]
    by_load: dict[str, dict[str, int]]
    cleanup_failures: int
    actions_missed: int
    """Outside actions that found the run already over (not a failure; reported for scale)."""
    problems: list[str] = Field(default_factory=list)
    missed_actions: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """0 unverified completions, 0 leftovers, 0 unexpected outcomes, 0 failed removals."""
        return not (
            self.unverified_completions
            or self.leftover_containers
            or self.leftover_workspaces
            or self.unexpected_outcomes
            or self.cleanup_failures
        )


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of ``values`` (0 for none)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return round(ordered[rank - 1], 1)


def latency(values: list[float]) -> Latency:
    return Latency(
        p50=percentile(values, 0.5),
        p90=percentile(values, 0.9),
        p99=percentile(values, 0.99),
        max=round(max(values, default=0.0), 1),
    )


def _grouped(outcomes: list[RunOutcome], key: str) -> dict[str, dict[str, int]]:
    groups: dict[str, Counter[str]] = {}
    for outcome in outcomes:
        groups.setdefault(str(getattr(outcome, key)), Counter())[outcome.status] += 1
    return {name: dict(sorted(counts.items())) for name, counts in sorted(groups.items())}


def build_report(
    outcomes: list[RunOutcome],
    *,
    runtime: Runtime,
    concurrency: int,
    seed: int,
    cpu_load: bool,
    wall_seconds: float,
    leftover_containers: int,
    leftover_workspaces: int,
) -> StressReport:
    """Fold the outcomes and the leftover counts into the report."""
    problems = [
        f"run {outcome.index} ({outcome.scenario}, {outcome.load}): {outcome.problem}"
        for outcome in outcomes
        if outcome.problem
    ]
    rapid = [o.latency_ms for o in outcomes if o.scenario == "rapid_exit" and o.load == "idle"]
    return StressReport(
        unverified_completions=sum(outcome.unverified for outcome in outcomes),
        leftover_containers=leftover_containers,
        leftover_workspaces=leftover_workspaces,
        by_classification=dict(sorted(Counter(o.status for o in outcomes).items())),
        unexpected_outcomes=len(problems),
        runtime=runtime,
        runs=len(outcomes),
        concurrency=concurrency,
        seed=seed,
        cpu_load=cpu_load,
        wall_seconds=round(wall_seconds, 1),
        latency_ms=latency([outcome.latency_ms for outcome in outcomes]),
        rapid_exit_latency_ms=latency(rapid) if rapid else None,
        by_scenario=_grouped(outcomes, "scenario"),
        by_load=_grouped(outcomes, "load"),
        cleanup_failures=sum(o.cleanup.startswith("failed") for o in outcomes),
        actions_missed=sum(not o.action_done for o in outcomes if _has_action(o.scenario)),
        problems=problems[:MAX_PROBLEMS_LISTED],
        missed_actions=[
            f"run {o.index} ({o.scenario}): {o.action_detail or 'not seen running'}"
            for o in outcomes
            if _has_action(o.scenario) and not o.action_done
        ][:MAX_PROBLEMS_LISTED],
    )


def _has_action(scenario: str) -> bool:
    from sandbox_agent.stress.scenarios import SCENARIOS

    return any(s.name == scenario and s.action != "none" for s in SCENARIOS)
