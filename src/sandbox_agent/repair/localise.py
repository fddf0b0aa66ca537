"""From a failing run to what the model is shown: the functions to fix, the tests to read.

1. Traceback frames in files the policy lets the model edit name their enclosing
   function (by ``ast``): those are the targets.
2. Frames in protected files (tests) name the failing test's function: shown read-only.
3. When no frame reaches editable code (an ``assert f(x) == y`` fails in the test
   itself), the names the failing tests' modules import from editable modules are the
   targets (``from solution import f``).
4. When there is no frame at all (the tests timed out, or died), the test modules the
   runner would load stand in for the failing ones.

Everything is bounded: a few targets, a few tests, a character budget for each.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import NamedTuple

from sandbox_agent.repair.failures import Frame

MAX_TARGETS = 3
MAX_TESTS = 3
MAX_SITE_CHARS = 6000
"""A function longer than this is not shown whole (nor offered as a target)."""

Read = Callable[[str], str | None]
"""The text of a repository file, or None (missing, unreadable, not text)."""
Protected = Callable[[str], bool]
"""Whether the policy forbids editing a path."""


class Site(NamedTuple):
    """One function (or method) of one file, as it stands."""

    path: str
    name: str
    """The function's own name (a method's too)."""
    qualname: str
    """``Class.method`` for a method."""
    start: int
    """First line (1-based), its decorators included."""
    end: int
    """Last line (1-based, inclusive)."""
    source: str
    """Lines ``start..end`` of the file, each ending in a newline."""

    def header(self) -> str:
        return f"{self.path}, lines {self.start}-{self.end}"


class Context(NamedTuple):
    """What the repair prompt shows: the targets, editable, and the tests, read-only."""

    targets: tuple[Site, ...]
    tests: tuple[Site, ...]


def _defs(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Module-level functions and methods of module-level classes, with qualified names."""
    found: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append((node.name, node))
        elif isinstance(node, ast.ClassDef):
            found.extend(
                (f"{node.name}.{item.name}", item)
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            )
    return found


def _site(path: str, text: str, qualname: str, node: ast.AST) -> Site | None:
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)  # noqa: S101 - _defs
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    end = node.end_lineno or node.lineno
    lines = text.splitlines(keepends=True)[start - 1 : end]
    source = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    if len(source) > MAX_SITE_CHARS:
        return None
    return Site(path, node.name, qualname, start, end, source)


def parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def function_at(path: str, text: str, line: int) -> Site | None:
    """The module-level function or method whose lines hold ``line``, or None."""
    tree = parse(text)
    if tree is None:
        return None
    for qualname, node in _defs(tree):
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        if start <= line <= (node.end_lineno or node.lineno):
            return _site(path, text, qualname, node)
    return None


def function_named(path: str, text: str, qualname: str) -> Site | None:
    """The module-level function or method called ``qualname`` in ``text``, or None."""
    tree = parse(text)
    if tree is None:
        return None
    for name, node in _defs(tree):
        if name == qualname:
            return _site(path, text, name, node)
    return None


def _module_path(module: str, read: Read) -> str | None:
    base = module.replace(".", "/")
    for candidate in (f"{base}.py", f"{base}/__init__.py"):
        if read(candidate) is not None:
            return candidate
    return None


def imported_targets(test_text: str, read: Read, protected: Protected) -> list[tuple[str, str]]:
    """``(path, name)`` of functions a test module imports from editable modules."""
    tree = parse(test_text)
    if tree is None:
        return []
    found: list[tuple[str, str]] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            path = _module_path(node.module, read)
            if path is not None and not protected(path):
                found.extend((path, alias.name) for alias in node.names if alias.name != "*")
    return found


def localise(
    frames: list[Frame], read: Read, protected: Protected, test_files: tuple[str, ...] = ()
) -> Context:
    """The functions to fix and the failing tests to show, from a failing run's frames
    (``test_files``: the test modules, for a run that left none)."""
    targets: dict[tuple[str, str], Site] = {}
    tests: dict[tuple[str, str], Site] = {}
    texts: dict[str, str | None] = {}

    def text_of(path: str) -> str | None:
        if path not in texts:
            texts[path] = read(path)
        return texts[path]

    for frame in frames:
        text = text_of(frame.path)
        if text is None:
            continue
        site = function_at(frame.path, text, frame.line)
        if site is None:
            continue
        into = tests if protected(frame.path) else targets
        limit = MAX_TESTS if into is tests else MAX_TARGETS
        if len(into) < limit:
            into.setdefault((site.path, site.qualname), site)
    if not targets:
        failing = [site.path for site in tests.values()] or list(test_files[:MAX_TESTS])
        for path in dict.fromkeys(failing):
            text = text_of(path) or ""
            for target_path, name in imported_targets(text, text_of, protected):
                module = text_of(target_path) or ""
                site = function_named(target_path, module, name)
                if site is not None and len(targets) < MAX_TARGETS:
                    targets.setdefault((site.path, site.qualname), site)
    return Context(tuple(targets.values()), tuple(tests.values()))
