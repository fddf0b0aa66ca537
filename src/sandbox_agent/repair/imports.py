"""What a test module's imports name, followed to where it is defined (issue 29).

A real project's test imports a class from its package (``from shop import Cart``), and
the package's ``__init__`` re-exports it (``from .cart import Cart``). A name that is
imported rather than defined is followed, through ``from X import name`` (relative
levels resolved against the importing module's package, ``from X import *`` too), to the
module that defines it: at most ``MAX_REEXPORT_DEPTH`` hops, through editable modules
only (a protected module is never followed nor offered). ``import pkg.mod as m`` offers
the names the test reads through ``m``.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Callable, Iterator
from typing import NamedTuple

MAX_REEXPORT_DEPTH = 3
"""Hops from the module a test imports to the module that defines the name."""

Read = Callable[[str], str | None]
"""The text of a repository file, or None (missing, unreadable, not text)."""
Protected = Callable[[str], bool]
"""Whether the policy forbids editing a path."""
Defined = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


class Definition(NamedTuple):
    """A module-level function or class, where it is written."""

    path: str
    name: str
    node: Defined


class Imported(NamedTuple):
    """A name a test module uses, and what it is."""

    local: str
    """How the test module refers to it: ``Cart``, or ``m.total`` through a module."""
    definition: Definition


UNPARSABLE = (ValueError, RecursionError, MemoryError, UnicodeError)
"""What ``ast.parse`` raises besides ``SyntaxError`` on text that is not a module: a NUL,
nesting past its stack, a lone surrogate (SR-13 F2: one reply crashed the controller)."""


def parse(text: str) -> ast.Module | None:
    """``text`` as a module, or None when it is not one (never an exception)."""
    try:
        return ast.parse(text)
    except (SyntaxError, *UNPARSABLE):
        return None


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """A module's top-level statements, those under a top-level ``if`` or ``try`` too
    (``try: from ._speedups import f`` / ``except ImportError: from ._py import f``)."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from statements(node.body + node.orelse)
        elif isinstance(node, ast.Try | ast.TryStar):
            handlers = [stmt for handler in node.handlers for stmt in handler.body]
            yield from statements(node.body + handlers + node.orelse + node.finalbody)


def dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def _first(read: Read, candidates: list[str]) -> str | None:
    return next((path for path in candidates if read(path) is not None), None)


def module_file(module: str | None, level: int, importer: str, read: Read) -> str | None:
    """The repository file of ``from <level dots><module> import ...`` in ``importer``:
    an absolute module from the root (or ``src/``), a relative one from the importer's
    package; None when there is no such file."""
    parts = module.replace(".", "/") if module else ""
    if level == 0:
        if not parts:
            return None
        return _first(
            read,
            [f"{root}{parts}{end}" for root in ("", "src/") for end in (".py", "/__init__.py")],
        )
    base = posixpath.dirname(importer)
    for _ in range(level - 1):
        if not base:
            return None
        base = posixpath.dirname(base)
    stem = posixpath.join(base, parts) if parts else base
    if not parts:
        return _first(read, [posixpath.join(base, "__init__.py")])
    return _first(read, [f"{stem}.py", f"{stem}/__init__.py"])


class Resolver:
    """Follows names through re-exports; parses each module once."""

    def __init__(self, read: Read, protected: Protected) -> None:
        self.read = read
        self.protected = protected
        self._trees: dict[str, ast.Module | None] = {}

    def tree(self, path: str) -> ast.Module | None:
        if path not in self._trees:
            text = self.read(path)
            self._trees[path] = None if text is None else parse(text)
        return self._trees[path]

    def editable(self, path: str | None) -> str | None:
        return path if path is not None and not self.protected(path) else None

    def find(
        self, path: str, name: str, hops: int = 0, seen: frozenset[str] = frozenset()
    ) -> Definition | None:
        """Where ``name``, as module ``path`` has it, is defined; None when it is not a
        function or class of an editable module within ``MAX_REEXPORT_DEPTH`` hops."""
        tree = self.tree(path) if path not in seen else None
        if tree is None:
            return None
        seen = seen | {path}
        for node in statements(tree.body):
            if isinstance(node, Defined) and node.name == name:
                return Definition(path, name, node)
        if hops >= MAX_REEXPORT_DEPTH:
            return None
        stars: list[str] = []
        for node in statements(tree.body):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = self.editable(module_file(node.module, node.level, path, self.read))
            if source is None:
                continue
            for alias in node.names:
                if alias.name == "*":
                    stars.append(source)
                elif (alias.asname or alias.name) == name:
                    found = self.find(source, alias.name, hops + 1, seen)
                    if found is not None:
                        return found
        for source in stars:
            if (found := self.find(source, name, hops + 1, seen)) is not None:
                return found
        return None


def imported(tree: ast.Module, test_path: str, resolver: Resolver) -> list[Imported]:
    """The functions and classes of editable modules that a test module imports, in the
    order it imports them (``from m import f``; ``import m`` and ``m.f`` in its code)."""
    found: list[Imported] = []
    modules: dict[str, str] = {}
    read = resolver.read
    for node in statements(tree.body):
        if isinstance(node, ast.ImportFrom):
            source = resolver.editable(module_file(node.module, node.level, test_path, read))
            for alias in node.names:
                local = alias.asname or alias.name
                definition = None if source is None else resolver.find(source, alias.name)
                if definition is not None:
                    found.append(Imported(local, definition))
                    continue
                prefix = f"{node.module}." if node.module else ""
                submodule = module_file(prefix + alias.name, node.level, test_path, read)
                if alias.name != "*" and resolver.editable(submodule) is not None:
                    modules[local] = str(submodule)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                path = resolver.editable(module_file(alias.name, 0, test_path, read))
                if path is not None:
                    modules[alias.asname or alias.name] = path
    uses = [node for node in ast.walk(tree) if isinstance(node, ast.Attribute)] if modules else []
    for use in sorted(uses, key=lambda node: (node.lineno, node.col_offset)):
        if (owner := dotted(use.value)) in modules:
            definition = resolver.find(modules[owner], use.attr)
            if definition is not None:
                found.append(Imported(f"{owner}.{use.attr}", definition))
    return list({(i.local, i.definition.path, i.definition.name): i for i in found}.values())
