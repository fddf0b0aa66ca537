"""What a repository declares it needs, read as data (TOML, INI, text), never run.

Read from the repository root, in this order:

- a lock: ``pylock.toml`` (PEP 751), else ``uv.lock`` beside a ``pyproject.toml``.
  A lock is the whole environment: its pins and hashes win, nothing is resolved;
- otherwise the declarations, together: ``pyproject.toml`` (``[project] dependencies``,
  the test extras of ``[project.optional-dependencies]``, the test groups of
  ``[dependency-groups]``), ``setup.cfg`` (``[options] install_requires`` and the test
  extras of ``[options.extras_require]``), and every ``requirements*.txt`` at the root
  but documentation ones (``requirements.py``).

Test extras and groups are those named ``test``, ``tests`` or ``testing``; ``dev`` when
there is none of those. ``setup.py`` is never read: what it declares is known only by
running it.
"""

from __future__ import annotations

import configparser
import hashlib
import tomllib
from pathlib import Path
from typing import Any, Literal

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from pydantic import BaseModel, ConfigDict

from sandbox_agent.deps.pins import safe_requirement
from sandbox_agent.deps.requirements import (
    MAX_FILE_BYTES,
    MAX_FILES,
    Line,
    ReadBudget,
    read_requirements,
)
from sandbox_agent.deps.target import PYTHON_VERSION
from sandbox_agent.errors import DependencyError

TEST_NAMES = ("test", "tests", "testing")
FALLBACK_NAMES = ("dev",)
PYLOCK = "pylock.toml"
UV_LOCK = "uv.lock"
PYPROJECT = "pyproject.toml"
SETUP_CFG = "setup.cfg"
MAX_GROUP_DEPTH = 16


class Lock(BaseModel):
    """A lock file that is the whole environment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["pylock.toml", "uv.lock"]
    text_sha256: str
    extras: tuple[str, ...] = ()
    """uv.lock: the project's test extras to export."""
    groups: tuple[str, ...] = ()
    """uv.lock: the project's test dependency groups to export."""
    project: str | None = None
    """uv.lock: the project's own (PEP 503) name, its root package in the lock."""


class Declaration(BaseModel):
    """Everything the environment is made from; its ``key()`` names the resolution."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requirements: tuple[str, ...] = ()
    """PEP 508 requirements by name, sorted, unique."""
    constraints: tuple[str, ...] = ()
    pinned_hashes: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    """``(name, where, sha256s)`` of hashed requirement lines: the resolution must pick
    one of these files for that package."""
    lock: Lock | None = None
    sources: tuple[str, ...] = ()
    """The files read, relative to the repository."""

    @property
    def empty(self) -> bool:
        return self.lock is None and not self.requirements

    def key(self) -> str:
        """sha256 of the declaration's content (not of its files' spelling)."""
        text = self.model_dump_json(exclude={"sources"})
        return hashlib.sha256(text.encode()).hexdigest()


def _error(message: str) -> DependencyError:
    return DependencyError("declaration", message)


def _read_text(path: Path) -> str | None:
    if path.is_symlink() or not path.is_file():
        return None
    if path.stat().st_size > MAX_FILE_BYTES:
        raise _error(f"{path.name} is larger than {MAX_FILE_BYTES} bytes")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise _error(f"{path.name} is not UTF-8 text") from None


def _toml(path: Path) -> dict[str, Any] | None:
    text = _read_text(path)
    if text is None:
        return None
    try:
        return tomllib.loads(text)
    except (ValueError, RecursionError) as error:  # TOMLDecodeError, and digit limits
        raise _error(f"{path.name} is not valid TOML: {str(error)[:200]}") from None


def _chosen(names: Any) -> tuple[str, ...]:
    """The test extras or groups among ``names``: ``TEST_NAMES``, else ``FALLBACK_NAMES``."""
    if not isinstance(names, dict):
        return ()
    for wanted in (TEST_NAMES, FALLBACK_NAMES):
        found = tuple(name for name in names if canonicalize_name(str(name)) in wanted)
        if found:
            return found
    return ()


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _error(f"{where} must be a list of requirement strings")
    return list(value)


class _Collector:
    """Requirements gathered across files; the project's own name expands to its extras."""

    def __init__(
        self, project: str | None, extras: dict[str, list[str]], budget: ReadBudget
    ) -> None:
        self.project = project
        self.extras = extras
        self.budget = budget
        self.requirements: set[str] = set()
        self.seen_extras: set[str] = set()

    def add(self, text: str, where: str) -> None:
        """Add one requirement; the project's own name queues its extras (a work list,
        not recursion: a chain of self-extras is as long as the file allows, R4)."""
        pending = [(text, where)]
        while pending:
            text, where = pending.pop()
            self.budget.charge(where, lines=1)
            try:
                requirement = Requirement(text)
            except (InvalidRequirement, ValueError, RecursionError) as error:
                first = str(error).splitlines()[0] if str(error) else type(error).__name__
                raise _error(f"{where}: not a requirement: {first}") from None
            if requirement.url:
                raise _error(f"{where}: '{text}' is a direct URL: only packages by name")
            if self.project is not None and canonicalize_name(requirement.name) == self.project:
                pending.extend(self._extras(requirement.extras, where))
                continue
            self.requirements.add(safe_requirement(requirement, where))

    def add_extras(self, names: set[str] | tuple[str, ...], where: str) -> None:
        for text, place in self._extras(names, where):
            self.add(text, place)

    def _extras(self, names: set[str] | tuple[str, ...], where: str) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        for name in sorted(names):
            if name in self.seen_extras or name not in self.extras:
                continue
            self.seen_extras.add(name)
            found.extend((text, f"{where} (extra '{name}')") for text in self.extras[name])
        return found


