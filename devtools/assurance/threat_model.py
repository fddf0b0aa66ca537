"""``docs/THREAT_MODEL.md``'s attack paths parsed, and each row's tests resolved.

An attack path is a table row ``| T-<n> | attack | mitigation | `tests/...::test_x` | residual |``.
A row resolves when it names at least one test and every test it names is collected by
pytest and would not be skipped here: the same rule as ``docs/GUARANTEES.md``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from devtools.assurance.guarantees import collect, unresolved_tests
from sandbox_agent.settings import PROJECT_ROOT

THREAT_MODEL_FILE = PROJECT_ROOT / "docs" / "THREAT_MODEL.md"
_ROW = re.compile(r"^\| (T-\d+) \|(.*)\|\s*$")
_TEST = re.compile(r"`(tests/[^`]+::[^`]+)`")


class AttackPath(NamedTuple):
    id: str
    tests: tuple[str, ...]


def parse(text: str) -> list[AttackPath]:
    """Every attack path of the document, in order, with the tests of its test column."""
    rows: list[AttackPath] = []
    for line in text.splitlines():
        row = _ROW.match(line)
        if row is None:
            continue
        cells = row[2].split(" | ")
        test_cell = cells[2] if len(cells) >= 4 else ""
        rows.append(AttackPath(row[1], tuple(_TEST.findall(test_cell))))
    return rows


def problems(rows: list[AttackPath], root: Path = PROJECT_ROOT) -> list[str]:
    """Every row naming no test, or a test that is not collected or would be skipped here."""
    found: list[str] = []
    collected = collect([test for row in rows for test in row.tests], root)
    seen: set[str] = set()
    for row in rows:
        if row.id in seen:
            found.append(f"{row.id}: appears twice")
        seen.add(row.id)
        if not row.tests:
            found.append(f"{row.id}: names no test")
        found += unresolved_tests(row.id, row.tests, collected)
    return found
