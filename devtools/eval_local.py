"""``make eval-local``: the real-model evaluation on the project's own local model.

``python -m devtools.eval_local [--results-dir DIR] [--report-dir DIR]
[--humanevalfix odd|all|N] [--repeats N] [--strategy repair|tools] [--tools-loop]
[--stages LIST] [--part K/N] [--skip-agent] [--skip-oneshot] [--fresh]``

Stages, each resumable and each followed by the report, in this order unless
``--stages`` names some of them in another (``make eval-local STAGES=realrepos,fixtures``):

1. ``agent``: HumanEvalFix through the agent (``--strategy``, default ``repair``): all 82
   **odd-numbered** rows (the split results are reported on; changes meant to raise
   success are developed on the even-numbered rows only, docs/DECISIONS.md);
2. ``oneshot``: the greedy one-shot baseline on the same rows (``evals.running.oneshot``);
3. ``bestof``: one-shot best-of-N on the same rows, selected by the same visible tests
   (``evals.running.bestof``; N, temperature and seeds are the repair strategy's);
4. ``fixtures``: the 10-task set, ``--repeats`` times, each repeat with its own seeds (independent
   samples: ``evals.running.options.SEED_STRIDE``);
5. ``realrepos``: all 39 realrepos tasks (their visible and held-out tests coincide: the
   project's own suite); with ``--part K/N``, only the K-th of N contiguous parts of
   them, into ``realrepos-partKofN/`` (the stage is longer than a working session here:
   each part fits one, and the report merges the parts it finds, ``eval_local_report``);
6. ``tools-loop`` (or ``--tools-loop``): HumanEvalFix's rows through the ``tools`` strategy too.

Every finished run is in the results folder as soon as it ends, and running the same
command again runs only what is missing (``eval --resume``); ``--fresh`` starts over
(the old journals are kept aside). A partial stage is reported as partial.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sandbox_agent.errors import UsageError
from sandbox_agent.evals.results.journal import set_aside
from sandbox_agent.evals.running.bestof import BESTOF_FILE, SampledComplete, load_bestof
from sandbox_agent.evals.running.oneshot import MAX_OUTPUT_TOKENS as ONESHOT_MAX_OUTPUT_TOKENS
from sandbox_agent.evals.running.oneshot import ONESHOT_FILE, Complete, Completion, load_records
from sandbox_agent.evals.tasks import humanevalfix
from sandbox_agent.settings import PROJECT_ROOT

SUBSET_SEED = 20261202
SUBSET_SIZE = 40
"""At least 40 rows when all 164 do not fit in about 2.5 h here (issue 16)."""
REPEATS = 3
MAX_WALL_SECONDS = 900.0
"""Per agent run: a local 1.5B model on 2 cores needs minutes where a plan needs a second."""
MAX_ITERATIONS_HUMANEVALFIX = 12
STAGES = ("agent", "oneshot", "bestof", "fixtures", "realrepos", "tools-loop")
DEFAULT_STAGES = STAGES[:-1]
"""Every stage but the tool loop's, in the order above."""
REPORT_DIR = PROJECT_ROOT / "docs" / "results"
RESULTS_DIR = PROJECT_ROOT / "results" / "eval-local"
"""Where the runs go by default: one fixed folder, so running again resumes."""


def odd_rows(task_ids: list[str]) -> list[str]:
    """Every odd-numbered HumanEvalFix id, in numeric order (the reported split)."""
    return odd_subset(task_ids, len(task_ids))


def odd_subset(task_ids: list[str], size: int, seed: int = SUBSET_SEED) -> list[str]:
    """``size`` odd-numbered HumanEvalFix ids, drawn with ``seed``, in numeric order."""
    return parity_subset(task_ids, size, 1, seed)


def parity_subset(task_ids: list[str], size: int, parity: int, seed: int) -> list[str]:
    """``size`` HumanEvalFix ids whose row number % 2 is ``parity`` (1: the reported
    split; 0: the development split), drawn with ``seed``, in numeric order."""

    def number(task_id: str) -> int:
        return int(task_id.rsplit("-", 1)[1])

    rows = sorted((t for t in task_ids if number(t) % 2 == parity), key=number)
    chosen = random.Random(seed).sample(rows, min(size, len(rows)))  # noqa: S311 - seeded
    return sorted(chosen, key=number)


