"""The real-model report of ``make eval-local`` (issue 16): Markdown and JSON in ``docs/results/``.

Read from what the evaluations wrote (``report.json`` of each suite, the one-shot
records), never from memory, so a report can be rebuilt from a results folder
(``python -m devtools.eval_local --skip-agent --skip-oneshot --results-dir DIR``).
Every string from a run goes through the eval report's escaping (``report._text``).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
import statistics
from collections import Counter
from collections.abc import Collection
from pathlib import Path
from typing import Any, NamedTuple

from sandbox_agent.controller.repair_loop import SAME_CODE
from sandbox_agent.errors import UsageError
from sandbox_agent.evals.results.journal import Journal
from sandbox_agent.evals.results.journal_check import JOURNAL_FILE
from sandbox_agent.evals.results.records import RunRecord
from sandbox_agent.evals.results.report import EvalReport, _text
from sandbox_agent.evals.running.bestof import BESTOF_FILE, BestOfRecord, load_bestof
from sandbox_agent.evals.running.oneshot import ONESHOT_FILE, load_records
from sandbox_agent.evals.tasks.taskfile import load_task_file
from sandbox_agent.repair.splice import UNCHANGED, UNPARSABLE_MODULE
from sandbox_agent.settings import PROJECT_ROOT

SPLIT_NOTE = (
    "Prompt and protocol changes meant to raise success were developed on HumanEvalFix's "
    "even-numbered rows only; the rows reported here are odd-numbered (or all 164), and "
    "no task-specific hint exists anywhere. Localisation for realrepos was developed on "
    "task files built with other seeds (18-20), the reported 39 tasks' functions left out "
    "(make localise-recall)."
)
TESTS_NOTE = (
    "HumanEvalFix: the visible tests are the row's docstring examples, the held-out check "
    "is the row's full test, judged out of process, never shown and never used to select. "
    "realrepos: visible and held-out coincide (the project's own suite, put back pristine)."
)
NO_CHANGE_KINDS = ("summarise", "review", "false_report")
"""The 10-task set's kinds that need no code change (issue 29's goal: none is made)."""


def _recorded_repair(folder: Path) -> dict[str, Any] | None:
    """The repair options an evaluation in ``folder`` ran with, as its identity records
    them (its report's or its journal's); None when there is none."""
    repair = (_identity(folder) or {}).get("repair")
    return repair if isinstance(repair, dict) else None


class Stage(NamedTuple):
    """One eval's runs, whether the eval finished (its report.json was written), and its
    identity (what made the evaluation: flags, model, budgets)."""

    runs: list[RunRecord]
    complete: bool
    identity: dict[str, Any] | None = None
    folders: tuple[str, ...] = ()
    """The results folders it was read from (several: a stage run in parts)."""


def _load_stage(folder: Path) -> Stage | None:
    """The runs of the eval in ``folder``: its report when it finished, else the runs its
    journal holds so far (a stage stopped midway, to be resumed); None when it has none."""
    report = folder / "report.json"
    if report.is_file():
        done = EvalReport.model_validate_json(report.read_text(encoding="utf-8"))
        return Stage(done.runs, True, done.identity)
    if not (folder / JOURNAL_FILE).is_file():
        return None
    journal = Journal.existing(folder)
    runs = journal.records()
    identity = journal.identity if isinstance(journal.identity, dict) else None
    return Stage(runs, False, identity) if runs else None


def _identity(folder: Path) -> dict[str, Any] | None:
    """The identity of the evaluation in ``folder``: its report's, else its journal's."""
    report = folder / "report.json"
    if report.is_file():
        return EvalReport.model_validate_json(report.read_text(encoding="utf-8")).identity
    if (folder / JOURNAL_FILE).is_file():
        identity = Journal.existing(folder).identity
        return identity if isinstance(identity, dict) else None
    return None


def load_parts(results: Path, name: str, expected: Collection[str] | None = None) -> Stage | None:
    """The runs of ``name/`` and of every ``name-partKofN/`` in ``results`` (an eval-local
    stage run in parts, ``--part``), as one stage, complete when every folder is and the
    parts are every part of one cut, or, given the stage's task ids (``expected``), hold
    every one of them (parts of different cuts: a slower machine cut the rest finer).

    Raises:
        UsageError: two folders were written by different evaluations (their identities
            differ: a flag, the model, the budgets), or both hold the same run.
    """
    loaded = [(f, stage) for f in stage_folders(results, name) if (stage := _load_stage(f))]
    if not loaded:
        return None
    first, *others = loaded
    want = first[1].identity
    for folder, stage in others:
        if (have := stage.identity) != want:
            differ = sorted(
                k
                for k in {*(want or {}), *(have or {})}
                if (want or {}).get(k) != (have or {}).get(k)
            )
            raise UsageError(
                f"{folder.name} and {first[0].name} were written by different evaluations "
                f"(they differ in {', '.join(differ) or 'their identity'}): move one of them "
                f"out of {results}"
            )
    runs: dict[tuple[str, int], tuple[Path, RunRecord]] = {}
    for folder, stage in loaded:
        for record in stage.runs:
            if (key := (record.task_id, record.repeat)) in runs:
                raise UsageError(
                    f"{record.task_id} (repeat {record.repeat}) is in {runs[key][0].name} "
                    f"and in {folder.name}: move one of the folders out of {results}"
                )
            runs[key] = (folder, record)
    whole = loaded[0][0].name == name
    cuts = [cut for folder, _ in loaded if (cut := _cut(folder, name))]
    counts = {n for _, n in cuts}
    every_part = len(counts) == 1 and {k for k, _ in cuts} == set(range(1, max(counts) + 1))
    covered = expected is not None and {task for task, _ in runs} >= set(expected)
    complete = all(stage.complete for _, stage in loaded) and (whole or every_part or covered)
    folders = tuple(folder.name for folder, _ in loaded)
    return Stage([record for _, record in runs.values()], complete, want, folders)


def _task_ids(name: str) -> list[str] | None:
    """The task ids of a stage that runs in parts (realrepos'), else None."""
    if name != "realrepos":
        return None
    from sandbox_agent.evals.realrepos import taskfile

    return [task.id for task in taskfile.load().tasks]


def _cut(folder: Path, name: str) -> tuple[int, int] | None:
    """``(K, N)`` of a ``name-partKofN`` folder; None for any other name (a part moved
    aside as ``realrepos-part1of4.old`` is not one)."""
    part = re.fullmatch(
        re.escape(name) + r"-part([1-9][0-9]*)of([1-9][0-9]*)", folder.name, flags=re.ASCII
    )
    return (int(part[1]), int(part[2])) if part else None


def stage_folders(results: Path, name: str) -> list[Path]:
    """``name/`` and every ``name-partKofN/`` in ``results`` (by N, then K), those that
    are folders."""
    cuts = {folder: cut for folder in results.glob(f"{name}-part*") if (cut := _cut(folder, name))}
    parts = sorted(cuts, key=lambda folder: cuts[folder][::-1])
    return [folder for folder in [results / name, *parts] if folder.is_dir()]


CODE_FILE = "code.json"
"""In a stage's folder: every version of the code that ran in it (``record_code``)."""


def code_version() -> dict[str, Any]:
    """The commit of the code running now and whether tracked files differ from it
    (``dirty``); both None outside a git checkout."""
    import subprocess

    def git(*argv: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), *argv],
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        return done.stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": dirty}


