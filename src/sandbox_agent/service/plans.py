"""Inline plans on disk: a private file per run while it runs, and what a killed server left.

The scripted provider reads its plan from a file (``PlanOptions.plan_path``); the plan
itself is kept in the run's database record. A file exists only while its run does, except
after a server was killed: the next start removes those (SR-8 S8-8).
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from sandbox_agent.service.models import IN_FLIGHT
from sandbox_agent.service.private import FILE_MODE, private_dir
from sandbox_agent.service.store import RunStore

PLAN_FILE = re.compile(r"^[0-9a-f]{32}\.json$")


def write_plan(plans_dir: Path, run_id: str, plan_json: str) -> Path:
    """Write a run's plan into a new file only its owner can read; return its path."""
    private_dir(plans_dir, tighten=False)
    path = plans_dir / f"{run_id}.json"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(path, flags, FILE_MODE), "w", encoding="utf-8") as handle:
        handle.write(plan_json)
    return path


def remove_plan(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)


def remove_stale_plans(plans_dir: Path, store: RunStore) -> None:
    """Remove the plan files of ``store``'s runs that are no longer in flight.

    A file of a run this database never had stays: another server, with its own
    database, may share the work folder, and its runs may be live.
    """
    try:
        names = [entry.name for entry in plans_dir.iterdir()]
    except OSError:
        return
    for name in filter(PLAN_FILE.match, names):
        stored = store.get(name.removesuffix(".json"))
        if stored is not None and stored.status not in IN_FLIGHT:
            remove_plan(plans_dir / name)
