"""``eval --suite realrepos``: real projects' own test suites, each task one made bug.

For each task: the project's pristine tree (its sdist, fetched and checked once), a
copy with the task's bug applied as the repository, the bug report as the prompt,
and as held-out check the project's whole suite over the final tree with its pristine
tests (``HeldOut.kind == "suite"``). The reference plan reverts the change; the
control plan (``--no-fix``) only finishes. Every project's dependency environment is
made (or found) here, before any run; ``offline`` (``verify RESULTS_DIR``), nothing is
fetched nor made: the trees are the ones on this host.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

from sandbox_agent.deps.models import DepsOptions
from sandbox_agent.errors import UsageError
from sandbox_agent.evals.realrepos import fetch
from sandbox_agent.evals.realrepos.taskfile import Project, RealTask, TaskFile, load
from sandbox_agent.evals.tasks.cases import EvalCase
from sandbox_agent.evals.tasks.edits import minimal_edit
from sandbox_agent.evals.tasks.taskfile import HeldOut, SuccessCriteria, Task

MAX_ITERATIONS = 20
MAX_WALL_SECONDS = 900.0
TEST_TIMEOUT_S = 120.0
HELD_OUT_TIMEOUT_S = 300.0
MAX_LISTED_FAILURES = 8
MAX_MESSAGE_CHARS = 200


def bug_report(project: Project, task: RealTask) -> str:
    """The task text: what fails and how, as a user would report it. Never the change."""
    lines = [
        f"Bug report for {project.name} {project.version}: {len(task.failing)} of the "
        "project's own tests fail.",
        "",
        "Failing tests, with their errors:",
    ]
    for failing in task.failing[:MAX_LISTED_FAILURES]:
        lines.append(f"- {failing.id}: {failing.message[:MAX_MESSAGE_CHARS]}")
    if len(task.failing) > MAX_LISTED_FAILURES:
        lines.append(f"- and {len(task.failing) - MAX_LISTED_FAILURES} more")
    lines += [
        "",
        "The tests are correct. Find the bug in the project's code and fix it, without "
        "breaking any other test; run_tests runs the whole suite.",
    ]
    return "\n".join(lines)


def buggy_text(tree: Path, task: RealTask) -> str:
    """The task's module with its bug applied.

    Raises:
        UsageError: the edit does not apply exactly once (the task file and the
            project disagree).
    """
    text = (tree / task.path).read_text(encoding="utf-8")
    if text.count(task.bug.old) != 1:
        raise UsageError(f"{task.id}: its edit does not occur exactly once in {task.path}")
    return text.replace(task.bug.old, task.bug.new, 1)


def _plan(task: RealTask, pristine: str, buggy: str, *, fix: bool) -> dict[str, object]:
    if not fix:
        return {"steps": [{"tool": "finish", "args": {"summary": "control: no change made"}}]}
    revert = minimal_edit(buggy, pristine, task.id)
    return {
        "steps": [
            {
                "tool": "apply_patch",
                "args": {"edits": [{"path": task.path, "old": revert.old, "new": revert.new}]},
            },
            {"tool": "run_tests", "args": {}},
            {"tool": "finish", "args": {"summary": f"fixed {task.function} in {task.path}"}},
        ]
    }


def make_task(task_file: TaskFile, task: RealTask, pristine: Path) -> Task:
    project = task_file.project(task.project)
    return Task(
        id=task.id,
        version=task_file.suite_version,
        kind="realrepos",
        fixture=f"{project.name}-{project.version}",
        prompt=bug_report(project, task),
        max_iterations=MAX_ITERATIONS,
        max_wall_seconds=MAX_WALL_SECONDS,
        test_timeout_s=TEST_TIMEOUT_S,
        success=SuccessCriteria(statuses=("SUCCEEDED",)),
        expected_changes=(task.path,),
        held_out=HeldOut(kind="suite", path=str(pristine), timeout_s=HELD_OUT_TIMEOUT_S),
    )


def prepare_projects(
    task_file: TaskFile, names: set[str], deps: DepsOptions | None = None
) -> dict[str, Path]:
    """Each named project's pristine tree and dependency environment, made or found.

    Raises:
        SetupError: an sdist cannot be fetched.
        UsageError: it is not the pinned file; ``DependencyError``: its environment.
    """
    from sandbox_agent.deps import prepare_environment
    from sandbox_agent.deps.environment import pin_resolution

    started = time.monotonic()
    trees = {}
    for project in task_file.projects:
        if project.name not in names:
            continue
        trees[project.name] = fetch.pristine_tree(project)
        if project.resolution is not None:
            pin_resolution(trees[project.name], project.resolution, deps)
        prepare_environment(trees[project.name], deps)
    print(
        f"realrepos: {len(trees)} projects ready in {time.monotonic() - started:.1f} s",
        file=sys.stderr,
    )
    return trees


def local_trees(task_file: TaskFile, names: set[str]) -> dict[str, Path]:
    """Each named project's pristine tree from this host's sdist cache: no fetch, no
    dependency environment (what a task's hash covers needs neither).

    Raises:
        SetupError: an sdist is not on this host.
        UsageError: it is not the pinned file, or has no root folder.
    """
    return {
        project.name: fetch.pristine_tree(project, download=False)
        for project in task_file.projects
        if project.name in names
    }


def build_cases(
    task_ids: list[str] | None,
    scratch: Path,
    *,
    fix: bool,
    deps: DepsOptions | None = None,
    task_file_path: Path | None = None,
    offline: bool = False,
) -> list[EvalCase]:
    """One case per selected task, its repository and plan under ``scratch``.

    Args:
        offline: from this host's sdists only, no environment made (``local_trees``).

    Raises:
        UsageError: an unknown task id, or a task file that does not match its projects.
        SetupError: an sdist cannot be fetched (``offline``: is not on this host).
    """
    task_file = load(task_file_path) if task_file_path else load()
    tasks = list(task_file.tasks)
    if task_ids:
        known = {task.id for task in tasks}
        unknown = [task_id for task_id in task_ids if task_id not in known]
        if unknown:
            raise UsageError(
                f"unknown realrepos task id(s) {', '.join(unknown)}; ids look like {tasks[0].id}"
            )
        tasks = [task for task in tasks if task.id in set(task_ids)]
    names = {task.project for task in tasks}
    trees = local_trees(task_file, names) if offline else prepare_projects(task_file, names, deps)
    cases = []
    for task in tasks:
        pristine = trees[task.project]
        buggy = buggy_text(pristine, task)
        base = scratch / task.id
        repo = base / "repo"
        shutil.copytree(pristine, repo)
        (repo / task.path).write_text(buggy, encoding="utf-8")
        plan = base / "plan.json"
        original = (pristine / task.path).read_text(encoding="utf-8")
        plan.write_text(json.dumps(_plan(task, original, buggy, fix=fix), indent=1))
        cases.append(
            EvalCase(
                task=make_task(task_file, task, pristine),
                repo=repo,
                plan=plan,
                held_out_dir=pristine,
            )
        )
    return cases