def parse_stages(text: str) -> list[str]:
    """``"realrepos,fixtures"`` -> the stages in the order given, each once.

    Raises:
        ValueError: an unknown or repeated stage, or none, with what to write instead.
    """
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in STAGES]
    if unknown or not names or len(set(names)) != len(names):
        raise ValueError(
            f"--stages {text!r}: give one or more of {','.join(STAGES)}, each once, "
            "comma-separated, in the order to run them"
        )
    return names


def parse_part(text: str) -> tuple[int, int]:
    """``"2/3"`` -> ``(2, 3)``: the second of three parts.

    Raises:
        ValueError: not ``K/N`` with 1 <= K <= N, with what to write instead.
    """
    cut = re.fullmatch(r"\s*([1-9][0-9]*)\s*/\s*([1-9][0-9]*)\s*", text, flags=re.ASCII)
    if cut is not None and int(cut[1]) <= int(cut[2]):
        return int(cut[1]), int(cut[2])
    raise ValueError(f"--part {text!r}: give K/N with 1 <= K <= N, for example 1/3")


def part_of(task_ids: list[str], k: int, n: int) -> list[str]:
    """The ``k``-th of ``n`` contiguous parts of ``task_ids``, as even as they can be
    (the first ``len % n`` parts one longer); every id is in exactly one part."""
    size, extra = divmod(len(task_ids), n)
    start = (k - 1) * size + min(k - 1, extra)
    return task_ids[start : start + size + (k <= extra)]


def realrepos_ids() -> list[str]:
    """realrepos' task ids, in its task file's order (the order its parts are cut in)."""
    from sandbox_agent.evals.realrepos import taskfile

    return [task.id for task in taskfile.load().tasks]


def realrepos_stage(part: tuple[int, int] | None) -> tuple[str, list[str]]:
    """The realrepos stage's results folder, and the ``eval`` flags that choose its tasks:
    all of them into ``realrepos/``, or part K of N into ``realrepos-partKofN/``.

    Raises:
        ValueError: more parts than realrepos has tasks.
    """
    if part is None:
        return "realrepos", []
    k, n = part
    tasks = realrepos_ids()
    if n > len(tasks):
        raise ValueError(f"--part {k}/{n}: realrepos has {len(tasks)} tasks; cut it in fewer")
    return f"realrepos-part{k}of{n}", ["--tasks", ",".join(part_of(tasks, k, n))]


def _eval(argv: list[str]) -> int:
    from sandbox_agent.cli import main

    print("eval-local: sandbox-agent " + " ".join(argv), file=sys.stderr, flush=True)
    return main(argv)


def sampled_completer() -> SampledComplete:
    """``complete(system, user, temperature, seed)`` against the project's local server,
    without tools, capped at the one-shot's reply length.

    Raises:
        SetupError: the server or the model is missing, or would not start.
    """
    import openai

    from sandbox_agent.localmodel import pins, server
    from sandbox_agent.providers.http import BoundedTransport, bounded_client
    from sandbox_agent.providers.options import LOCAL_REQUEST_TIMEOUT_SECONDS

    record = server.ensure_running()
    client = openai.OpenAI(
        api_key=server.read_key(record),
        http_client=bounded_client(BoundedTransport(total_seconds=LOCAL_REQUEST_TIMEOUT_SECONDS)),
        base_url=f"{record.root}/v1",
        max_retries=0,
        timeout=LOCAL_REQUEST_TIMEOUT_SECONDS,
    )

    def complete(system: str, user: str, temperature: float, seed: int) -> Completion:
        response = client.chat.completions.create(
            model=pins.MODEL_NAME,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            temperature=temperature,
            seed=seed,
            max_tokens=ONESHOT_MAX_OUTPUT_TOKENS,
        )
        usage = response.usage
        return Completion(
            text=(response.choices[0].message.content or "") if response.choices else "",
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
        )

    return complete


def local_completer() -> Complete:
    """``complete(system, user)``: greedy, the ``local`` provider's seed (the one-shot).

    Raises:
        SetupError: the server or the model is missing, or would not start.
    """
    from sandbox_agent.providers.local import DEFAULT_SEED

    sampled = sampled_completer()
    return lambda system, user: sampled(system, user, 0.0, DEFAULT_SEED)


def oneshot_done(path: Path) -> set[str]:
    """Rows whose one-shot record ``path`` already holds (a line cut short is not one)."""
    return {record.task_id for record in load_records(path)}


