"""The realrepos task file (``evals/realrepos/tasks.json``): projects pinned by version
and hash, and the tasks made from them. Committed, versioned; holds metadata only
(names, versions, hashes, each change as an edit), never a project's code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sandbox_agent.errors import UsageError
from sandbox_agent.evals.tasks.taskfile import EVALS_DIR

TASK_FILE = EVALS_DIR / "realrepos" / "tasks.json"
SUITE_VERSION = 1
"""Bump when a project, a task or how tasks are made changes meaning."""
Runner = Literal["unittest", "pytest"]
MutationKind = Literal[
    "flip_comparison", "off_by_one", "swap_arguments", "remove_statement", "change_constant"
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Project(_Strict):
    """One real project, as its sdist on PyPI."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    version: str
    url: str = Field(pattern=r"^https://files\.pythonhosted\.org/\S+\.tar\.gz$")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    licence: str
    """The project's licence (its code is never committed here; only this metadata)."""
    root: str
    """The sdist's top folder (``six-1.17.0``)."""
    runner: Runner
    sources: tuple[str, ...] = Field(min_length=1)
    """The modules mutations are made in, relative to the root."""
    conftest: str | None = None
    """A root ``conftest.py`` written for the sandbox: it makes pytest the detected
    runner of a project that configures none, and deselects tests that cannot pass in
    any sandbox (a shell). None: the project as it is."""
    baseline_tests: int = Field(ge=1)
    """Tests the whole suite runs at baseline (all pass)."""
    resolution: str | None = None
    """The project's dependency resolution when the task file was made (each package
    pinned with the sha256 of its files), pinned for every eval
    (``deps.environment.pin_resolution``): its environment does not move with new
    releases. None: the project declares no dependency."""


class Edit(_Strict):
    """One ``apply_patch`` edit: ``old`` occurs exactly once in the file."""

    old: str = Field(min_length=1)
    new: str


class FailingTest(_Strict):
    id: str
    message: str


class RealTask(_Strict):
    """One bug made by one procedural change to one function of a project."""

    id: str = Field(pattern=r"^realrepos-[a-z0-9-]+-\d{3}$")
    project: str
    path: str
    """The changed module, relative to the project root."""
    function: str
    kind: MutationKind
    line: int = Field(ge=1)
    bug: Edit
    """Turns the pristine module into the buggy one; the reference plan reverts it."""
    failing: tuple[FailingTest, ...] = Field(min_length=1)
    """Tests that pass at baseline and fail with the bug (their messages make the report)."""


class TaskFile(_Strict):
    schema_version: Literal[1]
    suite_version: int = Field(ge=1)
    seed: int
    generated: dict[str, float | int | str]
    """How the file was made: the generator, its seconds, candidates tried and kept."""
    projects: tuple[Project, ...] = Field(min_length=1)
    tasks: tuple[RealTask, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> TaskFile:
        names = {project.name for project in self.projects}
        ids = [task.id for task in self.tasks]
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate task id")
        unknown = sorted({task.project for task in self.tasks} - names)
        if unknown:
            raise ValueError(f"tasks name unknown projects: {unknown}")
        return self

    def project(self, name: str) -> Project:
        return next(project for project in self.projects if project.name == name)


def load(path: Path = TASK_FILE) -> TaskFile:
    """Read and validate the task file.

    Raises:
        UsageError: missing, not JSON, or not the schema.
    """
    try:
        return TaskFile.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise UsageError(f"realrepos task file {path} not found") from None
    except (OSError, ValueError, ValidationError) as error:
        raise UsageError(f"realrepos task file {path}: {str(error).splitlines()[0]}") from None
