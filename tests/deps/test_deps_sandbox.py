"""Dependencies in the real sandbox, on runc and runsc (issue 17).

A repository whose tests import a package from a (loopback) index runs them with it
present and the network off; a hostile wheel's start-up hooks and shadowing modules
reach nothing trusted; a mounted environment that is not the one the spec pinned is
refused by PID 1; the held-out judge works with dependencies (the candidate imports
them, the judge does not).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from deps_wheels import FakeIndex, make_wheel, serve_index

from sandbox_agent.cli import main
from sandbox_agent.deps import DepsOptions, prepare_environment
from sandbox_agent.evals.running.heldout import run_held_out
from sandbox_agent.sandbox.base import EnvironmentMount, SandboxLimits, SandboxRequest
from sandbox_agent.sandbox.docker.docker_backend import DockerBackend
from sandbox_supervisor.launch import RUNNER_ARGV

pytestmark = pytest.mark.docker

RUNTIMES = [pytest.param("runc"), pytest.param("runsc", marks=pytest.mark.runsc)]
MARKERS = ("/tmp/pth-ran", "/tmp/sitecustomize-ran", "/tmp/usercustomize-ran")
HOOK = "open({marker!r}, 'w').write('ran')\n"
PLAINDEP = "def double(x):\n    return 2 * x\n"
SNIFFDEP = (
    "import sys\n"
    "if any('collect' in arg for arg in sys.argv):\n"
    "    raise ImportError('not when collected')\n"
    "def double(x):\n    return 2 * x\n"
)
"""A dependency that cannot be imported when the suite is only collected (the outside
review of 2026-12-05 used it; a flaky import does the same one time in two)."""
PLAN = {"steps": [{"tool": "run_tests", "args": {}}, {"tool": "finish", "args": {"summary": "ok"}}]}

HOSTILE_FILES: dict[str, str | bytes] = {
    "hostiledep/__init__.py": "VALUE = 42\n",
    # A start-up hook: site would run this line at interpreter start if it processed
    # the folder as a site directory.
    "hostile-hook.pth": "import os; " + HOOK.format(marker=MARKERS[0]),
    "sitecustomize.py": HOOK.format(marker=MARKERS[1]),
    "usercustomize.py": HOOK.format(marker=MARKERS[2]),
    # Shadows of the standard library and of the trusted code.
    "json/__init__.py": "HOSTILE = True\n",
    "unittest/__init__.py": "HOSTILE = True\nraise SystemExit(0)\n",
    "sandbox_supervisor/__init__.py": "HOSTILE = True\n",
    "sandbox_supervisor/run_tests.py": "HOSTILE = True\nraise SystemExit(0)\n",
    "sandbox_supervisor/judge.py": "HOSTILE = True\nraise SystemExit(0)\n",
    "pytest/__init__.py": "HOSTILE = True\nraise SystemExit(0)\n",
}

HOSTILE_TESTS = f"""
import json, os, sys, unittest

import hostiledep
import sandbox_supervisor.run_tests


class HostileWheel(unittest.TestCase):
    def test_the_dependency_is_there(self):
        self.assertEqual(hostiledep.VALUE, 42)
        self.assertEqual(hostiledep.__file__, "/deps/site/hostiledep/__init__.py")

    def test_no_start_up_hook_ran(self):
        for marker in {MARKERS!r}:
            self.assertFalse(os.path.exists(marker), marker)
        for hook in ("sitecustomize", "usercustomize"):  # Debian's own may be there
            where = getattr(sys.modules.get(hook), "__file__", None) or ""
            self.assertFalse(where.startswith("/deps"), where)

    def test_the_standard_library_and_the_runner_are_not_shadowed(self):
        self.assertFalse(hasattr(json, "HOSTILE"))
        self.assertFalse(hasattr(unittest, "HOSTILE"))
        self.assertTrue(json.__file__.startswith("/usr/lib/python3.11/"), json.__file__)
        self.assertFalse(hasattr(sandbox_supervisor.run_tests, "HOSTILE"))
        self.assertTrue(sandbox_supervisor.run_tests.__file__.startswith("/usr/lib/python3.11/"))

    def test_the_path_has_the_environment_after_the_standard_library(self):
        site = sys.path.index("/deps/site")
        self.assertLess(sys.path.index("/usr/lib/python3.11"), site)
        self.assertEqual(sys.path[0], "/workspace")

    def test_a_failure_is_still_a_failure(self):
        self.assertEqual(os.environ.get("HOSTILE_MAKES_THIS_PASS"), "yes")
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeIndex]:
    files = tmp_path_factory.mktemp("index")
    make_wheel(files, "hostiledep", "1.0", HOSTILE_FILES)
    make_wheel(files, "plaindep", "2.0", {"plaindep/__init__.py": PLAINDEP})
    make_wheel(files, "sniffdep", "1.0", {"sniffdep/__init__.py": SNIFFDEP})
    with serve_index(files) as served:
        yield served


