"""The HumanEvalFix builder: all 164 rows build; on a sample, run on the host in a
subprocess (trusted dataset code), the canonical fix passes the held-out check and the
buggy code fails it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from judge_harness import judge_on_host, passed

from sandbox_agent.errors import UsageError
from sandbox_agent.evals.tasks import humanevalfix
from sandbox_agent.evals.tasks.suites import SuiteOptions, build_cases

SAMPLE = ("Python/0", "Python/10", "Python/32", "Python/38", "Python/53", "Python/83", "Python/163")
"""Includes a row that loops forever when buggy (10), rows with imports in their tests
(32, 38, 53) and rows without docstring examples (38, 83)."""
HOST_TIMEOUT_S = 5


@pytest.fixture(scope="module")
def rows() -> list[humanevalfix.Row]:
    path = humanevalfix.dataset_path()
    if not path.is_file():
        pytest.skip(f"HumanEvalFix dataset not present at {path}")
    return humanevalfix.load_rows(path)


def test_every_row_builds_with_a_unique_minimal_edit(
    rows: list[humanevalfix.Row], tmp_path: Path
) -> None:
    assert len(rows) == 164
    cases = humanevalfix.build_suite(rows, tmp_path)
    assert len(cases) == 164
    assert len({case.task.id for case in cases}) == 164
    for row, case in zip(rows, cases, strict=True):
        assert case.repo is not None
        assert case.plan is not None
        module = (case.repo / "solution.py").read_text()
        steps = json.loads(case.plan.read_text())["steps"]
        edit = next(s for s in steps if s["tool"] == "apply_patch")["args"]["edits"][0]
        assert module.count(edit["old"]) == 1
        assert module.replace(edit["old"], edit["new"]) == humanevalfix.module_text(row, fixed=True)
        assert (case.held_out_dir / "test_heldout.py").is_file()
        assert not (case.repo / "test_heldout.py").exists()
        assert case.task.expected_changes == ("solution.py",)


def test_every_public_suite_compiles(rows: list[humanevalfix.Row]) -> None:
    for row in rows:
        compile(humanevalfix.public_tests(row), row.task_id, "exec")
        compile(humanevalfix.held_out_tests(row), row.task_id, "exec")
    broken = next(r for r in rows if r.task_id == "Python/119")
    assert "assert match_parens(['()(', ')']) == 'Yes'" in humanevalfix.public_tests(broken)


def test_control_plan_only_finishes(rows: list[humanevalfix.Row], tmp_path: Path) -> None:
    case = humanevalfix.build_case(rows[0], tmp_path, fix=False)
    assert case.plan is not None
    assert [s["tool"] for s in json.loads(case.plan.read_text())["steps"]] == ["finish"]


def _held_out_passes(repo: Path, held_out: Path, tmp_path: Path) -> bool:
    """The generated check, judged out of process (PID 1's logic on the host)."""
    source = (held_out / "test_heldout.py").read_text()
    return passed(judge_on_host(repo, source, deadline_s=HOST_TIMEOUT_S))


@pytest.mark.slow
@pytest.mark.parametrize("row_id", SAMPLE)
def test_canonical_passes_and_buggy_fails_held_out(
    rows: list[humanevalfix.Row], row_id: str, tmp_path: Path
) -> None:
    row = next(r for r in rows if r.task_id == row_id)
    case = humanevalfix.build_case(row, tmp_path / "suite", fix=True)
    assert case.repo is not None
    assert not _held_out_passes(case.repo, case.held_out_dir, tmp_path)
    (case.repo / "solution.py").write_text(humanevalfix.module_text(row, fixed=True))
    assert _held_out_passes(case.repo, case.held_out_dir, tmp_path)


def test_public_tests_come_from_examples(rows: list[humanevalfix.Row]) -> None:
    with_examples = next(r for r in rows if r.task_id == "Python/0")
    text = humanevalfix.public_tests(with_examples)
    assert "has_close_elements([1.0, 2.0, 3.0], 0.5) == False" in text
    assert "check(has_close_elements)\n" in text
    without = next(r for r in rows if r.task_id == "Python/83")
    assert "callable(starts_one_ends)" in humanevalfix.public_tests(without)


def test_suite_selection_and_missing_dataset(rows: list[humanevalfix.Row], tmp_path: Path) -> None:
    options = SuiteOptions(task_ids=["humanevalfix-python-3"])
    cases = build_cases("humanevalfix", options, tmp_path / "a")
    assert [case.task.fixture for case in cases] == ["Python/3"]
    with pytest.raises(UsageError, match="humanevalfix-python-0"):
        build_cases("humanevalfix", SuiteOptions(task_ids=["nope"]), tmp_path / "b")
    with pytest.raises(UsageError, match="--dataset"):
        build_cases("humanevalfix", SuiteOptions(dataset=str(tmp_path / "absent.jsonl")), tmp_path)


def test_malformed_row_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"task_id": "Python/0"}\n')
    with pytest.raises(UsageError, match=r"bad\.jsonl:1"):
        humanevalfix.load_rows(path)
