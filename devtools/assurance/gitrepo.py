"""The few git questions the regression evidence asks of this checkout's history."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sandbox_agent.errors import SetupError
from sandbox_agent.settings import PROJECT_ROOT

GIT_TIMEOUT_S = 120.0


def git(*args: str, root: Path = PROJECT_ROOT) -> str:
    """``git -C root args...``'s output, stripped.

    Raises:
        SetupError: git is missing, or the command failed (its first error line says why).
    """
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SetupError(f"git {args[0]} could not run ({error}): install git") from error
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["no output"]
        raise SetupError(f"git {' '.join(args)} failed: {lines[0]}")
    return done.stdout.strip()


def resolve(commit: str, root: Path = PROJECT_ROOT) -> str:
    """The full hash of ``commit``.

    Raises:
        SetupError: the commit is not in this clone (a shallow clone lacks the history).
    """
    try:
        return git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}", root=root)
    except SetupError as error:
        raise SetupError(
            f"commit {commit} is not in this clone: fetch the whole history "
            "('git fetch --unshallow')"
        ) from error


def first_parent(commit: str, root: Path = PROJECT_ROOT) -> str:
    """The full hash of ``commit``'s first parent.

    Raises:
        SetupError: the commit or its parent is not in this clone.
    """
    return resolve(f"{resolve(commit, root)}^1", root)


def is_ancestor(older: str, newer: str, root: Path = PROJECT_ROOT) -> bool:
    """Whether ``older`` is in ``newer``'s history (a commit is its own ancestor)."""
    done = subprocess.run(
        ["git", "-C", str(root), "merge-base", "--is-ancestor", older, newer],
        capture_output=True,
        timeout=GIT_TIMEOUT_S,
        check=False,
    )
    return done.returncode == 0


def head(root: Path = PROJECT_ROOT) -> str:
    """The short hash of HEAD, with ``+changes`` when the working tree differs from it."""
    short = git("rev-parse", "--short", "HEAD", root=root)
    dirty = git("status", "--porcelain", "--untracked-files=no", root=root)
    return f"{short}+changes" if dirty else short
