"""`sandbox-agent eval`: run a suite of tasks, score every run, write a JSON and a Markdown report.

Exit codes: 0 when every run passed with no executed violation, 1 otherwise, 2 for a
usage or setup error.
"""

from __future__ import annotations

import argparse
from typing import Any

HELP = "run an evaluation suite (held-out tests, scoring, reports)"
DEFAULT_PROVIDER = "scripted"


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError(f"must be between 0 and 86400 seconds, got {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of docs/CONTRACT.md section 7, plus where results go and the control run."""
    from sandbox_agent.evals.running.options import DEFAULT_JOBS, DEFAULT_REPEATS

    parser.add_argument(
        "--provider",
        default=DEFAULT_PROVIDER,
        help=f"provider name (default {DEFAULT_PROVIDER}; local: --jobs 1)",
    )
    parser.add_argument(
        "--repeats",
        type=_positive,
        default=DEFAULT_REPEATS,
        help=f"runs per task, each kept (default {DEFAULT_REPEATS})",
    )
    parser.add_argument(
        "--jobs",
        type=_positive,
        default=DEFAULT_JOBS,
        help=f"runs at once (default {DEFAULT_JOBS})",
    )
    parser.add_argument("--tasks", default=None, help="comma-separated task ids (default all)")
    parser.add_argument(
        "--suite", default="fixtures", help="fixtures (default), humanevalfix or realrepos"
    )
    parser.add_argument("--json", action="store_true", help="print the JSON report on stdout")
    parser.add_argument(
        "--results-dir",
        default=None,
        help="where report.json and report.md go (default results/<timestamp>/)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the runs RESULTS_DIR/runs.jsonl already holds (same evaluation) and "
        "run only the rest (each run is added to it as it finishes)",
    )
    parser.add_argument(
        "--no-fix",
        action="store_true",
        help="control run: a plan that changes nothing, instead of each reference plan",
    )
    parser.add_argument(
        "--plans",
        default=None,
        metavar="DIR",
        help="DIR/<task id>.json (a plan file) replaces that task's reference plan "
        "(default: each task's own reference plan)",
    )
    parser.add_argument(
        "--max-iterations",
        type=_positive,
        default=None,
        help="every task's turn budget instead of its own",
    )
    parser.add_argument(
        "--max-wall-seconds",
        type=_positive_seconds,
        default=None,
        help="every task's wall clock instead of its own (slow local models)",
    )
    parser.add_argument(
        "--runtime",
        choices=("runc", "runsc"),
        default="runc",
        help="container runtime (default runc)",
    )
    parser.add_argument(
        "--fixtures-dir",
        default=None,
        help="where fixtures live (default: the project's fixtures/)",
    )
    from sandbox_agent.commands.realmodel import add_real_model_arguments

    add_real_model_arguments(parser)
    parser.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="run on a Ray cluster: auto (make cluster-up's, or this machine's), "
        "ray://HOST:PORT or HOST:PORT; each run record names its node (default: this host)",
    )
    parser.add_argument(
        "--retry-lost",
        action="store_true",
        help="with --ray: run a run lost with its node once more, on another node",
    )
    parser.add_argument(
        "--dataset",
        default=None,
        help="the suite's data: humanevalfix's JSONL (default "
        "evals/data/humanevalfix/humanevalpack-python.jsonl) or realrepos' task file "
        "(default evals/realrepos/tasks.json)",
    )
    from sandbox_agent.deps.cli import add_deps_arguments

    add_deps_arguments(parser)
    from sandbox_agent.commands.strategy import add_strategy_arguments

    add_strategy_arguments(parser)


def _reap_once() -> None:
    """Reap what crashed runs left, once, before the workers start (each worker's backend
    then skips its own first-use reap, which would repeat the work per thread)."""
    import sys

    import docker.errors
    import requests.exceptions

    from sandbox_agent.errors import DockerUnavailable, SetupError
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

    try:
        backend = DockerBackend(reap_on_first_use=False)
        try:
            lines = backend.reap()
        finally:
            backend.close()
    except (
        docker.errors.DockerException,
        requests.exceptions.RequestException,
        DockerUnavailable,
    ) as error:
        first = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
        raise SetupError(
            f"Docker does not answer ({first}): start it ('make docker'), or check DOCKER_HOST"
        ) from None
    for line in lines:
        print(f"reap: {line}", file=sys.stderr)


def _run_cases(
    args: argparse.Namespace, cases: Any, options: Any, results: Any, progress: Any
) -> Any:
    """Every run, on this host or (``--ray``) on the cluster: (records, cluster report)."""
    if not args.ray:
        return _run_locally(cases, options, progress, _journal(args, options, results)), None
    from sandbox_agent.evals.running.cluster import run_on_cluster

    outcome = run_on_cluster(args, cases, options, _journal(args, options, results), progress)
    return outcome.records, outcome.report


def _journal(args: argparse.Namespace, options: Any, results: Any) -> Any:
    """``RESULTS_DIR/runs.jsonl`` (``evals.results.journal``), named by what makes two
    evaluations the same: the suite, control or not, where tasks and plans come from, and
    every run option but ``--jobs``, ``--repeats`` and ``--tasks`` (a resumed evaluation
    may add repeats or tasks)."""
    from sandbox_agent.evals.results.journal import Journal

    return Journal(results, _identity(args, options), resume=args.resume)


def _identity(args: argparse.Namespace, options: Any) -> dict[str, Any]:
    """What makes two evaluations the same (``_journal``), as JSON data: the journal's
    header and the report both hold it."""
    import json

    identity = {
        "suite": args.suite,
        "control": args.no_fix,
        "dataset": args.dataset,
        "plans": args.plans,
        "fixtures_dir": args.fixtures_dir,
        **options.model_dump(mode="json", exclude={"jobs", "repeats", "trace_dir"}),
    }
    normal: dict[str, Any] = json.loads(json.dumps(identity, sort_keys=True, default=str))
    return normal