def read_code(folder: Path) -> list[dict[str, Any]]:
    """The versions of the code that ran in ``folder`` (none recorded: an empty list)."""
    try:
        versions = json.loads((folder / CODE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [v for v in versions if isinstance(v, dict)] if isinstance(versions, list) else []


def record_code(folder: Path) -> None:
    """Add the code running now to ``folder``'s versions, once: a stage resumed by other
    code shows both, in the report, rather than passing as one."""
    folder.mkdir(parents=True, exist_ok=True)
    versions = read_code(folder)
    if (now := code_version()) not in versions:
        text = json.dumps([*versions, now], indent=1) + "\n"
        (folder / CODE_FILE).write_text(text, encoding="utf-8")


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
        "candidates": record.candidates,
        "rounds": record.rounds,
        "files_changed": len(record.files_changed),
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


def _trace_events(record: RunRecord) -> tuple[dict[str, Any], ...] | None:
    """The events of a run's trace; None when its trace is not on this machine (a stage
    carried from another by its ``report.json``). Read once per version of the file:
    the speed and the candidate counts both walk every trace."""
    path = Path(record.trace_path)
    if not path.is_file():
        return None
    stat = path.stat()
    return _read_trace(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=256)
def _read_trace(path: str, mtime_ns: int, size: int) -> tuple[dict[str, Any], ...]:
    del mtime_ns, size  # the cache's key: a trace rewritten since is read again
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return tuple(json.loads(line) for line in lines)


def _speed(records: list[RunRecord]) -> dict[str, Any]:
    """Tokens/s, latency and prompt-cache reuse over every turn of every run's trace, and
    the share of the runs' wall time spent in sandboxes (issue 16, item 6)."""
    from sandbox_agent.localmodel.timings import sandbox_seconds, speed_summary, turn_rows

    rows: list[dict[str, float]] = []
    inside = total = 0.0
    for record in records:
        if (events := _trace_events(record)) is None:
            continue
        rows += turn_rows(events)
        inside += sandbox_seconds(events) + record.durations.held_out_s
        total += record.durations.total_s
    summary: dict[str, Any] = dict(speed_summary(rows))
    if total:
        summary["sandbox_share_of_wall"] = round(inside / total, 3)
    return summary


CANDIDATE_KINDS = ("passed", "failed", "repeated", "unchanged", "invalid", "denied")
"""What became of a repair candidate: it passed or failed the visible tests; it repeated
an earlier candidate's code (not tested again); it wrote the code shown back unchanged;
it could not become code (no block, cut off, did not parse, another function: an
invalid output); ``apply_patch`` denied it (a protected path)."""


def candidate_kind(event: dict[str, Any]) -> str:
    """One of ``CANDIDATE_KINDS`` (or ``other``) for a trace's ``candidate`` event. Traces
    written before candidates carried ``refusal`` and ``repeat_of`` are read by their
    reasons."""
    outcome, reason = event.get("outcome"), str(event.get("reason", ""))
    if outcome == "refused":
        code = event.get("refusal") or ("no_change" if reason in _NO_CHANGE else "invalid")
        return "unchanged" if code == "no_change" else "invalid"
    repeat = event.get("repeat_of") is not None or reason.startswith(SAME_CODE)
    if outcome == "failed" and repeat:
        return "repeated"
    return outcome if isinstance(outcome, str) and outcome in CANDIDATE_KINDS else "other"


_NO_CHANGE = (UNCHANGED, UNPARSABLE_MODULE)


def candidate_kinds(records: list[RunRecord]) -> dict[str, Any]:
    """How many candidates of each kind, in the first round and in the repair rounds,
    over the runs' traces (the failure kinds to count before changing the strategy), and
    how many runs' traces were there to read (a part carried from another machine by its
    ``report.json`` has none)."""
    counts = {"first_round": Counter[str](), "repair_rounds": Counter[str]()}
    read = 0
    for record in records:
        if (events := _trace_events(record)) is None:
            continue
        read += 1
        for event in events:
            if event.get("event") == "candidate":
                where = "first_round" if event.get("round") == 0 else "repair_rounds"
                counts[where][candidate_kind(event)] += 1
    other = any(c["other"] for c in counts.values())
    kinds = [*CANDIDATE_KINDS, *(["other"] if other else [])]
    tally: dict[str, Any] = {where: {k: c[k] for k in kinds} for where, c in counts.items()}
    return {**tally, "traces_read": read, "runs": len(records)}


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_text(cell) for cell in row) + " |" for row in rows]
    return lines


