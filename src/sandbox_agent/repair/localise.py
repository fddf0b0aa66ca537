"""From a failing run to what the model is shown: the functions to fix, the tests to read.

1. Traceback frames in files the policy lets the model edit name their enclosing
   function (by ``ast``): those are the targets, the innermost first (where the failure
   was raised; every failing test's innermost before any test's next one out). An
   ``AttributeError: 'C' object has no attribute 'a'`` adds, second, where ``C`` sets
   ``self.a`` (else its ``__init__``, own or inherited: the statement that set it may be
   the bug). Room left goes to what the targets call in their own file.
2. Frames in protected files (tests) name the failing test's function: shown read-only.
3. When no frame reaches editable code (an ``assert f(x) == y`` fails in the test
   itself), what the failing tests' modules import from editable modules is: followed
   through re-exports to where it is defined (``repair.imports``), a function itself, a
   class its methods the failing test points at (``repair.members``); what the failing
   test reads comes first.
4. When there is no frame at all (the tests timed out, or died), the test modules the
   runner would load stand in for the failing ones.

Everything is bounded: a few targets, a few tests, a character budget for each.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from sandbox_agent.repair import failures, spectrum
from sandbox_agent.repair.failures import Frame
from sandbox_agent.repair.imports import Protected, Read, Resolver, imported, parse
from sandbox_agent.repair.members import SETUPS, mentions, methods, ranked
from sandbox_agent.repair.spectrum import Suspect

MAX_TARGETS = 3
MAX_TESTS = 3
MAX_SITE_CHARS = 6000
"""A function longer than this is not shown whole (nor offered as a target)."""
UNUSED_FUNCTION = 3
"""The rank of an imported function the failing test does not read (``repair.members``
ranks methods 0-2, and 4 for a class the test points at no method of)."""


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
        owner, dot, _ = self.qualname.rpartition(".")
        where = f", in class {owner}" if dot else ""
        return f"{self.path}, lines {self.start}-{self.end}{where}"


class Context(NamedTuple):
    """What the repair prompt shows: the targets, editable, and the tests, read-only."""

    targets: tuple[Site, ...]
    tests: tuple[Site, ...]
    searched: tuple[str, ...] = ()
    """The test modules whose imports were followed (no frame reached editable code)."""


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


def _first(most: int, sites: list[Site]) -> tuple[Site, ...]:
    """The first ``most`` distinct functions of ``sites``, in order."""
    unique: dict[tuple[str, str], Site] = {}
    for site in sites:
        unique.setdefault((site.path, site.qualname), site)
    return tuple(unique.values())[:most]


def innermost_first(frames: list[Frame]) -> list[Frame]:
    """Frames by depth from where each traceback ended, then by traceback: every failure's
    innermost frame (where it was raised) before any failure's next one out."""
    chains: dict[int, list[Frame]] = {}
    for frame in frames:
        chains.setdefault(frame.traceback, []).append(frame)
    by_depth = [
        (depth, order, frame)
        for order, chain in enumerate(chains.values())
        for depth, frame in enumerate(reversed(chain))
    ]
    return [frame for _, _, frame in sorted(by_depth, key=lambda item: item[:2])]


def initialisers(
    missing: Sequence[tuple[str, str]], paths: list[str], read: Read, protected: Protected
) -> list[Site]:
    """For each ``(class, attribute)`` an ``AttributeError`` says is missing, where the
    class (found from the failing frames' files) should have set it: the methods of the
    class and its bases that assign ``self.attribute``, else the ``__init__`` it has or
    inherits (the statement that set it may be the one the bug removed)."""
    resolver = Resolver(read, protected)
    sites: list[Site] = []
    for owner, attribute in missing:
        for path in paths:
            found = resolver.find(path, owner)
            if found is None or not isinstance(found.node, ast.ClassDef):
                continue
            every = methods(found, resolver)
            setters = [m for m in every if _assigns(m.node, attribute)]
            setters = setters or [m for m in every if m.name == "__init__"]
            for method in setters:
                site = function_named(method.path, read(method.path) or "", method.qualname)
                if site is not None:
                    sites.append(site)
            break
    return sites


