"""Suites, chosen from one table: ``fixtures`` (``evals/tasks.json``) and ``humanevalfix``.

A suite turns options into ``EvalCase``s. Generated material (HumanEvalFix repositories,
control plans) lives in a scratch folder the caller owns and removes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from sandbox_agent.errors import UsageError
from sandbox_agent.evals.cases import EvalCase
from sandbox_agent.evals.tasks import (
    DEFAULT_TASKS_FILE,
    EVALS_DIR,
    held_out_dir,
    load_task_file,
    plan_path,
    select_tasks,
)
from sandbox_agent.settings import default_fixtures_dir

CONTROL_PLAN = {"steps": [{"tool": "finish", "args": {"summary": "control: no change made"}}]}


class SuiteOptions(BaseModel):
    """What a suite needs to build its cases."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_ids: list[str] | None = None
    fix: bool = True
    """False: the control plan (changes nothing) instead of each reference plan."""
    tasks_file: Path = DEFAULT_TASKS_FILE
    fixtures_dir: Path | None = None
    """The project's fixtures (``--fixtures-dir``); eval-only ones stay in ``evals/fixtures``."""
    dataset: str | None = None
    """HumanEvalFix JSONL path (else ``$SANDBOX_AGENT_HUMANEVALFIX`` or ``../shared/...``)."""


def _control_plan(scratch: Path) -> Path:
    path = scratch / "control.plan.json"
    path.write_text(json.dumps(CONTROL_PLAN), encoding="utf-8")
    return path


def fixture_cases(options: SuiteOptions, scratch: Path) -> list[EvalCase]:
    """The tasks of ``evals/tasks.json``, resolved to fixture folders and plans."""
    task_file = load_task_file(options.tasks_file)
    project = options.fixtures_dir or default_fixtures_dir()
    control = None if options.fix else _control_plan(scratch)
    cases = []
    for task in select_tasks(task_file.tasks, options.task_ids):
        folder = EVALS_DIR / "fixtures" if task.fixtures_root == "evals" else project
        if not (folder / task.fixture).is_dir():
            raise UsageError(f"task {task.id}: fixture {task.fixture!r} not found in {folder}")
        cases.append(
            EvalCase(
                task=task,
                fixtures_dir=folder,
                plan=control or plan_path(task),
                held_out_dir=held_out_dir(task),
            )
        )
    return cases


def humanevalfix_cases(options: SuiteOptions, scratch: Path) -> list[EvalCase]:
    """One generated repository per HumanEvalFix row (164), under ``scratch``."""
    from sandbox_agent.evals import humanevalfix

    rows = humanevalfix.load_rows(humanevalfix.dataset_path(options.dataset))
    if options.task_ids:
        by_id = {humanevalfix.task_id(row): row for row in rows}
        unknown = [task_id for task_id in options.task_ids if task_id not in by_id]
        if unknown:
            raise UsageError(
                f"unknown HumanEvalFix task id(s) {', '.join(unknown)}; "
                "ids look like humanevalfix-python-0 .. humanevalfix-python-163"
            )
        wanted = set(options.task_ids)
        rows = [row for row in rows if humanevalfix.task_id(row) in wanted]
    return humanevalfix.build_suite(rows, scratch, fix=options.fix)


SUITES: dict[str, Callable[[SuiteOptions, Path], list[EvalCase]]] = {
    "fixtures": fixture_cases,
    "humanevalfix": humanevalfix_cases,
}
DEFAULT_SUITE = "fixtures"


def build_cases(suite: str, options: SuiteOptions, scratch: Path) -> list[EvalCase]:
    """The cases of ``suite``.

    Raises:
        UsageError: an unknown suite, task id, fixture or dataset.
    """
    if suite not in SUITES:
        raise UsageError(f"unknown suite {suite!r}; choose one of: {', '.join(SUITES)}")
    return SUITES[suite](options, scratch)
