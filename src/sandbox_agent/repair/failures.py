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
MAX_MISSING = 5
_PYTHON_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
_PYTEST_FRAME = re.compile(r"^(?P<path>[^\s:]+\.py):(?P<line>\d+):(?: in (?P<func>\S+)| \w+)?\s*$")
_UNITTEST_HEAD = re.compile(r"^(?:FAIL|ERROR): ")
_RULE = re.compile(r"^(?:=|-|_){20,}")
_TRACEBACK_START = re.compile(
    r"^(?:Traceback \(most recent call last\):|(?:FAIL|ERROR): |_{3,} .+ _{3,}$)"
)
"""A line that begins a new traceback: Python's own, unittest's failure header, a pytest
failure section's title."""


class Frame(NamedTuple):
    """One traceback frame inside the repository."""

    path: str
    """Relative to the repository root, ``/``-separated."""
    line: int
    function: str
    traceback: int = 0
    """Which traceback of the output it is in (0 the first): a failure's frames are printed
    outermost first, each failure and each chained exception its own traceback."""


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
    traceback, fresh = 0, False
    for line in output.splitlines():
        if _TRACEBACK_START.match(line):
            fresh = True
            continue
        match = _PYTHON_FRAME.match(line) or _PYTEST_FRAME.match(line)
        if match is None:
            continue
        path = repo_path(match["path"])
        if path is None:
            continue
        if fresh and found:
            traceback += 1
        fresh = False
        found.append(Frame(path, int(match["line"]), match["func"] or "", traceback))
        if len(found) >= MAX_FRAMES:
            break
    return found


_NO_ATTRIBUTE = re.compile(
    r"AttributeError: '(?P<owner>[A-Za-z_][A-Za-z0-9_]*)' object has no attribute "
    r"'(?P<attribute>[A-Za-z_][A-Za-z0-9_]*)'"
)


def missing_attributes(output: str) -> list[tuple[str, str]]:
    """``(class, attribute)`` of each ``AttributeError: 'C' object has no attribute 'a'``
    in ``output``, first seen first: the code that should have set it is a suspect."""
    found = ((m["owner"], m["attribute"]) for m in _NO_ATTRIBUTE.finditer(output))
    return list(dict.fromkeys(found))[:MAX_MISSING]


_COMPILE_AT = re.compile(r'^(?:E\s+)?\s*File "(?P<path>[^"]+)", line (?P<line>\d+)\s*$')
_COMPILE_ERROR = re.compile(r"^(?:E\s+)?(?P<kind>SyntaxError|IndentationError|TabError): ")


def syntax_errors(output: str) -> list[tuple[str, int, str]]:
    """``(path, line, kind)`` of each repository module the run could not compile, first
    seen first: Python names such a module in a ``File "...", line N`` line of its own
    (no function: nothing ran there), followed by the error."""
    found: list[tuple[str, int, str]] = []
    pending: tuple[str, int] | None = None
    for line in output.splitlines():
        if located := _COMPILE_AT.match(line):
            pending = (located["path"], int(located["line"]))
        elif (error := _COMPILE_ERROR.match(line.strip())) and pending is not None:
            path = repo_path(pending[0])
            if path is not None:
                found.append((path, pending[1], error["kind"]))
            pending = None
    return list(dict.fromkeys(found))[:MAX_MISSING]


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
