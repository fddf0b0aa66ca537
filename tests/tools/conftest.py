"""A small repository in a workspace, and a ToolBox over it with the fake sandbox backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from toolbox_helpers import make_repo

from sandbox_agent.policy import Policy
from sandbox_agent.sandbox.fake import FakeBackend
from sandbox_agent.tools import ToolBox
from sandbox_agent.workspace import Workspace


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    with Workspace.create(make_repo(tmp_path), base_dir=tmp_path) as ws:
        yield ws


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
def toolbox(workspace: Workspace, backend: FakeBackend) -> ToolBox:
    return ToolBox(workspace, Policy(runner="unittest"), backend)
