"""The realrepos suite: its committed task file, how its bugs are made and reported, and
(Docker, PyPI) reference plans that pass and control plans that fail on real projects."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from sandbox_agent.errors import SetupError
from sandbox_agent.evals.realrepos import taskfile
from sandbox_agent.evals.realrepos.build import failing_tests
from sandbox_agent.evals.realrepos.mutate import mutations
from sandbox_agent.evals.realrepos.suite import bug_report
from sandbox_agent.evals.running.heldout import overlay_protected

SAMPLE = textwrap.dedent(
    '''
    """A module."""


    def window(items, size, total):
        """Docstring stays."""
        strict = True
        if size < 1:
            raise ValueError("size")
        result = []
        for start in range(len(items) - size + 1):
            result.append(items[start : start + size])
        return result if strict else divmod(total, size)
    '''
)


def test_the_committed_task_file_meets_the_suites_bar() -> None:
    tasks = taskfile.load()
    assert len(tasks.projects) >= 5
    assert len(tasks.tasks) >= 30
    assert {task.kind for task in tasks.tasks} == {
        "flip_comparison",
        "off_by_one",
        "swap_arguments",
        "remove_statement",
        "change_constant",
    }
    for project in tasks.projects:
        assert project.url.endswith(f"{project.root}.tar.gz")
        assert sum(task.project == project.name for task in tasks.tasks) >= 1
    # jsonpatch's own requirements.txt declares jsonpointer: a third-party dependency,
    # from PyPI, in its sandbox, pinned with its files' hashes as it was resolved when
    # the task file was made.
    resolution = tasks.project("jsonpatch").resolution or ""
    assert resolution.startswith("jsonpointer==")
    assert "--hash=sha256:" in resolution


def test_every_kind_of_change_is_found_and_only_its_bytes_change() -> None:
    found = mutations(SAMPLE)
    kinds = {mutation.kind for mutation in found}
    assert kinds == {
        "flip_comparison",
        "off_by_one",
        "swap_arguments",
        "remove_statement",
        "change_constant",
    }
    for mutation in found:
        changed = mutation.apply(SAMPLE)
        compile(changed, "<mutated>", "exec")
        assert changed[: mutation.start] == SAMPLE[: mutation.start]
        assert changed.endswith(SAMPLE[mutation.end :])
        assert mutation.function == "window"
    assert '"""Docstring stays."""' not in {SAMPLE[m.start : m.end] for m in found}
    assert mutations(SAMPLE) == found  # the same candidates, in the same order


@pytest.mark.parametrize(
    ("snippet", "replacement"),
    [
        ("size < 1", "size >= 1"),
        ("- size + 1", "- size + 2"),
        ("divmod(total, size)", "divmod(size, total)"),
        ("strict = True", "strict = False"),
        ("result = []", "pass"),
    ],
)
def test_the_changes_are_the_procedural_ones(snippet: str, replacement: str) -> None:
    changed = {mutation.apply(SAMPLE) for mutation in mutations(SAMPLE)}
    assert SAMPLE.replace(snippet, replacement, 1) in changed


def test_failing_tests_are_read_from_either_runner() -> None:
    pytest_output = (
        "..F.\n=========================== short test summary info ===========================\n"
        "FAILED test_six.py::test_print_ - AssertionError: assert 'a' == 'b'\n"
        "ERROR tests/test_x.py::test_y\n1 failed, 3 passed in 0.1s\n"
    )
    assert [(f.id, f.message) for f in failing_tests(pytest_output, "pytest")] == [
        ("test_six.py::test_print_", "AssertionError: assert 'a' == 'b'"),
        ("tests/test_x.py::test_y", "ERROR"),
    ]
    unittest_output = (
        ".E\n" + "=" * 70 + "\nERROR: test_one (tests.T.test_one)\nA docstring line\n" + "-" * 70
        + "\nTraceback (most recent call last):\n  File \"x\", line 1\n"
        "jsonpointer.JsonPointerException: '-1' is not a valid sequence index\n\n"
        + "-" * 70 + "\nRan 2 tests\n"
    )  # fmt: skip
    assert [(f.id, f.message) for f in failing_tests(unittest_output, "unittest")] == [
        ("tests.T.test_one", "jsonpointer.JsonPointerException: '-1' is not a valid sequence index")
    ]


def test_the_report_names_the_failures_never_the_change() -> None:
    tasks = taskfile.load()
    for task in tasks.tasks:
        report = bug_report(tasks.project(task.project), task)
        assert task.failing[0].id in report
        changed_line = next(line for line in task.bug.new.splitlines() if line.strip())
        assert changed_line.strip() not in report or len(changed_line.strip()) < 12


def test_the_held_out_suite_is_the_projects_own(tmp_path: Path) -> None:
    pristine, final = tmp_path / "pristine", tmp_path / "final"
    for tree in (pristine, final):
        (tree / "tests").mkdir(parents=True)
        (tree / "pkg.py").write_text("X = 1\n")
        (tree / "tests" / "test_pkg.py").write_text("assert True\n")
    (final / "pkg.py").write_text("X = 2\n")  # the agent's fix: kept
    (final / "tests" / "test_pkg.py").write_text("pass\n")  # a changed test: restored
    (final / "conftest.py").write_text("evil = 1\n")  # a planted test file: removed
    overlay_protected(pristine, final)
    assert (final / "pkg.py").read_text() == "X = 2\n"
    assert (final / "tests" / "test_pkg.py").read_text() == "assert True\n"
    assert not (final / "conftest.py").exists()


@pytest.mark.docker
@pytest.mark.parametrize("fix", [True, False], ids=["reference", "control"])
def test_reference_plans_pass_and_control_plans_fail_on_real_projects(
    fix: bool, tmp_path: Path
) -> None:
    """One task of a unittest project with a PyPI dependency (jsonpatch: jsonpointer) and
    one of a pytest project (six), through the controller, Docker and the held-out suite."""
    from sandbox_agent.controller import run_task
    from sandbox_agent.evals.realrepos.suite import build_cases
    from sandbox_agent.evals.running.executor import run_all
    from sandbox_agent.evals.running.options import EvalOptions
    from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

    ids = ["realrepos-jsonpatch-001", "realrepos-six-001"]
    try:
        cases = build_cases(ids, tmp_path / "suite", fix=fix)
    except SetupError as error:
        pytest.skip(f"PyPI is not reachable here: {error}")
    records = run_all(
        cases,
        EvalOptions(trace_dir=tmp_path / "traces"),
        backend_factory=lambda: DockerBackend(reap_on_first_use=False),
        run_task=run_task,
    )
    for record in records:
        assert record.passed is fix, (record.task_id, record.status, record.held_out)
        assert record.held_out.judge == "in_process"
        assert record.held_out.ran
        assert record.held_out.passed is fix
        assert record.held_out.tests_run >= 1
