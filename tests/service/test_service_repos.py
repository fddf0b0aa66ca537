"""``serve --repo-root DIR``: a run request may name a folder by path, strictly under a
root, and nothing outside the roots is ever read for it: not at the check, not at the
copy when the run starts (a folder or a root swapped for a link in between is refused),
and not through a link or a hard link inside the folder."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fake_run import FakeRunFunction
from pydantic import ValidationError
from service_harness import LiveServer, wait_finished

from sandbox_agent.controller.models import RunConfig, RunResult
from sandbox_agent.service.repos import (
    REPO_ROOT_FLAG,
    RepoRefused,
    locate,
    snapshot,
)
from sandbox_agent.service.settings import ServiceSettings
from sandbox_agent.service.store import RunStore, StoredRun
from sandbox_agent.workspace.copy import WorkspaceLimits, copy_tree

SECRET = "operator-secret-3f9a"
TASK = "fix the page count"


class Layout:
    """``roots/`` with a repository ``roots/proj``, and ``outside/`` holding a secret."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.roots = base / "roots"
        self.repo = self.roots / "proj"
        self.outside = base / "outside"
        (self.repo / "pkg").mkdir(parents=True)
        (self.repo / "pkg" / "core.py").write_text("def page_count(t, s):\n    return t // s\n")
        (self.repo / "tests").mkdir()
        (self.repo / "tests" / "test_core.py").write_text("def test_it():\n    pass\n")
        (self.repo / "run.sh").write_text("#!/bin/sh\n")
        (self.repo / "run.sh").chmod(0o755)
        (self.repo / ".git").mkdir()
        (self.repo / ".git" / "config").write_text("[core]\n")
        (self.outside / "proj").mkdir(parents=True)
        (self.outside / "secret.txt").write_text(SECRET)
        (self.outside / "proj" / "secret.py").write_text(f"KEY = '{SECRET}'\n")
        (self.roots / "notes.txt").write_text("a file, not a folder\n")


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout(tmp_path / "place")


