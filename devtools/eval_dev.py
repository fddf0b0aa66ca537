"""``make eval-dev VARIANT="--redraws 2"``: one change to the agent, measured against the
same code without it, on the development split, side by side, the same day.

``python -m devtools.eval_dev --variant FLAGS [--humanevalfix N] [--realrepos M]
[--stages humanevalfix,realrepos] [--results-dir DIR]``

The development split is what changes meant to raise success are tried on, never what
is reported (docs/EVALS.md): HumanEvalFix's **even-numbered** rows (N of them, drawn
with a fixed seed), and realrepos' development tasks (``evals/realrepos/dev-tasks.json``:
the builder's seed 18, less every task that shares a function with the committed 39;
M of them, one project after another). Two arms run on the same tasks with the same seeds:
``base``, the repair strategy as it is, and ``variant``, the same with ``--variant``'s
``eval`` flags added. Each stage runs base, then variant, each resumable (``eval
--resume``) into ``DIR/base/<stage>/`` and ``DIR/variant-<flags>/<stage>/`` (several
variants share one base), with the code that ran recorded (``code.json``). Then the
comparison (``DIR/comparison-variant-<flags>.md``, also printed): per stage and arm,
held-out passes, statuses, what became of the candidates, turns, generated tokens and
median wall time; the tasks the variant gained and lost over those both arms ran; and
the code each arm ran. A difference of a task or two is within the
noise of a few dozen: say so when reporting it.

``--write-dev-tasks BUILT`` makes ``evals/realrepos/dev-tasks.json`` from a task file
the builder made (``python -m sandbox_agent.evals.realrepos.build --seed 18 --out
BUILT``), leaving out the tasks that share a project, file and function with the
committed one, each id renamed ``realrepos-dev-...`` (the builder numbers every file's
tasks alike: ``realrepos-six-001`` is another bug in each).
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from devtools.eval_local import (
    MAX_ITERATIONS_HUMANEVALFIX,
    MAX_WALL_SECONDS,
    SUBSET_SEED,
    parity_subset,
)
from sandbox_agent.errors import UsageError
from sandbox_agent.evals.tasks import humanevalfix
from sandbox_agent.settings import PROJECT_ROOT

DEV_TASKS = PROJECT_ROOT / "evals" / "realrepos" / "dev-tasks.json"
DEV_PREFIX = "realrepos-dev-"
RESULTS_DIR = PROJECT_ROOT / "results" / "eval-dev"
HUMANEVALFIX_ROWS = 30
"""Even rows per arm: about 15-25 minutes an arm here (the issue's own development
measurement used 30)."""
REALREPOS_TASKS = 8
"""Development tasks per arm, one per project: about 50-100 minutes an arm here."""
STAGES = ("humanevalfix", "realrepos")
SET_BY_THIS_TOOL = frozenset(
    {
        "suite", "tasks", "results_dir", "resume", "dataset", "provider", "jobs",
        "repeats", "ray", "retry_lost", "strategy", "no_fix", "plans", "json",
    }
)  # fmt: skip
"""What the tool chooses itself (``eval``'s argument names): a variant may not set them
(``--repeats`` or ``--ray`` would make the arms incomparable or unresumable)."""


def variant_folder(flags: list[str]) -> str:
    """The variant arm's folder, named by its flags (``--redraws 2`` ->
    ``variant-redraws-2``), so that several variants share one base arm."""
    words = [re.sub(r"[^A-Za-z0-9.]+", "-", flag).strip("-") for flag in flags]
    return "variant-" + "-".join(word for word in words if word)


def even_subset(task_ids: list[str], size: int, seed: int = SUBSET_SEED) -> list[str]:
    """``size`` even-numbered HumanEvalFix ids, drawn with ``seed``, in numeric order."""
    return parity_subset(task_ids, size, 0, seed)


def round_robin(tasks: list[tuple[str, str]], size: int) -> list[str]:
    """``size`` task ids of ``(id, project)`` pairs, one project after another in the
    order they first appear, each project's in file order: 8 of 8 projects is one each."""
    queues: dict[str, list[str]] = {}
    for task_id, project in tasks:
        queues.setdefault(project, []).append(task_id)
    chosen: list[str] = []
    while len(chosen) < size and any(queues.values()):
        for queue in queues.values():
            if queue and len(chosen) < size:
                chosen.append(queue.pop(0))
    order = {task_id: n for n, (task_id, _) in enumerate(tasks)}
    return sorted(chosen, key=order.__getitem__)


