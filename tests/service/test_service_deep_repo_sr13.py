"""SR-13 F7: a ``repo`` nested past PATH_MAX under the service's copy folder.

The service copies a ``repo`` into ``work_dir/repos/<run id>/<name>``, a longer prefix
than ``run --repo``'s workspace: a tree whose paths fit under PATH_MAX there went past it
here, the copy failed with ``[Errno 36] File name too long`` and the run ended
``SANDBOX_ERROR``. The copy now writes through folder descriptors, as it reads, so the
service takes such a tree as ``run --repo`` does (and the nesting limit,
``fsops.MAX_WALK_DEPTH``, is refused by both with the same one line).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from service_harness import LiveServer, wait_finished

from sandbox_agent.controller import run_task
from sandbox_agent.controller.models import RunConfig, RunResult
from sandbox_agent.errors import UsageError
from sandbox_agent.sandbox.fake import FakeBackend, completed
from sandbox_agent.service.repos import locate, snapshot
from sandbox_agent.service.settings import ServiceSettings
from sandbox_agent.workspace import fsops
from sandbox_agent.workspace.copy import WorkspaceLimits, copy_tree

PATH_MAX = os.pathconf("/", "PC_PATH_MAX")
DEEP = ["d" * 200] * 20
"""The reviewer's folder: 20 levels of 200-character names (about 4 020 characters)."""
CORE = "def add(a, b):\n    return a - b\n"
TEST = "import unittest\nfrom calc.core import add\n\n\nclass T(unittest.TestCase):\n"
TEST += "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"


def make_deep(place: Path, levels: list[str]) -> Path:
    """A repository ``place`` with ``calc/core.py``, a test, and ``calc/<levels>/x.py``,
    made through folder descriptors (its paths may be past PATH_MAX)."""
    (place / "calc").mkdir(parents=True)
    (place / "calc" / "__init__.py").write_text("")
    (place / "calc" / "core.py").write_text(CORE)
    (place / "test_calc.py").write_text(TEST)
    fd = os.open(place / "calc", fsops.DIR_FLAGS)
    try:
        for name in levels:
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, fsops.DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        file_fd = os.open("x.py", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=fd)
        os.write(file_fd, b"x = 1\n")
        os.close(file_fd)
    finally:
        os.close(fd)
    return place


def read_deep(folder: Path, levels: list[str]) -> bytes:
    """``calc/<levels>/x.py`` under ``folder``, read through folder descriptors."""
    fd = os.open(folder, fsops.DIR_FLAGS)
    try:
        inner = fsops.open_dir(fd, ("calc", *levels))
    finally:
        os.close(fd)
    try:
        file_fd, _ = fsops.open_regular(inner, "x.py", "x.py")
    finally:
        os.close(inner)
    try:
        return fsops.read_fd(file_fd, 100)
    finally:
        os.close(file_fd)


def test_sr13_f7_the_copy_writes_a_tree_past_path_max_under_a_long_destination(
    tmp_path: Path,
) -> None:
    roots = tmp_path / "roots"
    repo = make_deep(roots / "deep", DEEP)
    destination = tmp_path / ("w" * 200) / "repos" / ("0" * 32) / "deep"
    destination.parent.mkdir(parents=True)
    assert len(f"{destination}/calc/{'/'.join(DEEP)}/x.py") > PATH_MAX

    skipped = snapshot(locate(str(repo), (roots,)), destination)

    assert skipped == []
    assert read_deep(destination, DEEP) == b"x = 1\n"
    assert (destination / "calc" / "core.py").read_text() == CORE
    # run --repo's copy (copy_tree) takes the same tree the same way.
    theirs = tmp_path / ("t" * 200)
    theirs.mkdir()
    assert copy_tree(repo, (theirs,), WorkspaceLimits()) == []
    assert read_deep(theirs, DEEP) == b"x = 1\n"


def test_sr13_f7_holds_a_tree_past_the_nesting_limit_is_one_line_for_both_copies(
    tmp_path: Path,
) -> None:
    roots = tmp_path / "roots"
    repo = make_deep(roots / "deep", ["d"] * (fsops.MAX_WALK_DEPTH + 1))
    (tmp_path / "theirs").mkdir()

    with pytest.raises(UsageError) as ours:
        snapshot(locate(str(repo), (roots,)), tmp_path / "ours")
    with pytest.raises(UsageError) as theirs:
        copy_tree(repo, (tmp_path / "theirs",), WorkspaceLimits())

    said = f"nested deeper than {fsops.MAX_WALK_DEPTH} folders"
    assert said in str(ours.value)
    assert said in str(theirs.value)
    assert "\n" not in str(ours.value)


class RealController:
    """The service's run function: the real controller, on the fake sandbox backend."""

    def __init__(self) -> None:
        self.results: list[RunResult] = []

    def __call__(self, config: RunConfig, **kwargs: Any) -> RunResult:
        passed = completed(exit_code=0, tests_run=1, failures=0)
        result = run_task(config, sandbox=FakeBackend([passed, passed, passed]), **kwargs)
        self.results.append(result)
        return result


def test_sr13_f7_a_repo_nested_past_path_max_is_not_a_sandbox_error(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
    tmp_path: Path,
) -> None:
    roots = tmp_path / "roots"
    repo = make_deep(roots / "deep", DEEP)
    settings = make_settings(repo_roots=(roots,))
    controller = RealController()
    server = start_server(settings, controller)
    plan = {"steps": [{"tool": "finish", "args": {"summary": "x"}}]}
    with server.client() as client:
        answer = client.post("/runs", json={"repo": str(repo), "task": "t", "plan": plan})
        assert answer.status_code == 202, answer.text
        run = wait_finished(client, answer.json()["id"])

    # The fake sandbox passes the tests: the run ends as the same tree under run --repo.
    assert run["status"] == "SUCCEEDED", run["reason"]
    (result,) = controller.results
    assert result.status == run["status"]
    assert not (settings.snapshots_dir / run["id"]).exists(), "the copy is removed at the end"
