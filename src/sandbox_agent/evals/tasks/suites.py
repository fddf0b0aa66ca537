"""Suites, chosen from one table: ``fixtures`` (``evals/tasks.json``), ``humanevalfix`` and
``realrepos`` (``evals/realrepos/tasks.json``).

A suite turns options into ``EvalCase``s. Generated material (HumanEvalFix repositories,
control plans) lives in a scratch folder the caller owns and removes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from sandbox_agent.deps.models import DepsOptions
from sandbox_agent.errors import UsageError
from sandbox_agent.evals.tasks.cases import EvalCase
from sandbox_agent.evals.tasks.taskfile import (
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
    """The suite's data (``--dataset``): humanevalfix's JSONL (else
    ``$SANDBOX_AGENT_HUMANEVALFIX`` or the project's copy); realrepos' task file (else
    ``evals/realrepos/tasks.json``: another is how a development split is run,
    ``python -m sandbox_agent.evals.realrepos.build --seed 18 --out FILE``)."""
    plans_dir: Path | None = None
    """``--plans DIR``: ``DIR/<task id>.json`` (a plan file) replaces that task's plan."""
    deps: DepsOptions = DepsOptions()
    """Where realrepos' dependency environments come from (``--deps-index-url``)."""
    offline: bool = False
    """Build from what is on this host only: fetch nothing, make no dependency
    environment (``verify RESULTS_DIR``: what the task hashes cover needs neither)."""


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
    from sandbox_agent.evals.tasks import humanevalfix

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


def realrepos_cases(options: SuiteOptions, scratch: Path) -> list[EvalCase]:
    """One case per task of ``evals/realrepos/tasks.json`` (or ``--dataset``'s task file);
    sdists fetched when missing (never when ``offline``)."""
    from sandbox_agent.evals.realrepos.suite import build_cases as realrepos_build

    return realrepos_build(
        options.task_ids,
        scratch,
        fix=options.fix,
        deps=options.deps,
        task_file_path=Path(options.dataset) if options.dataset else None,
        offline=options.offline,
    )


SUITES: dict[str, Callable[[SuiteOptions, Path], list[EvalCase]]] = {
    "fixtures": fixture_cases,
    "humanevalfix": humanevalfix_cases,
    "realrepos": realrepos_cases,
}
DEFAULT_SUITE = "fixtures"
DATASET_SUITES = ("humanevalfix", "realrepos")
"""The suites whose data ``--dataset`` can replace."""


def build_cases(suite: str, options: SuiteOptions, scratch: Path) -> list[EvalCase]:
    """The cases of ``suite``.

    Raises:
        UsageError: an unknown suite, task id, fixture or dataset.
    """
    if suite not in SUITES:
        raise UsageError(f"unknown suite {suite!r}; choose one of: {', '.join(SUITES)}")
    if options.dataset is not None and suite not in DATASET_SUITES:
        raise UsageError(
            f"--dataset names the data of {' or '.join(DATASET_SUITES)}; the {suite} suite "
            "has none: drop --dataset"
        )
    cases = SUITES[suite](options, scratch)
    if options.plans_dir is not None:
        cases = with_plans(cases, options.plans_dir, only_selected=options.task_ids is not None)
    return cases


def suite_of_identity(identity: dict[str, Any], task_ids: list[str]) -> tuple[str, SuiteOptions]:
    """The suite, and the options to build ``task_ids`` of it, that an evaluation's
    journal identity names (``commands/eval.py`` writes it from the ``eval`` flags):
    ``verify RESULTS_DIR`` rebuilds an evaluation's inputs from it. Relative paths are
    read from the current folder, as the evaluation read them.

    The options are ``offline``, and the identity's dependency options are not read: a
    verification reads what is here, it never asks an index the identity names (SR-12
    D5).
    """

    def path(name: str) -> Path | None:
        value = identity.get(name)
        return Path(value) if isinstance(value, str) and value else None

    suite = str(identity.get("suite"))
    dataset = identity.get("dataset")
    if suite not in DATASET_SUITES:
        dataset = None  # an older fixtures evaluation may name one: it was never read
    return suite, SuiteOptions(
        task_ids=task_ids,
        fix=identity.get("control") is not True,
        fixtures_dir=path("fixtures_dir"),
        dataset=dataset if isinstance(dataset, str) else None,
        plans_dir=path("plans"),
        offline=True,
    )


def with_plans(cases: list[EvalCase], plans_dir: Path, *, only_selected: bool) -> list[EvalCase]:
    """``plans_dir/<task id>.json`` in place of each task's plan (``eval --plans DIR``), for
    harness validation and so a reviewer can try plans of their own (forgeries among
    them) without editing the project. Every file is checked as a plan first.

    Raises:
        UsageError: the folder is missing, a plan file is not a plan, or (with every
            task selected) a ``*.json`` file names no task of the suite.
    """
    from sandbox_agent.providers.plan import load_plan

    if not plans_dir.is_dir():
        raise UsageError(f"--plans {plans_dir}: not a folder; give a folder of <task id>.json")
    by_id = {case.task.id: case for case in cases}
    plans = {path.stem: path for path in sorted(plans_dir.glob("*.json")) if path.is_file()}
    unknown = sorted(set(plans) - set(by_id))
    if unknown and not only_selected:
        raise UsageError(
            f"--plans {plans_dir}: {unknown[0]}.json names no task of this suite; "
            "name each file <task id>.json"
        )
    for name, path in plans.items():
        if name in by_id:
            load_plan(path)  # a one-line UsageError naming the file when it is not a plan
    return [
        case.model_copy(update={"plan": plans[case.task.id].resolve()})
        if case.task.id in plans
        else case
        for case in cases
    ]
