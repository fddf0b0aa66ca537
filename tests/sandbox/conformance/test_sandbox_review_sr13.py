"""SR-13 F3: a run's deadline stops a sandbox that is already running.

``CancelToken.deadline`` was checked only before create, before start and before the
go: a workload that was running when the run's wall clock ran out went on until its own
test timeout (``--max-wall-seconds 10`` lasted 41-57 s).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox_agent.sandbox.base import CancelToken, SandboxLimits, SandboxRequest
from sandbox_agent.sandbox.docker.docker_backend import DockerBackend
from sandbox_agent.sandbox.docker.reaper import list_sandboxes

pytestmark = pytest.mark.docker

LIMITS = SandboxLimits(timeout_s=60, memory_bytes=128 * 1024 * 1024, pids=96)


@pytest.fixture
def workspace() -> Iterator[Path]:
    # Not pytest's tmp_path: its parents are 0700, and uid 10001 must enter /workspace.
    root = Path(tempfile.mkdtemp(prefix="sandbox-sr13-"))
    root.chmod(0o755)
    yield root
    root.rmdir()


def deadline_after_start(
    backend: DockerBackend, token: CancelToken, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Give ``token`` a deadline 1 s after the container has started: a deadline passed
    before the start is a different outcome (``started`` false), tested elsewhere."""
    start = backend.start

    def start_then_set_the_deadline(*args: Any, **kwargs: Any) -> Any:
        started = start(*args, **kwargs)
        token.deadline = time.monotonic() + 1.0
        return started

    monkeypatch.setattr(backend, "start", start_then_set_the_deadline)


def sleeper(workspace: Path) -> SandboxRequest:
    return SandboxRequest(
        argv=("python3", "-c", "import time; time.sleep(50)"), workspace=workspace, limits=LIMITS
    )


def test_sr13_f3_a_deadline_that_passes_while_the_workload_runs_kills_it(
    backend: DockerBackend, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cancel = CancelToken()
    deadline_after_start(backend, cancel, monkeypatch)
    result = backend.run(sleeper(workspace), cancel)
    assert result.started
    assert result.status == "timeout", result.reason
    assert "wall clock" in result.reason
    assert cancel.deadline is not None
    assert time.monotonic() - cancel.deadline < 15  # not the workload's own 60 s
    assert result.cleanup == "removed"
    assert list_sandboxes(backend.api, owner=backend.owner) == []


def test_sr13_f3_a_parents_deadline_kills_a_childs_running_workload(
    backend: DockerBackend, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The baseline's token is a child of the run's: the run's deadline reaches it."""
    parent = CancelToken()
    deadline_after_start(backend, parent, monkeypatch)
    result = backend.run(sleeper(workspace), CancelToken(parent=parent))
    assert (result.status, result.started) == ("timeout", True), result.reason
    assert parent.deadline is not None
    assert time.monotonic() - parent.deadline < 15
