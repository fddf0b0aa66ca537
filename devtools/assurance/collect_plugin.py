"""A pytest plugin (``-p devtools.assurance.collect_plugin``): after collection, write
every item's node id and whether it would be skipped in this environment, as JSON, to the
file named by ``$SANDBOX_AGENT_COLLECT_OUT``.

A skip is found from ``skip``/``skipif`` marks, an ``xfail`` mark (a broken claim, not a
guarantee) and from the suite's own Docker rule (the
root ``conftest.py``'s ``docker_problem`` and ``runsc_problem``), without running anything.
Each row also says apart whether the item is an ``xfail`` (and a strict one: an open
finding of docs/SECURITY_REVIEW.md) and whether it is a Docker test.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

OUTPUT_ENV = "SANDBOX_AGENT_COLLECT_OUT"


def _conftest_rule(config: pytest.Config) -> Any:
    for plugin in config.pluginmanager.get_plugins():
        if hasattr(plugin, "docker_problem") and hasattr(plugin, "runsc_problem"):
            return plugin
    return None


def _is_docker(item: pytest.Item) -> bool:
    return bool(item.get_closest_marker("docker") or item.get_closest_marker("runsc"))


def _skip_reason(item: pytest.Item, rule: Any) -> str | None:
    """Why the item would be skipped here (skip and skipif marks, the Docker rule)."""
    for mark in item.iter_markers("skip"):
        return str(mark.kwargs.get("reason", mark.args[0] if mark.args else "skip"))
    for mark in item.iter_markers("skipif"):
        conditions = mark.args or (mark.kwargs.get("condition"),)
        if any(isinstance(condition, bool) and condition for condition in conditions):
            return str(mark.kwargs.get("reason", "skipif"))
        if any(isinstance(condition, str) for condition in conditions):
            return f"skipif with a string condition cannot be judged here: {conditions}"
    if _is_docker(item) and rule is not None:
        problem = rule.docker_problem()
        if problem is None and item.get_closest_marker("runsc"):
            problem = rule.runsc_problem()
        if problem is not None:
            return str(problem)
    return None


def _xfail(item: pytest.Item) -> tuple[str, bool] | None:
    """The first ``xfail`` mark's reason and whether it is strict, or None."""
    for mark in item.iter_markers("xfail"):
        strict = mark.kwargs.get("strict", item.config.getini("xfail_strict"))
        return str(mark.kwargs.get("reason", "")), bool(strict)
    return None


def pytest_collection_finish(session: pytest.Session) -> None:
    out = os.environ.get(OUTPUT_ENV)
    if not out:
        return
    rule = _conftest_rule(session.config)
    rows = []
    for item in session.items:
        skip, xfail = _skip_reason(item, rule), _xfail(item)
        rows.append(
            {
                "nodeid": item.nodeid,
                # An xfail counts as a skip for the guarantees: a broken claim, not one held.
                "skip": skip or (f"marked xfail, an open finding: {xfail[0]}" if xfail else None),
                "skip_only": skip,
                "xfail": xfail[0] if xfail else None,
                "strict": bool(xfail and xfail[1]),
                "docker": _is_docker(item),
            }
        )
    Path(out).write_text(json.dumps(rows))
