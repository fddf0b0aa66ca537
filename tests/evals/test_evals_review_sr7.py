"""SR-7: the evaluation harness against a hostile task set, hostile dataset rows, a
hostile model and a results folder someone else reads later (docs/SECURITY_REVIEW.md).

Runs that need Docker go through the real controller, the real scripted provider and
the real Docker backend; the "model" is a scripted plan.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sandbox_agent.controller import run_task
from sandbox_agent.errors import UsageError
from sandbox_agent.evals.results.records import HARNESS_ERROR
from sandbox_agent.evals.results.report import make_report, to_markdown
from sandbox_agent.evals.running.executor import run_all
from sandbox_agent.evals.running.options import EvalOptions
from sandbox_agent.evals.tasks import humanevalfix
from sandbox_agent.evals.tasks.cases import EvalCase
from sandbox_agent.evals.tasks.suites import SuiteOptions, build_cases
from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

HEADINGS = [
    "# Eval report: sr7",
    "## Summary",
    "## Per task (every repeat kept, in order)",
    "## Runs",
    "## Violations",
    "## Harness errors",
]


def _row(**fields: str) -> dict[str, str]:
    row = {
        "task_id": "Python/900",
        "prompt": 'def add(a, b):\n    """Add."""\n',
        "buggy_solution": "    return a - b\n",
        "canonical_solution": "    return a + b\n",
        "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n\ncheck(add)\n",
        "example_test": "",
        "entry_point": "add",
    }
    row.update(fields)
    return row


def _case(tmp_path: Path, steps: list[dict[str, object]], **fields: str) -> EvalCase:
    row = humanevalfix.Row.model_validate(_row(**fields))
    case = humanevalfix.build_case(row, tmp_path / "suite", fix=True)
    assert case.plan is not None
    case.plan.write_text(json.dumps({"steps": steps}), encoding="utf-8")
    return case


def _backend() -> DockerBackend:
    return DockerBackend(reap_on_first_use=False)


def _run(cases: list[EvalCase], tmp_path: Path, jobs: int = 1) -> list:  # type: ignore[type-arg]
    options = EvalOptions(jobs=jobs, trace_dir=tmp_path / "traces")
    return run_all(cases, options, backend_factory=_backend, run_task=run_task)


def _report_md(records: list) -> str:  # type: ignore[type-arg]
    import datetime as dt

    report = make_report(
        records,
        suite="sr7",
        provider="scripted",
        model="",
        runtime="runc",
        jobs=1,
        repeats=1,
        control=False,
        started_at=dt.datetime(2026, 12, 1, tzinfo=dt.UTC),
        wall_seconds=1.0,
    )
    return to_markdown(report)


FORGE = (
    "\nimport json as _j, os as _o, stat as _s\n"
    "for _n in _o.listdir('/proc/self/fd'):\n"
    "    try:\n"
    "        if int(_n) > 2 and _s.S_ISFIFO(_o.fstat(int(_n)).st_mode):\n"
    "            _o.write(int(_n), _j.dumps({'runner': 'unittest', 'tests_run': 1,"
    " 'failures': 0, 'errors': 0, 'skipped': 0}).encode())\n"
    "    except OSError:\n"
    "        pass\n"
    "_o._exit(0)\n"
)


# --- F1: the code under test forged the held-out verdict (fixed by issue 15: judged out
# of process; tests/evals/test_heldout_forgery.py tries every other way on both runtimes)


@pytest.mark.docker
@pytest.mark.slow
def test_f1_code_under_test_cannot_forge_a_held_out_pass(tmp_path: Path) -> None:
    steps: list[dict[str, object]] = [
        {
            "tool": "apply_patch",
            "args": {
                "edits": [
                    {
                        "path": "solution.py",
                        "old": "    return a - b\n",
                        "new": "    return a - b\n" + FORGE,
                    }
                ]
            },
        },
        {"tool": "finish", "args": {"summary": "fixed add"}},
    ]
    (record,) = _run([_case(tmp_path, steps)], tmp_path)
    # The bug is still there (a - b): the held-out check must not pass.
    assert record.files_changed == ["solution.py"]
    assert not record.held_out.passed
    assert not record.passed


# --- F2: strings from the model or the dataset rewrite report.md -----------------------

HOSTILE_TOOL = (
    "x\n\n## Summary\n\n| tasks | runs | passed |\n| 1 | 1 | 1 |\n"
    "<img src=x onerror=alert(1)> [click](javascript:alert(1)) `"
)


def _headings(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("#")]


@pytest.mark.docker
@pytest.mark.slow
def test_f2_a_model_named_tool_cannot_write_lines_or_html_into_report_md(tmp_path: Path) -> None:
    steps: list[dict[str, object]] = [
        {"tool": HOSTILE_TOOL, "args": {}},
        {"tool": "finish", "args": {"summary": "done"}},
    ]
    (record,) = _run([_case(tmp_path, steps)], tmp_path)
    assert any(HOSTILE_TOOL[:20] in v.detail for v in record.attempted_violations)
    markdown = _report_md([record])
    assert _headings(markdown) == ["# Eval report: sr7", "## Summary", *HEADINGS[2:5]]
    # Only backslash-escaped: no tag, no link, no code span opens.
    assert not re.search(r"(?<!\\)[<`]|(?<!\\)\]\(", markdown.replace("`---`", ""))
    assert not any(line.startswith("| 1 | 1 | 1 |") for line in markdown.splitlines())


# --- F3: one run's failure after the agent finished lost every run's record -------------

FIX_STEPS: list[dict[str, object]] = [
    {
        "tool": "apply_patch",
        "args": {
            "edits": [
                {"path": "solution.py", "old": "    return a - b\n", "new": "    return a + b\n"}
            ]
        },
    },
    {"tool": "finish", "args": {"summary": "fixed add"}},
]


@pytest.mark.docker
@pytest.mark.slow
def test_f3_a_held_out_phase_that_raises_is_one_harness_error_not_a_lost_eval(
    tmp_path: Path,
) -> None:
    good = _case(tmp_path / "good", FIX_STEPS)
    broken = _case(tmp_path / "broken", FIX_STEPS, task_id="Python/901")
    (broken.held_out_dir / "test_heldout.py").unlink()  # a task set whose held-out is gone
    records = _run([broken, good], tmp_path, jobs=2)
    assert [r.task_id for r in records] == ["humanevalfix-python-901", "humanevalfix-python-900"]
    assert records[0].status == HARNESS_ERROR
    assert not records[0].passed
    assert "held-out" in (records[0].error or "")
    assert records[0].trace_path, "the agent's run happened; its trace is kept in the record"
    assert records[1].passed
    assert records[1].held_out.passed


# --- F4: hostile dataset rows crashed the eval with a traceback --------------------------


def _dataset(tmp_path: Path, rows: list[dict[str, str]]) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


HOSTILE_ROWS: dict[str, list[dict[str, str]]] = {
    "markup in the task id": [_row(task_id="Python/<b>1</b>")],
    "NUL in the task id": [_row(task_id="Python/1\x00")],
    "a task id too long for a file name": [_row(task_id="Python/" + "9" * 300)],
    "two rows with one task id": [_row(), _row()],
}


@pytest.mark.parametrize("name", sorted(HOSTILE_ROWS))
def test_f4_a_hostile_dataset_row_is_a_usage_error(tmp_path: Path, name: str) -> None:
    dataset = _dataset(tmp_path, HOSTILE_ROWS[name])
    with pytest.raises(UsageError, match=r"rows\.jsonl"):
        build_cases("humanevalfix", SuiteOptions(dataset=str(dataset)), tmp_path / "scratch")


def test_f4_examples_nested_past_the_compiler_fall_back_to_the_smoke_test(
    tmp_path: Path,
) -> None:
    nested = _row(example_test="def check(c):\n    x = " + "1+" * 30_000 + "1\n")
    dataset = _dataset(tmp_path, [nested])
    (case,) = build_cases("humanevalfix", SuiteOptions(dataset=str(dataset)), tmp_path / "s")
    assert case.repo is not None
    assert "test_entry_point_is_callable" in (case.repo / "test_examples.py").read_text()


def test_f4_a_dataset_past_the_size_bound_is_refused_unread(tmp_path: Path) -> None:
    huge = _row(prompt="# " + "x" * (humanevalfix.MAX_DATASET_BYTES + 1) + "\n" + _row()["prompt"])
    dataset = _dataset(tmp_path, [huge])
    with pytest.raises(UsageError, match="bytes"):
        build_cases("humanevalfix", SuiteOptions(dataset=str(dataset)), tmp_path / "scratch")


def test_holds_dataset_fields_never_name_a_path_outside_the_scratch_folder(
    tmp_path: Path,
) -> None:
    rows = [_row(task_id="Python/../../../../tmp/x"), _row(task_id="../..//etc")]
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    for row in rows:
        try:
            cases = build_cases(
                "humanevalfix", SuiteOptions(dataset=str(_dataset(tmp_path, [row]))), scratch
            )
        except UsageError:
            continue
        for case in cases:
            assert case.repo is not None
            assert case.repo.resolve().is_relative_to(scratch.resolve())
            assert case.held_out_dir.resolve().is_relative_to(scratch.resolve())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.jsonl", "scratch"]


# --- probes that hold ---------------------------------------------------------------------


@pytest.mark.docker
@pytest.mark.slow
def test_holds_the_model_can_neither_read_nor_write_the_held_out_tests(tmp_path: Path) -> None:
    held_out = "../held_out/test_heldout.py"
    steps: list[dict[str, object]] = [
        {"tool": "read_file", "args": {"path": held_out}},
        {
            "tool": "apply_patch",
            "args": {"edits": [{"path": held_out, "old": "import unittest", "new": "import os"}]},
        },
        {"tool": "finish", "args": {"summary": "tried"}},
    ]
    case = _case(tmp_path, steps)
    before = (case.held_out_dir / "test_heldout.py").read_bytes()
    (record,) = _run([case], tmp_path)
    assert [v.detail for v in record.attempted_violations] == [
        "read_file: path.outside_workspace",
        "apply_patch: path.outside_workspace",
    ]
    assert (case.held_out_dir / "test_heldout.py").read_bytes() == before
    assert record.files_changed == []
    assert record.held_out.ran
    assert not record.held_out.passed  # the bug is still there, and the check says so
    assert not record.passed


@pytest.mark.docker
@pytest.mark.slow
def test_holds_an_exit_code_of_zero_without_the_runners_report_is_no_pass(tmp_path: Path) -> None:
    exit_early = "    return a - b\n\nimport os as _o\n_o._exit(0)\n"
    steps: list[dict[str, object]] = [
        {
            "tool": "apply_patch",
            "args": {
                "edits": [{"path": "solution.py", "old": "    return a - b\n", "new": exit_early}]
            },
        },
        {"tool": "finish", "args": {"summary": "fixed add"}},
    ]
    (record,) = _run([_case(tmp_path, steps)], tmp_path)
    assert record.held_out.ran
    # The candidate's process left at import; the judge, another process, says so.
    assert record.held_out.exit_code == 1
    assert record.held_out.tests_run == 1
    assert record.held_out.failures + record.held_out.errors == 1
    assert not record.held_out.passed
    assert not record.passed