@pytest.fixture(autouse=True)
def deps_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "deps-home"
    monkeypatch.setenv("SANDBOX_AGENT_DEPS_HOME", str(home))
    return home


def _run(
    capsys: pytest.CaptureFixture[str], repo: Path, index: FakeIndex, runtime: str, tmp: Path
) -> tuple[int, dict[str, Any]]:
    plan = tmp / "plan.json"
    plan.write_text(json.dumps(PLAN))
    argv = ["run", "--json", "--repo", str(repo), "--task", "run the tests", "--plan", str(plan)]
    argv += ["--runtime", runtime, "--deps-index-url", index.url, "--trace-dir", str(tmp / "t")]
    code = main(argv)
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_repository_runs_its_tests_with_its_dependency_and_no_network(
    runtime: str, index: FakeIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "calc"\nversion = "0"\ndependencies = ["plaindep>=2"]\n'
    )
    (repo / "calc.py").write_text(
        "import plaindep\n\ndef quadruple(x):\n    return plaindep.double(plaindep.double(x))\n"
    )
    (repo / "test_calc.py").write_text(
        "import socket, unittest\nimport calc\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_quadruple(self):\n        self.assertEqual(calc.quadruple(3), 12)\n"
        "    def test_no_network(self):\n"
        "        with self.assertRaises(OSError):\n"
        "            socket.create_connection(('10.0.0.1', 80), timeout=2)\n"
    )
    code, result = _run(capsys, repo, index, runtime, tmp_path)
    assert code == 0, result["reason"]
    assert result["status"] == "SUCCEEDED"
    assert result["final_tests"]["tests_run"] == 2
    assert result["environment"]["packages"] == [{"name": "plaindep", "version": "2.0"}]
    trace = (Path(result["trace_path"])).read_text()
    assert result["environment"]["hash"] in trace


