"""`sandbox-agent deps PATH`: make (or find) a repository's dependency environment and say
what it holds and what it cost, without running anything (docs/DEPENDENCIES.md).

Exit 0 with the environment (or "none declared"); 2 with one line when it cannot be
made. ``run`` does the same before its first model turn; this makes it ahead.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "make or find a repository's dependency environment; print what it holds"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("repo", metavar="PATH", type=Path, help="the repository folder")
    parser.add_argument("--json", action="store_true", help="print it as JSON")
    from sandbox_agent.deps.cli import add_deps_arguments

    add_deps_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Prepare the environment of ``args.repo``; print it.

    Raises:
        UsageError: no such folder; ``DependencyError``: the environment cannot be made.
    """
    import json

    from pydantic import ValidationError

    from sandbox_agent.deps import prepare_environment
    from sandbox_agent.deps.cli import deps_options_from
    from sandbox_agent.errors import UsageError

    if not args.repo.exists():
        raise UsageError(f"{args.repo} does not exist; give a repository folder")
    if not args.repo.is_dir():
        raise UsageError(f"{args.repo} is not a folder; give a repository folder")
    try:
        options = deps_options_from(args)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        raise UsageError(f"bad value for {first['loc'][0]}: {first['msg']}") from None
    environment = prepare_environment(args.repo.resolve(), options)
    if args.json:
        print(
            json.dumps(
                None if environment is None else json.loads(environment.model_dump_json()), indent=1
            )
        )
        return 0
    if environment is None:
        print("no dependencies declared: the sandbox gets no environment")
        return 0
    how = "made" if environment.made else "found"
    print(
        f"environment {environment.hash[:16]} ({environment.source}), {how} in "
        f"{environment.prepare_ms / 1000:.2f} s, {environment.size_bytes / 1e6:.1f} MB: "
        + ", ".join(f"{p.name}=={p.version}" for p in environment.packages)
    )
    print(f"path {environment.path}")
    return 0
