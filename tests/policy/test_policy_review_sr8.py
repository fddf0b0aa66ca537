"""SR-8 (issue 20): files that steer the runner's collection, and hostile configuration.

Each test was written against the code before its fix and seen to fail there.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_agent.policy import Policy, detect_runner, protected_reason
from sandbox_agent.policy.runner_detect import pytest_test_paths


@pytest.mark.parametrize(
    "path",
    [
        "pkg/bin/activate",
        "pkg/bin/activate.fish",
        "pkg/bin/Activate.ps1",
        "bin/activate.csh",
        "pkg/Scripts/activate",
        "pkg/Scripts/Activate.bat",
        "pkg/pyvenv.cfg",
        "pyvenv.cfg",
        "pkg/.git/broken",
        "a/b/.hg/hgrc",
        "pkg/.svn",
        "pkg/.GIT/x",
    ],
)
def test_c8_1_c8_2_collection_markers_and_nested_vcs_folders_are_protected(path: str) -> None:
    assert protected_reason(path) is not None, path


@pytest.mark.parametrize("path", ["pkg/bin/tool.py", "pkg/scripts/run.py", "pkg/git.py"])
def test_holds_their_neighbours_are_not(path: str) -> None:
    assert protected_reason(path) is None


def _repo(tmp_path: Path, pyproject: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(pyproject)
    return tmp_path


@pytest.mark.parametrize(
    ("testpaths", "protected", "free"),
    [
        ('["spec_*"]', ["spec_core/expected.json", "spec_/x"], ["spec.py", "pkg/spec_core/x"]),
        ('["checks/*/data"]', ["checks/a/data/x.json"], ["checks/a/other.json"]),
        ('["src/**/specs"]', ["src/a/b/specs/x.json", "src/specs/y"], ["src/a/b/x.json"]),
        ('["suite?"]', ["suite1/x"], ["suite12/x"]),
    ],
)
def test_c8_1_what_a_testpaths_glob_matches_is_test_code(
    tmp_path: Path, testpaths: str, protected: list[str], free: list[str]
) -> None:
    repo = _repo(tmp_path, f"[tool.pytest.ini_options]\ntestpaths = {testpaths}\n")
    policy = Policy.for_repo(repo)
    for path in protected:
        assert policy.protected_reason(path) is not None, path
    for path in free:
        assert policy.protected_reason(path) is None, path


@pytest.mark.parametrize("digits", [4300, 4301, 100_000])
def test_c8_3_a_huge_integer_in_pyproject_is_unparseable_not_a_crash(
    tmp_path: Path, digits: int
) -> None:
    """tomllib raises a plain ValueError past the 4300-digit limit: it escaped as a
    traceback instead of "unparseable"."""
    repo = _repo(tmp_path, f'[tool.pytest.ini_options]\ntestpaths = ["t"]\nx = {"9" * digits}\n')
    expected = "pytest" if digits <= 4300 else "unittest"
    assert detect_runner(repo) == expected
    assert pytest_test_paths(repo).folders == (("t",) if digits <= 4300 else ())


def test_c8_3_a_huge_integer_in_pyproject_ends_in_a_status_not_a_traceback(tmp_path: Path) -> None:
    """The whole run: a repository whose configuration holds a huge integer gets a one-line
    usage error before any folder is made (its declarations cannot be read, issue 17),
    never a traceback."""
    import json

    from sandbox_agent.controller import RunConfig, run_task
    from sandbox_agent.providers.options import PlanOptions
    from sandbox_agent.sandbox.fake import FakeBackend, completed

    repo = tmp_path / "repo"
    repo.mkdir()
    _repo(repo, f"[tool.pytest.ini_options]\nx = {'9' * 5000}\n")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"steps": [{"tool": "finish", "args": {"summary": "x"}}]}))
    from sandbox_agent.errors import UsageError

    with pytest.raises(UsageError) as raised:
        run_task(
            RunConfig(
                task="t",
                repo=repo,
                provider="scripted",
                provider_options=PlanOptions(plan_path=str(plan)),
                trace_dir=tmp_path / "runs",
            ),
            sandbox=FakeBackend([completed(), completed()]),
        )
    assert "pyproject.toml is not valid TOML" in str(raised.value)
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "runs").exists()


@settings(max_examples=150, deadline=None)
@given(
    number=st.one_of(
        st.integers().map(str),
        st.sampled_from(
            ["9" * 4300, "9" * 4301, "-" + "9" * 10_000, "inf", "nan", "1e999", "0x_1"]
        ),
    ),
    where=st.sampled_from(["x = {}", "testpaths = [{}]", "python_files = {}", "[[a]]\nb = {}"]),
)
def test_c8_3_property_any_number_in_pyproject_is_parsed_or_unparseable(
    tmp_path_factory: pytest.TempPathFactory, number: str, where: str
) -> None:
    repo = tmp_path_factory.mktemp("repo")
    (repo / "pyproject.toml").write_text("[tool.pytest.ini_options]\n" + where.format(number))
    assert detect_runner(repo) in ("pytest", "unittest")
    Policy.for_repo(repo)
