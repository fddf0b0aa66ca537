"""Protected paths, the final-diff check, runner detection and the command allowlist."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent import denials
from sandbox_agent.errors import ToolDenied
from sandbox_agent.policy import COMMAND_ALLOWLIST, Policy, detect_runner, runner_command
from sandbox_agent.policy.protected import protected_reason


@pytest.mark.parametrize(
    "path",
    [
        "tests/test_core.py",
        "tests/data/input.json",
        "pkg/tests/helper.py",
        "Tests/x.py",
        "test_core.py",
        "test.py",
        "testhelpers.py",
        "pkg/testutil.py",
        "pkg/core_test.py",
        "conftest.py",
        "pkg/conftest.py",
        "pytest.ini",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
        "sitecustomize.py",
        "pkg/usercustomize.py",
        "evil.pth",
        "lib/site-packages/x.pth",
        "SiteCustomize.py",
        "\uff43onftest.py",
        "eval/held_out.py",
        "policy/rules.json",
        ".git/hooks/pre-commit",
        "unittest.py",
        "pytest/__init__.py",
        "sandbox_supervisor/run_tests.py",
        "requirements.txt",
        "requirements-dev.txt",
        "dev-requirements.txt",
        "requirements/base.txt",
        "constraints.txt",
        "uv.lock",
        "pylock.toml",
        "pylock.test.toml",
        "sub/Requirements.txt",
    ],
)
def test_protected_paths(path: str) -> None:
    assert protected_reason(path) is not None


@pytest.mark.parametrize(
    "path",
    ["paginator/core.py", "README.md", "pkg/contest.py", "pkg/utils_testing.py", "src/policy.py"],
)
def test_ordinary_paths_are_not_protected(path: str) -> None:
    assert protected_reason(path) is None


def test_final_diff_check_lists_protected_and_off_allowlist_paths() -> None:
    policy = Policy(final_diff_allowlist=("paginator/*",))
    assert policy.check_final_diff(["paginator/core.py"]) == []
    violations = policy.check_final_diff(["paginator/core.py", "tests/test_x.py", "setup.py"])
    assert violations == [
        "tests/test_x.py: protected (inside the test folder 'tests')",
        "setup.py: not in the final-diff allowlist",
    ]
    assert Policy().check_final_diff(["anything/else.py"]) == []
    assert Policy(extra_protected=("secret/*",)).check_final_diff(["secret/a"]) != []


@pytest.mark.parametrize(
    ("files", "runner"),
    [
        ({}, "unittest"),
        ({"pytest.ini": "[pytest]\n"}, "pytest"),
        ({"conftest.py": ""}, "pytest"),
        ({"pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-q'\n"}, "pytest"),
        ({"pyproject.toml": "[project]\nname = 'x'\n"}, "unittest"),
        ({"pyproject.toml": "not [valid toml"}, "unittest"),
        ({"setup.cfg": "[tool:pytest]\ntestpaths = tests\n"}, "pytest"),
        ({"setup.cfg": "[metadata]\nname = x\n"}, "unittest"),
        ({"tox.ini": "[pytest]\n"}, "pytest"),
    ],
)
def test_detect_runner(tmp_path: Path, files: dict[str, str], runner: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert detect_runner(tmp_path) == runner
    assert Policy.for_repo(tmp_path).runner == runner


def test_a_conftest_link_does_not_count(tmp_path: Path) -> None:
    (tmp_path / "real.py").write_text("")
    (tmp_path / "conftest.py").symlink_to(tmp_path / "real.py")
    assert detect_runner(tmp_path) == "unittest"


def test_commands_are_fixed_argv_plus_a_validated_selector() -> None:
    wrapper = ("/usr/bin/python3", "-I", "-B", "-m", "sandbox_supervisor.run_tests")
    assert {"unittest": (*wrapper, "unittest"), "pytest": (*wrapper, "pytest")} == COMMAND_ALLOWLIST
    unit = runner_command("unittest", "tests.test_core.TestPage.test_first")
    assert unit.argv == (*wrapper, "unittest", "tests.test_core.TestPage.test_first")
    assert unit.workload_env == {}
    py = runner_command("pytest", "tests/test_core.py::TestPage::test_first")
    assert py.argv[-1] == "tests/test_core.py::TestPage::test_first"
    assert py.workload_env == {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    assert runner_command("pytest").argv == (*wrapper, "pytest")


@pytest.mark.parametrize(
    ("runner", "selector"),
    [
        ("unittest", "-v"),
        ("unittest", "tests/test_core.py"),
        ("unittest", "tests..x"),
        ("unittest", "a.b; rm -rf /"),
        ("unittest", "1abc"),
        ("pytest", "--co"),
        ("pytest", "-p evil"),
        ("pytest", "/etc/passwd.py"),
        ("pytest", "../outside/test_x.py"),
        ("pytest", "tests/test_x.py::a::b::c"),
        ("pytest", "tests/test_x.py::x[param]"),
        ("pytest", "tests/test_x.py -x"),
        ("pytest", "tests.test_x"),
    ],
)
def test_bad_selectors_are_denied(runner: str, selector: str) -> None:
    with pytest.raises(ToolDenied) as caught:
        runner_command(runner, selector)
    assert caught.value.code == denials.COMMAND_BAD_SELECTOR


def test_an_unknown_runner_is_not_allowlisted() -> None:
    with pytest.raises(ToolDenied) as caught:
        runner_command("bash", None)
    assert caught.value.code == denials.COMMAND_NOT_ALLOWLISTED
