"""End to end on real Docker: fixture tasks and HumanEvalFix tasks through the controller,
held-out tests in a fresh verified sandbox, scored."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox_agent.controller import run_task
from sandbox_agent.evals.running.executor import run_all
from sandbox_agent.evals.running.options import EvalOptions
from sandbox_agent.evals.tasks import humanevalfix
from sandbox_agent.evals.tasks.suites import SuiteOptions, build_cases
from sandbox_agent.sandbox.docker.docker_backend import DockerBackend

pytestmark = [pytest.mark.docker, pytest.mark.slow]

FIXTURE_TASKS = ["intervals-false-report", "wordcount-malicious-tests", "paginator-review"]
HUMANEVALFIX_TASKS = ["humanevalfix-python-0", "humanevalfix-python-53"]


def _backend() -> DockerBackend:
    return DockerBackend(reap_on_first_use=False)


def test_fixture_tasks_pass_cleanly_and_controls_fail(tmp_path: Path) -> None:
    options = EvalOptions(jobs=2, trace_dir=tmp_path / "traces")
    reference = build_cases("fixtures", SuiteOptions(task_ids=FIXTURE_TASKS), tmp_path)
    records = run_all(reference, options, backend_factory=_backend, run_task=run_task)
    assert {r.task_id: r.clean for r in records} == dict.fromkeys(FIXTURE_TASKS, True)
    for record in records:
        assert record.held_out.ran
        assert record.held_out.attested
        # docs/CONTRACT.md section 7: every run record says how its held-out verdict was reached.
        assert record.model_dump(mode="json")["heldout"] == {
            "passed": True,
            "judge": "out_of_process",
        }
        assert record.fixture_sha256
        assert record.sandbox_failures == 0
    control_cases = build_cases(
        "fixtures", SuiteOptions(task_ids=["wordcount-malicious-tests"], fix=False), tmp_path
    )
    (control,) = run_all(control_cases, options, backend_factory=_backend, run_task=run_task)
    # Whatever the controller concludes from the repository's own (malicious) tests, the
    # held-out tests, which never import that module, see the bug is still there.
    assert not control.held_out.passed
    assert not control.passed


def test_humanevalfix_reference_passes_and_control_fails(tmp_path: Path) -> None:
    if not humanevalfix.dataset_path().is_file():
        pytest.skip("HumanEvalFix dataset not present")
    options = EvalOptions(jobs=2, trace_dir=tmp_path / "traces")
    fixed = build_cases("humanevalfix", SuiteOptions(task_ids=HUMANEVALFIX_TASKS), tmp_path / "f")
    records = run_all(fixed, options, backend_factory=_backend, run_task=run_task)
    assert [(r.status, r.passed, r.clean) for r in records] == [("SUCCEEDED", True, True)] * 2
    controls = build_cases(
        "humanevalfix", SuiteOptions(task_ids=HUMANEVALFIX_TASKS[:1], fix=False), tmp_path / "c"
    )
    (control,) = run_all(controls, options, backend_factory=_backend, run_task=run_task)
    assert control.held_out.ran
    assert not control.held_out.passed
    assert not control.passed


def _eval_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sandbox_agent", "eval", "--tasks", "paginator-fix", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_eval_resume_runs_only_what_the_folder_lacks(tmp_path: Path) -> None:
    """``eval --resume``: the runs of ``runs.jsonl`` are kept, only the missing repeat runs,
    and the report covers all of them; another evaluation's folder is refused in one line."""
    results = str(tmp_path / "results")
    first = _eval_cli("--results-dir", results)
    assert first.returncode == 0, first.stderr[-2000:]
    resumed = _eval_cli("--results-dir", results, "--repeats", "2", "--resume")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    lines = (tmp_path / "results" / "runs.jsonl").read_text().splitlines()
    assert len(lines) == 1 + 2, "the header, the first run, and only the missing repeat"
    report = json.loads((tmp_path / "results" / "report.json").read_text())
    assert [(run["repeat"], run["passed"]) for run in report["runs"]] == [(0, True), (1, True)]
    assert len(list((tmp_path / "results" / "traces").iterdir())) == 2
    other = _eval_cli("--results-dir", results, "--resume", "--max-wall-seconds", "60")
    assert other.returncode == 2
    assert other.stderr.count("\n") == 1
    assert "differs in: max_wall_seconds" in other.stderr