def _assigns(node: ast.AST, attribute: str) -> bool:
    """Whether ``node`` assigns ``self.attribute`` (or ``cls.attribute``)."""
    for found in ast.walk(node):
        if (
            isinstance(found, ast.Attribute)
            and isinstance(found.ctx, ast.Store)
            and found.attr == attribute
            and isinstance(found.value, ast.Name)
            and found.value.id in ("self", "cls")
        ):
            return True
    return False


def callees(site: Site, text: str) -> list[Site]:
    """What ``site`` calls or reads in its own file, in the order it does: methods of its
    class through ``self``/``cls`` (a property read too), the module's functions by name,
    a class's ``__init__`` when it calls the class. The value that made it fail often
    came from one of them."""
    tree = parse(text)
    if tree is None:
        return []
    defs = dict(_defs(tree))
    classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    node = defs.get(site.qualname)
    if node is None:
        return []
    owner, dot, _ = site.qualname.rpartition(".")
    wanted: list[tuple[int, int, str]] = []
    for found in ast.walk(node):
        if (
            dot
            and isinstance(found, ast.Attribute)
            and isinstance(found.value, ast.Name)
            and found.value.id in ("self", "cls")
        ):
            wanted.append((found.lineno, found.col_offset, f"{owner}.{found.attr}"))
        elif isinstance(found, ast.Call) and isinstance(found.func, ast.Name):
            name = found.func.id
            called = f"{name}.__init__" if name in classes else name
            wanted.append((found.lineno, found.col_offset, called))
    sites: list[Site] = []
    for qualname in dict.fromkeys(name for *_, name in sorted(wanted)):
        if qualname == site.qualname or qualname not in defs:
            continue
        found_site = _site(site.path, text, qualname, defs[qualname])
        if found_site is not None:
            sites.append(found_site)
    return sites


def imported_targets(
    test_text: str, read: Read, protected: Protected, test_path: str = ""
) -> list[tuple[str, str]]:
    """``(path, name)`` of the functions and classes a test module imports from editable
    modules, where they are defined (re-exports followed)."""
    tree = parse(test_text)
    if tree is None:
        return []
    found = imported(tree, test_path, Resolver(read, protected))
    return list(dict.fromkeys((i.definition.path, i.definition.name) for i in found))


def _failing_nodes(tree: ast.Module, sites: list[Site]) -> list[ast.AST]:
    """The failing tests' functions in a test module, with their class's set-up; the
    whole module when none failed in it (the tests timed out)."""
    if not sites:
        return [tree]
    defs = dict(_defs(tree))
    wanted = {site.qualname for site in sites}
    for site in sites:
        owner, dot, _ = site.qualname.rpartition(".")
        wanted.update(f"{owner}.{setup}" for setup in SETUPS if dot)
    return [node for name, node in defs.items() if name in wanted]


def _imported_sites(
    paths: tuple[str, ...], tests: list[Site], read: Read, protected: Protected
) -> list[Site]:
    """At most ``MAX_TARGETS`` functions and methods of what the test modules ``paths``
    import, those the failing ``tests`` read first."""
    resolver = Resolver(read, protected)
    picks: dict[tuple[str, str], tuple[int, int]] = {}
    for path in paths:
        tree = resolver.tree(path)
        if tree is None:
            continue
        seen = mentions(_failing_nodes(tree, [site for site in tests if site.path == path]))
        for use in imported(tree, path, resolver):
            found = use.definition
            if isinstance(found.node, ast.ClassDef):
                ranks = [
                    (rank, m.path, m.qualname)
                    for rank, m in ranked(found, use.local, seen, resolver)
                ]
            else:
                rank = 0 if use.local in seen.references else UNUSED_FUNCTION
                ranks = [(rank, found.path, found.name)]
            for rank, where, qualname in ranks:
                key = (where, qualname)
                picks[key] = min(picks.get(key, (rank, len(picks))), (rank, len(picks)))
    sites: list[Site] = []
    for where, qualname in sorted(picks, key=picks.__getitem__):
        site = function_named(where, read(where) or "", qualname)
        if site is not None and len(sites) < MAX_TARGETS:
            sites.append(site)
    return sites


