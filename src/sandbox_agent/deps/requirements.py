"""``requirements*.txt``, read as data: packages by name from the index, nothing else.

pip's format allows much that would make the host act on the repository's behalf:
``-e .`` and local paths (a build, which runs code), direct URLs and VCS links (any
host), ``--index-url`` (another index). Here a line is a PEP 508 requirement by name,
optionally with ``--hash`` options; ``-r``/``-c`` include other files of the
repository; ``.``, ``-e .`` and ``.[extras]`` name the repository itself (already on
the tests' path; its extras are added). Anything else is a one-line error naming the
file and line.

The work is bounded whatever the files say (SR-12 D3): each file is read once (an
include of a file already read adds nothing), an include loop is named as one, and a
``ReadBudget`` caps the files, includes, lines and bytes of one whole declaration.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from packaging.requirements import InvalidRequirement, Requirement

from sandbox_agent.deps.pins import SHA256, safe_requirement
from sandbox_agent.errors import DependencyError

MAX_FILE_BYTES = 1024 * 1024
MAX_INCLUDE_DEPTH = 8
MAX_FILES = 64
"""Distinct declaration files one repository's declaration may read."""
MAX_INCLUDES = 256
"""``-r``/``-c`` lines, and ``include-group`` entries, followed in one declaration."""
MAX_TOTAL_LINES = 20_000
"""Requirement lines and group entries in one declaration."""
MAX_TOTAL_BYTES = 4 * 1024 * 1024
_INCLUDE_OPTIONS = {"-r": "requirement", "--requirement": "requirement"}
_CONSTRAINT_OPTIONS = {"-c": "constraint", "--constraint": "constraint"}
_EDITABLE_OPTIONS = ("-e", "--editable")
_SELF = (".", "./")
_ARCHIVES = (".whl", ".tar.gz", ".tgz", ".zip", ".tar.bz2")


class Line(NamedTuple):
    """One requirement line, as written (normalised by ``packaging``)."""

    requirement: str
    hashes: tuple[str, ...]
    """``sha256`` hex digests from ``--hash`` options (a pinned, hashed line)."""
    where: str
    """``file:line``, for messages."""


class Parsed(NamedTuple):
    requirements: list[Line]
    constraints: list[Line]
    self_extras: set[str]
    """Extras of the repository itself (``-e .[test]``); ``"" `` when it is named bare."""
    files: list[str]
    """Every file read, relative to the repository."""


@dataclass
class ReadBudget:
    """What one declaration may cost to read; each ``charge`` raises past its cap."""

    files: int = 0
    includes: int = 0
    lines: int = 0
    bytes: int = 0

    def charge(self, where: str, *, files: int = 0, includes: int = 0, lines: int = 0,
               size: int = 0) -> None:  # fmt: skip
        """Count work done for the declaration.

        Raises:
            DependencyError: ``declaration``: one of the caps is passed.
        """
        self.files += files
        self.includes += includes
        self.lines += lines
        self.bytes += size
        for used, cap, what in (
            (self.files, MAX_FILES, "files"),
            (self.includes, MAX_INCLUDES, "includes"),
            (self.lines, MAX_TOTAL_LINES, "lines"),
            (self.bytes, MAX_TOTAL_BYTES, "bytes"),
        ):
            if used > cap:
                raise _error(where, f"the declarations are over {cap} {what} in all")


def read_requirements(repo: Path, name: str, budget: ReadBudget | None = None) -> Parsed:
    """Read ``repo/name`` and every file it includes, each once.

    Raises:
        DependencyError: ``declaration``: an unsupported line, a bad include, a loop,
            or more than the budget's files, includes, lines or bytes.
    """
    parsed = Parsed([], [], set(), [])
    _read(
        repo, name, parsed, into="requirement", stack=(), where=name, seen=set(),
        budget=budget or ReadBudget(),
    )  # fmt: skip
    return parsed


def _error(where: str, message: str) -> DependencyError:
    return DependencyError("declaration", f"{where}: {message}")


def _load(repo: Path, name: str, where: str) -> str:
    path = repo / name
    resolved = path.resolve()
    if path.is_symlink() or not resolved.is_file() or repo.resolve() not in resolved.parents:
        raise _error(where, f"'{name}' is not a regular file inside the repository")
    if resolved.stat().st_size > MAX_FILE_BYTES:
        raise _error(where, f"'{name}' is larger than {MAX_FILE_BYTES} bytes")
    try:
        return resolved.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise _error(where, f"'{name}' is not UTF-8 text") from None