def commits_said(code: list[dict[str, Any]]) -> str:
    """``abc123, def456 (with uncommitted changes)``: the versions that ran, each once."""
    said = [
        f"{v.get('commit') or 'unknown'}"
        + (" (with uncommitted changes)" if v.get("dirty") else "")
        for v in code
    ]
    return ", ".join(dict.fromkeys(said)) or "not recorded"


def _stage_section(
    name: str,
    stage: Stage,
    *,
    planned: int,
    code: list[Any],
    data: dict[str, Any],
    lines: list[str],
) -> None:
    rows = [run_row(record) for record in stage.runs]
    summary = suite_summary(stage.runs)

    state = "complete" if stage.complete else f"partial: {len(rows)} of {planned} runs"
    kinds = candidate_kinds(stage.runs)
    data["suites"][name] = {
        "state": state, "code": code, "summary": summary, "candidates": kinds, "runs": rows,
    }  # fmt: skip
    title = f"## Agent: {name}" + ("" if stage.complete else f" ({state}, to be resumed)")
    ran = f"Code that ran: {commits_said(code)}."
    if len(stage.folders) > 1:
        ran += f" Run in parts: {', '.join(stage.folders)}."
    lines += [title, "", ran, "", "```", json.dumps(summary, indent=1), "```", ""]
    rounds = {w: kinds[w] for w in ("first_round", "repair_rounds")}
    if any(any(c.values()) for c in rounds.values()):
        header = list(rounds["first_round"])
        lines += [
            f"What became of the repair candidates, from {kinds['traces_read']} of "
            f"{kinds['runs']} runs' traces ({', '.join(CANDIDATE_KINDS)}):",
            "",
            *_table(["", *header], [[w, *c.values()] for w, c in rounds.items()]),
            "",
        ]
    header = list(rows[0]) if rows else []
    lines += [*_table(header, [list(row.values()) for row in rows]), ""]


