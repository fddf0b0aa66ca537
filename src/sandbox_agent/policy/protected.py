"""Protected paths (docs/TOOLS.md, "Policy"): refused by ``apply_patch``, checked on the final diff.

Names are compared after NFKC normalisation and case folding, so ``Tests/``,
fullwidth ``conftest.py`` lookalikes or ``SiteCustomize.py`` are protected too.
"""

from __future__ import annotations

import fnmatch
import unicodedata

from sandbox_supervisor.run_tests import UNITTEST_PATTERN

TEST_DIR_NAMES = frozenset({"test", "tests", "testing", "testdata", "test_data", "fixtures"})
"""Tests and test data, at any depth."""
TEST_FILE_GLOBS = (UNITTEST_PATTERN, "*_test.py")
"""Test modules, at any depth: unittest discovery loads ``test*.py``, pytest also ``*_test.py``."""
TEST_CONFIG_NAMES = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
        "noxfile.py",
    }
)
"""Test configuration, at any depth. ``setup.cfg`` and ``pyproject.toml`` are protected
whole: a section that configures tests cannot be told apart safely from one that does not."""
DEPENDENCY_FILE_GLOBS = (
    "requirements*.txt",
    "*requirements.txt",
    "constraints*.txt",
    "uv.lock",
    "pylock.toml",
    "pylock.*.toml",
)
"""Dependency declarations and locks, at any depth (issue 17): the environment is made
from them before the run, and a final diff must not change what the next run gets.
``pyproject.toml`` and ``setup.cfg`` are test configuration already; files a
requirements file includes by another name are protected per run
(``Policy.extra_protected``, from the declaration's sources)."""
DEPENDENCY_DIR_NAMES = frozenset({"requirements"})
STARTUP_HOOK_NAMES = frozenset({"sitecustomize.py", "usercustomize.py"})
STARTUP_HOOK_GLOBS = ("*.pth",)
"""Interpreter start-up hooks, at any depth."""
CONTROL_DIR_NAMES = frozenset(
    {"eval", "evals", "evaluation", "policy", "policies", ".sandbox-agent", ".git", ".github"}
)
"""Evaluation and policy folders (and version-control metadata), at the top level."""
VCS_DIR_NAMES = frozenset({".git", ".hg", ".svn"})
"""Version-control folders, at any depth: left out of the copy, so the model must not make
one either (a reused verdict's hash once left ``.git`` out at any depth, SR-8 C8-2)."""
VENV_MARKER_NAMES = frozenset({"pyvenv.cfg"})
VENV_SCRIPT_DIRS = frozenset({"bin", "scripts"})
VENV_SCRIPT_GLOBS = ("activate*",)
"""What makes pytest take a folder for a virtual environment and skip it whole
(``bin/activate*``, ``Scripts/activate*``; ``pyvenv.cfg`` for pytest 8), at any depth:
one empty marker would hide a test folder (SR-8 C8-1)."""
RUNNER_MODULE_NAMES = frozenset({"unittest", "pytest", "_pytest", "pluggy", "sandbox_supervisor"})
"""Top-level modules or packages that would shadow the test runner itself."""


def fold(name: str) -> str:
    """The comparison form of a path component."""
    return unicodedata.normalize("NFKC", name).casefold()


def protected_reason(path: str) -> str | None:
    """Why ``path`` (relative, ``/``-separated) is protected, or None when it is not."""
    parts = [fold(part) for part in path.split("/") if part not in ("", ".")]
    if not parts:
        return None
    name = parts[-1]
    for folder in parts[:-1]:
        if folder in TEST_DIR_NAMES:
            return f"inside the test folder '{folder}'"
        if folder in DEPENDENCY_DIR_NAMES:
            return f"inside the dependency folder '{folder}'"
    for part in parts:
        if part in VCS_DIR_NAMES:
            return f"version-control metadata ('{part}')"
    if name in VENV_MARKER_NAMES or (
        len(parts) > 1 and parts[-2] in VENV_SCRIPT_DIRS and _matches(name, VENV_SCRIPT_GLOBS)
    ):
        return "a virtual-environment marker (pytest would skip the folder holding it)"
    if parts[0] in CONTROL_DIR_NAMES and len(parts) > 1:
        return f"inside the protected folder '{parts[0]}'"
    if name in TEST_CONFIG_NAMES:
        return "test configuration"
    if _matches(name, DEPENDENCY_FILE_GLOBS):
        return "a dependency declaration or lock"
    if name in STARTUP_HOOK_NAMES or _matches(name, STARTUP_HOOK_GLOBS):
        return "an interpreter start-up hook"
    if _matches(name, TEST_FILE_GLOBS):
        return "a test module"
    if name in TEST_DIR_NAMES or parts[0] in CONTROL_DIR_NAMES:
        return "a protected folder name"
    top = parts[0].removesuffix(".py")
    if top in RUNNER_MODULE_NAMES:
        return f"would shadow the test runner module '{top}'"
    return None


def _matches(name: str, globs: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, glob) for glob in globs)