def _oneshot(rows: list[humanevalfix.Row], chosen: list[str], path: Path) -> None:
    """The one-shot baseline on ``chosen``, one row at a time, each record appended to
    ``path`` as it comes; rows already there are skipped."""
    from sandbox_agent.evals.running.oneshot import run_one
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

    done = oneshot_done(path)
    todo = [task_id for task_id in chosen if task_id not in done]
    if not todo:
        return
    complete = local_completer()
    backend = DockerBackend()
    by_id = {humanevalfix.task_id(row): row for row in rows}
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        for number, task_id in enumerate(todo, start=len(done) + 1):
            record = run_one(by_id[task_id], complete, backend)
            with path.open("a", encoding="utf-8") as handle:
                handle.write(record.model_dump_json() + "\n")
            verdict = "passed" if record.passed else "failed"
            print(f"oneshot {number}/{len(chosen)} {task_id}: {verdict}", file=sys.stderr)
    finally:
        backend.close()


def _bestof(rows: list[humanevalfix.Row], chosen: list[str], path: Path, options: Any) -> None:
    """One-shot best-of-N on ``chosen`` (``evals.running.bestof``), appended as each row ends."""
    from sandbox_agent.evals.running.bestof import run_best_of
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

    done = {record.task_id for record in load_bestof(path)}
    todo = [task_id for task_id in chosen if task_id not in done]
    if not todo:
        return
    complete = sampled_completer()
    backend = DockerBackend()
    by_id = {humanevalfix.task_id(row): row for row in rows}
    try:
        for number, task_id in enumerate(todo, start=len(done) + 1):
            record = run_best_of(
                by_id[task_id],
                complete,
                backend,
                samples=options.candidates,
                temperature=options.temperature,
                seed=options.seed,
            )
            with path.open("a", encoding="utf-8") as handle:
                handle.write(record.model_dump_json() + "\n")
            verdict = "passed" if record.passed else "failed"
            print(f"best-of-{options.candidates} {number}/{len(chosen)} {task_id}: {verdict}",
                  file=sys.stderr)  # fmt: skip
    finally:
        backend.close()