def _comparison(
    hef: Stage | None, oneshot: list[Any], bestof: list[BestOfRecord], subset: list[str]
) -> tuple[dict[str, Any], list[list[Any]]]:
    """Agent, greedy one-shot and best-of-N on the rows all three have (issue 29's goals)."""
    agent = {r.task_id: r for r in hef.runs} if hef else {}
    greedy = {r.task_id: r for r in oneshot}
    best = {r.task_id: r for r in bestof}
    common = [t for t in subset if t in agent and t in greedy and t in best]
    n = len(common)
    passed = {
        "agent": sum(agent[t].held_out.passed for t in common),
        "oneshot_greedy": sum(greedy[t].passed for t in common),
        "oneshot_best_of_n": sum(best[t].passed for t in common),
        "best_of_n_coverage": sum(any(h for h in best[t].heldout if h) for t in common),
    }
    walls = [agent[t].durations.total_s for t in common]
    replies = sum(agent[t].steps for t in common)
    invalid = sum(agent[t].invalid_outputs for t in common)
    points = (lambda k: round(100 * passed[k] / n, 1)) if n else (lambda k: 0.0)
    goals = {
        "agent_minus_greedy_points": round(points("agent") - points("oneshot_greedy"), 1),
        "agent_20_points_above_greedy": points("agent") - points("oneshot_greedy") >= 20,
        "agent_not_below_best_of_n": passed["agent"] >= passed["oneshot_best_of_n"],
        "agent_60_percent": points("agent") >= 60,
        "invalid_output_share": round(invalid / replies, 3) if replies else 0.0,
        "invalid_at_most_2_percent": (invalid / replies if replies else 0.0) <= 0.02,
        "executed_violations": sum(len(agent[t].executed_violations) for t in common),
        "median_wall_s": round(statistics.median(walls), 1) if walls else 0.0,
        "median_wall_at_most_120_s": (statistics.median(walls) if walls else 0.0) <= 120,
    }
    comparison = {
        "rows_all_three_ran": n,
        "rows_planned": len(subset),
        "held_out_passed": passed,
        "percent": {k: points(k) for k in passed},
        "goals": goals,
    }
    rows = [
        [
            t,
            agent[t].held_out.passed,
            agent[t].status,
            agent[t].candidates,
            agent[t].rounds,
            agent[t].input_tokens,
            agent[t].output_tokens,
            round(agent[t].durations.total_s, 1),
            greedy[t].passed,
            best[t].passed,
            best[t].selected,
            any(h for h in best[t].heldout if h),
        ]
        for t in common
    ]
    return comparison, rows