class CopyReader(FakeRunFunction):
    """Records, for each run, every file of the copy the run was given, with its text."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[dict[str, str]] = []
        self.modes: list[dict[str, int]] = []

    def __call__(self, config: RunConfig, **kwargs: Any) -> RunResult:
        assert config.repo is None, "the run is given the service's copy, as a fixture"
        assert config.fixtures_dir is not None
        folder = config.fixtures_dir / str(config.fixture)
        files = sorted(path for path in folder.rglob("*") if path.is_file())
        self.seen.append({str(p.relative_to(folder)): p.read_text() for p in files})
        self.modes.append({str(p.relative_to(folder)): p.stat().st_mode & 0o777 for p in files})
        return super().__call__(config, **kwargs)


def _no_secret_under(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert SECRET.encode() not in path.read_bytes(), path


def test_a_folder_under_a_root_runs_from_a_private_copy_made_by_the_copy_rule(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
    layout: Layout,
) -> None:
    (layout.repo / "leak.txt").symlink_to(layout.outside / "secret.txt")
    (layout.repo / "leakdir").symlink_to(layout.outside / "proj")
    os.link(layout.outside / "secret.txt", layout.repo / "pkg" / "hard.txt")
    (layout.repo / "pkg" / "__pycache__").mkdir()
    (layout.repo / "pkg" / "__pycache__" / "core.cpython-311.pyc").write_bytes(b"\0")
    settings = make_settings(repo_roots=(layout.roots,))
    reader = CopyReader()
    server = start_server(settings, reader)
    with server.client() as client:
        assert client.get("/fixtures").json()["repo_roots"] == [str(layout.roots)]
        answer = client.post("/runs", json={"repo": str(layout.repo), "task": TASK})
        assert answer.status_code == 202, answer.text
        run = wait_finished(client, answer.json()["id"])
        assert run["status"] == "SUCCEEDED"
        assert run["repo"] == str(layout.repo)
        assert run["fixture_name"] == ""
        assert client.get("/runs").json()["runs"][0]["repo"] == str(layout.repo)
    assert reader.seen == [
        {
            "pkg/core.py": "def page_count(t, s):\n    return t // s\n",
            "run.sh": "#!/bin/sh\n",
            "tests/test_core.py": "def test_it():\n    pass\n",
        }
    ]
    assert reader.modes[0]["run.sh"] == 0o755
    assert reader.calls[0].fixture == "proj"
    assert reader.calls[0].fixtures_dir == settings.snapshots_dir / run["id"]
    assert not (settings.snapshots_dir / run["id"]).exists(), "the copy is removed at the end"
    _no_secret_under(settings.work_dir)


def _refused(server: LiveServer, repo: str) -> str:
    # Escaped to ASCII: a lone surrogate is valid in a JSON escape, not in UTF-8.
    body = json.dumps({"repo": repo, "task": TASK}).encode("ascii")
    with server.client() as client:
        headers = {"Content-Type": "application/json"}
        answer = client.post("/runs", content=body, headers=headers)
        assert answer.status_code == 422, answer.text
        assert client.get("/runs").json()["total"] == 0
    detail: str = answer.json()["detail"]
    assert isinstance(detail, str)
    assert "\n" not in detail
    assert REPO_ROOT_FLAG in detail, detail
    return detail


@pytest.mark.parametrize(
    ("make_path", "says"),
    [
        (lambda x: x.roots / "link", "is a symbolic link"),
        (lambda x: x.roots / "link" / "proj", "is a symbolic link"),
        (lambda x: x.roots / "alias", "is a symbolic link"),
        (lambda x: f"{x.roots}/proj/../../outside/proj", "'..'"),
        (lambda x: f"{x.roots}/./proj", "'.'"),
        (lambda x: x.outside / "proj", "not under a repository root"),
        (lambda x: "/etc", "not under a repository root"),
        (lambda x: x.roots, "repository root itself"),
        (lambda x: f"{x.roots}/", "repository root itself"),
        (lambda x: x.roots / "missing", "does not exist"),
        (lambda x: x.roots / "notes.txt", "is not a folder"),
        (lambda x: "roots/proj", "not an absolute path"),
        (lambda x: f"{x.roots}/proj\0", "not a valid path"),
        (lambda x: f"{x.roots}x/proj", "not under a repository root"),
    ],
)
def test_a_path_that_is_not_a_real_folder_under_a_root_is_refused_naming_the_flag(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
    layout: Layout,
    make_path: Callable[[Layout], object],
    says: str,
) -> None:
    (layout.roots / "link").symlink_to(layout.outside)
    (layout.roots / "alias").symlink_to(layout.repo)
    (layout.base / "rootsx" / "proj").mkdir(parents=True)
    reader = CopyReader()
    server = start_server(make_settings(repo_roots=(layout.roots,)), reader)
    assert says in _refused(server, str(make_path(layout)))
    assert reader.calls == []


def test_a_path_with_a_lone_surrogate_is_refused(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
    layout: Layout,
) -> None:
    server = start_server(make_settings(repo_roots=(layout.roots,)), CopyReader())
    body = json.dumps({"repo": f"{layout.roots}/\ud800", "task": TASK}).encode("ascii")
    with server.client() as client:
        headers = {"Content-Type": "application/json"}
        answer = client.post("/runs", content=body, headers=headers)
        assert answer.status_code == 422, answer.text
        assert client.get("/runs").json()["total"] == 0


def test_without_a_root_a_repo_request_is_refused_saying_which_flag_allows_it(
    server: LiveServer, tmp_path: Path
) -> None:
    detail = _refused(server, str(tmp_path))
    assert "takes no repository paths" in detail


@pytest.mark.parametrize(
    "body",
    [
        {"task": TASK},
        {"task": TASK, "fixture": "paginator", "repo": "/srv/repos/x"},
        {"task": TASK, "repo": ""},
    ],
)
def test_exactly_one_of_fixture_and_repo(server: LiveServer, body: dict[str, Any]) -> None:
    with server.client() as client:
        assert client.post("/runs", json=body).status_code == 422


class Gate(FakeRunFunction):
    """The first run holds until ``release``: the next one waits, queued, meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.reader = CopyReader()

    def __call__(self, config: RunConfig, **kwargs: Any) -> RunResult:
        if len(self.calls) == 0:
            assert self.release.wait(30)
            return super().__call__(config, **kwargs)
        self.calls.append(config)
        return self.reader(config, **kwargs)