def variant_flags(text: str) -> list[str]:
    """``--variant``'s ``eval`` flags, names and values checked now rather than after the
    base arm's hour.

    Raises:
        UsageError: empty, not ``eval`` flags (each given whole: ``eval`` would take
            ``--tas`` for ``--tasks``), a flag this tool sets itself, or a value out of
            its range.
    """
    from pydantic import ValidationError

    from sandbox_agent.commands import eval as eval_command
    from sandbox_agent.commands.strategy import repair_options_from

    flags = shlex.split(text)
    if not flags:
        raise UsageError(
            "--variant is empty: give the eval flags of the change, e.g. '--redraws 2'"
        )
    parser = argparse.ArgumentParser(
        prog="eval", add_help=False, exit_on_error=False, allow_abbrev=False
    )
    eval_command.add_arguments(parser)
    try:
        given, unknown = parser.parse_known_args(flags)
    except argparse.ArgumentError as error:
        raise UsageError(f"--variant {text!r}: {error}") from None
    if unknown:
        raise UsageError(
            f"--variant {text!r}: not eval flags (give each flag whole): {' '.join(unknown)}"
        )
    named = {f.split("=", 1)[0] for f in flags if f.startswith("--")}
    taken = sorted(
        option
        for action in parser._actions
        if action.dest in SET_BY_THIS_TOOL
        for option in action.option_strings
        if option in named
    )
    if taken:
        raise UsageError(f"--variant may not set {', '.join(taken)}: eval-dev chooses them")
    try:
        repair_options_from(given)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        raise UsageError(f"--variant {text!r}: {first['loc'][0]}: {first['msg']}") from None
    return flags


def write_dev_tasks(built: Path, out: Path = DEV_TASKS) -> tuple[int, int]:
    """``built`` less the tasks sharing a project, file and function with the committed
    task file, written to ``out``; (kept, left out)."""
    from sandbox_agent.evals.realrepos import taskfile

    committed = {(t.project, t.path, t.function) for t in taskfile.load().tasks}
    task_file = taskfile.load(built)
    kept = tuple(
        # ``realrepos-dev-``: never mistaken for the committed task of the same number
        t.model_copy(update={"id": DEV_PREFIX + t.id.removeprefix("realrepos-")})
        for t in task_file.tasks
        if (t.project, t.path, t.function) not in committed
    )
    generated = {
        **task_file.generated,
        "split": "development: this seed's tasks less those sharing a function with "
        "evals/realrepos/tasks.json (devtools/eval_dev.py --write-dev-tasks)",
        "kept": len(kept),
    }
    split = task_file.model_copy(update={"tasks": kept, "generated": generated})
    taskfile.TaskFile.model_validate(split.model_dump(mode="json"))
    out.write_text(json.dumps(split.model_dump(mode="json"), indent=1) + "\n", encoding="utf-8")
    return len(kept), len(task_file.tasks) - len(kept)


def _stage_argv(stage: str, args: argparse.Namespace) -> list[str]:
    """The ``eval`` flags choosing ``stage``'s development tasks."""
    if stage == "humanevalfix":
        ids = [humanevalfix.task_id(row) for row in humanevalfix.load_rows(
            humanevalfix.dataset_path(None))]  # fmt: skip
        chosen = even_subset(ids, args.humanevalfix)
        return ["--suite", "humanevalfix", "--tasks", ",".join(chosen),
                "--max-iterations", str(MAX_ITERATIONS_HUMANEVALFIX)]  # fmt: skip
    from sandbox_agent.evals.realrepos import taskfile

    tasks = [(task.id, task.project) for task in taskfile.load(DEV_TASKS).tasks]
    return ["--suite", "realrepos", "--dataset", str(DEV_TASKS),
            "--tasks", ",".join(round_robin(tasks, args.realrepos))]  # fmt: skip


def _arm_summary(folder: Path, stage: str) -> dict[str, Any] | None:
    from devtools.eval_local_report import candidate_kinds, commits_said, load_parts, read_code

    loaded = load_parts(folder, stage)
    if loaded is None:
        return None
    runs = loaded.runs
    walls = [r.durations.total_s for r in runs]
    return {
        "runs": len(runs),
        "complete": loaded.complete,
        "heldout_passed": sum(r.held_out.passed for r in runs),
        "ran": {r.task_id for r in runs},
        "passed_tasks": {r.task_id for r in runs if r.held_out.passed},
        "turns": sum(r.steps for r in runs),
        "output_tokens": sum(r.output_tokens for r in runs),
        "invalid_outputs": sum(r.invalid_outputs for r in runs),
        "median_wall_s": round(statistics.median(walls), 1) if walls else 0.0,
        "statuses": ", ".join(
            f"{status} {n}" for status, n in sorted(Counter(r.status for r in runs).items())
        ),
        "candidates": candidate_kinds(runs),
        "code": commits_said(read_code(folder / stage)),
    }


def _row(arm: str, summary: dict[str, Any] | None) -> str:
    if summary is None:
        return f"| {arm} | not run |" + " |" * 8
    kinds = summary["candidates"]
    rounds = [
        ", ".join(f"{k} {n}" for k, n in kinds[where].items() if n) or "-"
        for where in ("first_round", "repair_rounds")
    ]
    partial = "" if summary["complete"] else " (partial)"
    return (
        f"| {arm} | {summary['runs']}{partial} | {summary['heldout_passed']} | "
        f"{summary['statuses']} | {summary['turns']} | {summary['output_tokens']} | "
        f"{summary['invalid_outputs']} | {summary['median_wall_s']} | "
        f"{rounds[0]} | {rounds[1]} |"
    )