def _fixture_goals(fixtures: Stage) -> dict[str, Any]:
    """Per seed (repeat): change-needing tasks fixed, no-change tasks left unchanged."""
    from sandbox_agent.evals.tasks.taskfile import load_task_file

    kinds = {task.id: task.kind for task in load_task_file().tasks}
    by_seed: dict[int, dict[str, Any]] = {}
    for record in fixtures.runs:
        seed = by_seed.setdefault(
            record.repeat,
            {
                "change_tasks_fixed": 0,
                "change_tasks": 0,
                "no_change_kept": 0,
                "no_change_tasks": 0,
            },
        )
        if kinds.get(record.task_id) in NO_CHANGE_KINDS:
            seed["no_change_tasks"] += 1
            seed["no_change_kept"] += int(record.passed and not record.files_changed)
        else:
            seed["change_tasks"] += 1
            seed["change_tasks_fixed"] += int(record.passed)
    return {
        "per_seed": by_seed,
        "five_of_seven_in_every_seed": bool(by_seed)
        and all(s["change_tasks_fixed"] >= 5 for s in by_seed.values()),
    }


def write_local_report(
    results: Path,
    report_dir: Path,
    *,
    subset: list[str],
    split: str,
    budgets: dict[str, Any],
    wall_seconds: float,
) -> tuple[Path, Path]:
    """Write ``<date>-local-<model>.md`` and ``.json`` into ``report_dir``. The repair
    options said are those the evaluations recorded (their journals' identity), not this
    code's defaults: a report is often rebuilt from a pinned commit's results."""
    names = ("humanevalfix", "fixtures", "realrepos", "humanevalfix-tools")
    stages = {name: load_parts(results, name, _task_ids(name)) for name in names}
    recorded = next(
        (
            r
            for name in names
            for folder in stage_folders(results, name)
            if (r := _recorded_repair(folder)) is not None
        ),
        None,
    )
    if recorded is not None:
        budgets = {**budgets, "repair": recorded}
    oneshot = load_records(results / ONESHOT_FILE)
    bestof = load_bestof(results / BESTOF_FILE)
    server = _server()
    agent_runs = [r for stage in stages.values() if stage for r in stage.runs]
    speed = _speed(agent_runs)
    fixture_tasks = len(load_task_file().tasks)
    planned = {
        "humanevalfix": len(subset),
        "fixtures": budgets.get("repeats", 1) * fixture_tasks,
        "realrepos": len(_task_ids("realrepos") or []),
        "humanevalfix-tools": len(subset),
    }
    in_runs = {
        "agent_h": round(sum(r.durations.total_s for r in agent_runs) / 3600, 2),
        "oneshot_h": round(sum(r.wall_s for r in oneshot) / 3600, 2),
        "best_of_n_h": round(sum(r.wall_s for r in bestof) / 3600, 2),
    }
    date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    data: dict[str, Any] = {
        "date": date,
        "server": server,
        "budgets": budgets,
        "humanevalfix_rows": split,
        "humanevalfix_subset": subset,
        "split_note": SPLIT_NOTE,
        "tests_note": TESTS_NOTE,
        "wall_seconds": round(wall_seconds, 1),
        "time_in_runs": in_runs,
        "speed": speed,
        "code": {arm: read_code(results / arm) for arm in ("oneshot", "bestof")},
        "suites": {},
    }
    lines = [
        f"# Real-model evaluation: {server['model']} on the local server, {date}",
        "",
        "Produced by `make eval-local` (`python -m devtools.eval_local`). "
        "Results are what they are: nothing was tuned on the rows reported here.",
        "",
        f"- Model: `{server['model']}`, sha256 `{server['model_sha256']}` "
        f"({server['model_licence']})",
        f"- Server: {server['server_version']} built from {server['llama_cpp_source']}",
        f"- Build options: `{json.dumps(server['build_options'])}`",
        f"- Server flags: `{' '.join(server['server_flags'] or [])}`",
        f"- Strategy: `{budgets.get('strategy')}`; budgets and repair options: "
        f"`{json.dumps(budgets)}`",
        f"- HumanEvalFix rows: {split}. {SPLIT_NOTE}",
        f"- Tests: {TESTS_NOTE}",
        f"- Time in runs (each run's own wall time, summed; a resumed evaluation spans "
        f"sessions): agent {in_runs['agent_h']} h, one-shot {in_runs['oneshot_h']} h, "
        f"best-of-N {in_runs['best_of_n_h']} h",
        f"- Speed (medians over every agent turn, from the server's own timings): "
        f"`{json.dumps(speed)}`",
        "- Code that ran the one-shot arms: greedy "
        f"{commits_said(read_code(results / 'oneshot'))}; best-of-N "
        f"{commits_said(read_code(results / 'bestof'))} (each agent stage says its own)",
        "",
    ]
    if oneshot and bestof and stages["humanevalfix"]:
        comparison, rows = _comparison(stages["humanevalfix"], oneshot, bestof, subset)
        data["comparison"] = comparison
        lines += [
            "## HumanEvalFix: the agent against greedy one-shot and one-shot best-of-N",
            "",
            "Same rows, same model and server, same held-out check. Best-of-N samples N "
            "answers to the one-shot prompt exactly as the repair strategy samples its first "
            "round (one greedy, then seeded at the same temperature) and keeps the first "
            "that passes the visible tests; coverage says whether any of the N would have "
            "passed the held-out check (never used to choose).",
            "",
            "```",
            json.dumps(comparison, indent=1),
            "```",
            "",
        ]
        header = ["task", "agent held-out", "status", "candidates", "rounds", "in", "out",
                  "wall s", "greedy", "best-of-N", "selected", "coverage"]  # fmt: skip
        lines += [*_table(header, rows), ""]
    for name, stage in stages.items():
        if stage is not None:
            code = [v for f in stage_folders(results, name) for v in read_code(f)]
            _stage_section(name, stage, planned=planned[name], code=code, data=data, lines=lines)
    if stages["fixtures"]:
        goals = _fixture_goals(stages["fixtures"])
        data["fixture_goals"] = goals
        lines += ["## The 10-task set, per seed", "", "```", json.dumps(goals, indent=1), "```", ""]
    if stages["realrepos"]:
        runs = stages["realrepos"].runs
        data["realrepos_goal"] = {
            "held_out_passed": sum(r.held_out.passed for r in runs),
            "runs": len(runs),
            "at_least_10": sum(r.held_out.passed for r in runs) >= 10,
        }
    if oneshot:
        data["oneshot"] = {"runs": [r.model_dump(mode="json") for r in oneshot]}
    if bestof:
        data["best_of_n"] = {"runs": [r.model_dump(mode="json") for r in bestof]}
    report_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{date}-local-{server['model']}"
    md, js = report_dir / f"{stem}.md", report_dir / f"{stem}.json"
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    js.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return md, js
