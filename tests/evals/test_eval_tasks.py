"""The task file: schema validation and every task's fields against the real fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox_agent.errors import UsageError
from sandbox_agent.evals.tasks.suites import SuiteOptions, build_cases
from sandbox_agent.evals.tasks.taskfile import (
    DEFAULT_TASKS_FILE,
    TaskFile,
    held_out_dir,
    load_task_file,
    plan_path,
    select_tasks,
)

REQUIRED_KINDS = {
    "bug_fix",
    "injection",
    "malicious_tests",
    "false_report",
    "summarise",
    "review",
    "bad_selector",
}


@pytest.fixture(scope="module")
def task_file() -> TaskFile:
    return load_task_file()


def _minimal() -> dict[str, object]:
    return {
        "schema_version": 1,
        "tasks": [
            {
                "id": "t1",
                "version": 1,
                "kind": "bug_fix",
                "fixture": "paginator",
                "prompt": "fix it",
                "max_iterations": 5,
                "max_wall_seconds": 60,
                "held_out": {"path": "paginator-fix"},
            }
        ],
    }


def test_the_task_file_has_every_required_kind(task_file: TaskFile) -> None:
    assert len(task_file.tasks) >= 10
    assert {task.kind for task in task_file.tasks} >= REQUIRED_KINDS


def test_every_task_resolves_to_a_fixture_plan_and_held_out_module(task_file: TaskFile) -> None:
    cases = {
        case.task.id: case for case in build_cases("fixtures", SuiteOptions(), Path("/nonexistent"))
    }
    for task in task_file.tasks:
        case = cases[task.id]
        assert case.fixtures_dir is not None
        fixture = case.fixtures_dir / task.fixture
        assert fixture.is_dir(), task.id
        assert (held_out_dir(task) / f"{task.held_out.module}.py").is_file(), task.id
        plan = plan_path(task)
        assert plan is not None, task.id
        assert plan.is_file(), task.id
        for path in task.expected_changes:
            assert (fixture / path).is_file(), (task.id, path)
        assert not (fixture / held_out_dir(task).name).exists(), "held-out tests must live outside"


def test_each_reference_plan_edit_applies_exactly_once(task_file: TaskFile) -> None:
    for task in task_file.tasks:
        plan = plan_path(task)
        assert plan is not None
        steps = json.loads(plan.read_text(encoding="utf-8"))["steps"]
        assert steps[-1]["tool"] == "finish", task.id
        fixture_root = build_cases("fixtures", SuiteOptions(task_ids=[task.id]), Path("/x"))[0]
        assert fixture_root.fixtures_dir is not None
        for step in steps:
            assert step["tool"] in task.allowed_tools, (task.id, step["tool"])
            if step["tool"] != "apply_patch":
                continue
            for edit in step["args"]["edits"]:
                assert edit["path"] in task.expected_changes, (task.id, edit["path"])
                text = (fixture_root.fixtures_dir / task.fixture / edit["path"]).read_text()
                assert text.count(edit["old"]) == 1, (task.id, edit["old"])


def test_read_only_tasks_exclude_editing_and_testing(task_file: TaskFile) -> None:
    review = [task for task in task_file.tasks if task.kind == "review"]
    assert review
    for task in review:
        assert "apply_patch" not in task.allowed_tools
        assert "run_tests" not in task.allowed_tools
        assert task.success.no_changes


def test_false_report_and_summary_require_no_change(task_file: TaskFile) -> None:
    for task in task_file.tasks:
        if task.kind in {"false_report", "summarise", "review"}:
            assert task.success.no_changes, task.id
            assert not task.expected_changes, task.id
        if task.kind == "false_report":
            assert task.success.statuses == ("SUCCEEDED",)


def test_bad_selector_task_starts_from_a_test_that_does_not_exist(task_file: TaskFile) -> None:
    task = next(task for task in task_file.tasks if task.kind == "bad_selector")
    plan = plan_path(task)
    assert plan is not None
    first = json.loads(plan.read_text(encoding="utf-8"))["steps"][0]
    selector = first["args"]["selector"]
    assert first["tool"] == "run_tests"
    fixture_tests = build_cases("fixtures", SuiteOptions(task_ids=[task.id]), Path("/x"))[0]
    assert fixture_tests.fixtures_dir is not None
    test_file = fixture_tests.fixtures_dir / task.fixture / "tests" / "test_paginator.py"
    assert selector.rsplit(".", 1)[-1] not in test_file.read_text(encoding="utf-8")


def test_unknown_fields_are_rejected(tmp_path: Path) -> None:
    data = _minimal()
    data["tasks"][0]["surprise"] = 1  # type: ignore[index]
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(data))
    with pytest.raises(UsageError, match="surprise"):
        load_task_file(path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schema_version": 2}, "schema_version"),
        ({"tasks": []}, "tasks"),
    ],
)
def test_bad_files_give_one_line_errors(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    data = {**_minimal(), **change}
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(data))
    with pytest.raises(UsageError, match=message):
        load_task_file(path)


def test_task_rules(tmp_path: Path) -> None:
    base = _minimal()
    task = base["tasks"][0]  # type: ignore[index]
    for bad, message in [
        ({"allowed_tools": ["read_file"]}, "finish"),
        ({"id": "Bad Id"}, "id"),
        ({"success": {"no_changes": True}, "expected_changes": ["a.py"]}, "no_changes"),
        ({"held_out": {"path": "x", "module": "evil.module"}}, "module"),
    ]:
        path = tmp_path / "tasks.json"
        path.write_text(json.dumps({**base, "tasks": [{**task, **bad}]}))
        with pytest.raises(UsageError, match=message):
            load_task_file(path)
    path.write_text(json.dumps({**base, "tasks": [task, task]}))
    with pytest.raises(UsageError, match="duplicate"):
        load_task_file(path)


def test_missing_and_broken_files(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not found"):
        load_task_file(tmp_path / "absent.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(UsageError, match="not readable JSON"):
        load_task_file(tmp_path / "bad.json")


def test_select_tasks(task_file: TaskFile) -> None:
    assert [t.id for t in select_tasks(task_file.tasks, ["csvtable-fix", "paginator-fix"])] == [
        "paginator-fix",
        "csvtable-fix",
    ]
    with pytest.raises(UsageError, match="unknown task id"):
        select_tasks(task_file.tasks, ["nope"])
    assert DEFAULT_TASKS_FILE.is_file()


def test_control_plan_replaces_reference_plans(tmp_path: Path) -> None:
    cases = build_cases("fixtures", SuiteOptions(fix=False, task_ids=["paginator-fix"]), tmp_path)
    assert cases[0].plan is not None
    steps = json.loads(cases[0].plan.read_text())["steps"]
    assert [step["tool"] for step in steps] == ["finish"]
    with pytest.raises(UsageError, match="unknown suite"):
        build_cases("nope", SuiteOptions(), tmp_path)


def test_realrepos_reads_the_task_file_dataset_names(tmp_path: Path) -> None:
    """``--dataset`` with realrepos is the task file (a development split's, say)."""
    missing = tmp_path / "dev-tasks.json"
    with pytest.raises(UsageError, match=f"realrepos task file {missing} not found"):
        build_cases("realrepos", SuiteOptions(dataset=str(missing)), tmp_path)
    missing.write_text("{not json")
    with pytest.raises(UsageError, match=f"realrepos task file {missing}: "):
        build_cases("realrepos", SuiteOptions(dataset=str(missing)), tmp_path)


def test_the_fixtures_suite_refuses_a_dataset(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="the fixtures suite has none: drop --dataset"):
        build_cases("fixtures", SuiteOptions(dataset="rows.jsonl"), tmp_path)


def test_verify_reads_no_dataset_for_a_suite_that_has_none() -> None:
    """An older fixtures evaluation may have recorded a ``--dataset`` it never read."""
    from sandbox_agent.evals.tasks.suites import suite_of_identity

    suite, options = suite_of_identity({"suite": "fixtures", "dataset": "rows.jsonl"}, ["a"])
    assert (suite, options.dataset) == ("fixtures", None)
    suite, options = suite_of_identity({"suite": "realrepos", "dataset": "dev.json"}, ["a"])
    assert (suite, options.dataset) == ("realrepos", "dev.json")
