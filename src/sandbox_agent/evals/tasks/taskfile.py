"""The evaluation task file (``evals/tasks.json``): a versioned schema, validated strictly.

One ``Task`` says what to ask, over which fixture, with which tools and limits, how
success is judged, which policy applies, which files may change, and where its
held-out tests live (outside any fixture, so the agent never sees them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sandbox_agent.controller.models import DEFAULT_MAX_DENIALS, RunStatus
from sandbox_agent.errors import UsageError
from sandbox_agent.settings import PROJECT_ROOT
from sandbox_agent.tools.contracts import TOOL_NAMES, ToolName

TASK_SCHEMA_VERSION = 1
EVALS_DIR = PROJECT_ROOT / "evals"
"""The project's evaluation folder: tasks, held-out tests, plans, eval-only fixtures."""
DEFAULT_TASKS_FILE = EVALS_DIR / "tasks.json"
DEFAULT_TEST_TIMEOUT_S = 30.0
HELD_OUT_MODULE_PATTERN = r"^test_[a-z0-9_]+$"
TASK_ID_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,79}$"
MAX_IDS_LISTED = 20

TaskKind = Literal[
    "bug_fix",
    "injection",
    "malicious_tests",
    "false_report",
    "summarise",
    "review",
    "bad_selector",
    "humanevalfix",
    "realrepos",
]
FixturesRoot = Literal["project", "evals"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SuccessCriteria(_Strict):
    """How the harness decides that a run did the task. Every listed check must hold."""

    statuses: tuple[RunStatus, ...] = ("SUCCEEDED",)
    """Controller statuses that count (a read-only review of a buggy repo ends ``FAILED``)."""
    held_out_pass: bool = True
    """The held-out tests pass on the agent's final tree, in a fresh verified sandbox."""
    no_changes: bool = False
    """The final diff is empty (false bug reports, summaries, reviews)."""
    changes_within_expected: bool = True
    """Every changed file is listed in the task's ``expected_changes``."""
    summary_mentions: tuple[str, ...] = ()
    """Case-insensitive words the finishing summary must contain (a weak check, by design)."""


class PolicyConstraints(_Strict):
    """The policy a run is held to, on top of the controller's own."""

    max_denials: int = Field(DEFAULT_MAX_DENIALS, ge=0)
    """The run's policy-denial budget."""
    protected_paths: tuple[str, ...] = ()
    """Extra glob patterns (on top of docs/TOOLS.md, "Policy") that no change may touch."""
    fixture_must_stay_intact: bool = True


class HeldOut(_Strict):
    """Held-out tests: a folder under ``evals/held_out`` with one unittest module."""

    kind: Literal["judge", "suite"] = "judge"
    """``judge``: the module below, judged out of process (``evals.running.heldout.run_held_out``).
    ``suite``: ``path`` is the project's pristine tree, and the check is its whole own
    test suite (pristine tests over the final tree), counted in process
    (``run_held_out_suite``; the realrepos suite)."""
    path: str = Field(min_length=1)
    """Folder relative to ``evals/held_out`` (or absolute, for generated suites)."""
    module: str = Field("test_heldout", pattern=HELD_OUT_MODULE_PATTERN)
    """The module to run, by dotted selector; nothing else in the tree is collected."""
    timeout_s: float = Field(DEFAULT_TEST_TIMEOUT_S, gt=0, le=600)


class Task(_Strict):
    """One evaluation task. ``version`` changes whenever its meaning or held-out tests do."""

    id: str = Field(pattern=TASK_ID_PATTERN)
    version: int = Field(ge=1)
    kind: TaskKind
    fixture: str = Field(min_length=1)
    fixtures_root: FixturesRoot = "project"
    """``project``: the project's ``fixtures/``; ``evals``: ``evals/fixtures/`` (eval-only)."""
    prompt: str = Field(min_length=1, max_length=20_000)
    allowed_tools: tuple[ToolName, ...] = TOOL_NAMES
    max_iterations: int = Field(ge=1, le=200)
    max_wall_seconds: float = Field(gt=0, le=3600)
    test_timeout_s: float = Field(DEFAULT_TEST_TIMEOUT_S, gt=0, le=600)
    success: SuccessCriteria = SuccessCriteria()
    policy: PolicyConstraints = PolicyConstraints()
    expected_changes: tuple[str, ...] = ()
    held_out: HeldOut
    plan: str | None = None
    """The scripted reference plan, relative to ``evals/plans``; the fixture's own when None."""

    @model_validator(mode="after")
    def _consistent(self) -> Task:
        if "finish" not in self.allowed_tools:
            raise ValueError(f"task {self.id}: allowed_tools must include 'finish'")
        if self.success.no_changes and self.expected_changes:
            raise ValueError(f"task {self.id}: no_changes contradicts expected_changes")
        return self


class TaskFile(_Strict):
    """The whole ``evals/tasks.json``."""

    schema_version: Literal[1]
    tasks: tuple[Task, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> TaskFile:
        seen: set[str] = set()
        for task in self.tasks:
            if task.id in seen:
                raise ValueError(f"duplicate task id {task.id!r}")
            seen.add(task.id)
        return self


def load_task_file(path: Path = DEFAULT_TASKS_FILE) -> TaskFile:
    """Read and validate a task file.

    Raises:
        UsageError: the file is missing, not JSON, or does not match the schema.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"task file {path} not found; pass an existing tasks.json") from None
    except (OSError, ValueError) as error:
        raise UsageError(f"task file {path} is not readable JSON: {error}") from None
    try:
        return TaskFile.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise UsageError(f"task file {path}: {where}: {first['msg']}") from None


def held_out_dir(task: Task, evals_dir: Path = EVALS_DIR) -> Path:
    """The task's held-out folder (relative paths are under ``evals/held_out``)."""
    path = Path(task.held_out.path)
    return path if path.is_absolute() else evals_dir / "held_out" / path


def plan_path(task: Task, evals_dir: Path = EVALS_DIR) -> Path | None:
    """The task's own reference plan, if it names one."""
    if task.plan is None:
        return None
    path = Path(task.plan)
    return path if path.is_absolute() else evals_dir / "plans" / path


def select_tasks(tasks: tuple[Task, ...], ids: list[str] | None) -> list[Task]:
    """The tasks named in ``ids`` (all when None), in file order.

    Raises:
        UsageError: an id names no task.
    """
    if not ids:
        return list(tasks)
    known = {task.id for task in tasks}
    unknown = [task_id for task_id in ids if task_id not in known]
    if unknown:
        listed = ", ".join(sorted(known)[:MAX_IDS_LISTED])
        more = " ..." if len(known) > MAX_IDS_LISTED else ""
        raise UsageError(f"unknown task id(s) {', '.join(unknown)}; known: {listed}{more}")
    wanted = set(ids)
    return [task for task in tasks if task.id in wanted]
