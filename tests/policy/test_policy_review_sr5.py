"""SR-5: adversarial review of the policy (runner detection, protected paths, allowlists).

Each test was written against the code before its fix and seen to fail there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_agent.policy import Policy, detect_runner


@pytest.mark.parametrize(
    "text",
    [
        "a = " + "[" * 5000 + "]" * 5000,
        "a = " + "{x = " * 3000 + "1" + "}" * 3000,
        "[tool.pytest.ini_options]\na = " + "[" * 5000 + "]" * 5000,
    ],
    ids=["arrays", "inline-tables", "after-the-pytest-table"],
)
def test_sr5_f1_deeply_nested_pyproject_is_not_a_crash(tmp_path: Path, text: str) -> None:
    # SR-5 F1: tomllib recurses per nesting level, so a 10 KB pyproject.toml raised
    # RecursionError out of detect_runner, Policy.for_repo and the whole run.
    (tmp_path / "pyproject.toml").write_text(text)
    assert detect_runner(tmp_path) == "unittest"
    assert Policy.for_repo(tmp_path).runner == "unittest"


@pytest.mark.parametrize(
    ("config_name", "config", "test_path"),
    [
        ("pytest.ini", "[pytest]\npython_files = check_*.py\n", "pkg/check_pages.py"),
        ("pytest.ini", "[pytest]\npython_files = *_spec.py tests.py\n", "a/b/pages_spec.py"),
        ("tox.ini", "[pytest]\npython_files =\n    verify_*.py\n", "verify_core.py"),
        ("setup.cfg", "[tool:pytest]\npython_files = t_*.py\n", "t_core.py"),
        (
            "pyproject.toml",
            '[tool.pytest.ini_options]\npython_files = ["should_*.py"]\n',
            "pkg/should_page.py",
        ),
        ("pytest.ini", "[pytest]\ntestpaths = spec\n", "spec/helpers.py"),
        (
            "pyproject.toml",
            '[tool.pytest.ini_options]\ntestpaths = ["qa/suite"]\n',
            "qa/suite/support.py",
        ),
    ],
)
def test_sr5_f6_modules_the_repositorys_pytest_config_makes_tests_are_protected(
    tmp_path: Path, config_name: str, config: str, test_path: str
) -> None:
    # SR-5 F6: protected test modules were the default globs only; a repository whose
    # pytest configuration collects other files (python_files) or keeps its suite in
    # another folder (testpaths) left those tests open to apply_patch.
    (tmp_path / config_name).write_text(config)
    policy = Policy.for_repo(tmp_path)
    assert policy.runner == "pytest"
    assert policy.protected_reason(test_path) is not None
    assert policy.check_final_diff([test_path]) != []
    assert policy.protected_reason("pkg/pages.py") is None


def test_sr5_f6_a_hostile_config_cannot_make_every_path_unprotected_or_crash(
    tmp_path: Path,
) -> None:
    (tmp_path / "pytest.ini").write_text('[pytest]\npython_files = "unclosed *.py\ntestpaths =\n')
    policy = Policy.for_repo(tmp_path)
    assert policy.protected_reason("tests/test_x.py") is not None
    assert policy.protected_reason("conftest.py") is not None
