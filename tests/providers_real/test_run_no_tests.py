"""A repository with no tests is refused before the first model call (issue 30): one
line saying what the runner looked for and the flag that allows a read-only task; exit 2;
no request reaches the model, no run folder is made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_model_servers import FakeModelServer

from sandbox_agent.cli import main
from sandbox_agent.controller import RunConfig, run_task
from sandbox_agent.controller.test_files import search_tests
from sandbox_agent.providers.options import PlanOptions
from sandbox_agent.sandbox.fake import FakeBackend, completed


def repo_without_tests(tmp_path: Path, **files: str) -> Path:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "core.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "README.md").write_text("Adds numbers.\n")
    for name, text in files.items():
        path = repo / name.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return repo


def run_cli(server: FakeModelServer, repo: Path, tmp_path: Path, *extra: str) -> int:
    argv = ["run", "--repo", str(repo), "--task", "Fix add.", "--provider", "openai",
            "--base-url", f"{server.url}/v1", "--model", "gpt-4o-mini",
            "--price-per-mtok-in", "0", "--price-per-mtok-out", "0",
            "--ledger", str(tmp_path / "ledger.sqlite3"), "--trace-dir", str(tmp_path / "runs"),
            *extra]  # fmt: skip
    return main(argv)


def test_a_repository_without_tests_is_refused_before_the_first_model_call(
    server: FakeModelServer, online: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = repo_without_tests(tmp_path)

    assert run_cli(server, repo, tmp_path) == 2

    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert err == (
        f"sandbox-agent run: {repo} has no tests: unittest discovery loads test*.py modules "
        "from the repository root, and there are none, so no change could be checked; add "
        "tests, or pass --allow-no-tests for a task that needs none (read-only: such a run "
        "cannot end SUCCEEDED)"
    )
    assert server.received == []  # no model call, nothing spent
    assert not (tmp_path / "runs").exists()  # no run folder


def test_a_pytest_repository_says_what_pytest_collects(
    server: FakeModelServer, online: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = '[tool.pytest.ini_options]\npython_files = ["check_*.py"]\n'
    repo = repo_without_tests(tmp_path, **{"pyproject.toml": config})

    assert run_cli(server, repo, tmp_path) == 2

    err = capsys.readouterr().err
    assert "pytest (configured in this repository) collects test_*.py, *_test.py, check_*.py" in err
    assert server.received == []


def test_a_configured_test_file_name_is_found(tmp_path: Path) -> None:
    config = '[tool.pytest.ini_options]\npython_files = ["check_*.py"]\n'
    repo = repo_without_tests(tmp_path, **{"pyproject.toml": config, "checks__check_add.py": ""})

    assert search_tests(repo, "pytest").found == "checks/check_add.py"


def test_a_test_file_inside_version_control_metadata_does_not_count(tmp_path: Path) -> None:
    repo = repo_without_tests(tmp_path, **{".git__hooks__test_hook.py": ""})

    assert search_tests(repo, "unittest").found is None


def test_allow_no_tests_runs_a_read_only_task(tmp_path: Path) -> None:
    repo = repo_without_tests(tmp_path)
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"steps": [{"tool": "finish", "args": {"summary": "It subtracts."}}]})
    )
    config = RunConfig(
        task="What does add do?",
        repo=repo,
        provider_options=PlanOptions(plan_path=str(plan)),
        trace_dir=tmp_path / "runs",
        allow_no_tests=True,
    )

    result = run_task(config, sandbox=FakeBackend([completed(exit_code=5, tests_run=0)]))

    assert result.model_summary == "It subtracts."
    assert result.status == "FAILED"  # nothing verified it: never SUCCEEDED
