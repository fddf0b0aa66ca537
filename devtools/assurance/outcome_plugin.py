"""A pytest plugin that runs only the named tests and writes what became of each one.

It imports nothing of sandbox_agent, so it loads in any checkout, old ones included: the
regression evidence copies this file beside the tree under test and loads it with ``-p``.

``$SANDBOX_AGENT_REGRESSION_WANTED`` names a JSON list of node ids (a function's name
stands for all its cases); every other collected item is deselected. At the end, the file
named by ``$SANDBOX_AGENT_REGRESSION_OUT`` gets, as JSON: ``results`` (node id -> outcome,
the phase that decided it and the first line of why), ``collect_errors`` (the modules or
folders that could not be collected -> the error line) and ``unmatched`` (wanted ids that
named no collected test).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

WANTED_ENV = "SANDBOX_AGENT_REGRESSION_WANTED"
OUT_ENV = "SANDBOX_AGENT_REGRESSION_OUT"
MOVES_ENV = "SANDBOX_AGENT_REGRESSION_MOVES"
"""A JSON object (``regression.Moves``): ``moves``, today's module name -> its name in the
old tree, for modules that only moved since, so that today's tests import them by
today's name; ``first``, those of them found before any file of that name (test doubles
that moved out of the product: today's copy, laid with today's tests, would import
today's modules)."""
MAX_MESSAGE = 300


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves a module's new name to the module under its old name. Put last on the
    path, a name the old tree has is always its own, and a package that only today's names
    need (``a.b`` of ``a.b.c``) is an empty one, so that its moved children can be found;
    put first (``packages=False``), it resolves only the names it is given."""

    def __init__(self, moves: dict[str, str], *, packages: bool = True) -> None:
        self.moves = moves
        self.packages = {
            name.rsplit(".", depth)[0]
            for name in (moves if packages else ())
            for depth in range(1, name.count(".") + 1)
        }
        self._specs: dict[str, Any] = {}

    def find_spec(
        self, fullname: str, path: Any = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname in self.moves:
            return importlib.util.spec_from_loader(fullname, self)
        if fullname in self.packages:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        old = self.moves.get(spec.name)
        if old is None:
            return None  # an empty package
        module = importlib.import_module(old)
        self._specs[spec.name] = module.__spec__  # the import machinery overwrites it
        return module

    def exec_module(self, module: ModuleType) -> None:
        name = getattr(module.__spec__, "name", "")
        if name in self._specs:
            module.__spec__ = self._specs.pop(name)


def _install_moves() -> None:
    path = os.environ.get(MOVES_ENV)
    if path:
        given = json.loads(Path(path).read_text(encoding="utf-8"))
        moves = {str(k): str(v) for k, v in given["moves"].items()}
        first = {name: moves[name] for name in given["first"]}
        sys.meta_path.insert(0, MovedModules(first, packages=False))
        sys.meta_path.append(MovedModules({k: v for k, v in moves.items() if k not in first}))


_install_moves()

_results: dict[str, dict[str, str]] = {}
_collect_errors: dict[str, str] = {}
_matched: set[str] = set()


def _wanted() -> list[str]:
    return list(json.loads(Path(os.environ[WANTED_ENV]).read_text(encoding="utf-8")))


def _owner(nodeid: str, wanted: list[str]) -> str | None:
    for name in wanted:
        if nodeid == name or nodeid.startswith(name + "["):
            return name
    return None


def _error_line(longrepr: Any) -> str:
    """The exception's line(s): the crash message's first lines, else the last ``E`` line."""
    crash = getattr(longrepr, "reprcrash", None)
    message = getattr(crash, "message", "")
    if message:  # a few lines: a ValidationError says what was wrong on its second and third
        lines = [line.strip() for line in str(message).splitlines() if line.strip()]
        return " / ".join(lines[:3])[:MAX_MESSAGE]
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (file, line, reason)
        return str(longrepr[2])[:MAX_MESSAGE]
    lines = [line for line in str(longrepr).splitlines() if line.strip()]
    errors = [line[1:].strip() for line in lines if line.startswith("E ")]
    return (errors[-1] if errors else lines[-1] if lines else "")[:MAX_MESSAGE]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if WANTED_ENV not in os.environ:
        return
    wanted = _wanted()
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        owner = _owner(item.nodeid, wanted)
        (keep if owner else drop).append(item)
        if owner:
            _matched.add(owner)
    if drop:
        config.hook.pytest_deselected(items=drop)
    items[:] = keep


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _collect_errors[report.nodeid or "."] = _error_line(report.longrepr)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    row = _results.setdefault(report.nodeid, {"outcome": "passed", "phase": "", "message": ""})
    if row["outcome"] != "passed":
        return  # the first phase that did not pass decides
    text = str(report.longrepr or "")
    if report.skipped:
        xfail = hasattr(report, "wasxfail")
        outcome, message = ("xfailed", report.wasxfail) if xfail else ("skipped", "")
        row.update(
            outcome=outcome, phase=report.when, message=message or _error_line(report.longrepr)
        )
    elif report.failed and "[XPASS(strict)]" in text:
        row.update(outcome="xpassed", phase=report.when, message=text.strip()[:MAX_MESSAGE])
    elif report.failed:
        outcome = "failed" if report.when == "call" else "error"
        row.update(outcome=outcome, phase=report.when, message=_error_line(report.longrepr))
    elif report.when == "call" and hasattr(report, "wasxfail"):
        row.update(outcome="xpassed", phase="call", message=report.wasxfail)


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get(OUT_ENV)
    if not out or WANTED_ENV not in os.environ:
        return
    unmatched = [name for name in _wanted() if name not in _matched]
    payload = {"results": _results, "collect_errors": _collect_errors, "unmatched": unmatched}
    Path(out).write_text(json.dumps(payload), encoding="utf-8")
