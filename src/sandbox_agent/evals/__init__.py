"""The evaluation harness: versioned tasks, held-out tests, honest scoring, parallel runs.

Public entry points::

    from sandbox_agent.evals import SuiteOptions, EvalOptions, build_cases, run_all
    cases = build_cases("fixtures", SuiteOptions(), scratch)
    records = run_all(cases, EvalOptions(jobs=2), backend_factory=..., run_task=run_task)
"""

from __future__ import annotations

from sandbox_agent.evals.results.records import RunRecord, Summary, summarize
from sandbox_agent.evals.results.report import EvalReport, make_report, to_markdown, write_report
from sandbox_agent.evals.results.scoring import Score, Violation, score_run
from sandbox_agent.evals.running.executor import run_all
from sandbox_agent.evals.running.heldout import HeldOutResult, run_held_out
from sandbox_agent.evals.running.one_run import run_case
from sandbox_agent.evals.running.options import EvalOptions
from sandbox_agent.evals.tasks.cases import EvalCase
from sandbox_agent.evals.tasks.suites import SUITES, SuiteOptions, build_cases
from sandbox_agent.evals.tasks.taskfile import Task, TaskFile, load_task_file

__all__ = [
    "SUITES",
    "EvalCase",
    "EvalOptions",
    "EvalReport",
    "HeldOutResult",
    "RunRecord",
    "Score",
    "SuiteOptions",
    "Summary",
    "Task",
    "TaskFile",
    "Violation",
    "build_cases",
    "load_task_file",
    "make_report",
    "run_all",
    "run_case",
    "run_held_out",
    "score_run",
    "summarize",
    "to_markdown",
    "write_report",
]