def localise(
    frames: list[Frame],
    read: Read,
    protected: Protected,
    test_files: tuple[str, ...] = (),
    missing: Sequence[tuple[str, str]] = (),
    *,
    suspects: Sequence[Suspect] = (),
) -> Context:
    """The functions to fix and the failing tests to show, from a failing run's frames
    (``test_files``: the test modules, for a run that left none; ``missing``: the
    ``(class, attribute)`` its ``AttributeError``s name, ``failures.missing_attributes``)."""
    tests: dict[tuple[str, str], Site] = {}
    texts: dict[str, str | None] = {}

    def text_of(path: str) -> str | None:
        if path not in texts:
            texts[path] = read(path)
        return texts[path]

    def site_of(frame: Frame) -> Site | None:
        text = text_of(frame.path)
        return None if text is None else function_at(frame.path, text, frame.line)

    for frame in frames:
        if protected(frame.path) and len(tests) < MAX_TESTS and (site := site_of(frame)):
            tests.setdefault((site.path, site.qualname), site)
    editable = innermost_first([frame for frame in frames if not protected(frame.path)])
    raised: dict[tuple[str, str], Site] = {}
    for frame in editable:  # no more than can be shown: each frame parses its file
        if len(raised) < MAX_TARGETS and (site := site_of(frame)):
            raised.setdefault((site.path, site.qualname), site)
    spectral = [site for _, site in _spectral(suspects, list(raised), text_of, protected)]
    if raised:
        paths = list(dict.fromkeys(frame.path for frame in editable))
        first, *further = raised.values()
        setters = initialisers(missing, paths, text_of, protected)
        # where it was raised, then where a missing attribute should have been set, then
        # the frames further out; then the spectrum's suspects, then what the targets call,
        # while there is room
        targets = _first(MAX_TARGETS, [first, *setters, *further, *spectral])
        called = [callee for site in targets for callee in callees(site, text_of(site.path) or "")]
        return Context(_first(MAX_TARGETS, [*targets, *called]), tuple(tests.values()))
    failing = [site.path for site in tests.values()] or list(test_files[:MAX_TESTS])
    searched = tuple(dict.fromkeys(failing))
    found = _imported_sites(searched, list(tests.values()), text_of, protected)
    if spectral:  # no frame: the functions the failing tests ran, then what they import
        found = list(_first(MAX_TARGETS, [*spectral, *found]))
    return Context(tuple(found), tuple(tests.values()), searched)


def _spectral(
    suspects: Sequence[Suspect],
    raised: list[tuple[str, str]],
    text_of: Callable[[str], str | None],
    protected: Protected,
) -> list[tuple[float, Site]]:
    """The editable functions the spectrum names, most suspicious first; among equals,
    those the traceback reached first (innermost), then in the spectrum's order."""
    found: list[tuple[float, int, int, Site]] = []
    for index, suspect in enumerate(suspects):
        text = None if protected(suspect.path) else text_of(suspect.path)
        site = None if text is None else function_at(suspect.path, text, suspect.line)
        if site is not None:
            key = (site.path, site.qualname)
            rank = raised.index(key) if key in raised else len(raised)
            found.append((suspect.score, rank, index, site))
    found.sort(key=lambda item: (-item[0], item[1], item[2]))
    return [(score, site) for score, _, _, site in found]


def localise_output(
    output: str,
    files: Iterable[str],
    read: Read,
    protected: Protected,
    *,
    hint: str = "",
) -> Context:
    """``localise`` from a failing run's output: its frames and missing attributes, and
    the spectrum in ``hint`` (the output of a ``--spectrum`` run of the same tree), with
    the repository's protected Python ``files`` as the test modules for a run that left
    no frame (what a run shows the model, and what ``make localise-recall`` measures)."""
    tests = tuple(f for f in files if f.endswith(".py") and protected(f))
    missing = failures.missing_attributes(output)
    suspects = spectrum.suspects(hint) if hint else []
    frames = failures.frames(output)
    return localise(frames, read, protected, tests, missing, suspects=suspects)
