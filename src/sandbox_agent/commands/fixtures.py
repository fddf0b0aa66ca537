"""`sandbox-agent fixtures`: list fixtures (name, runner, files, reference plan, description)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HELP = "list the fixture repositories"
MAX_DESCRIPTION_CHARS = 100
MAX_FILES_COUNTED = 10_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of ``fixtures``."""
    parser.add_argument(
        "--fixtures-dir",
        metavar="DIR",
        type=Path,
        help="where fixtures live (default: $SANDBOX_AGENT_FIXTURES, else this checkout's "
        "fixtures/)",
    )
    parser.add_argument("--json", action="store_true", help="print the list as JSON")


def describe(fixtures_dir: Path, name: str) -> dict[str, Any]:
    """One fixture's row: its runner, file count, reference plan and README's first line."""
    from sandbox_agent.controller.source import reference_plan_path
    from sandbox_agent.policy import detect_runner

    root = fixtures_dir / name
    files = 0
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink() and "__pycache__" not in path.parts:
            files += 1
            if files >= MAX_FILES_COUNTED:
                break
    readme = root / "README.md"
    description = ""
    if readme.is_file() and not readme.is_symlink():
        with readme.open(encoding="utf-8", errors="replace") as handle:
            description = handle.readline().strip()[:MAX_DESCRIPTION_CHARS]
    plan = reference_plan_path(fixtures_dir, name)
    return {
        "name": name,
        "runner": detect_runner(root),
        "files": files,
        "reference_plan": plan is not None,
        "plan_path": str(plan) if plan else None,
        "description": description,
    }


def run(args: argparse.Namespace) -> int:
    """Print the fixtures.

    Raises:
        UsageError: the fixtures folder does not exist.
    """
    from sandbox_agent.controller.source import fixture_names
    from sandbox_agent.settings import default_fixtures_dir

    fixtures_dir: Path = args.fixtures_dir or default_fixtures_dir()
    rows = [describe(fixtures_dir, name) for name in fixture_names(fixtures_dir)]
    if args.json:
        json.dump({"fixtures_dir": str(fixtures_dir), "fixtures": rows}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print(f"{'name':<14} {'runner':<9} {'files':>5}  {'plan':<4}  description")
    for row in rows:
        plan = "yes" if row["reference_plan"] else "no"
        print(
            f"{row['name']:<14} {row['runner']:<9} {row['files']:>5}  {plan:<4}  "
            f"{row['description']}"
        )
    return 0
