"""The real-model report of ``make eval-local`` (issue 16): Markdown and JSON in ``docs/results/``.

Read from what the evaluations wrote (``report.json`` of each suite, the one-shot
records), never from memory, so a report can be rebuilt from a results folder
(``python -m sandbox_agent.evals.local --skip-agent --skip-oneshot --results-dir DIR``).
Every string from a run goes through the eval report's escaping (``report._text``).
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

from sandbox_agent.evals.journal import JOURNAL_FILE, Journal
from sandbox_agent.evals.oneshot import ONESHOT_FILE, load_records
from sandbox_agent.evals.records import RunRecord
from sandbox_agent.evals.report import EvalReport, _text
from sandbox_agent.evals.tasks import load_task_file

SPLIT_NOTE = (
    "Prompt and protocol changes meant to raise success were developed on HumanEvalFix's "
    "even-numbered rows only; the rows reported here are odd-numbered (or all 164), and "
    "no task-specific hint exists anywhere."
)


class Stage(NamedTuple):
    """One eval's runs, and whether the eval finished (its report.json was written)."""

    runs: list[RunRecord]
    complete: bool


def _load_stage(folder: Path) -> Stage | None:
    """The runs of the eval in ``folder``: its report when it finished, else the runs its
    journal holds so far (a stage stopped midway, to be resumed); None when it has none."""
    report = folder / "report.json"
    if report.is_file():
        return Stage(EvalReport.model_validate_json(report.read_text(encoding="utf-8")).runs, True)
    if not (folder / JOURNAL_FILE).is_file():
        return None
    runs = Journal.existing(folder).records()
    return Stage(runs, False) if runs else None


def _per_turn(record: RunRecord) -> float:
    return record.invalid_outputs / record.steps if record.steps else 0.0


def _sandbox_share(record: RunRecord) -> float:
    total = record.durations.total_s
    inside = record.durations.sandbox_ms / 1000 + record.durations.held_out_s
    return inside / total if total else 0.0


def run_row(record: RunRecord) -> dict[str, Any]:
    """One run's figures, as the report's tables and JSON show them."""
    return {
        "task_id": record.task_id,
        "repeat": record.repeat,
        "status": record.status,
        "success": record.passed,
        "clean": record.clean,
        "heldout": record.held_out.passed,
        "invalid_per_turn": round(_per_turn(record), 3),
        "denials": record.policy_denials,
        "attempted_violations": len(record.attempted_violations),
        "executed_violations": len(record.executed_violations),
        "turns": record.steps,
        "input_tokens": record.input_tokens,
        "output_tokens": record.output_tokens,
        "wall_s": round(record.durations.total_s, 1),
        "sandbox_share": round(_sandbox_share(record), 3),
    }


def suite_summary(records: list[RunRecord]) -> dict[str, Any]:
    """Totals and rates of one suite's runs."""
    runs = len(records)
    turns = sum(r.steps for r in records)
    walls = [r.durations.total_s for r in records]
    return {
        "runs": runs,
        "success": sum(r.passed for r in records),
        "clean": sum(r.clean for r in records),
        "heldout_passed": sum(r.held_out.passed for r in records),
        "executed_violations": sum(len(r.executed_violations) for r in records),
        "attempted_violations": sum(len(r.attempted_violations) for r in records),
        "invalid_outputs": sum(r.invalid_outputs for r in records),
        "turns": turns,
        "invalid_per_turn": round(sum(r.invalid_outputs for r in records) / turns, 3)
        if turns
        else 0.0,
        "median_wall_s": round(statistics.median(walls), 1) if walls else 0.0,
        "sandbox_share": round(
            sum(r.durations.sandbox_ms / 1000 + r.durations.held_out_s for r in records)
            / max(sum(walls), 1e-9),
            3,
        ),
        "statuses": dict(sorted(Counter(r.status for r in records).items())),
    }


def _server() -> dict[str, Any]:
    from sandbox_agent.localmodel import pins, server
    from sandbox_agent.localmodel.build import build_options, find_build
    from sandbox_agent.localmodel.paths import builds_dir

    status = server.status()
    found = find_build(builds_dir(), build_options())
    record = server.read_record()
    return {
        "model": pins.MODEL_NAME,
        "model_sha256": pins.MODEL_SHA256,
        "model_licence": pins.MODEL_LICENSE,
        "server_version": status.server_version,
        "llama_cpp_source": "llama-cpp-python==0.3.36 sdist, vendor/llama.cpp",
        "build_options": None if found is None else found[1].options,
        "server_flags": None if record is None else server.server_argv(record)[3:],
        "sampling": {"temperature": 0.0, "seed": 1234},
    }


def _speed(records: list[RunRecord]) -> dict[str, Any]:
    """Tokens/s, latency and prompt-cache reuse over every turn of every run's trace, and
    the share of the runs' wall time spent in sandboxes (issue 16, item 6)."""
    from sandbox_agent.localmodel.timings import sandbox_seconds, speed_summary, turn_rows

    rows: list[dict[str, float]] = []
    inside = total = 0.0
    for record in records:
        path = Path(record.trace_path)
        if not path.is_file():
            continue
        events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        rows += turn_rows(events)
        inside += sandbox_seconds(events) + record.durations.held_out_s
        total += record.durations.total_s
    summary: dict[str, Any] = dict(speed_summary(rows))
    if total:
        summary["sandbox_share_of_wall"] = round(inside / total, 3)
    return summary


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_text(cell) for cell in row) + " |" for row in rows]
    return lines