def _groups(table: Any, names: tuple[str, ...], collector: _Collector) -> None:
    """Expand the chosen groups, each group once, with a real loop check (SR-12 D3)."""
    expanded: set[str] = set()

    def include(name: str, stack: tuple[str, ...]) -> None:
        where = f"pyproject.toml [dependency-groups] {name}"
        if name in stack:
            raise _error(f"{where}: an include-group loop ({' -> '.join((*stack, name))})")
        if len(stack) > MAX_GROUP_DEPTH:
            raise _error(f"{where}: include-group nests deeper than {MAX_GROUP_DEPTH}")
        if name in expanded:
            return
        expanded.add(name)
        entries = table.get(name)
        if not isinstance(entries, list):
            raise _error(f"pyproject.toml: dependency group '{name}' is missing or not a list")
        for item in entries:
            if isinstance(item, str):
                collector.add(item, where)
            elif isinstance(item, dict) and set(item) == {"include-group"}:
                collector.budget.charge(where, includes=1)
                include(str(item["include-group"]), (*stack, name))
            else:
                raise _error(f"pyproject.toml: dependency group '{name}' has an unknown entry")

    if not isinstance(table, dict):
        raise _error("pyproject.toml: [dependency-groups] must be a table")
    for name in names:
        include(name, ())


def _check_python(project: dict[str, Any]) -> None:
    wanted = project.get("requires-python")
    if not isinstance(wanted, str):
        return
    try:
        allowed = SpecifierSet(wanted)
        excluded = PYTHON_VERSION not in allowed
    except (InvalidSpecifier, ValueError):  # and versions past Python's digit limit
        raise _error(
            f"pyproject.toml: requires-python {wanted[:80]!r} is not a specifier"
        ) from None
    if excluded:
        raise _error(
            f"pyproject.toml: requires-python '{wanted}' excludes the sandbox's Python "
            f"{PYTHON_VERSION}"
        )


def _setup_cfg(repo: Path, collector: _Collector) -> bool:
    text = _read_text(repo / SETUP_CFG)
    if text is None:
        return False
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error as error:
        raise _error(f"setup.cfg is not valid: {str(error).splitlines()[0][:200]}") from None

    def lines(value: str) -> list[str]:
        return [line.strip() for line in value.splitlines() if line.strip() and line[:1] != "#"]

    found = False
    if parser.has_option("options", "install_requires"):
        found = True
        for text_line in lines(parser.get("options", "install_requires")):
            collector.add(text_line, "setup.cfg [options] install_requires")
    if parser.has_section("options.extras_require"):
        extras = dict(parser.items("options.extras_require"))
        for name in _chosen(extras):
            found = True
            for text_line in lines(extras[name]):
                collector.add(text_line, f"setup.cfg [options.extras_require] {name}")
    return found


