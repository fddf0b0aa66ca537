"""`sandbox-agent run`: one task on a fixture or a local repository (docs/CONTROLLER.md).

Exit 0 only when the status is SUCCEEDED and the original is unchanged; 1 for any
other finished run; 2 for a usage or setup error. SIGINT and SIGTERM cancel the run
(saying so on stderr): the model request in flight is stopped, no tool runs after it,
the run unwinds, removing its containers and its workspace, and is sealed ``CANCELLED``;
the exit code is then 128 + the signal's number (130 for SIGINT, 143 for SIGTERM).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sandbox_agent.controller.models import RunConfig

HELP = "run the agent on one task, contained; print the result"

# Kept literal so that building the parser imports nothing heavy; a test checks they
# equal the models' defaults (sandbox_agent.controller.models, sandbox.base).
BUDGET_FLAGS: tuple[tuple[str, str, type, str], ...] = (
    ("--max-iterations", "max_iterations", int, "model turns (default 20)"),
    ("--max-tool-calls", "max_tool_calls", int, "tool calls (default 30)"),
    ("--max-wall-seconds", "max_wall_seconds", float, "wall clock of the run (default 300)"),
    ("--max-denials", "max_denials", int, "policy denials tolerated (default 3)"),
    ("--max-invalid-outputs", "max_invalid_outputs", int, "invalid outputs tolerated (default 3)"),
)

DIFF_FLAGS: tuple[tuple[str, str, type, str], ...] = (
    ("--max-diff-seconds", "max_seconds", float, "time for the final diff (default 10)"),
    ("--max-diff-bytes", "max_bytes", int, "size of the final diff (default 4194304 = 4 MiB)"),
    (
        "--max-diff-line-pairs",
        "max_line_pairs",
        int,
        "old x new changed lines diffed in one file, else summarised (default 4000000)",
    ),
)

BLANK_TASK = (
    '--task is blank: say in plain words what to do, e.g. --task "Page numbers start at 1; '
    'fix the paginator"'
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of ``run`` (docs/CONTRACT.md section 3, "`run` flags and defaults")."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--fixture", metavar="NAME", help="a fixture ('sandbox-agent fixtures')")
    source.add_argument("--repo", metavar="PATH", type=Path, help="any local repository folder")
    parser.add_argument("--fixtures-dir", metavar="DIR", type=Path, help="where fixtures live")
    parser.add_argument("--task", required=True, help="what to do, in plain words")
    parser.add_argument(
        "--provider",
        default="scripted",
        help="scripted|injection|mock-adversarial|anthropic|openai|local (default scripted)",
    )
    parser.add_argument(
        "--plan", metavar="FILE", help="scripted: a plan file (docs/CONTRACT.md section 4)"
    )
    parser.add_argument(
        "--runtime",
        choices=("runc", "runsc"),
        default="runc",
        help="container runtime of the sandboxes; runsc is gVisor (default runc)",
    )
    parser.add_argument(
        "--runner",
        choices=("auto", "unittest", "pytest"),
        default="auto",
        help="the test runner; auto: pytest when the repository configures it, else "
        "unittest (default auto)",
    )
    parser.add_argument(
        "--allow-no-tests",
        action="store_true",
        help="run on a repository with no test file, for a task that needs none (such a run "
        "cannot end SUCCEEDED; default: refused before the first model call)",
    )
    parser.add_argument(
        "--prestart",
        type=int,
        default=2,
        metavar="N",
        help="most sandboxes made ahead of test runs, 0-4 (default 2; 0: each starts cold)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the result as JSON (and no progress on stderr)",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress on stderr: only the result (default: a line per turn, and the "
        "time the model has been thinking)",
    )
    parser.add_argument("--trace-dir", metavar="DIR", type=Path, help="parent of the run folder")
    parser.add_argument("--run-id", help=argparse.SUPPRESS)
    budgets = parser.add_argument_group("budgets")
    for flag, dest, kind, text in BUDGET_FLAGS:
        budgets.add_argument(flag, dest=dest, type=kind, metavar="N", help=text)
    diff = parser.add_argument_group("final diff")
    for flag, dest, kind, text in DIFF_FLAGS:
        diff.add_argument(flag, dest=f"diff_{dest}", type=kind, metavar="N", help=text)
    from sandbox_agent.sandbox.limits_cli import add_limit_arguments

    add_limit_arguments(parser)  # --test-timeout, --output-budget and the other limits
    from sandbox_agent.commands.realmodel import add_real_model_arguments

    add_real_model_arguments(parser)
    from sandbox_agent.deps.cli import add_deps_arguments

    add_deps_arguments(parser)
    from sandbox_agent.commands.strategy import add_strategy_arguments

    add_strategy_arguments(parser)


def build_config(args: argparse.Namespace) -> RunConfig:
    """The ``RunConfig`` for these flags.

    Raises:
        UsageError: a blank ``--task``, or a flag value the contracts refuse (one line
            naming it).
    """
    from pydantic import ValidationError

    from sandbox_agent.commands.realmodel import provider_options_from
    from sandbox_agent.commands.strategy import repair_options_from, strategy_for
    from sandbox_agent.controller.models import Budgets, RunConfig
    from sandbox_agent.deps.cli import deps_options_from
    from sandbox_agent.errors import UsageError
    from sandbox_agent.sandbox.limits_cli import limits_from_args
    from sandbox_agent.workspace.diff import DiffLimits

    if not args.task.strip():
        raise UsageError(BLANK_TASK)
    given = {dest: getattr(args, dest) for _, dest, _, _ in BUDGET_FLAGS}
    diff_given = {dest: getattr(args, f"diff_{dest}", None) for _, dest, _, _ in DIFF_FLAGS}
    try:
        return RunConfig(
            task=args.task,
            fixture=args.fixture,
            fixtures_dir=args.fixtures_dir,
            repo=args.repo,
            provider=args.provider,
            provider_options=provider_options_from(args, plan_path=args.plan),
            runtime=args.runtime,
            runner=args.runner,
            budgets=Budgets(**{k: v for k, v in given.items() if v is not None}),
            limits=limits_from_args(args),
            prestart=args.prestart,
            deps=deps_options_from(args),
            diff_limits=DiffLimits(**{k: v for k, v in diff_given.items() if v is not None}),
            trace_dir=args.trace_dir,
            run_id=args.run_id,
            strategy=strategy_for(args),
            repair=repair_options_from(args),
            allow_no_tests=args.allow_no_tests,
        )
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise UsageError(f"bad value for {where}: {first['msg']}") from None


def run(args: argparse.Namespace) -> int:
    """Run the task; print the result; exit 0 only for SUCCEEDED with the original intact.

    Raises:
        UsageError: bad flags, fixture, repository, provider or plan.
        SetupError: no Docker daemon or runner image.
    """
    from sandbox_agent.commands.signals import cancelled_by_signals
    from sandbox_agent.controller import run_task
    from sandbox_agent.controller.report import render
    from sandbox_agent.sandbox.base import CancelToken
    from sandbox_agent.trace.terminal import TerminalProgress

    config = build_config(args)
    cancel = CancelToken()

    def on_signal(sig: signal.Signals, count: int) -> None:
        _say(CANCELLING.format(sig.name) if count == 1 else STILL)

    progress = None if args.json or args.quiet else TerminalProgress(sys.stderr)
    try:
        with cancelled_by_signals(cancel, on_signal) as received:
            sink = None if progress is None else progress.on_event
            result = run_task(config, cancel=cancel, on_event=sink)
    finally:
        if progress is not None:
            progress.close()
    if args.json:
        json.dump(json.loads(result.model_dump_json()), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render(result))
    if received and result.status == "CANCELLED":
        return 128 + received[0]
    return 0 if result.status == "SUCCEEDED" and result.fixture.intact else 1


CANCELLING = (
    "cancelling ({}): stopping the model request and any test run; no tool runs after "
    "this; the run is sealed CANCELLED"
)
STILL = "still cancelling: sealing the run"


def _say(line: str) -> None:
    """One line on stderr, written straight to the file descriptor: a signal handler may
    run while the progress display holds stderr's buffer, which must not be re-entered."""
    with contextlib.suppress(OSError):
        os.write(
            sys.stderr.fileno(),
            f"\r\x1b[2K{line}\n".encode() if sys.stderr.isatty() else f"{line}\n".encode(),
        )