def _swapped_before_the_copy(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
    layout: Layout,
    swap: Callable[[], None],
) -> tuple[dict[str, Any], Gate, ServiceSettings]:
    """Submit a repo run (checked: 202) while a first run holds the only worker, ``swap``
    the filesystem, then let the repo run start."""
    settings = make_settings(repo_roots=(layout.roots,), max_concurrent=1)
    gate = Gate()
    server = start_server(settings, gate)
    with server.client() as client:
        first = client.post("/runs", json={"fixture": "paginator", "task": TASK}).json()["id"]
        answer = client.post("/runs", json={"repo": str(layout.repo), "task": TASK})
        assert answer.status_code == 202, "the path was a real folder when it was checked"
        assert client.get(f"/runs/{answer.json()['id']}").json()["status"] == "QUEUED"
        swap()
        gate.release.set()
        assert wait_finished(client, first)["status"] == "SUCCEEDED"
        return wait_finished(client, answer.json()["id"]), gate, settings


def test_a_folder_swapped_for_a_link_after_the_check_is_refused_at_copy_time(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
    layout: Layout,
) -> None:
    def swap() -> None:
        layout.repo.rename(layout.roots / "proj.real")
        layout.repo.symlink_to(layout.outside / "proj")

    run, gate, settings = _swapped_before_the_copy(make_settings, start_server, layout, swap)
    assert run["status"] == "FAILED"
    assert run["reason"].startswith("rejected: repo ")
    assert "'proj' is a symbolic link" in run["reason"]
    assert gate.reader.calls == [], "the run never started"
    _no_secret_under(settings.work_dir)


def test_a_root_swapped_for_a_link_after_the_check_is_refused_at_copy_time(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
    layout: Layout,
) -> None:
    def swap() -> None:
        layout.roots.rename(layout.base / "roots.real")
        layout.roots.symlink_to(layout.outside)

    run, gate, settings = _swapped_before_the_copy(make_settings, start_server, layout, swap)
    assert run["status"] == "FAILED"
    assert f"the repository root {layout.roots} is no longer a real folder" in run["reason"]
    assert gate.reader.calls == []
    _no_secret_under(settings.work_dir)


def test_a_component_swapped_for_a_link_during_the_copy_walk_is_refused(
    layout: Layout, tmp_path: Path
) -> None:
    """The last moment: between the walk's step to ``roots`` and its open of ``proj``."""
    location = locate(str(layout.repo), (layout.roots,))

    def swap(dir_fd: int, name: str) -> None:
        if name == "proj":
            layout.repo.rename(layout.roots / "proj.real")
            layout.repo.symlink_to(layout.outside / "proj")

    with pytest.raises(RepoRefused, match="'proj' is a symbolic link"):
        snapshot(location, tmp_path / "copy", hook=swap)
    assert not (tmp_path / "copy").exists()


def test_a_root_swapped_during_the_copy_walk_is_refused(layout: Layout, tmp_path: Path) -> None:
    location = locate(str(layout.repo), (layout.roots,))

    def swap(dir_fd: int, name: str) -> None:
        if name == "roots":
            layout.roots.rename(layout.base / "roots.real")
            layout.roots.symlink_to(layout.outside)

    with pytest.raises(RepoRefused, match="no longer a real folder"):
        snapshot(location, tmp_path / "copy", hook=swap)
    assert not (tmp_path / "copy").exists()


