"""``eval`` when Docker does not answer: one line, exit 2 (SR-10 R7).

This file imports only the CLI, so that the regression evidence can run it on the trees
of before the finding's fix, whose modules were laid out otherwise.
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from sandbox_agent.cli import main


def _eval_without_docker(
    address: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> str:
    monkeypatch.setenv("DOCKER_HOST", address)
    argv = ["eval", "--tasks", "paginator-fix", "--results-dir", str(tmp_path / "r")]
    assert main(argv) == 2
    gc.collect()  # here, under the caller's filter, not at the session's end
    return capsys.readouterr().err.strip()


# The Docker SDK leaves the socket of a failed connection to the collector.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_r7_an_unreachable_docker_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # SR-10 R7: when no Docker client could be made for the address, the backend said
    # DockerUnavailable, and eval's start-up reap let it through as a traceback.
    error = _eval_without_docker(f"bogus://{tmp_path}", tmp_path, monkeypatch, capsys)
    assert "Docker does not answer" in error
    assert "\n" not in error


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_docker_socket_with_no_daemon_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    address = f"unix://{tmp_path}/no-docker.sock"
    error = _eval_without_docker(address, tmp_path, monkeypatch, capsys)
    assert "Docker does not answer" in error
    assert "\n" not in error
