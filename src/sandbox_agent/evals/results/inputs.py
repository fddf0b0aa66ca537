"""What every run of an evaluation task is given, hashed: its repository (as the
controller hashes it, and as a workspace copies it), its plan and its held-out tests; and
the task's hash over its definition and those inputs (``task_sha256``). A resumed record
is reused, and ``verify RESULTS_DIR`` passes it, only for the same hash (SR-11 F1, F2)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import NamedTuple

from sandbox_agent.canonical import canonical_json
from sandbox_agent.evals.tasks.cases import EvalCase
from sandbox_agent.evidence.chain import read_bounded


class TaskInputs(NamedTuple):
    """The content of what every run of a task is given, each as a SHA-256."""

    repository: str
    """The repository it starts from: the digest the controller seals as
    ``fixture_sha256_before`` (``repository_sha256``)."""
    plan: str
    """Its plan file ("" for none)."""
    held_out: str
    """Its held-out folder."""
    copy: str
    """The workspace copy of its repository, made as a run makes it
    (``Workspace.sha256_copy``): a run must have been given that very copy."""


def task_inputs(case: EvalCase) -> TaskInputs:
    """The case's inputs as they are now (read, never changed)."""
    repository = case_repository(case)
    return TaskInputs(
        repository=repository_sha256(repository),
        plan=file_sha256(case_plan(case)),
        held_out=repository_sha256(case.held_out_dir),
        copy=copy_sha256(repository),
    )


def copy_sha256(path: Path) -> str:
    """``Workspace.sha256_copy`` of a workspace made from ``path`` and removed (of the
    failure when none can be made)."""
    from sandbox_agent.errors import UsageError, WorkspaceError
    from sandbox_agent.workspace import Workspace

    try:
        with Workspace.create(path) as workspace:
            return workspace.sha256_copy
    except (UsageError, WorkspaceError) as error:
        return hashlib.sha256(f"not copied: {error}".encode()).hexdigest()


def case_repository(case: EvalCase) -> Path:
    """The folder a run of ``case`` copies its repository from."""
    return case.repo or (case.fixtures_dir or Path()) / case.task.fixture


def case_plan(case: EvalCase) -> Path | None:
    """The plan a run of ``case`` replays: its own, or the fixture's
    (``<fixtures_dir>/<name>.plan.json``) when it has none."""
    from sandbox_agent.controller.source import PLAN_SUFFIX

    if case.plan is not None:
        return case.plan
    if case.repo is not None or case.fixtures_dir is None:
        return None
    path = case.fixtures_dir / f"{case.task.fixture}{PLAN_SUFFIX}"
    return path if path.is_file() else None


def task_sha256(case: EvalCase, inputs: TaskInputs | None = None) -> str:
    """The task's definition (id, version, text, fixture, budgets, checks) and the content
    of its inputs (``inputs``, read now when None), hashed. A resumed record is reused,
    and ``verify RESULTS_DIR`` passes it, only for the same definition of the same inputs
    (SR-11 F1, F2).

    Host paths are left out (the held-out folder's is replaced by its content): a
    generated suite is built in a new temporary folder on each invocation (SR-11 F8).
    """
    definition = case.task.model_dump(mode="json")
    del definition["held_out"]["path"]
    content = (inputs or task_inputs(case))._asdict()
    return hashlib.sha256(canonical_json({"task": definition, **content})).hexdigest()


def repository_sha256(path: Path) -> str:
    """``tree_sha256`` of a folder as a run copies it (the controller's own digest of its
    repository); of the failure when it cannot be read (such a run fails to start, and is
    another run than one that could)."""
    from sandbox_agent.errors import WorkspaceError
    from sandbox_agent.workspace import WorkspaceLimits
    from sandbox_agent.workspace.workspace import source_sha256

    try:
        return source_sha256(path, WorkspaceLimits())
    except WorkspaceError as error:
        return hashlib.sha256(f"unreadable: {error}".encode()).hexdigest()


def file_sha256(path: Path | None) -> str:
    """A file's SHA-256 ("" for none; of the failure when it cannot be read)."""
    if path is None:
        return ""
    try:
        return hashlib.sha256(read_bounded(path)).hexdigest()
    except OSError as error:
        return hashlib.sha256(f"unreadable: {error.strerror or error}".encode()).hexdigest()
