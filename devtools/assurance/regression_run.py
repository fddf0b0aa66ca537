"""Run some named tests in one tree (old or current) and say what became of each case.

pytest runs with ``outcome_plugin`` (copied beside the tree as ``PLUGIN_MODULE``), which
deselects every other test and records each case's outcome. A case that cannot be
collected there, whose set-up fails, or that fails on a name the old code does not have
yet (an import, a module attribute, a keyword argument) is *not applicable*: its body
never tested the old behaviour, so it counts neither as a failure nor as a pass.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from devtools.assurance import outcome_plugin

PLUGIN_MODULE = "regression_outcome_plugin"
RUN_TIMEOUT_S = 7200.0
Outcome = Literal[
    "passed", "failed", "error", "skipped", "xfailed", "xpassed", "not_applicable", "not_run"
]
NOT_COLLECTED = "not collected"
_CONFTEST_FAILED = "ImportError while loading conftest"
_MISSING_NAME = re.compile(
    r"^(ImportError: cannot import name"
    r"|ModuleNotFoundError: No module named '(sandbox_agent|sandbox_supervisor|devtools)"
    r"|AttributeError: (module|type object) '[^']+' has no attribute"
    r"|AttributeError: '(?!NoneType')[A-Z]\w*' object has no attribute"
    r"|TypeError: .*(got an unexpected keyword argument|missing \d+ required)"
    r"|TypeError: .*takes \d+ positional arguments? but \d+ (were|was) given)"
    r"|Extra inputs are not permitted"
)
"""A failure on a name the code under test does not have (yet): an API that did not exist.
An attribute missing on an instance counts only for a class of ours (CamelCase, not None):
a builtin without the attribute is more likely the old code's own crash."""


class CaseRun(BaseModel):
    """One test case's outcome in one tree."""

    model_config = ConfigDict(extra="forbid")

    test: str
    outcome: Outcome
    message: str = ""
    source: str = ""
    """Whose test bytes ran: ``fix <commit>`` or ``current``."""


def _collect_error_for(test: str, errors: dict[str, str]) -> str | None:
    path = test.split("::", 1)[0]
    for where, message in errors.items():
        if where in {".", path} or path.startswith(where.rstrip("/") + "/"):
            return f"{where}: {message}"
    return None


def _case(node: str, row: dict[str, str], source: str) -> CaseRun:
    outcome, phase, message = row["outcome"], row["phase"], row["message"]
    if outcome == "error" and phase == "setup":
        outcome, message = "not_applicable", f"set-up failed: {message}"
    elif outcome == "failed" and _MISSING_NAME.search(message):
        outcome, message = "not_applicable", f"not in the old code: {message}"
    return CaseRun(test=node, outcome=outcome, message=message, source=source)


def outcomes(
    wanted: Sequence[str], payload: dict[str, Any] | None, why: str, source: str = ""
) -> list[CaseRun]:
    """Each wanted test's cases as the plugin saw them; ``why`` when it wrote nothing.

    A wanted test with no case and no collection error is ``not_run``, ``not collected``.
    """
    if payload is None:
        return [
            CaseRun(test=test, outcome="not_run", message=why, source=source) for test in wanted
        ]
    results: dict[str, dict[str, str]] = payload["results"]
    errors: dict[str, str] = payload["collect_errors"]
    runs: list[CaseRun] = []
    for test in wanted:
        cases = [node for node in results if node == test or node.startswith(test + "[")]
        runs += [_case(node, results[node], source) for node in cases]
        if cases:
            continue
        error = _collect_error_for(test, errors)
        if error is None:
            runs.append(CaseRun(test=test, outcome="not_run", message=NOT_COLLECTED, source=source))
        else:
            message = f"not collected: {error}"
            runs.append(
                CaseRun(test=test, outcome="not_applicable", message=message, source=source)
            )
    return runs


def run_tests(
    tree: Path,
    wanted: Sequence[str],
    *,
    python: Path,
    env: dict[str, str],
    scratch: Path,
    source: str,
) -> list[CaseRun]:
    """Run only ``wanted`` in ``tree`` with ``python`` (its state folder in ``env``).

    A test whose file is not in the tree is ``not_run``, ``not collected``.
    """
    present = [test for test in wanted if (tree / test.split("::", 1)[0]).is_file()]
    absent = [test for test in wanted if test not in present]
    runs = [
        CaseRun(test=t, outcome="not_run", message=NOT_COLLECTED, source=source) for t in absent
    ]
    if not present:
        return runs
    label = f"{tree.name}-{source.replace(' ', '-')}"
    wanted_file, out = scratch / f"{label}.wanted.json", scratch / f"{label}.out.json"
    wanted_file.write_text(json.dumps(present), encoding="utf-8")
    out.unlink(missing_ok=True)
    env = {**env, outcome_plugin.WANTED_ENV: str(wanted_file), outcome_plugin.OUT_ENV: str(out)}
    files = sorted({test.split("::", 1)[0] for test in present})
    command = [
        str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", PLUGIN_MODULE,
        "--continue-on-collection-errors", *files,
    ]  # fmt: skip
    log = scratch / f"{label}.log"
    print(f"regression: {tree.name}, {source} tests: {len(present)}", file=sys.stderr, flush=True)
    # A run over RUN_TIMEOUT_S writes no results: its cases are then not run.
    with log.open("w", encoding="utf-8") as handle, contextlib.suppress(subprocess.TimeoutExpired):
        subprocess.run(
                command, cwd=tree, env=env, stdout=handle, stderr=subprocess.STDOUT,
                timeout=RUN_TIMEOUT_S, check=False,
            )  # fmt: skip
    text = log.read_text(encoding="utf-8", errors="replace")
    payload = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
    lines = text.strip().splitlines()
    last = lines[-1] if lines else "no output"
    if payload is None and _CONFTEST_FAILED in text:  # pytest stops before any test
        message = f"not collected: a conftest.py does not import: {last.lstrip('E ').strip()}"
        return runs + [
            CaseRun(test=test, outcome="not_applicable", message=message, source=source)
            for test in present
        ]
    found = outcomes(present, payload, f"pytest wrote no results: {last}", source)
    # Paths inside the (temporary) tree, as the tree's own: the page reads the same each run.
    inside = f"{tree}/"
    return runs + [
        run.model_copy(update={"message": run.message.replace(inside, "")}) for run in found
    ]
