"""Where a run's repository comes from: a named fixture or a local folder.

Fixture layout: ``<fixtures_dir>/<name>/`` is the repository (copied, never modified);
its reference plan, if any, is ``<fixtures_dir>/<name>.plan.json``, beside the
folder and so outside the repository the model can read.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import re2

from sandbox_agent.controller.models import RunConfig
from sandbox_agent.errors import UsageError
from sandbox_agent.settings import default_fixtures_dir

PLAN_SUFFIX = ".plan.json"
_FIXTURE_NAME = re2.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}")


class Source(NamedTuple):
    path: Path
    """The original repository folder."""
    label: str
    """The fixture name, or the folder path for ``--repo``."""
    reference_plan: Path | None


def reference_plan_path(fixtures_dir: Path, name: str) -> Path | None:
    """The fixture's reference plan, if it has one."""
    plan = fixtures_dir / f"{name}{PLAN_SUFFIX}"
    return plan if plan.is_file() else None


def fixture_names(fixtures_dir: Path) -> list[str]:
    """Every fixture in ``fixtures_dir``: its sub-folders, except hidden and ``_`` ones."""
    if not fixtures_dir.is_dir():
        raise UsageError(f"fixtures folder {fixtures_dir} does not exist; give --fixtures-dir DIR")
    return sorted(
        entry.name
        for entry in fixtures_dir.iterdir()
        if entry.is_dir() and not entry.is_symlink() and not entry.name.startswith((".", "_"))
    )


def resolve_source(config: RunConfig) -> Source:
    """The repository a run copies.

    Raises:
        UsageError: neither or both of fixture and repo, an unknown fixture, or a missing folder.
    """
    if (config.fixture is None) == (config.repo is None):
        raise UsageError("give exactly one of --fixture NAME or --repo PATH")
    if config.repo is not None:
        if not config.repo.exists():
            raise UsageError(f"--repo {config.repo} does not exist; give a repository folder")
        if not config.repo.is_dir():
            raise UsageError(f"--repo {config.repo} is not a folder; give a repository folder")
        return Source(config.repo.resolve(), str(config.repo), None)
    name = str(config.fixture)
    fixtures_dir = config.fixtures_dir or default_fixtures_dir()
    if not _FIXTURE_NAME.fullmatch(name) or not (fixtures_dir / name).is_dir():
        raise UsageError(
            f"no fixture {name!r} in {fixtures_dir}; 'sandbox-agent fixtures' lists them"
        )
    return Source((fixtures_dir / name).resolve(), name, reference_plan_path(fixtures_dir, name))
