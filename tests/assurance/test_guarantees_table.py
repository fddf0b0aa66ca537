"""docs/GUARANTEES.md resolves: every named function exists, every named test is collected
and would run (not be skipped) here."""

from __future__ import annotations

import pytest

from devtools.assurance.guarantees import GUARANTEES_FILE, parse, problems, resolve_reference


def test_parse_reads_headings_code_and_tests() -> None:
    text = (
        "# Guarantees\n\n## G1. A claim\nWhy.\n"
        "- Enforced by: `a.b.c`, `d.e`\n- Tests: `tests/x.py::test_y`\n\n"
        "## G2. Another\n- Enforced by: `f.g`\n"
    )
    rows = parse(text)
    assert [(row.id, row.title, row.enforced_by, row.tests) for row in rows] == [
        ("G1", "A claim", ("a.b.c", "d.e"), ("tests/x.py::test_y",)),
        ("G2", "Another", ("f.g",), ()),
    ]


@pytest.mark.parametrize(
    ("reference", "resolves"),
    [
        ("sandbox_agent.evidence.verify.verify_run", True),
        ("sandbox_agent.evidence.verify.VerifyReport.failed", True),
        ("sandbox_agent.evidence.verify.no_such_function", False),
        ("sandbox_agent.no_such_module.function", False),
        ("sandbox_agent.evidence.seal.EVIDENCE_FILE", False),
    ],
)
def test_references_resolve_only_to_real_functions(reference: str, resolves: bool) -> None:
    assert (resolve_reference(reference) is None) is resolves


def test_every_guarantee_resolves() -> None:
    rows = parse(GUARANTEES_FILE.read_text(encoding="utf-8"))
    assert len(rows) >= 15
    assert problems(rows) == []