def _run_locally(cases: Any, options: Any, progress: Any, journal: Any) -> Any:
    """Every run on this host, ``--jobs`` at once (``evals.running.executor.run_all``)."""
    from sandbox_agent.controller import run_task
    from sandbox_agent.evals.running.executor import run_all
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

    _reap_once()
    return run_all(
        cases,
        options,
        backend_factory=lambda: DockerBackend(reap_on_first_use=False),
        run_task=run_task,
        progress=progress,
        journal=journal,
    )


def _check_flags(args: argparse.Namespace) -> None:
    """Flags that only make sense together.

    Raises:
        UsageError: one line that says which flag to add or drop.
    """
    from sandbox_agent.errors import UsageError

    if args.retry_lost and not args.ray:
        raise UsageError("--retry-lost needs --ray ADDRESS")
    if args.resume and args.ray:
        raise UsageError("--resume is for evaluations on this host; drop --ray or --resume")
    if args.resume and not args.results_dir:
        raise UsageError("--resume needs --results-dir DIR: the evaluation to continue")
    if args.no_fix and args.plans:
        raise UsageError(
            "--no-fix replaces every plan with one that changes nothing, and --plans gives "
            "plans: drop one of them"
        )
    for flag, value in (
        ("--fixtures-dir", args.fixtures_dir),
        ("--plans", args.plans),
        ("--dataset", args.dataset),
        ("--results-dir", args.results_dir),
    ):
        # A name that is not UTF-8 reaches Python as lone surrogates, which are not
        # printable: the report could not be written after every run (SR-11 R11).
        if value is not None and not str(value).isprintable():
            raise UsageError(
                f"{flag} must be a printable UTF-8 path (the report and the journal name "
                "it): rename the folder or link to it from such a path"
            )


def run(args: argparse.Namespace) -> int:
    """Build the suite, run it in parallel, write the reports, print a summary.

    Raises:
        UsageError: bad flags, an unknown suite, task, fixture or dataset.
        SetupError: Docker or the runner image is missing.
    """
    import datetime as dt
    import sys
    import tempfile
    import time
    from pathlib import Path

    from pydantic import ValidationError

    from sandbox_agent.commands.realmodel import provider_options_from
    from sandbox_agent.deps.cli import deps_options_from
    from sandbox_agent.errors import UsageError
    from sandbox_agent.evals.results.records import TRACES_DIR
    from sandbox_agent.evals.results.report import default_results_dir, make_report, write_report
    from sandbox_agent.evals.running.options import EvalOptions
    from sandbox_agent.evals.running.progress import ProgressBar
    from sandbox_agent.evals.tasks.suites import SuiteOptions, build_cases

    task_ids = (
        [part.strip() for part in args.tasks.split(",") if part.strip()] if args.tasks else None
    )
    if args.tasks is not None and not task_ids:
        raise UsageError("--tasks is empty; give comma-separated task ids")
    started_at = dt.datetime.now(dt.UTC)
    results = Path(args.results_dir) if args.results_dir else default_results_dir(started_at)
    from sandbox_agent.commands.strategy import repair_options_from, strategy_for

    try:
        real = provider_options_from(args, plan_path=None)
        deps = deps_options_from(args)
        repair = repair_options_from(args)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        raise UsageError(f"bad value for {first['loc'][0]}: {first['msg']}") from None
    options = EvalOptions(
        provider=args.provider,
        model=args.model,
        provider_options=real,
        runtime=args.runtime,
        repeats=args.repeats,
        jobs=args.jobs,
        trace_dir=(results / TRACES_DIR).resolve(),
        max_iterations=args.max_iterations,
        max_wall_seconds=args.max_wall_seconds,
        deps=deps,
        strategy=strategy_for(args),
        repair=repair,
    )
    suite_options = SuiteOptions(
        task_ids=task_ids,
        fix=not args.no_fix,
        fixtures_dir=Path(args.fixtures_dir) if args.fixtures_dir else None,
        dataset=args.dataset,
        plans_dir=Path(args.plans) if args.plans else None,
        deps=deps,
    )
    _check_flags(args)
    with tempfile.TemporaryDirectory(prefix="sandbox-agent-suite-") as scratch:
        cases = build_cases(args.suite, suite_options, Path(scratch))
        if not cases:
            raise UsageError("no tasks selected; check --tasks")
        began = time.monotonic()
        progress = ProgressBar(len(cases) * args.repeats, label=args.suite)
        records, cluster = _run_cases(args, cases, options, results, progress)
        wall = time.monotonic() - began
    report = make_report(
        records,
        suite=args.suite,
        provider=args.provider,
        model=args.model or next((r.model for r in records if r.model), ""),
        runtime=args.runtime,
        jobs=args.jobs,
        repeats=args.repeats,
        control=args.no_fix,
        started_at=started_at,
        wall_seconds=wall,
        cluster=cluster,
        identity=_identity(args, options),
    )
    json_path, md_path = write_report(report, results)
    s = report.summary
    if args.json:
        print(report.model_dump_json(indent=1))
    else:
        print(report.notice)
        print(
            f"{args.suite}: {s.passed}/{s.runs} passed, {s.clean} clean, attempted violations "
            f"{s.attempted_violations}, executed violations {s.executed_violations}, "
            f"wall {wall:.1f} s"
        )
    print(f"reports: {json_path} {md_path}", file=sys.stderr)
    if cluster is not None and cluster.error:
        print(f"sandbox-agent eval: {cluster.error}", file=sys.stderr)
        return 2
    return 0 if s.passed == s.runs and s.executed_violations == 0 else 1
