"""The policy of one run: which tools, which paths may change, which runner."""

from __future__ import annotations

import fnmatch
import functools
from dataclasses import dataclass, field
from pathlib import Path

from sandbox_agent.policy.commands import RunnerName
from sandbox_agent.policy.protected import fold, protected_reason
from sandbox_agent.policy.runner_detect import detect_runner, pytest_test_paths
from sandbox_agent.policy.toolnames import TOOL_NAMES


def all_tools() -> frozenset[str]:
    """The six tool names."""
    return frozenset(TOOL_NAMES)


@dataclass(frozen=True)
class Policy:
    """What the model may do in one run. Decided by the controller, never by the model."""

    runner: RunnerName = "unittest"
    """The allowlisted test runner (``detect_runner`` for ``--runner auto``)."""
    allowed_tools: frozenset[str] = field(default_factory=all_tools)
    """Per-task tool allowlist."""
    final_diff_allowlist: tuple[str, ...] | None = None
    """Globs (``fnmatch``, ``*`` crosses ``/``) every changed path must match; None: any path."""
    extra_protected: tuple[str, ...] = ()
    """More protected globs for this task, on top of the fixed ones (docs/TOOLS.md, "Policy")."""
    test_file_globs: tuple[str, ...] = ()
    """The repository's own test-module globs (pytest ``python_files``), protected too."""
    test_folders: tuple[str, ...] = ()
    """The repository's own test folders (pytest ``testpaths``), protected whole. pytest
    expands each as a glob (``glob.iglob(..., recursive=True)``): so does the policy, and
    everything under a folder a glob matches is test code (SR-8 C8-1)."""

    @classmethod
    def for_repo(
        cls,
        repo: Path,
        *,
        runner: str = "auto",
        allowed_tools: frozenset[str] | None = None,
        final_diff_allowlist: tuple[str, ...] | None = None,
    ) -> Policy:
        """The policy for ``repo``, detecting the runner when ``runner`` is ``"auto"``."""
        chosen: RunnerName = detect_runner(repo) if runner == "auto" else _runner_name(runner)
        configured = pytest_test_paths(repo)
        return cls(
            runner=chosen,
            allowed_tools=allowed_tools if allowed_tools is not None else all_tools(),
            final_diff_allowlist=final_diff_allowlist,
            test_file_globs=configured.file_globs,
            test_folders=configured.folders,
        )

    def protected_reason(self, path: str) -> str | None:
        """Why ``path`` may not be changed, or None when it may."""
        reason = protected_reason(path)
        if reason is None and any(fnmatch.fnmatchcase(path, glob) for glob in self.extra_protected):
            reason = "protected by this task's policy"
        if reason is None:
            reason = self._configured_test_reason(path)
        return reason

    def _configured_test_reason(self, path: str) -> str | None:
        folded = "/".join(fold(part) for part in path.split("/") if part not in ("", "."))
        name = folded.rsplit("/", 1)[-1]
        for glob in self.test_file_globs:
            pattern = fold(glob)
            target = folded if "/" in pattern else name
            if fnmatch.fnmatchcase(target, pattern) or fnmatch.fnmatchcase(folded, f"*/{pattern}"):
                return f"a test module (pytest python_files '{glob}')"
        parts = tuple(folded.split("/"))
        for folder in self.test_folders:
            if under_glob(tuple(fold(part) for part in folder.split("/")), parts):
                return f"inside the test folder '{folder}' (pytest testpaths)"
        return None

    def check_final_diff(self, files_changed: list[str]) -> list[str]:
        """One line per violation in the final diff: a protected path, or one off the allowlist."""
        violations: list[str] = []
        for path in files_changed:
            reason = self.protected_reason(path)
            if reason is not None:
                violations.append(f"{path}: protected ({reason})")
            elif self.final_diff_allowlist is not None and not any(
                fnmatch.fnmatchcase(path, glob) for glob in self.final_diff_allowlist
            ):
                violations.append(f"{path}: not in the final-diff allowlist")
        return violations


def _runner_name(runner: str) -> RunnerName:
    if runner == "unittest":
        return "unittest"
    if runner == "pytest":
        return "pytest"
    from sandbox_agent.errors import UsageError

    raise UsageError(f"unknown runner '{runner}'; use auto, unittest or pytest")


def under_glob(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """Whether ``path`` or one of its parent folders matches the glob ``pattern`` (both
    split at ``/``): ``*``, ``?`` and ``[...]`` within one component, ``**`` any number
    of components, as pytest's ``testpaths`` expansion reads them."""

    @functools.cache
    def match(at_pattern: int, at_path: int) -> bool:
        if at_pattern == len(pattern):
            return True  # a prefix of ``path`` matched: the path is under it
        head = pattern[at_pattern]
        if head == "**":
            return any(match(at_pattern + 1, start) for start in range(at_path, len(path) + 1))
        return (
            at_path < len(path)
            and fnmatch.fnmatchcase(path[at_path], head)
            and match(at_pattern + 1, at_path + 1)
        )

    return match(0, 0)
