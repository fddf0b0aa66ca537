"""The command line: a dependency that cannot be made stops ``run`` with one line before
any model turn or folder; ``sandbox-agent deps`` makes an environment ahead."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from deps_wheels import FakeIndex, make_sdist, make_wheel, serve_index

from sandbox_agent.cli import main


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeIndex]:
    files = tmp_path_factory.mktemp("index")
    make_wheel(files, "alpha", "1.0", {"alpha/__init__.py": "X = 1\n"})
    make_sdist(files, "onlysdist", "1.0")
    with serve_index(files) as served:
        yield served


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANDBOX_AGENT_DEPS_HOME", str(tmp_path / "deps-home"))
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))


def _repo(tmp_path: Path, requirements: str) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "requirements.txt").write_text(requirements)
    (repo / "test_x.py").write_text("import unittest\n")
    return repo


def test_run_stops_before_any_model_turn_with_one_line(
    index: FakeIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo(tmp_path, "onlysdist\n")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"steps": [{"tool": "finish", "args": {"summary": "x"}}]}))
    traces = tmp_path / "traces"
    argv = ["run", "--repo", str(repo), "--task", "t", "--plan", str(plan)]
    code = main([*argv, "--deps-index-url", index.url, "--trace-dir", str(traces)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("sandbox-agent run: onlysdist: no wheel, only an sdist")
    assert err.count("\n") == 1
    assert not traces.exists()  # no run folder, no trace: nothing started


def test_deps_makes_an_environment_ahead_and_says_what_it_holds(
    index: FakeIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo(tmp_path, "alpha\n")
    assert main(["deps", str(repo), "--json", "--deps-index-url", index.url]) == 0
    made = json.loads(capsys.readouterr().out)
    assert made["made"] is True
    assert made["packages"] == [{"name": "alpha", "version": "1.0"}]
    assert main(["deps", str(repo), "--deps-index-url", index.url]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"environment {made['hash'][:16]} (resolved), found in")
    assert "alpha==1.0" in out
    assert main(["deps", str(tmp_path), "--deps-index-url", index.url]) == 0
    assert "no dependencies declared" in capsys.readouterr().out


def test_deps_off_makes_nothing(index: FakeIndex, tmp_path: Path) -> None:
    repo = _repo(tmp_path, "onlysdist\n")
    assert main(["deps", str(repo), "--deps", "off", "--deps-index-url", index.url]) == 0
    assert not (tmp_path / "deps-home").exists()
