"""The eval report: one JSON and one Markdown file in a results folder, every run kept."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from sandbox_agent.evals.results.cluster_report import ClusterReport
from sandbox_agent.evals.results.cluster_report import markdown as cluster_markdown
from sandbox_agent.evals.results.records import (
    RunRecord,
    Summary,
    TaskSummary,
    outcome,
    per_task,
    summarize,
)

REPORT_SCHEMA_VERSION = 1
HARNESS_NOTICE = (
    "Results from the scripted, mock-adversarial and injection providers validate the "
    "harness and the controller's enforcement (replayed reference plans, simulated "
    "attacks); they are not model results."
)


class EvalReport(BaseModel):
    """The whole report (``report.json``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

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
    cluster: ClusterReport | None = None
    """``eval --ray``: the nodes, what was lost, and an early end (each run names its node)."""
    identity: dict[str, Any] | None = None
    """The journal's identity: what makes this evaluation (suite, control, where its
    fixtures, plans and dataset came from, provider, model and endpoint, budgets);
    ``verify RESULTS_DIR`` checks it is the journal's, and ``report.md`` shows it."""


def notice_for(provider: str) -> str:
    """The report's notice: harness validation for the simulated providers, else whose
    model results these are (a test double is simulated where it is registered)."""
    from sandbox_agent.providers import is_simulated

    if is_simulated(provider):
        return HARNESS_NOTICE
    return f"Model results from provider {provider!r}."


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
    cluster: ClusterReport | None = None,
    identity: dict[str, Any] | None = None,
) -> EvalReport:
    """Assemble the report from every run's record."""
    return EvalReport(
        notice=notice_for(provider),
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
        cluster=cluster,
        identity=identity,
    )


def default_results_dir(now: dt.datetime) -> Path:
    """``results/<UTC timestamp>/`` under the current folder."""
    return Path("results") / now.strftime("%Y%m%dT%H%M%SZ")


MAX_CELL_CHARS = 300
"""A string from a run (a tool name, a path, an error) is cut here in ``report.md``;
``report.json`` keeps it whole."""
_MARKDOWN_ACTIVE = re.compile(r"([\\`*_\[\]<>&|~])")


def _text(value: object) -> str:
    """Any string a run produced (the model's tool names and paths, dataset ids, error
    text) as inert Markdown: one line (characters that are not printable, line breaks
    among them, shown as ``\\uXXXX``), every character Markdown or HTML acts on
    backslash-escaped, cut at ``MAX_CELL_CHARS``."""
    text = str(value)
    if len(text) > MAX_CELL_CHARS:
        text = text[:MAX_CELL_CHARS] + "..."
    text = "".join(ch if ch.isprintable() else f"\\u{ord(ch):04x}" for ch in text)
    return _MARKDOWN_ACTIVE.sub(r"\\\1", text)


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join(_text(cell) for cell in cells) + " |"


def _held_out_cell(record: RunRecord) -> str:
    held = record.held_out
    return f"{held.status} {held.tests_run - held.failures - held.errors}/{held.tests_run}"


def _inputs_line(identity: dict[str, Any] | None) -> list[str]:
    """Where the evaluation's inputs and model answers came from (SR-11 R6: a replaying
    server on loopback, or fixtures of one's own, looked like the real thing)."""
    if identity is None:
        return []
    options = identity.get("provider_options")
    endpoint = options.get("base_url") if isinstance(options, dict) else None
    # A path given is quoted, as given; a default is said in parentheses, a form no
    # quoted path takes (folders named like the defaults read like them, SR-11 R10).
    parts = [
        ("fixtures", identity.get("fixtures_dir"), "the project's"),
        ("plans", identity.get("plans"), "the tasks' own"),
        ("dataset", identity.get("dataset"), "the default"),
        ("endpoint", endpoint, "the provider's default"),
    ]
    shown = [
        f"{name} {_text(repr(str(value))) if value else f'({default})'}"
        for name, value, default in parts
        if value or name != "dataset"
    ]
    return ["- inputs: " + ", ".join(shown)]


def to_markdown(report: EvalReport) -> str:
    """A human report: notice, configuration, summary, per task, every run, violations."""
    s = report.summary
    lines = [
        f"# Eval report: {_text(report.suite)}",
        "",
        f"> {_text(report.notice)}",
        "",
        f"- provider {_text(report.provider)}, model {_text(report.model or '-')}, runtime "
        f"{_text(report.runtime)}, jobs {report.jobs}, repeats {report.repeats}"
        + (", **control run (no fix)**" if report.control else ""),
        *_inputs_line(report.identity),
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
        f"{s.harness_errors}; statuses {_text(json.dumps(s.statuses))}.",
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
                *(["node"] if report.cluster else []),
            ]
        ),
        _row(["---"] * (11 if report.cluster else 10)),
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
                *([r.node or "-"] if report.cluster else []),
            ]
        )
        for r in report.runs
    ]
    violations = [
        f"- {_text(r.task_id)} #{r.repeat}: {kind} {_text(v.kind)}: {_text(v.detail)}"
        for r in report.runs
        for kind, found in (
            ("attempted", r.attempted_violations),
            ("EXECUTED", r.executed_violations),
        )
        for v in found
    ]
    if violations:
        lines += ["", "## Violations", "", *violations]
    errors = [f"- {_text(r.task_id)} #{r.repeat}: {_text(r.error)}" for r in report.runs if r.error]
    if errors:
        lines += ["", "## Harness errors", "", *errors]
    if report.cluster is not None:
        lines += cluster_markdown(report.cluster, _row)
    return "\n".join(lines) + "\n"


def write_report(report: EvalReport, folder: Path) -> tuple[Path, Path]:
    """Write ``report.json`` and ``report.md`` into ``folder`` (created if needed)."""
    folder.mkdir(parents=True, exist_ok=True)
    json_path, md_path = folder / "report.json", folder / "report.md"
    _replace(json_path, report.model_dump_json(indent=1) + "\n")
    _replace(md_path, to_markdown(report))
    return json_path, md_path


def _replace(path: Path, text: str) -> None:
    """Write ``path`` through a new file renamed over it: a link planted at ``path`` is
    replaced, never followed (it would write the report over the file it names)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.unlink(missing_ok=True)
    with temporary.open("x", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, path)
