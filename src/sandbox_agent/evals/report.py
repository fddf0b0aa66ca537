"""The eval report: one JSON and one Markdown file in a results folder, every run kept."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from sandbox_agent.evals.records import (
    RunRecord,
    Summary,
    TaskSummary,
    outcome,
    per_task,
    summarize,
)

REPORT_SCHEMA_VERSION = 1
SIMULATED_PROVIDERS = frozenset({"scripted", "mock-adversarial", "injection"})
HARNESS_NOTICE = (
    "Results from the scripted, mock-adversarial and injection providers validate the "
    "harness and the controller's enforcement (replayed reference plans, simulated "
    "attacks); they are not model results."
)


class EvalReport(BaseModel):
    """The whole report (``report.json``)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = REPORT_SCHEMA_VERSION
    notice: str
    suite: str
    provider: str
    model: str
    runtime: str
    jobs: int
    repeats: int
    control: bool
    """True for a ``--no-fix`` control run (a plan that changes nothing)."""
    started_at: str
    wall_seconds: float
    summary: Summary
    tasks: list[TaskSummary]
    runs: list[RunRecord]


def make_report(
    records: list[RunRecord],
    *,
    suite: str,
    provider: str,
    model: str,
    runtime: str,
    jobs: int,
    repeats: int,
    control: bool,
    started_at: dt.datetime,
    wall_seconds: float,
) -> EvalReport:
    """Assemble the report from every run's record."""
    simulated = provider in SIMULATED_PROVIDERS
    notice = HARNESS_NOTICE if simulated else f"Model results from provider {provider!r}."
    return EvalReport(
        notice=notice,
        suite=suite,
        provider=provider,
        model=model,
        runtime=runtime,
        jobs=jobs,
        repeats=repeats,
        control=control,
        started_at=started_at.isoformat(timespec="seconds"),
        wall_seconds=round(wall_seconds, 3),
        summary=summarize(records),
        tasks=per_task(records),
        runs=records,
    )


def default_results_dir(now: dt.datetime) -> Path:
    """``results/<UTC timestamp>/`` under the current folder."""
    return Path("results") / now.strftime("%Y%m%dT%H%M%SZ")


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |"


def _held_out_cell(record: RunRecord) -> str:
    held = record.held_out
    return f"{held.status} {held.tests_run - held.failures - held.errors}/{held.tests_run}"


def to_markdown(report: EvalReport) -> str:
    """A human report: notice, configuration, summary, per task, every run, violations."""
    s = report.summary
    lines = [
        f"# Eval report: {report.suite}",
        "",
        f"> {report.notice}",
        "",
        f"- provider `{report.provider}`, model `{report.model or '-'}`, runtime "
        f"`{report.runtime}`, jobs {report.jobs}, repeats {report.repeats}"
        + (", **control run (no fix)**" if report.control else ""),
        f"- started {report.started_at}, wall time {report.wall_seconds:.1f} s",
        "",
        "## Summary",
        "",
        _row(["tasks", "runs", "passed", "clean", "attempted violations", "executed violations"]),
        _row(["---"] * 6),
        _row([s.tasks, s.runs, s.passed, s.clean, s.attempted_violations, s.executed_violations]),
        "",
        f"Held-out passed {s.held_out_passed}/{s.runs}; timeouts {s.timeouts}; sandbox "
        f"failures {s.sandbox_failures}; invalid outputs {s.invalid_outputs}; harness errors "
        f"{s.harness_errors}; statuses {json.dumps(s.statuses)}.",
        "",
        "## Per task (every repeat kept, in order)",
        "",
        _row(["task", "version", "runs", "passed", "clean", "attempted", "executed", "outcomes"]),
        _row(["---"] * 8),
    ]
    lines += [
        _row(
            [
                t.task_id,
                t.task_version,
                t.runs,
                t.passed,
                t.clean,
                t.attempted_violations,
                t.executed_violations,
                " ".join(t.outcomes),
            ]
        )
        for t in report.tasks
    ]
    lines += [
        "",
        "## Runs",
        "",
        _row(
            [
                "task",
                "repeat",
                "status",
                "outcome",
                "held-out",
                "attempted",
                "executed",
                "steps",
                "tool calls",
                "seconds",
            ]
        ),
        _row(["---"] * 10),
    ]
    lines += [
        _row(
            [
                r.task_id,
                r.repeat,
                r.status,
                outcome(r),
                _held_out_cell(r),
                len(r.attempted_violations),
                len(r.executed_violations),
                r.steps,
                r.tool_calls,
                f"{r.durations.total_s:.2f}",
            ]
        )
        for r in report.runs
    ]
    violations = [
        f"- `{r.task_id}` #{r.repeat}: {kind} {v.kind}: {v.detail}"
        for r in report.runs
        for kind, found in (
            ("attempted", r.attempted_violations),
            ("EXECUTED", r.executed_violations),
        )
        for v in found
    ]
    if violations:
        lines += ["", "## Violations", "", *violations]
    errors = [f"- `{r.task_id}` #{r.repeat}: {r.error}" for r in report.runs if r.error]
    if errors:
        lines += ["", "## Harness errors", "", *errors]
    return "\n".join(lines) + "\n"


def write_report(report: EvalReport, folder: Path) -> tuple[Path, Path]:
    """Write ``report.json`` and ``report.md`` into ``folder`` (created if needed)."""
    folder.mkdir(parents=True, exist_ok=True)
    json_path, md_path = folder / "report.json", folder / "report.md"
    json_path.write_text(report.model_dump_json(indent=1) + "\n", encoding="utf-8")
    md_path.write_text(to_markdown(report), encoding="utf-8")
    return json_path, md_path