def run(args: argparse.Namespace) -> int:
    from devtools.eval_local_report import load_parts, record_code, write_local_report
    from sandbox_agent.controller.models import RepairOptions

    results = Path(args.results_dir or RESULTS_DIR)
    results.mkdir(parents=True, exist_ok=True)
    for name in ("humanevalfix", "fixtures", "realrepos", "humanevalfix-tools"):
        load_parts(results, name)  # folders that cannot be merged: said now, not hours later
    rows = humanevalfix.load_rows(humanevalfix.dataset_path(args.dataset))
    ids = [humanevalfix.task_id(row) for row in rows]
    if args.humanevalfix == "all":
        chosen, split = ids, "all 164 rows"
    elif args.humanevalfix == "odd":
        chosen = odd_rows(ids)
        split = f"all {len(chosen)} odd-numbered rows"
    else:
        chosen = odd_subset(ids, int(args.humanevalfix))
        split = f"{len(chosen)} odd-numbered rows, seed {SUBSET_SEED}"
    repair = RepairOptions()
    strategy = ["--strategy", args.strategy]
    budget = ["--max-wall-seconds", str(args.max_wall_seconds), "--jobs", "1"]
    dataset = ["--dataset", args.dataset] if args.dataset else []
    began = time.monotonic()
    budgets = {
        "max_wall_seconds": args.max_wall_seconds,
        "repeats": args.repeats,
        "humanevalfix_max_iterations": MAX_ITERATIONS_HUMANEVALFIX,
        "strategy": args.strategy,
        "repair": repair.model_dump(),
    }

    def report() -> tuple[Path, Path]:
        # After every stage: a session that stops midway still leaves what finished.
        return write_local_report(
            results,
            Path(args.report_dir),
            subset=chosen,
            split=split,
            budgets=budgets,
            wall_seconds=time.monotonic() - began,
        )

    resume = [] if args.fresh else ["--resume"]
    realrepos, part = args.realrepos
    if args.fresh:
        for name in (ONESHOT_FILE, BESTOF_FILE):
            if (results / name).exists():
                set_aside(results / name)  # kept under another name, never deleted
    hef = ["--suite", "humanevalfix", "--tasks", ",".join(chosen), *dataset,
           "--max-iterations", str(MAX_ITERATIONS_HUMANEVALFIX)]  # fmt: skip
    stages: dict[str, Callable[[], object]] = {
        "agent": lambda: _eval(["eval", "--provider", "local", *strategy, *hef, *budget,
                                *resume, "--results-dir", str(results / "humanevalfix")]),
        "oneshot": lambda: _oneshot(rows, chosen, results / ONESHOT_FILE),
        "bestof": lambda: _bestof(rows, chosen, results / BESTOF_FILE, repair),
        "fixtures": lambda: _eval(["eval", "--provider", "local", *strategy, "--suite",
                                   "fixtures", "--repeats", str(args.repeats), *budget,
                                   *resume, "--results-dir", str(results / "fixtures")]),
        "realrepos": lambda: _eval(["eval", "--provider", "local", *strategy, "--suite",
                                    "realrepos", *part, *budget, *resume,
                                    "--results-dir", str(results / realrepos)]),
        "tools-loop": lambda: _eval(["eval", "--provider", "local", "--strategy", "tools",
                                     *hef, *budget, *resume,
                                     "--results-dir", str(results / "humanevalfix-tools")]),
    }  # fmt: skip
    folders = {
        "agent": "humanevalfix",
        "fixtures": "fixtures",
        "realrepos": realrepos,
        "tools-loop": "humanevalfix-tools",
        "oneshot": "oneshot",
        "bestof": "bestof",
    }
    for name in args.stages:
        record_code(results / folders[name])  # the one-shot arms': beside their .jsonl
        stages[name]()
        report()
    md, js = report()
    print(f"eval-local: report {md} {js}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="eval-local", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--results-dir",
        default=None,
        help="where the evals' folders go (default results/eval-local; running again resumes)",
    )
    parser.add_argument(
        "--fresh", action="store_true", help="start over (the old journals are kept aside)"
    )
    parser.add_argument("--report-dir", default=str(REPORT_DIR), help="the report's folder")
    parser.add_argument(
        "--humanevalfix", default="odd", help="odd (all 82, default), all (164), or N odd rows"
    )
    parser.add_argument("--strategy", choices=("repair", "tools"), default="repair")
    parser.add_argument(
        "--tools-loop", action="store_true", help="also the tools strategy on the same rows"
    )
    parser.add_argument("--repeats", type=int, default=REPEATS, help="of the 10-task set")
    parser.add_argument("--max-wall-seconds", type=float, default=MAX_WALL_SECONDS)
    parser.add_argument("--dataset", default=None, help="HumanEvalFix JSONL")
    parser.add_argument(
        "--stages",
        default=None,
        help=f"which stages, in which order (comma-separated, of: {','.join(STAGES)}; "
        f"default {','.join(DEFAULT_STAGES)})",
    )
    parser.add_argument(
        "--part",
        default=None,
        help="realrepos: run only the K-th of N contiguous parts of its tasks (K/N), into "
        "realrepos-partKofN/; the report merges the parts there",
    )
    parser.add_argument(
        "--skip-agent", action="store_true", help="no agent stage (report on what is there)"
    )
    parser.add_argument("--skip-oneshot", action="store_true", help="no oneshot/bestof stage")
    args = parser.parse_args(argv)
    if args.humanevalfix not in ("all", "odd") and not args.humanevalfix.isdigit():
        parser.error("--humanevalfix takes 'odd', 'all' or a number of odd-numbered rows")
    try:
        stages = parse_stages(args.stages or ",".join(DEFAULT_STAGES))
        args.realrepos = realrepos_stage(parse_part(args.part) if args.part else None)
    except ValueError as error:
        parser.error(str(error))
    if args.part and (args.stages is None or "realrepos" not in stages):
        parser.error("--part cuts the realrepos stage: name the stages, as in --stages realrepos")
    if args.tools_loop and "tools-loop" not in stages:
        stages.append("tools-loop")
    agent = {"agent", "fixtures", "realrepos", "tools-loop"}
    skipped = (agent if args.skip_agent else set()) | (
        {"oneshot", "bestof"} if args.skip_oneshot else set()
    )
    args.stages = [name for name in stages if name not in skipped]
    try:
        return run(args)
    except UsageError as error:  # parts that cannot be merged, found before any stage runs
        print(f"eval-local: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
