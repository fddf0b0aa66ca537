"""Refuse a repository with no tests before the first model call (issue 30).

No change can be verified without tests, and a repository's test files are protected
from the model, so a run on such a repository could only end ``FAILED`` after spending
the model's turns. The check looks for a file the runner would load as tests: names
matching ``test*.py`` (unittest discovery's pattern, from the root), ``*_test.py`` and
any ``python_files`` pattern of the repository's pytest configuration, at any depth,
version-control folders aside. It errs on the side of running: a file whose name
matches but which holds no test still lets the run start (the baseline, a sandbox run
in the background, then knows; waiting for it before the first turn would cost every
run a container start). It walks only until the first match, so a repository with tests
pays for a few directory reads (docs/DECISIONS.md, "A repository with no tests").
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import NamedTuple

from sandbox_agent.errors import UsageError
from sandbox_agent.policy.protected import TEST_FILE_GLOBS, VCS_DIR_NAMES
from sandbox_agent.policy.runner_detect import detect_runner, pytest_test_paths

MAX_ENTRIES = 200_000
"""Names looked at, at most; past that the repository is taken to have tests."""
ALLOW_FLAG = "--allow-no-tests"


class FileSearch(NamedTuple):
    """Where a repository's first test file is, and what was looked for."""

    found: str | None
    """The first matching file, relative to the root; None when there is none."""
    looked_for: str
    """What the runner loads as tests, as a user reads it."""


def search_tests(repo: Path, runner: str) -> FileSearch:
    """The first file under ``repo`` that ``runner`` would load as tests, if any."""
    configured = pytest_test_paths(repo).file_globs
    globs = tuple(dict.fromkeys((*TEST_FILE_GLOBS, *configured)))
    if runner == "pytest":
        shown = ", ".join(dict.fromkeys(("test_*.py", "*_test.py", *configured)))
        looked_for = f"pytest (configured in this repository) collects {shown} files"
    else:
        looked_for = "unittest discovery loads test*.py modules from the repository root"
    seen = 0
    for folder, dirs, files in os.walk(repo):
        dirs[:] = sorted(d for d in dirs if d not in VCS_DIR_NAMES)
        seen += len(dirs) + len(files)
        relative = Path(folder).relative_to(repo)
        for name in sorted(files):
            path = (relative / name).as_posix()
            if any(_matches(name, path, glob) for glob in globs):
                return FileSearch(path, looked_for)
        if seen > MAX_ENTRIES:
            return FileSearch(f"(more than {MAX_ENTRIES} names: not searched further)", looked_for)
    return FileSearch(None, looked_for)


def _matches(name: str, path: str, glob: str) -> bool:
    return fnmatch.fnmatchcase(path if "/" in glob else name, glob)


def require_tests(repo: Path, runner: str, *, label: str) -> None:
    """Refuse ``repo`` when it has no file the runner would load as tests.

    Args:
        repo: the repository's folder.
        runner: ``auto``, ``unittest`` or ``pytest`` (``auto`` is detected as the run would).
        label: the repository as the user named it.

    Raises:
        UsageError: no test file; one line saying what was looked for and the flag that
            allows such a run.
    """
    chosen = detect_runner(repo) if runner == "auto" else runner
    search = search_tests(repo, chosen)
    if search.found is not None:
        return
    raise UsageError(
        f"{label} has no tests: {search.looked_for}, and there are none, so no change "
        f"could be checked; add tests, or pass {ALLOW_FLAG} for a task that needs none "
        "(read-only: such a run cannot end SUCCEEDED)"
    )
