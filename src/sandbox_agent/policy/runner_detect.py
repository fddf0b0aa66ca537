"""Which runner a repository uses (docs/CONTRACT.md section 4, "Runner auto-detection")."""

from __future__ import annotations

import configparser
import shlex
import tomllib
from pathlib import Path
from typing import NamedTuple

from sandbox_agent.policy.commands import RunnerName

MAX_CONFIG_BYTES = 1024 * 1024


def detect_runner(repo: Path) -> RunnerName:
    """pytest when the repository configures pytest, otherwise stdlib unittest.

    pytest is chosen when the root has ``pytest.ini`` or ``conftest.py``, a
    ``pyproject.toml`` with ``[tool.pytest.ini_options]``, a ``setup.cfg`` with
    ``[tool:pytest]``, or a ``tox.ini`` with ``[pytest]``. A file that cannot be parsed
    counts as not configuring pytest (also one nested too deeply for the parser).
    Links are not followed.
    """
    if _regular(repo / "pytest.ini") or _regular(repo / "conftest.py"):
        return "pytest"
    pyproject = _read(repo / "pyproject.toml")
    if pyproject is not None:
        try:
            tool = tomllib.loads(pyproject).get("tool", {})
        except (ValueError, RecursionError):
            # tomllib recurses once per nesting level: a hostile file of nested arrays
            # is unparseable for us (and for pytest), never a crash. ValueError, not only
            # TOMLDecodeError: an integer past the 4300-digit limit is ``int()``'s own
            # ValueError (SR-8 C8-3).
            tool = {}
        pytest_table = tool.get("pytest", {}) if isinstance(tool, dict) else {}
        if isinstance(pytest_table, dict) and "ini_options" in pytest_table:
            return "pytest"
    for name, section in (("setup.cfg", "tool:pytest"), ("tox.ini", "pytest")):
        text = _read(repo / name)
        if text is not None and _has_section(text, section):
            return "pytest"
    return "unittest"


def _regular(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def _read(path: Path) -> str | None:
    if not _regular(path) or path.stat().st_size > MAX_CONFIG_BYTES:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _has_section(text: str, section: str) -> bool:
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return False
    return parser.has_section(section)


class PytestTestPaths(NamedTuple):
    """What the repository's pytest configuration makes tests, beyond the default globs."""

    file_globs: tuple[str, ...]
    """``python_files`` patterns (matched against a file's name, or its path with a ``/``)."""
    folders: tuple[str, ...]
    """``testpaths`` folders, relative to the root: everything under them is test code."""


def pytest_test_paths(repo: Path) -> PytestTestPaths:
    """``python_files`` and ``testpaths`` from every pytest configuration file of the root.

    All files are read (pytest uses the first it finds; the union is the safe side).
    Unparseable files, and values that are not plain relative names, add nothing.
    """
    globs: list[str] = []
    folders: list[str] = []
    for settings in _pytest_sections(repo):
        globs += _words(settings.get("python_files"))
        folders += _words(settings.get("testpaths"))
    clean = [f.strip("/") for f in folders if f.strip("/") and not f.startswith("/")]
    return PytestTestPaths(
        tuple(dict.fromkeys(g for g in globs if g)),
        tuple(dict.fromkeys(f for f in clean if ".." not in f.split("/"))),
    )


def _pytest_sections(repo: Path) -> list[dict[str, object]]:
    sections: list[dict[str, object]] = []
    for name, section in (
        ("pytest.ini", "pytest"),
        (".pytest.ini", "pytest"),
        ("tox.ini", "pytest"),
        ("setup.cfg", "tool:pytest"),
    ):
        text = _read(repo / name)
        parser = configparser.RawConfigParser(strict=False, interpolation=None)
        try:
            parser.read_string(text or "")
        except configparser.Error:
            continue
        if parser.has_section(section):
            sections.append(dict(parser.items(section)))
    pyproject = _read(repo / "pyproject.toml")
    try:
        tool = tomllib.loads(pyproject or "").get("tool", {})
    except (ValueError, RecursionError):  # see detect_runner
        tool = {}
    table = tool.get("pytest", {}) if isinstance(tool, dict) else {}
    options = table.get("ini_options") if isinstance(table, dict) else None
    if isinstance(options, dict):
        sections.append(options)
    return sections


def _words(value: object) -> list[str]:
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    if not isinstance(value, str):
        return []
    try:
        return shlex.split(value)
    except ValueError:
        return value.split()
