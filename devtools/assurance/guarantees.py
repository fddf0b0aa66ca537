"""``docs/GUARANTEES.md`` parsed, and each row resolved against the code and the test suite.

A guarantee is a ``## G<n>. <title>`` heading followed by a claim and two bullet lines::

    - Enforced by: `sandbox_agent.sandbox.docker.spec.verify`
    - Tests: `tests/sandbox/test_sandbox_spec.py::test_every_field_is_compared`

A row resolves when every named function imports (``module.attribute[.attribute]``) and
every named test is collected by pytest and would not be skipped here.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from sandbox_agent.settings import PROJECT_ROOT

GUARANTEES_FILE = PROJECT_ROOT / "docs" / "GUARANTEES.md"
COLLECT_TIMEOUT_S = 300.0
_HEADING = re.compile(r"^## (G\d+)\. (.+)$")
_ENFORCED = re.compile(r"^- Enforced by: (.+)$")
_TESTS = re.compile(r"^- Tests: (.+)$")
_TICKED = re.compile(r"`([^`]+)`")


class Guarantee(NamedTuple):
    id: str
    title: str
    enforced_by: tuple[str, ...]
    tests: tuple[str, ...]


def parse(text: str) -> list[Guarantee]:
    """Every guarantee of the document, in order (a row without code or tests is kept, empty)."""
    rows: list[Guarantee] = []
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            rows.append(Guarantee(heading[1], heading[2].strip(), (), ()))
            continue
        if not rows:
            continue
        enforced, tests = _ENFORCED.match(line), _TESTS.match(line)
        if enforced:
            rows[-1] = rows[-1]._replace(enforced_by=tuple(_TICKED.findall(enforced[1])))
        elif tests:
            rows[-1] = rows[-1]._replace(tests=tuple(_TICKED.findall(tests[1])))
    return rows


def resolve_reference(reference: str) -> str | None:
    """None when ``module.attribute[.attribute...]`` names something that exists, else why not."""
    parts = reference.split(".")
    for split in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:split])
        try:
            target: object = importlib.import_module(module_name)
        except ImportError:
            continue
        for attribute in parts[split:]:
            if not hasattr(target, attribute):
                return f"{module_name} has no {'.'.join(parts[split:])}"
            target = getattr(target, attribute)
        if not callable(target):
            return f"{reference} is not a function or class"
        return None
    return f"no module of {reference} imports"


class CollectedTest(NamedTuple):
    nodeid: str
    skip: str | None
    """Why pytest would skip it in this environment (an xfail counts), or None."""
    skip_only: str | None = None
    """Why it would be skipped here by a skip mark or the Docker rule (not an xfail)."""
    xfail: str | None = None
    """The xfail reason when every case is an expected failure, else None."""
    strict: bool = False
    """Every case is a strict xfail (an open finding)."""
    docker: bool = False
    """Some case is a Docker test."""


def collect(test_ids: Iterable[str], root: Path = PROJECT_ROOT) -> dict[str, CollectedTest]:
    """Collect the files of ``test_ids`` with pytest and say which would be skipped here.

    Raises:
        RuntimeError: pytest could not collect (the output's tail says why).
    """
    files = sorted({test_id.split("::", 1)[0] for test_id in test_ids})
    existing = [name for name in files if (root / name).is_file()]
    if not existing:
        return {}
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "collected.json"
        command = [
            sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
            "-p", "devtools.assurance.collect_plugin", *existing,
        ]  # fmt: skip
        done = subprocess.run(
            command,
            cwd=root,
            capture_output=True,
            text=True,
            timeout=COLLECT_TIMEOUT_S,
            env=_env_with(out),
            check=False,
        )
        if not out.exists():
            raise RuntimeError(
                f"pytest could not collect: {done.stdout[-2000:]}{done.stderr[-2000:]}"
            )
        rows = json.loads(out.read_text())
    found: dict[str, CollectedTest] = {}
    for row in rows:
        case = CollectedTest(
            row["nodeid"],
            row["skip"],
            row.get("skip_only"),
            row.get("xfail"),
            bool(row.get("strict")),
            bool(row.get("docker")),
        )
        # A parametrized test is named by its function: it resolves when every case does.
        for key in {row["nodeid"], row["nodeid"].split("[", 1)[0]}:
            seen = found.get(key)
            found[key] = case._replace(nodeid=key) if seen is None else _merged(seen, case)
    return found


def _merged(seen: CollectedTest, case: CollectedTest) -> CollectedTest:
    """One function's cases as one row: skipped if any case is, an xfail if every case is."""
    both_xfail = seen.xfail is not None and case.xfail is not None
    return seen._replace(
        skip=seen.skip or case.skip,
        skip_only=seen.skip_only or case.skip_only,
        xfail=seen.xfail if both_xfail else None,
        strict=both_xfail and seen.strict and case.strict,
        docker=seen.docker or case.docker,
    )


def _env_with(out: Path) -> dict[str, str]:
    import os

    from devtools.assurance.collect_plugin import OUTPUT_ENV

    return {**os.environ, OUTPUT_ENV: str(out)}


def problems(rows: list[Guarantee], root: Path = PROJECT_ROOT) -> list[str]:
    """Every way the table fails to resolve: missing code, missing or skipped tests, empty rows."""
    found: list[str] = []
    every_test = [test for row in rows for test in row.tests]
    collected = collect(every_test, root)
    for row in rows:
        if not row.enforced_by or not row.tests:
            found.append(f"{row.id}: names no {'code' if not row.enforced_by else 'test'}")
        for reference in row.enforced_by:
            why = resolve_reference(reference)
            if why:
                found.append(f"{row.id}: {reference}: {why}")
        found += unresolved_tests(row.id, row.tests, collected)
    return found


def unresolved_tests(
    row_id: str, tests: Iterable[str], collected: dict[str, CollectedTest]
) -> list[str]:
    """The named tests of one row that are not collected, or would be skipped here."""
    found: list[str] = []
    for test in tests:
        item = collected.get(test)
        if item is None:
            found.append(f"{row_id}: {test}: not collected (no such test)")
        elif item.skip is not None:
            found.append(f"{row_id}: {test}: skipped here ({item.skip})")
    return found
