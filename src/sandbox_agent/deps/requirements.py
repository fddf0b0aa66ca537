"""``requirements*.txt``, read as data: packages by name from the index, nothing else.

pip's format allows much that would make the host act on the repository's behalf:
``-e .`` and local paths (a build, which runs code), direct URLs and VCS links (any
host), ``--index-url`` (another index). Here a line is a PEP 508 requirement by name,
optionally with ``--hash`` options; ``-r``/``-c`` include other files of the
repository; ``.``, ``-e .`` and ``.[extras]`` name the repository itself (already on
the tests' path; its extras are added). Anything else is a one-line error naming the
file and line.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from packaging.requirements import InvalidRequirement, Requirement

from sandbox_agent.errors import DependencyError

MAX_FILE_BYTES = 1024 * 1024
MAX_INCLUDE_DEPTH = 8
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


def read_requirements(repo: Path, name: str) -> Parsed:
    """Read ``repo/name`` and every file it includes.

    Raises:
        DependencyError: ``declaration``: an unsupported line, a bad include, a loop.
    """
    parsed = Parsed([], [], set(), [])
    _read(repo, name, parsed, into="requirement", stack=())
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


def _read(repo: Path, name: str, parsed: Parsed, *, into: str, stack: tuple[str, ...]) -> None:
    where = stack[-1] if stack else name
    if name in stack or len(stack) > MAX_INCLUDE_DEPTH:
        raise _error(where, f"'{name}' includes itself or nests too deep")
    text = _load(repo, name, where)
    parsed.files.append(name)
    folder = str(Path(name).parent)
    for number, line in logical_lines(text):
        here = f"{name}:{number}"
        words = line.split()
        option, _, attached = words[0].partition("=")
        if option in _INCLUDE_OPTIONS or option in _CONSTRAINT_OPTIONS:
            target = attached or (words[1] if len(words) > 1 else "")
            if not target or "://" in target or target.startswith("/"):
                raise _error(here, f"'{line}': include a file of the repository by relative path")
            kind = "constraint" if option in _CONSTRAINT_OPTIONS else into
            child = str(Path(folder) / target) if folder != "." else target
            _read(repo, child, parsed, into=kind, stack=(*stack, here))
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
            if algorithm != "sha256" or len(digest) != 64:
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
    return Line(str(requirement), tuple(hashes), where)