def requirement_files(repo: Path) -> list[str]:
    """``requirements*.txt`` at the root, documentation ones left out, sorted.

    Raises:
        DependencyError: ``declaration``: more of them than ``MAX_FILES``.
    """
    names = sorted(
        path.name
        for path in repo.glob("requirements*.txt")
        if "doc" not in path.name.lower() and path.is_file() and not path.is_symlink()
    )
    if len(names) > MAX_FILES:
        raise _error(f"more than {MAX_FILES} requirements*.txt files at the root")
    return names


def read_declaration(repo: Path) -> Declaration:
    """What ``repo`` declares (the module docstring says where it looks).

    Raises:
        DependencyError: ``declaration``: a file that cannot be read as declared, a
            requirement that is not a package by name, a ``requires-python`` that
            excludes the sandbox's Python.
    """
    pyproject = _toml(repo / PYPROJECT)
    project = pyproject.get("project") if isinstance(pyproject, dict) else None
    project = project if isinstance(project, dict) else {}
    _check_python(project)
    lock = _lock(repo, pyproject or {})
    if lock is not None:
        return Declaration(lock=lock, sources=(lock.kind,))
    name = canonicalize_name(project["name"]) if isinstance(project.get("name"), str) else None
    optional = project.get("optional-dependencies") or {}
    if not isinstance(optional, dict):
        raise _error("pyproject.toml: [project.optional-dependencies] must be a table")
    extras = {str(k): _strings(v, f"pyproject.toml extra '{k}'") for k, v in optional.items()}
    budget = ReadBudget()
    collector = _Collector(name, extras, budget)
    sources: list[str] = []
    dynamic = project.get("dynamic") or []
    if pyproject is not None:
        sources.append(PYPROJECT)
        if "dependencies" not in dynamic:
            for text in _strings(project.get("dependencies", []), "pyproject.toml dependencies"):
                collector.add(text, "pyproject.toml [project] dependencies")
        collector.add_extras(_chosen(optional), "pyproject.toml")
        table = pyproject.get("dependency-groups") or {}
        _groups(table, _chosen(table), collector)
    if _setup_cfg(repo, collector):
        sources.append(SETUP_CFG)
    constraints: set[str] = set()
    hashed: list[tuple[str, str, tuple[str, ...]]] = []
    for file_name in requirement_files(repo):
        parsed = read_requirements(repo, file_name, budget)
        sources.extend(f for f in parsed.files if f not in sources)
        for line in parsed.requirements:
            collector.add(line.requirement, line.where)
            if line.hashes:
                hashed.append(_hashed(line))
        constraints.update(line.requirement for line in parsed.constraints)
        budget.charge(file_name, lines=len(parsed.constraints))
        collector.add_extras(tuple(e for e in parsed.self_extras if e), file_name)
    return Declaration(
        requirements=tuple(sorted(collector.requirements)),
        constraints=tuple(sorted(constraints)),
        pinned_hashes=tuple(sorted(hashed)),
        sources=tuple(sources),
    )


def _hashed(line: Line) -> tuple[str, str, tuple[str, ...]]:
    return (canonicalize_name(Requirement(line.requirement).name), line.where, line.hashes)


def _lock(repo: Path, pyproject: dict[str, Any]) -> Lock | None:
    for kind in (PYLOCK, UV_LOCK):
        text = _read_text(repo / kind)
        if text is None:
            continue
        digest = hashlib.sha256(text.encode()).hexdigest()
        if kind == PYLOCK:
            return Lock(kind="pylock.toml", text_sha256=digest)
        if not pyproject:
            raise _error("uv.lock without a pyproject.toml beside it cannot be read")
        project = pyproject.get("project") or {}
        optional = project.get("optional-dependencies") if isinstance(project, dict) else None
        name = project.get("name") if isinstance(project, dict) else None
        return Lock(
            kind="uv.lock",
            text_sha256=digest,
            project=str(canonicalize_name(name)) if isinstance(name, str) else None,
            extras=_chosen(optional or {}),
            groups=_chosen(pyproject.get("dependency-groups") or {}),
        )
    return None