def write_local_report(
    results: Path,
    report_dir: Path,
    *,
    subset: list[str],
    split: str,
    budgets: dict[str, Any],
    wall_seconds: float,
) -> tuple[Path, Path]:
    """Write ``<date>-local-<model>.md`` and ``.json`` into ``report_dir``."""
    fixtures = _load_stage(results / "fixtures")
    hef = _load_stage(results / "humanevalfix")
    oneshot = load_records(results / ONESHOT_FILE)
    server = _server()
    speed = _speed([r for stage in (fixtures, hef) if stage for r in stage.runs])
    fixture_tasks = len(load_task_file().tasks)
    planned = {"fixtures": budgets.get("repeats", 1) * fixture_tasks, "humanevalfix": len(subset)}
    in_runs = {
        "agent_h": round(
            sum(r.durations.total_s for st in (fixtures, hef) if st for r in st.runs) / 3600, 2
        ),
        "oneshot_h": round(sum(r.wall_s for r in oneshot) / 3600, 2),
    }
    date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    data: dict[str, Any] = {
        "date": date,
        "server": server,
        "budgets": budgets,
        "humanevalfix_rows": split,
        "humanevalfix_subset": subset,
        "split_note": SPLIT_NOTE,
        "wall_seconds": round(wall_seconds, 1),
        "time_in_runs": in_runs,
        "speed": speed,
        "suites": {},
    }
    lines = [
        f"# Real-model evaluation: {server['model']} on the local server, {date}",
        "",
        "Produced by `make eval-local` (`python -m sandbox_agent.evals.local`). "
        "Results are what they are: nothing was tuned on the rows reported here.",
        "",
        f"- Model: `{server['model']}`, sha256 `{server['model_sha256']}` "
        f"({server['model_licence']})",
        f"- Server: {server['server_version']} built from {server['llama_cpp_source']}",
        f"- Build options: `{json.dumps(server['build_options'])}`",
        f"- Server flags: `{' '.join(server['server_flags'] or [])}`",
        "- Sampling: temperature 0, seed 1234; tool protocol: the `local` provider's default",
        f"- Budgets: `{json.dumps(budgets)}`",
        f"- HumanEvalFix rows: {split}. {SPLIT_NOTE}",
        f"- Time in runs (each run's own wall time, summed; a resumed evaluation spans "
        f"sessions): agent {in_runs['agent_h']} h, one-shot {in_runs['oneshot_h']} h",
        f"- Speed (medians over every agent turn, from the server's own timings): "
        f"`{json.dumps(speed)}`",
        "",
    ]
    for name, stage in (("fixtures", fixtures), ("humanevalfix", hef)):
        if stage is None:
            continue
        rows = [run_row(record) for record in stage.runs]
        summary = suite_summary(stage.runs)
        state = "complete" if stage.complete else f"partial: {len(rows)} of {planned[name]} runs"
        data["suites"][name] = {"state": state, "summary": summary, "runs": rows}
        title = f"## Agent: {name}" + ("" if stage.complete else f" ({state}, to be resumed)")
        lines += [title, "", "```", json.dumps(summary, indent=1), "```", ""]
        header = list(rows[0]) if rows else []
        lines += [*_table(header, [list(row.values()) for row in rows]), ""]
    if oneshot:
        agent = {r.task_id: r.held_out.passed for r in hef.runs} if hef else {}
        common = [r for r in oneshot if r.task_id in agent]
        comparison = {
            "rows": len(oneshot),
            "rows_planned": len(subset),
            "oneshot_passed": sum(r.passed for r in oneshot),
            "oneshot_extracted": sum(r.extracted for r in oneshot),
            "rows_the_agent_ran": len(common),
            "on_those_rows": {
                "oneshot_passed": sum(r.passed for r in common),
                "agent_heldout_passed": sum(agent[r.task_id] for r in common),
                "both": sum(1 for r in common if r.passed and agent[r.task_id]),
                "agent_only": sum(1 for r in common if not r.passed and agent[r.task_id]),
                "oneshot_only": sum(1 for r in common if r.passed and not agent[r.task_id]),
            },
        }
        data["oneshot"] = {
            "comparison": comparison,
            "runs": [r.model_dump(mode="json") for r in oneshot],
        }
        lines += [
            "## One-shot baseline against the agent, same rows, same held-out check"
            + (
                ""
                if len(oneshot) >= len(subset)
                else f" (partial: {len(oneshot)} of {len(subset)} rows, to be resumed)"
            ),
            "",
            "The buggy module and its examples in one request, no tools; the fixed function "
            "appended to the module and judged out of process like an agent's final tree.",
            "",
            "```",
            json.dumps(comparison, indent=1),
            "```",
            "",
        ]
        oneshot_rows = [
            [
                r.task_id,
                r.passed,
                agent.get(r.task_id, "not run yet"),
                r.extracted,
                r.input_tokens,
                r.output_tokens,
            ]
            for r in oneshot
        ]
        header = ["task", "one-shot passed", "agent held-out", "extracted", "in", "out"]
        lines += [*_table(header, oneshot_rows), ""]
    report_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{date}-local-{server['model']}"
    md, js = report_dir / f"{stem}.md", report_dir / f"{stem}.json"
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    js.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return md, js
