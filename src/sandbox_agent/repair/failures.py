"""What a failing test run says, read from its output (unittest's or pytest's).

The output is the workload's (untrusted, bounded by PID 1); it is read here only to
show the model where to look, never to decide a verdict (``tools.testrun`` does that
from the trusted report).
"""

from __future__ import annotations

import re
from typing import NamedTuple

WORKSPACE_PREFIX = "/workspace/"
"""Where the sandbox mounts the repository (``sandbox.docker.spec.WORKSPACE_TARGET``)."""
MAX_FRAMES = 200
_PYTHON_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
_PYTEST_FRAME = re.compile(r"^(?P<path>[^\s:]+\.py):(?P<line>\d+):(?: in (?P<func>\S+)| \w+)?\s*$")
_UNITTEST_HEAD = re.compile(r"^(?:FAIL|ERROR): ")
_RULE = re.compile(r"^(?:=|-|_){20,}")


class Frame(NamedTuple):
    """One traceback frame inside the repository."""

    path: str
    """Relative to the repository root, ``/``-separated."""
    line: int
    function: str


def repo_path(path: str) -> str | None:
    """``path`` as the repository's relative path, or None for a file outside it."""
    if path.startswith(WORKSPACE_PREFIX):
        path = path[len(WORKSPACE_PREFIX) :]
    elif path.startswith("/") or path.startswith(".."):
        return None
    path = path.removeprefix("./")
    if not path.endswith(".py") or ".." in path.split("/"):
        return None
    return path


def frames(output: str) -> list[Frame]:
    """Every traceback frame in ``output`` that points into the repository, in order."""
    found: list[Frame] = []
    for line in output.splitlines():
        match = _PYTHON_FRAME.match(line) or _PYTEST_FRAME.match(line)
        if match is None:
            continue
        path = repo_path(match["path"])
        if path is None:
            continue
        found.append(Frame(path, int(match["line"]), match["func"] or ""))
        if len(found) >= MAX_FRAMES:
            break
    return found


def failure_text(output: str, limit: int) -> str:
    """The part of ``output`` that says what failed, within ``limit`` characters.

    unittest: from the first ``FAIL:``/``ERROR:`` header to the ``Ran N tests`` rule;
    pytest: its ``FAILURES``/``ERRORS`` sections and short summary. Otherwise the tail.
    """
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if _UNITTEST_HEAD.match(line)), None)
    if start is None:
        start = next(
            (i for i, line in enumerate(lines) if re.search(r"= (FAILURES|ERRORS) =", line)), None
        )
    if start is None:
        kept = lines
    else:
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i].startswith("Ran ")), len(lines)
        )
        kept = [line for line in lines[start:end] if not _RULE.match(line)]
    text = "\n".join(line.rstrip() for line in kept).strip()
    if len(text) <= limit:
        return text
    head = text[: limit * 2 // 3]
    tail = text[-(limit - len(head) - 40) :]
    return f"{head}\n[... {len(text) - len(head) - len(tail)} characters cut ...]\n{tail}"
