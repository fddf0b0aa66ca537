"""A pytest plugin (``-p sandbox_agent.assurance.collect_plugin``): after collection, write
every item's node id and whether it would be skipped in this environment, as JSON, to the
file named by ``$SANDBOX_AGENT_COLLECT_OUT``.

A skip is found from ``skip``/``skipif`` marks, an ``xfail`` mark (a broken claim, not a
guarantee) and from the suite's own Docker rule (the
root ``conftest.py``'s ``docker_problem`` and ``runsc_problem``), without running anything.
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


def _skip_reason(item: pytest.Item, rule: Any) -> str | None:
    for mark in item.iter_markers("skip"):
        return str(mark.kwargs.get("reason", mark.args[0] if mark.args else "skip"))
    for mark in item.iter_markers("skipif"):
        conditions = mark.args or (mark.kwargs.get("condition"),)
        if any(isinstance(condition, bool) and condition for condition in conditions):
            return str(mark.kwargs.get("reason", "skipif"))
        if any(isinstance(condition, str) for condition in conditions):
            return f"skipif with a string condition cannot be judged here: {conditions}"
    for mark in item.iter_markers("xfail"):
        return f"marked xfail, an open finding: {mark.kwargs.get('reason', '')}"
    is_docker = item.get_closest_marker("docker") or item.get_closest_marker("runsc")
    if is_docker and rule is not None:
        problem = rule.docker_problem()
        if problem is None and item.get_closest_marker("runsc"):
            problem = rule.runsc_problem()
        if problem is not None:
            return str(problem)
    return None


def pytest_collection_finish(session: pytest.Session) -> None:
    out = os.environ.get(OUTPUT_ENV)
    if not out:
        return
    rule = _conftest_rule(session.config)
    rows = [{"nodeid": item.nodeid, "skip": _skip_reason(item, rule)} for item in session.items]
    Path(out).write_text(json.dumps(rows))