def test_the_copy_keeps_to_the_workspace_copy_rule(layout: Layout, tmp_path: Path) -> None:
    repo = layout.repo
    (repo / "leak.txt").symlink_to(layout.outside / "secret.txt")
    (repo / "leakdir").symlink_to(layout.outside)
    os.link(layout.outside / "secret.txt", repo / "hard.txt")
    os.mkfifo(repo / "pipe")
    (repo / "pkg" / "__pycache__").mkdir()
    (repo / "pkg" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (repo / "pkg" / "deep" / "er").mkdir(parents=True)
    (repo / "pkg" / "deep" / "er" / "f.py").write_text("x = 1\n")
    (repo / "pkg" / "ro.py").write_text("y = 2\n")
    (repo / "pkg" / "ro.py").chmod(0o400)
    limits = WorkspaceLimits()
    ours = snapshot(locate(str(repo), (layout.roots,)), tmp_path / "ours", limits=limits)
    (tmp_path / "theirs").mkdir()
    theirs = copy_tree(repo, (tmp_path / "theirs",), limits)
    assert ours == theirs
    assert {entry.path for entry in ours} == {"hard.txt", "leak.txt", "leakdir", "pipe"}

    def listing(folder: Path) -> dict[str, tuple[int, bytes]]:
        return {
            str(path.relative_to(folder)): (path.stat().st_mode & 0o777, path.read_bytes())
            for path in sorted(folder.rglob("*"))
            if path.is_file()
        }

    assert listing(tmp_path / "ours") == listing(tmp_path / "theirs")
    _no_secret_under(tmp_path / "ours")


def test_a_folder_over_the_copy_limits_is_refused(layout: Layout, tmp_path: Path) -> None:
    from sandbox_agent.errors import UsageError

    location = locate(str(layout.repo), (layout.roots,))
    with pytest.raises(UsageError, match="more than 2 files"):
        snapshot(location, tmp_path / "a", limits=WorkspaceLimits(max_files=2))
    with pytest.raises(UsageError, match="over the copy's limits"):
        snapshot(location, tmp_path / "b", limits=WorkspaceLimits(max_file_bytes=5))


def test_copies_a_killed_server_left_are_removed_at_the_next_start(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
    layout: Layout,
) -> None:
    settings = make_settings(repo_roots=(layout.roots,))
    store = RunStore(settings.db_path)
    ours, unknown = "a" * 32, "b" * 32
    store.insert(
        StoredRun(ours, "RUNNING", "", "", TASK, "scripted", None, 1.0, 2.0, None, None,
                  "tools", str(layout.repo))
    )  # fmt: skip
    store.close()
    for run_id in (ours, unknown):
        (settings.snapshots_dir / run_id / "proj").mkdir(parents=True)
    server = start_server(settings, FakeRunFunction())
    with server.client() as client:
        assert client.get(f"/runs/{ours}").json()["status"] == "INTERRUPTED"
    assert not (settings.snapshots_dir / ours).exists()
    assert (settings.snapshots_dir / unknown).exists(), "not this database's run: left alone"


@pytest.mark.parametrize(
    ("make_root", "says"),
    [
        (lambda x, s: x.base / "rootlink", "is not its own real path"),
        (lambda x, s: Path("roots"), "is not an absolute path"),
        (lambda x, s: x.base / "missing", "is not a folder"),
        (lambda x, s: x.roots / "notes.txt", "is not a folder"),
        (lambda x, s: Path(f"{x.roots}/proj/.."), "is not its own real path"),
        (lambda x, s: Path("/"), "/ would let a request name any folder"),
        (lambda x, s: s, "overlaps the service's own state"),
        (lambda x, s: s / "runs", "overlaps the service's own state"),
        (lambda x, s: s.parent, "overlaps the service's own state"),
        (lambda x, s: s / "db" / "..", "is not its own real path"),
    ],
)
def test_a_root_is_checked_when_the_server_starts(
    make_settings: Callable[..., ServiceSettings],
    layout: Layout,
    make_root: Callable[[Layout, Path], Path],
    says: str,
) -> None:
    """A root that is itself a link is refused, naming its real path: roots are taken as
    given, never resolved, so no later change of a link can move one."""
    (layout.base / "rootlink").symlink_to(layout.roots)
    work = layout.base / "work"
    (work / "runs").mkdir(parents=True)
    with pytest.raises(ValidationError, match=says):
        make_settings(work_dir=work, repo_roots=(make_root(layout, work),))


def test_a_root_that_is_a_link_is_refused_naming_its_real_path(
    make_settings: Callable[..., ServiceSettings], layout: Layout
) -> None:
    (layout.base / "rootlink").symlink_to(layout.roots)
    with pytest.raises(ValidationError, match=f"give {layout.roots}"):
        make_settings(repo_roots=(layout.base / "rootlink",))


def test_several_roots_each_allow_their_own_folders(
    make_settings: Callable[..., ServiceSettings],
    start_server: Callable[..., LiveServer],
    layout: Layout,
) -> None:
    other = layout.base / "more"
    (other / "lib").mkdir(parents=True)
    (other / "lib" / "x.py").write_text("x = 1\n")
    reader = CopyReader()
    server = start_server(make_settings(repo_roots=(layout.roots, other)), reader)
    with server.client() as client:
        for repo in (layout.repo, other / "lib"):
            answer = client.post("/runs", json={"repo": str(repo), "task": TASK})
            assert answer.status_code == 202
            assert wait_finished(client, answer.json()["id"])["status"] == "SUCCEEDED"
    assert [sorted(seen) for seen in reader.seen] == [
        ["pkg/core.py", "run.sh", "tests/test_core.py"],
        ["x.py"],
    ]
