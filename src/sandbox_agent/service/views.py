"""From stored rows to what the API answers, and the fixtures a client may name."""

from __future__ import annotations

import re
import time
from pathlib import Path

from sandbox_agent.controller.models import Budgets, RepairOptions, RunResult
from sandbox_agent.service.models import FIXTURE_NAME_PATTERN, RunSummary, RunView
from sandbox_agent.service.store import StoredRun

__all__ = ["StoredRun", "list_fixtures", "stored_limits", "summary", "view"]

_FIXTURE_NAME = re.compile(FIXTURE_NAME_PATTERN)
_REQUEST_FIELDS = {"budgets", "repair", "allow_no_tests"}
"""Fields of a view that come from the request as admitted, not from the result."""
_RESULT_FIELDS = set(RunView.model_fields) - set(RunSummary.model_fields) - _REQUEST_FIELDS


def list_fixtures(fixtures_dir: Path) -> list[str]:
    """Names of the fixture folders: real sub-folders (not links) with a plain name."""
    try:
        entries = list(fixtures_dir.iterdir())
    except OSError:
        return []
    return sorted(
        entry.name
        for entry in entries
        if _FIXTURE_NAME.match(entry.name) and entry.is_dir() and not entry.is_symlink()
    )


def _result(stored: StoredRun) -> RunResult | None:
    return RunResult.model_validate_json(stored.result_json) if stored.result_json else None


def summary(stored: StoredRun, result: RunResult | None = None) -> RunSummary:
    result = result or _result(stored)
    end = stored.finished_at or (time.time() if stored.started_at else None)
    duration = end - stored.started_at if stored.started_at and end else None
    return RunSummary(
        id=stored.id,
        status=stored.status,
        reason=stored.reason,
        fixture_name=stored.fixture,
        provider=stored.provider,
        task=stored.task,
        strategy="repair" if stored.strategy == "repair" else "tools",
        repo=stored.repo,
        submitted_at=stored.submitted_at,
        started_at=stored.started_at,
        finished_at=stored.finished_at,
        duration_s=round(duration, 3) if duration is not None else None,
        budget_used=result.budget_used if result else None,
    )


def stored_limits(stored: StoredRun) -> tuple[Budgets | None, RepairOptions | None]:
    """The budgets and repair options a run was admitted with (None: not recorded)."""
    budgets = Budgets.model_validate_json(stored.budgets_json) if stored.budgets_json else None
    repair = RepairOptions.model_validate_json(stored.repair_json) if stored.repair_json else None
    return budgets, repair


def view(stored: StoredRun) -> RunView:
    result = _result(stored)
    fields = result.model_dump(include=_RESULT_FIELDS) if result else {}
    budgets, repair = stored_limits(stored)
    return RunView(
        **summary(stored, result).model_dump(),
        **fields,
        budgets=budgets,
        repair=repair,
        allow_no_tests=bool(stored.allow_no_tests),
    )
