"""``workspace.reap.reap_all``: what ``sandbox-agent reap`` removes, containers first (the
sandbox layer's reaper), then workspaces (this layer's); a daemon that does not answer
stops it before any workspace is touched."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from sandbox_agent.errors import DockerUnavailable
from sandbox_agent.workspace import reap
from sandbox_agent.workspace.owner import OWNER_FILE, WORKSPACE_PREFIX, reap_workspaces


def _abandoned(tmp_path: Path) -> Path:
    folder = tmp_path / f"{WORKSPACE_PREFIX}dead"
    folder.mkdir()
    # A pid above the kernel's largest (2**22): certainly no process.
    label = {"host": socket.gethostname(), "pid": 2**22 + 1, "start_time": "1", "created": 0}
    (folder / OWNER_FILE).write_text(json.dumps(label))
    return folder


def test_containers_then_workspaces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _abandoned(tmp_path)
    monkeypatch.setattr(reap, "reap_dead_containers", lambda: (["container abc"], ["x: busy"]))
    monkeypatch.setattr(reap, "reap_workspaces", lambda: reap_workspaces(tmp_path))
    removed, failures = reap.reap_all()
    assert removed == ["container abc", f"workspace {folder}"]
    assert failures == ["x: busy"]
    assert not folder.exists()


def test_no_daemon_reaps_no_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _abandoned(tmp_path)

    def unavailable() -> tuple[list[str], list[str]]:
        raise DockerUnavailable("cannot reach Docker")

    monkeypatch.setattr(reap, "reap_dead_containers", unavailable)
    monkeypatch.setattr(reap, "reap_workspaces", lambda: reap_workspaces(tmp_path))
    with pytest.raises(DockerUnavailable):
        reap.reap_all()
    assert folder.exists()
