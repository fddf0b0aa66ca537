"""Which runner a repository uses (DESIGN.md section 6, "Repositories and fixtures")."""

from __future__ import annotations

import configparser
import tomllib
from pathlib import Path

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
        except (tomllib.TOMLDecodeError, RecursionError):
            # tomllib recurses once per nesting level: a hostile file of nested arrays
            # is unparseable for us (and for pytest), never a crash.
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
