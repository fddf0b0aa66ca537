"""``view``, ``verify`` and ``deps`` on the paths a user gives (issue 30, item 12): a missing path
is said not to exist, and ``view RUN_DIR`` opens that run, not a list of one."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.cli import main
from sandbox_agent.commands.view import folder_problem, start_url


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    return err


@pytest.mark.parametrize("command", ["view", "verify", "deps"])
def test_a_missing_path_is_said_not_to_exist(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-run"
    err = one_line_error(capsys, [command, str(missing)])
    assert f"{missing} does not exist" in err
    assert "is not a folder" not in err


@pytest.mark.parametrize("command", ["view", "verify", "deps"])
def test_a_file_is_said_not_to_be_a_folder(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    afile = tmp_path / "trace.jsonl"
    afile.write_text("{}\n")
    assert f"{afile} is not a folder" in one_line_error(capsys, [command, str(afile)])


def test_view_with_no_runs_yet_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANDBOX_AGENT_HOME", str(tmp_path / "state"))
    problem = folder_problem(tmp_path / "state" / "runs", given=False)
    assert problem is not None
    assert problem.startswith("no runs here yet: ")
    assert "sandbox-agent run" in problem


def test_a_run_folder_opens_the_run_itself(tmp_path: Path) -> None:
    run = tmp_path / "20261204T000000Z-abc"
    run.mkdir()
    (run / "trace.jsonl").write_text("")
    assert start_url(run, 8100) == "http://127.0.0.1:8100/#/runs/."
    only_result = tmp_path / "sealed"
    only_result.mkdir()
    (only_result / "result.json").write_text("{}")
    assert start_url(only_result, 8100) == "http://127.0.0.1:8100/#/runs/."


def test_a_results_folder_opens_the_evaluation_and_a_folder_of_runs_the_list(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "report.json").write_text("{}")
    assert start_url(results, 9) == "http://127.0.0.1:9/#/evals/."
    assert start_url(tmp_path, 9) == "http://127.0.0.1:9/"
    # A folder named like a run file is not one (only regular files count).
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "trace.jsonl").mkdir()
    assert start_url(tmp_path / "odd", 9) == "http://127.0.0.1:9/"


def test_verify_on_a_folder_of_runs_names_them_instead_of_failing_every_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `verify ~/.local/state/sandbox-agent/runs` printed seven FAIL lines about a missing
    # evidence.json (issue 30): the folder holds runs, it is not one.
    runs = tmp_path / "runs"
    for name in ("20261201T000000Z-aaa", "20261202T000000Z-bbb"):
        (runs / name).mkdir(parents=True)
        (runs / name / "trace.jsonl").write_text("{}\n")
    err = one_line_error(capsys, ["verify", str(runs)])
    assert f"{runs} holds 2 run or results folders and is not one" in err
    assert f"sandbox-agent verify {runs / '20261202T000000Z-bbb'}" in err
    assert f"sandbox-agent view {runs}" in err
    results = tmp_path / "results"
    (results / "20261203T000000Z").mkdir(parents=True)
    (results / "20261203T000000Z" / "runs.jsonl").write_text("")
    err = one_line_error(capsys, ["verify", str(results)])
    assert f"sandbox-agent verify {results / '20261203T000000Z'}" in err
    # A run folder stripped of every file still fails its checks (exit 1), never "usage".
    (tmp_path / "stripped").mkdir()
    assert main(["verify", str(tmp_path / "stripped")]) == 1