def logical_lines(text: str) -> list[tuple[int, str]]:
    """Lines with ``\\`` continuations joined and comments removed, numbered from 1."""
    lines: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        if raw.endswith("\\"):
            pending += raw[:-1] + " "
            continue
        line = pending + raw
        pending = ""
        line = _without_comment(line)
        if line:
            lines.append((start, line))
    if pending.strip():
        lines.append((start, pending.strip()))
    return lines


def _without_comment(line: str) -> str:
    """pip's rule: ``#`` at the start or after whitespace begins a comment."""
    for index, char in enumerate(line):
        if char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index].strip()
    return line.strip()


def _read(
    repo: Path,
    name: str,
    parsed: Parsed,
    *,
    into: str,
    stack: tuple[str, ...],
    where: str,
    seen: set[tuple[str, str]],
    budget: ReadBudget,
) -> None:
    if name in stack:
        chain = " -> ".join((*stack, name))
        raise _error(where, f"'{name}' includes itself: an include loop ({chain})")
    if len(stack) > MAX_INCLUDE_DEPTH:
        raise _error(where, f"'{name}' nests includes deeper than {MAX_INCLUDE_DEPTH}")
    if (name, into) in seen:
        return  # read once: a second include of it adds nothing
    seen.add((name, into))
    text = _load(repo, name, where)
    budget.charge(where, files=1, size=len(text))
    if name not in parsed.files:
        parsed.files.append(name)
    folder = str(Path(name).parent)
    for number, line in logical_lines(text):
        here = f"{name}:{number}"
        budget.charge(here, lines=1)
        words = line.split()
        option, _, attached = words[0].partition("=")
        if option in _INCLUDE_OPTIONS or option in _CONSTRAINT_OPTIONS:
            budget.charge(here, includes=1)
            target = attached or (words[1] if len(words) > 1 else "")
            if not target or "://" in target or target.startswith("/"):
                raise _error(here, f"'{line}': include a file of the repository by relative path")
            kind = "constraint" if option in _CONSTRAINT_OPTIONS else into
            child = str(Path(folder) / target) if folder != "." else target
            _read(
                repo, child, parsed, into=kind, stack=(*stack, name), where=here, seen=seen,
                budget=budget,
            )  # fmt: skip
            continue
        if option in _EDITABLE_OPTIONS:
            target = attached or (words[1] if len(words) > 1 else "")
            _self_reference(target, here, parsed)
            continue
        if line.startswith("-"):
            raise _error(
                here,
                f"option '{option}' is not supported (the index is sandbox-agent's "
                "--deps-index-url; only packages by name are installed)",
            )
        if words[0].split("[", 1)[0] in _SELF:
            _self_reference(words[0], here, parsed)
            continue
        parsed_line = _requirement(words, here)
        (parsed.constraints if into == "constraint" else parsed.requirements).append(parsed_line)


def _self_reference(target: str, where: str, parsed: Parsed) -> None:
    base, _, extras = target.partition("[")
    if base not in _SELF:
        raise _error(
            where,
            f"'{target}' is a local path or URL: only the repository itself ('-e .') "
            "and packages by name from the index are supported",
        )
    parsed.self_extras.update(e.strip() for e in extras.rstrip("]").split(",") if e.strip())
    parsed.self_extras.add("")


def _requirement(words: list[str], where: str) -> Line:
    hashes: list[str] = []
    spec: list[str] = []
    for word in words:
        if word.startswith("--hash="):
            algorithm, _, digest = word.removeprefix("--hash=").partition(":")
            if algorithm != "sha256" or not SHA256.match(digest.lower()):
                raise _error(where, f"'{word}': only sha256 hashes are supported")
            hashes.append(digest.lower())
        elif word.startswith("-"):
            raise _error(where, f"option '{word}' is not supported on a requirement line")
        else:
            spec.append(word)
    text = " ".join(spec)
    first = spec[0] if spec else ""
    if "/" in first.split(";", 1)[0] or first.endswith(_ARCHIVES):
        raise _error(where, f"'{first}' is a local path: only packages by name are supported")
    try:
        requirement = Requirement(text)
    except InvalidRequirement as error:
        raise _error(where, f"not a requirement: {str(error).splitlines()[0]}") from None
    if requirement.url:
        raise _error(
            where,
            f"'{requirement.name} @ {requirement.url}' is a direct URL: only packages by "
            "name from the index are supported",
        )
    return Line(safe_requirement(requirement, where), tuple(hashes), where)
