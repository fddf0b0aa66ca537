"""One runnable evaluation case: a task plus where its repository, plan and held-out tests are."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from sandbox_agent.evals.tasks.taskfile import Task


class EvalCase(BaseModel):
    """A task resolved to paths on this host (a fixture by name, or a generated repository)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: Task
    fixtures_dir: Path | None = None
    """Where ``task.fixture`` is found; None with ``repo``."""
    repo: Path | None = None
    """A generated repository (external suites), copied by the controller like any ``--repo``."""
    plan: Path | None = None
    """The scripted reference plan; None lets the provider use the fixture's own."""
    held_out_dir: Path