@pytest.mark.parametrize("dependency", ["plaindep", "sniffdep"])
def test_the_original_suite_is_collected_with_the_dependencies_too(
    index: FakeIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str], dependency: str
) -> None:
    # The baseline (the original tree's collected ids, and its own run when the final
    # run skipped some) ran without the dependency environment: the test module could
    # not be imported, no id was collected, and a failing test made to skip by code
    # under test (SR-13 F1) went unnoticed in a repository with dependencies: SUCCEEDED.
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    # sniffdep: a module the original's collect-only run cannot import is listed by the
    # original's own run, and its skips compared with that run's (SR-14 F3)
    (repo / "requirements.txt").write_text(f"{dependency}\n")
    buggy = f"import {dependency}\n\ndef quadruple(x):\n    return {dependency}.double(x)\n"
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "calc.py").write_text(buggy)
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "test_calc.py").write_text(
        "import unittest\nfrom pkg.calc import quadruple\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_quadruple(self):\n        self.assertEqual(quadruple(3), 12)\n"
        "    def test_other(self):\n        self.assertTrue(True)\n"
    )
    skipping = "import unittest\n\ndef quadruple(x):\n    raise unittest.SkipTest('platform')\n"
    edit = {"path": "pkg/calc.py", "old": buggy, "new": skipping}
    plan = tmp_path / "plan.json"
    steps = [{"tool": "apply_patch", "args": {"edits": [edit]}}, *PLAN["steps"]]
    plan.write_text(json.dumps({"steps": steps}))
    argv = ["run", "--json", "--repo", str(repo), "--task", "fix it", "--plan", str(plan)]
    argv += ["--deps-index-url", index.url, "--trace-dir", str(tmp_path / "t")]
    code = main(argv)
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "FAILED", result["reason"]
    assert code == 1
    assert "skipped, which the original runs: tests.test_calc.T.test_quadruple" in result["reason"]
    baseline = [
        event
        for event in map(json.loads, Path(result["trace_path"]).read_text().splitlines())
        if event["event"] == "sandbox_run" and event.get("purpose") == "baseline"
    ]
    if dependency == "plaindep":
        assert baseline[0]["runner_report"]["broken"] == []
        assert len(baseline[0]["runner_report"]["ids"]) == 2


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_hostile_wheel_reaches_nothing_trusted(
    runtime: str, index: FakeIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "requirements.txt").write_text("hostiledep==1.0\n")
    (repo / "test_hostile.py").write_text(HOSTILE_TESTS)
    code, result = _run(capsys, repo, index, runtime, tmp_path)
    assert code == 1
    (run,) = [c["result"] for c in result["tool_calls"] if c["tool"] == "run_tests"]
    # Every check passed but the one that must fail: the runner counted honestly, with
    # the hostile package's unittest, pytest and sandbox_supervisor nowhere in it.
    assert run["status"] == "completed"
    assert run["attested"] is True
    assert (run["tests_run"], run["failures"]) == (5, 1), run["summary"]
    assert result["status"] == "FAILED"


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_pytest_runner_keeps_its_own_pytest(
    runtime: str, index: FakeIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "requirements.txt").write_text("hostiledep==1.0\n")
    (repo / "conftest.py").write_text("")
    (repo / "test_it.py").write_text(
        "import pytest, hostiledep\n\n"
        "def test_pytest_is_the_images():\n"
        "    assert not hasattr(pytest, 'HOSTILE')\n"
        "    assert pytest.__file__.startswith('/usr/lib/python3/dist-packages/')\n"
        "    assert hostiledep.VALUE == 42\n"
    )
    code, result = _run(capsys, repo, index, runtime, tmp_path)
    assert code == 0, result["tool_calls"][0]["result"]["summary"]
    assert result["final_tests"]["tests_run"] == 1


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_an_environment_other_than_the_pinned_one_is_refused_by_pid1(
    runtime: str, index: FakeIndex, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "requirements.txt").write_text("plaindep==2.0\n")
    (repo / "test_x.py").write_text(
        "import unittest\nclass T(unittest.TestCase):\n    def test(self): pass\n"
    )
    environment = prepare_environment(repo, DepsOptions(index_url=index.url))
    assert environment is not None
    forged = EnvironmentMount(host_path=environment.path, manifest_sha256="0" * 64)
    backend = DockerBackend()
    try:
        for mount, status in ((environment.mount(), "completed"), (forged, "refused")):
            result = backend.run(
                SandboxRequest(
                    argv=(*RUNNER_ARGV, "unittest"),
                    workspace=repo,
                    runtime=runtime,  # type: ignore[arg-type]
                    environment=mount,
                )
            )
            assert result.status == status, result.diagnostics
        assert "dependencies" in result.diagnostics.attestation
    finally:
        backend.close()


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_held_out_judge_works_with_dependencies(
    runtime: str, index: FakeIndex, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "requirements.txt").write_text("plaindep==2.0\n")
    (repo / "calc.py").write_text(
        "import plaindep\n\ndef triple(x):\n    return plaindep.double(x) + x\n"
    )
    held_out = tmp_path / "held_out"
    held_out.mkdir()
    (held_out / "test_heldout.py").write_text(
        "import sys, unittest\nfrom sandbox_supervisor.remote import candidate\n\n"
        "class Check(unittest.TestCase):\n"
        "    def test_triple(self):\n"
        "        self.assertEqual(candidate.module('calc').triple(5), 15)\n"
        "    def test_the_judge_has_no_environment(self):\n"
        "        self.assertNotIn('/deps/site', sys.path)\n"
        "        with self.assertRaises(ImportError):\n"
        "            import plaindep  # noqa: F401\n"
    )
    environment = prepare_environment(repo, DepsOptions(index_url=index.url))
    assert environment is not None
    backend = DockerBackend()
    try:
        verdict = run_held_out(
            repo,
            held_out,
            backend,
            runtime=runtime,  # type: ignore[arg-type]
            limits=SandboxLimits(timeout_s=60),
            environment=environment.mount(),
        )
    finally:
        backend.close()
    assert verdict.passed, verdict
    assert verdict.tests_run == 2


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_dependency_from_pypi(
    runtime: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real index: a small pure-Python wheel from PyPI, hash-checked, in the sandbox."""
    from sandbox_agent.errors import DependencyError

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "requirements.txt").write_text("jsonpointer==3.0.0\n")
    (repo / "test_pointer.py").write_text(
        "import unittest\nimport jsonpointer\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_resolve(self):\n"
        "        self.assertEqual(jsonpointer.resolve_pointer({'a': [1, 2]}, '/a/1'), 2)\n"
        "        self.assertTrue(jsonpointer.__file__.startswith('/deps/site/'))\n"
    )
    try:
        prepare_environment(repo)
    except DependencyError as error:
        if error.kind != "index_unreachable":
            raise
        pytest.skip(f"PyPI is not reachable here: {error}")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))
    argv = ["run", "--json", "--repo", str(repo), "--task", "t", "--plan", str(plan)]
    code = main([*argv, "--runtime", runtime, "--trace-dir", str(tmp_path / "t")])
    result = json.loads(capsys.readouterr().out)
    assert code == 0, result["reason"]
    assert result["environment"]["packages"] == [{"name": "jsonpointer", "version": "3.0.0"}]
