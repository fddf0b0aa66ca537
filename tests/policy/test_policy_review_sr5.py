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
