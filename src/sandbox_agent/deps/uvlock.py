"""A ``uv.lock``, read as TOML by us: the repository's own lock and nothing else decides.

``uv export`` walked up from its working folder to find a workspace root, so a
``pyproject.toml`` and ``uv.lock`` planted above it in a shared ``/tmp`` became the lock
(SR-12 D2). Here the lock is data: from the root project (``source = { virtual = "." }``
or ``{ editable = "." }``) its dependencies, its test extras and its test groups are
followed along the lock's own edges, each edge's marker evaluated for the runner's
interpreter and platform, so every package installed is one of the lock's packages, at
the lock's version with the lock's hashes. A package from anywhere but a registry (a
path, a URL, git, another workspace member) is refused, as is a lock we do not know.
"""

from __future__ import annotations

import tomllib
from collections import deque
from pathlib import Path
from typing import Any

from packaging.markers import InvalidMarker, Marker, UndefinedEnvironmentName
from packaging.utils import canonicalize_name

from sandbox_agent.deps.declared import UV_LOCK, Lock
from sandbox_agent.deps.pins import Pin, make_pin
from sandbox_agent.deps.requirements import MAX_FILE_BYTES
from sandbox_agent.deps.target import RUNNER_OWN_PACKAGES, Target, marker_environment
from sandbox_agent.errors import DependencyError

LOCK_VERSIONS = (1,)
"""``version`` of the uv.lock formats read here."""
MAX_PACKAGES = 5000
MAX_EDGES = 50_000
_ROOT = (".", "./", "")


def _error(message: str) -> DependencyError:
    return DependencyError("declaration", f"uv.lock: {message}")


