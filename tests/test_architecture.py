"""The house rules of docs/ARCHITECTURE.md, checked on the code itself (issue 31).

Every import of the two packages is read from the source (top level, inside functions,
under ``TYPE_CHECKING``: an import is an import), and:

- no module imports from a layer above its own (``LAYERS``, written here once);
- no import circle, between modules or between a package and its own modules;
- no module is longer than ``MAX_MODULE_LINES``;
- the code that runs inside the container imports nothing of the host's package.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from sandbox_agent.settings import PROJECT_ROOT

SRC = PROJECT_ROOT / "src"
MAX_MODULE_LINES = 400
LAYERS: tuple[tuple[str, ...], ...] = (
    ("sandbox_supervisor",),
    (
        "sandbox_agent",
        "sandbox_agent.errors",
        "sandbox_agent.settings",
        "sandbox_agent.ports",
        "sandbox_agent.procstat",
        "sandbox_agent.httpguard",
        "sandbox_agent.canonical",
        "sandbox_agent.denials",
        "sandbox_agent.printable",
        "sandbox_agent.prompts",
        "sandbox_agent.hostsetup",
    ),
    ("sandbox_agent.sandbox",),
    ("sandbox_agent.workspace",),
    ("sandbox_agent.policy",),
    ("sandbox_agent.tools",),
    (
        "sandbox_agent.deps",
        "sandbox_agent.trace",
        "sandbox_agent.evidence",
        "sandbox_agent.localmodel",
        "sandbox_agent.repair",
    ),
    ("sandbox_agent.ledger",),
    ("sandbox_agent.providers",),
    ("sandbox_agent.controller",),
    ("sandbox_agent.cluster",),
    ("sandbox_agent.evals", "sandbox_agent.stress"),
    ("sandbox_agent.viewer",),
    ("sandbox_agent.service",),
    ("sandbox_agent.commands", "sandbox_agent.cli", "sandbox_agent.__main__"),
)
"""Lowest first. A module may import its own layer's packages and any lower layer's."""


def _modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports (a name imported from a package counts
    as that package, or as its submodule when the name is one)."""

    def known(name: str) -> str:
        while name not in modules and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                submodules = [f"{node.module}.{alias.name}" for alias in node.names]
                targets = [t for t in submodules if t in modules] or [node.module]
            for target in targets:
                if target.split(".")[0] in ("sandbox_agent", "sandbox_supervisor"):
                    resolved = known(target)
                    if resolved != name:
                        edges[name].add(resolved)
    return edges


def _layer(module: str) -> int:
    """The layer of the most specific package listed for ``module``; -1 when none is
    (the bare ``sandbox_agent`` entry is the package's own ``__init__`` only)."""
    best, depth = -1, -1
    for index, layer in enumerate(LAYERS):
        for package in layer:
            covers = module == package or (
                module.startswith(package + ".") and package != "sandbox_agent"
            )
            if covers and package.count(".") > depth:
                best, depth = index, package.count(".")
    return best


def test_every_module_has_a_layer() -> None:
    missing = [name for name in _modules() if _layer(name) < 0]
    assert missing == [], "add these to LAYERS (and docs/ARCHITECTURE.md)"


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    modules = _modules()
    upward = sorted(
        f"{source} -> {target}"
        for source, targets in _imports(modules).items()
        for target in targets
        if _layer(target) > _layer(source)
    )
    assert upward == []


def test_no_import_circle() -> None:
    edges = _imports(_modules())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in list(edges):
        if node not in index:
            visit(node)
    assert circles == []


def test_no_module_is_longer_than_the_limit() -> None:
    long = {
        name: n
        for name, path in _modules().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_the_container_package_imports_nothing_of_the_host() -> None:
    edges = _imports(_modules())
    reaching = sorted(
        f"{source} -> {target}"
        for source, targets in edges.items()
        if source.startswith("sandbox_supervisor")
        for target in targets
        if target.startswith("sandbox_agent")
    )
    assert reaching == []
