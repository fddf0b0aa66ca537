"""A scripted run on a small repository made in a test's folder: the repository, the plan's
steps, and the ``RunConfig`` that runs them (the ``scripted`` provider).

Shared by the controller's review tests (SR-8, SR-13): each builds a hostile repository
with ``make_repo`` and a plan with the step helpers, then calls ``run_task(config(...))``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from repo_files import write_files
from sandbox_agent.controller import Budgets, RunConfig
from sandbox_agent.providers.options import PlanOptions

BUGGY_ADD = "def add(a, b):\n    return a - b\n"


def make_repo(root: Path, files: dict[str, str]) -> Path:
    """``files`` (relative path -> text) written under ``root``; ``root`` returned."""
    return write_files(root, files)


def create(path: str, text: str) -> dict[str, Any]:
    """A plan step that creates ``path`` holding ``text``."""
    return {"tool": "apply_patch", "args": {"edits": [{"path": path, "old": "", "new": text}]}}


def replace(path: str, old: str, new: str) -> dict[str, Any]:
    """A plan step that replaces ``old`` by ``new`` in ``path``."""
    return {"tool": "apply_patch", "args": {"edits": [{"path": path, "old": old, "new": new}]}}


RUN_TESTS = {"tool": "run_tests", "args": {}}
FINISH = {"tool": "finish", "args": {"summary": "done"}}


def config(
    tmp_path: Path,
    repo: Path,
    steps: list[dict[str, Any]],
    *,
    runtime: str = "runc",
    **budgets: Any,
) -> RunConfig:
    """Run ``steps`` on ``repo`` (``max_denials`` 10 unless ``budgets`` says otherwise)."""
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"steps": steps}))
    return RunConfig(
        task="Fix add.",
        repo=repo,
        provider="scripted",
        provider_options=PlanOptions(plan_path=str(plan)),
        runtime=runtime,  # type: ignore[arg-type]
        budgets=Budgets(**{"max_denials": 10, **budgets}),
        trace_dir=tmp_path / "runs",
    )
