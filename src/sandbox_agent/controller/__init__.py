"""The trusted controller: one bounded agent loop whose terminal status is computed from evidence.

Public entry point::

    from sandbox_agent.controller import run_task
    result = run_task(config, cancel=token, on_event=print, on_final_workspace=copy_tree)
"""

from __future__ import annotations

from sandbox_agent.controller.loop import run_task
from sandbox_agent.controller.models import (
    Budgets,
    BudgetUsed,
    FinalTests,
    FixtureIntegrity,
    RunConfig,
    RunResult,
    RunStatus,
    ToolCallRecord,
)

__all__ = [
    "BudgetUsed",
    "Budgets",
    "FinalTests",
    "FixtureIntegrity",
    "RunConfig",
    "RunResult",
    "RunStatus",
    "ToolCallRecord",
    "run_task",
]
