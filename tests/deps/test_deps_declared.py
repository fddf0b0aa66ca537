"""What a repository declares, read as data: the files, the rules, the refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from repo_files import write_files
from sandbox_agent.deps.declared import read_declaration
from sandbox_agent.deps.environment import prepare_environment
from sandbox_agent.deps.requirements import logical_lines
from sandbox_agent.errors import DependencyError


def test_pyproject_dependencies_test_extras_and_groups(tmp_path: Path) -> None:
    repo = write_files(
        tmp_path,
        {
            "pyproject.toml": """
[project]
name = "Calc"
dependencies = ["attrs>=23", "six; python_version < '4'"]
[project.optional-dependencies]
test = ["calc[fast]", "hypothesis"]
fast = ["ujson"]
docs = ["sphinx"]
[dependency-groups]
tests = ["pytest-timeout", {include-group = "base"}]
base = ["iniconfig"]
dev = ["black"]
"""
        },
    )
    declaration = read_declaration(repo)
    assert declaration.requirements == (
        "attrs>=23",
        "hypothesis",
        "iniconfig",
        "pytest-timeout",
        'six; python_version < "4"',
        "ujson",
    )
    assert declaration.sources == ("pyproject.toml",)
    assert declaration.lock is None


def test_dev_counts_only_when_there_is_no_test_extra_or_group(tmp_path: Path) -> None:
    repo = write_files(
        tmp_path,
        {"pyproject.toml": '[project]\nname = "x"\n[dependency-groups]\ndev = ["pytest-mock"]\n'},
    )
    assert read_declaration(repo).requirements == ("pytest-mock",)


def test_setup_cfg_and_requirement_files(tmp_path: Path) -> None:
    repo = write_files(
        tmp_path,
        {
            "setup.cfg": "[options]\ninstall_requires =\n    six>=1\n    # a comment\n"
            "[options.extras_require]\ntesting = freezegun\n",
            "requirements.txt": "-r requirements/base.txt\n-c constraints.txt\n-e .\n",
            "requirements/base.txt": "jsonpointer>=1.9  # inline comment\nattrs \\\n  >=22\n",
            "constraints.txt": "attrs<30\n",
            "requirements-docs.txt": "sphinx\n",
        },
    )
    declaration = read_declaration(repo)
    assert declaration.requirements == ("attrs>=22", "freezegun", "jsonpointer>=1.9", "six>=1")
    assert declaration.constraints == ("attrs<30",)
    assert "requirements-docs.txt" not in declaration.sources
    assert set(declaration.sources) == {
        "setup.cfg",
        "requirements.txt",
        "requirements/base.txt",
        "constraints.txt",
    }


def test_hashed_lines_are_kept_for_the_resolution(tmp_path: Path) -> None:
    digest = "a" * 64
    repo = write_files(tmp_path, {"requirements.txt": f"Six==1.16.0 --hash=sha256:{digest}\n"})
    declaration = read_declaration(repo)
    assert declaration.pinned_hashes == (("six", "requirements.txt:1", (digest,)),)


def test_a_lock_is_the_whole_environment(tmp_path: Path) -> None:
    repo = write_files(
        tmp_path,
        {
            "pyproject.toml": '[project]\nname = "x"\ndependencies = ["a"]\n'
            '[project.optional-dependencies]\ntest = ["b"]\n',
            "uv.lock": "version = 1\n",
            "requirements.txt": "c\n",
        },
    )
    declaration = read_declaration(repo)
    assert declaration.lock is not None
    assert declaration.lock.kind == "uv.lock"
    assert declaration.lock.extras == ("test",)
    assert declaration.requirements == ()
    (repo / "pylock.toml").write_text('lock-version = "1.0"\n')
    assert read_declaration(repo).lock.kind == "pylock.toml"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("files", "says"),
    [
        ({"requirements.txt": "-e git+https://example.com/x.git#egg=x\n"}, "local path or URL"),
        ({"requirements.txt": "x @ https://example.com/x.whl\n"}, "direct URL"),
        ({"requirements.txt": "./vendor/x\n"}, "local path"),
        ({"requirements.txt": "dist/x-1.0-py3-none-any.whl\n"}, "local path"),
        ({"requirements.txt": "--index-url https://evil.example/simple\nx\n"}, "--index-url"),
        ({"requirements.txt": "--extra-index-url=https://e.example\n"}, "--extra-index-url"),
        ({"requirements.txt": "-r ../outside.txt\n"}, "inside the repository"),
        ({"requirements.txt": "-r requirements.txt\n"}, "includes itself"),
        ({"requirements.txt": "x==1 --hash=md5:abc\n"}, "sha256"),
        ({"requirements.txt": "not a requirement!\n"}, "not a requirement"),
        ({"pyproject.toml": "[project\n"}, "not valid TOML"),
        ({"pyproject.toml": '[project]\nrequires-python = ">=3.12"\n'}, "excludes the sandbox"),
        ({"pyproject.toml": '[project]\ndependencies = "x"\n'}, "list of requirement strings"),
        ({"uv.lock": "version = 1\n"}, "without a pyproject.toml"),
    ],
)
def test_what_is_not_read_is_one_line_naming_it(
    tmp_path: Path, files: dict[str, str], says: str
) -> None:
    repo = write_files(tmp_path, files)
    with pytest.raises(DependencyError) as raised:
        prepare_environment(repo)
    assert raised.value.kind == "declaration"
    assert says in str(raised.value)
    assert "\n" not in str(raised.value)


def test_nothing_declared_is_no_environment_and_no_parser(tmp_path: Path) -> None:
    assert prepare_environment(write_files(tmp_path, {"calc.py": "X = 1\n"})) is None
    assert prepare_environment(write_files(tmp_path, {"pyproject.toml": "[tool.ruff]\n"})) is None


def test_requirement_lines_follow_pips_comment_and_continuation_rules() -> None:
    text = "a # c\n#x\nb\\\n>=1\nc#notacomment\n\n"
    assert logical_lines(text) == [(1, "a"), (3, "b >=1"), (5, "c#notacomment")]