def _table(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _error(f"{what} is not a table")
    return value


def _edges(value: Any, what: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(edge, dict) for edge in value):
        raise _error(f"{what} is not a list of tables")
    return value


class _Lock:
    """The lock's packages by name, and the way along its edges."""

    def __init__(self, data: dict[str, Any], target: Target, lock: Lock) -> None:
        if data.get("version") not in LOCK_VERSIONS:
            raise _error(f"lock version {data.get('version')!r} is not one sandbox-agent reads")
        packages = data.get("package")
        if not isinstance(packages, list) or not all(isinstance(p, dict) for p in packages):
            raise _error("no [[package]] tables")
        if len(packages) > MAX_PACKAGES:
            raise _error(f"more than {MAX_PACKAGES} packages")
        self.by_name: dict[str, list[dict[str, Any]]] = {}
        for package in packages:
            name = package.get("name")
            if not isinstance(name, str):
                raise _error("a package without a name")
            self.by_name.setdefault(str(canonicalize_name(name)), []).append(package)
        # A lock's markers may ask which extras and groups are wanted (PEP 751's
        # "lock_file" context): the ones this run exports.
        self.environment: dict[str, Any] = {
            **marker_environment(target),
            "extras": frozenset(lock.extras),
            "dependency_groups": frozenset(lock.groups),
        }
        self.visits = 0

    def root(self, project: str | None) -> dict[str, Any]:
        roots = [p for group in self.by_name.values() for p in group if _is_root(p)]
        if project is not None:
            roots = [p for p in roots if canonicalize_name(str(p["name"])) == project] or roots
        if len(roots) != 1:
            raise _error(f"{len(roots)} root projects (source '.'); one is read")
        return roots[0]

    def applies(self, edge: dict[str, Any], where: str) -> bool:
        self.visits += 1
        if self.visits > MAX_EDGES:
            raise _error(f"more than {MAX_EDGES} dependency edges")
        marker = edge.get("marker")
        if marker is None:
            return True
        if not isinstance(marker, str):
            raise _error(f"{where}: a marker that is not a string")
        try:
            return Marker(marker).evaluate(self.environment, context="lock_file")
        except (InvalidMarker, UndefinedEnvironmentName, ValueError, TypeError, RecursionError):
            raise _error(f"{where}: marker {marker[:80]!r} cannot be evaluated here") from None

    def follow(self, edge: dict[str, Any], where: str) -> dict[str, Any]:
        name = edge.get("name")
        if not isinstance(name, str):
            raise _error(f"{where}: a dependency without a name")
        candidates = self.by_name.get(str(canonicalize_name(name)), [])
        if "version" in edge:
            candidates = [p for p in candidates if p.get("version") == edge["version"]]
        if "source" in edge:
            candidates = [p for p in candidates if p.get("source") == edge["source"]]
        if len(candidates) != 1:
            raise _error(
                f"{where}: '{name}' names {len(candidates)} of the lock's packages; one is read"
            )
        return candidates[0]


def _source(package: dict[str, Any]) -> dict[str, Any]:
    source = package.get("source")
    return source if isinstance(source, dict) else {}


def _check_requires_python(wanted: Any) -> None:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    from sandbox_agent.deps.target import PYTHON_VERSION

    if not isinstance(wanted, str):
        return
    try:
        excluded = PYTHON_VERSION not in SpecifierSet(wanted)
    except (InvalidSpecifier, ValueError):
        raise _error(f"requires-python {wanted[:80]!r} is not a specifier") from None
    if excluded:
        raise _error(f"requires-python {wanted!r} excludes the sandbox's Python {PYTHON_VERSION}")


def _is_root(package: dict[str, Any]) -> bool:
    source = _source(package)
    return any(source.get(kind) in _ROOT for kind in ("virtual", "editable"))


def _pin(package: dict[str, Any]) -> Pin:
    name = str(package["name"])
    source = _source(package)
    if set(source) != {"registry"}:
        raise _error(f"'{name}' comes from a path, URL or VCS, not an index")
    files = [*_edges(package.get("wheels"), f"{name} wheels")]
    if isinstance(package.get("sdist"), dict):
        files.append(package["sdist"])
    hashes = []
    for entry in files:
        digest = entry.get("hash")
        if not isinstance(digest, str) or not digest.startswith("sha256:"):
            raise _error(f"'{name}': a file without a sha256 hash")
        hashes.append(digest.removeprefix("sha256:"))
    return make_pin(name, package.get("version"), hashes, where=UV_LOCK)


def read_uv_lock(repo: Path, lock: Lock, target: Target) -> list[Pin]:
    """The pins of ``repo``'s ``uv.lock`` for ``target``: the root project's dependencies,
    its extras ``lock.extras`` and groups ``lock.groups``, and all they need.

    Raises:
        DependencyError: ``declaration``: a lock that is not one we read, a package from
            anywhere but a registry, or an edge that names no single package of the lock.
    """
    path = repo / UV_LOCK
    if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
        raise _error(f"not a regular file of at most {MAX_FILE_BYTES} bytes")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise _error(f"cannot be read: {str(error)[:200]}") from None
    _check_requires_python(data.get("requires-python"))
    graph = _Lock(data, target, lock)
    root = graph.root(lock.project)
    optional = _table(root.get("optional-dependencies"), "the root's optional-dependencies")
    groups = _table(root.get("dev-dependencies"), "the root's dev-dependencies")
    # (edge, where it was read): the work list, each (package, extra) expanded once
    queue: deque[tuple[dict[str, Any], str]] = deque(
        (edge, "the root project") for edge in _edges(root.get("dependencies"), "dependencies")
    )
    for extra in lock.extras:
        queue.extend((e, f"extra '{extra}'") for e in _edges(optional.get(extra), extra))
    for group in lock.groups:
        queue.extend((e, f"group '{group}'") for e in _edges(groups.get(group), group))
    chosen: dict[int, dict[str, Any]] = {}
    expanded: set[tuple[int, str]] = set()
    while queue:
        edge, where = queue.popleft()
        if not graph.applies(edge, where):
            continue
        package = graph.follow(edge, where)
        extras = edge.get("extra") or []
        if not isinstance(extras, list):
            raise _error(f"{where}: extras that are not a list")
        name = str(package["name"])
        for extra in ["", *map(str, extras)]:
            if (id(package), extra) in expanded:
                continue
            expanded.add((id(package), extra))
            table = package if not extra else _table(package.get("optional-dependencies"), name)
            key = extra or "dependencies"
            queue.extend((e, name) for e in _edges(table.get(key), f"{name} {key}"))
        if package is not root:
            chosen[id(package)] = package
    pins = [
        _pin(package)
        for package in chosen.values()
        if canonicalize_name(str(package["name"])) not in RUNNER_OWN_PACKAGES
    ]
    names = [pin.name for pin in pins]
    if len(set(names)) != len(names):
        raise _error("two versions of one package apply to the sandbox's platform")
    return pins
