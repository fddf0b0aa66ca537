"""docs/THREAT_MODEL.md resolves: every attack path names a test, and each one is collected
and would run (not be skipped) here."""

from __future__ import annotations

from devtools.assurance.threat_model import THREAT_MODEL_FILE, parse, problems


def test_parse_reads_the_test_column_only() -> None:
    text = (
        "| # | attack | mitigation | test | residual risk |\n|---|---|---|---|---|\n"
        "| T-1 | `tests/a.py::test_not_this` | m "
        "| `tests/x.py::test_y`, `tests/x.py::test_z` | r |\n"
        "| T-2 | a | m | none | `tests/b.py::test_not_this_either` |\n"
    )
    assert parse(text) == [
        ("T-1", ("tests/x.py::test_y", "tests/x.py::test_z")),
        ("T-2", ()),
    ]


def test_a_row_without_a_real_test_is_a_problem() -> None:
    rows = parse(
        "| T-1 | a | m | `tests/assurance/test_threat_model_table.py::test_no_such` | r |\n"
        "| T-2 | a | m | none | r |\n"
    )
    found = problems(rows)
    assert any(line.startswith("T-1:") and "not collected" in line for line in found)
    assert "T-2: names no test" in found


def test_every_attack_path_resolves() -> None:
    rows = parse(THREAT_MODEL_FILE.read_text(encoding="utf-8"))
    assert len(rows) >= 40
    assert problems(rows) == []