def _difference(base: dict[str, Any], other: dict[str, Any]) -> list[str]:
    """What the variant gained and lost, over the tasks both arms ran; and a warning
    when the arms ran different code (a base arm kept from an earlier commit)."""
    both = base["ran"] & other["ran"]
    gained = sorted((other["passed_tasks"] - base["passed_tasks"]) & both)
    lost = sorted((base["passed_tasks"] - other["passed_tasks"]) & both)
    left = len(base["ran"] ^ other["ran"])
    lines = [
        "",
        f"Over the {len(both)} task{'' if len(both) == 1 else 's'} both arms ran: "
        "gained by the variant: "
        f"{', '.join(gained) or 'none'}; lost: {', '.join(lost) or 'none'}."
        + (f" {left} task(s) ran in one arm only: not compared." if left else ""),
        "",
        f"Code that ran: base {base['code']}; variant {other['code']}.",
    ]
    if base["code"] != other["code"]:
        lines.append(
            "**The arms ran different code**: the difference is not the variant's alone; "
            "move the base folder aside and run again."
        )
    return lines


def comparison(results: Path, variant: str) -> str:
    """The side-by-side report of both arms, stage by stage, as Markdown."""
    folder = variant_folder(shlex.split(variant))
    lines = [
        "# Development split: base against variant",
        "",
        f"Variant: `{variant}` (`{folder}/`). Same tasks, seeds and server for both arms; "
        "the development split only (HumanEvalFix's even rows; evals/realrepos/dev-tasks.json).",
    ]
    for stage in STAGES:
        arms = {
            arm: _arm_summary(results / name, stage)
            for arm, name in (("base", "base"), ("variant", folder))
        }
        if not any(arms.values()):
            continue
        lines += ["", f"## {stage}", "", "| arm | runs | held-out passed | statuses | turns | "
                  "output tokens | invalid | median wall s | first round | repair rounds |",
                  "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
        lines += [_row(arm, summary) for arm, summary in arms.items()]
        base, other = arms["base"], arms["variant"]
        if base is not None and other is not None:
            lines += _difference(base, other)
    return "\n".join(lines) + "\n"


STOPPED = (2, 130)
"""``eval``'s exit codes that end eval-dev: a usage or set-up error, an interrupt."""


def run(args: argparse.Namespace) -> int:
    from devtools.eval_local import _eval
    from devtools.eval_local_report import record_code

    variant = variant_flags(args.variant)
    results = Path(args.results_dir)
    if "realrepos" in args.stages and not DEV_TASKS.is_file():
        raise UsageError(f"{DEV_TASKS} is missing: make it with --write-dev-tasks (see --help)")
    common = ["eval", "--provider", "local", "--strategy", "repair", "--jobs", "1",
              "--max-wall-seconds", str(MAX_WALL_SECONDS), "--resume"]  # fmt: skip
    name = variant_folder(variant)
    for stage in args.stages:
        chosen = _stage_argv(stage, args)
        for arm, extra in (("base", []), (name, variant)):
            folder = results / arm / stage
            record_code(folder)
            code = _eval([*common, *chosen, *extra, "--results-dir", str(folder)])
            text = comparison(results, args.variant)
            (results / f"comparison-{name}.md").write_text(text, encoding="utf-8")
            if code in STOPPED:
                print(f"eval-dev: the {arm} arm's eval ended {code}; stopped", file=sys.stderr)
                return code
    print(comparison(results, args.variant))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.eval_dev", description=__doc__)
    parser.add_argument("--variant", default="", help="the eval flags of the change")
    parser.add_argument("--humanevalfix", type=int, default=HUMANEVALFIX_ROWS, metavar="N")
    parser.add_argument("--realrepos", type=int, default=REALREPOS_TASKS, metavar="M")
    parser.add_argument("--stages", default=",".join(STAGES), help="comma-separated")
    parser.add_argument("--results-dir", default=str(RESULTS_DIR))
    parser.add_argument("--write-dev-tasks", type=Path, default=None, metavar="BUILT")
    args = parser.parse_args(argv)
    try:
        if args.write_dev_tasks is not None:
            kept, left = write_dev_tasks(args.write_dev_tasks)
            print(f"{DEV_TASKS}: {kept} tasks ({left} left out: a function the committed has)")
            return 0
        stages = [s.strip() for s in args.stages.split(",") if s.strip()]
        if not stages or any(s not in STAGES for s in stages):
            raise UsageError(f"--stages {args.stages!r}: give {' and/or '.join(STAGES)}")
        if args.humanevalfix < 1 or args.realrepos < 1:
            raise UsageError("--humanevalfix and --realrepos take a count of at least 1")
        args.stages = stages
        return run(args)
    except UsageError as error:
        print(f"eval-dev: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
