"""Helpers for the tool tests: a small repository and a one-line way to call a tool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sandbox_agent.tools import ToolBox, ToolCall, parse_tool_call
from sandbox_agent.tools.contracts import TOOL_NAMES, ToolOutcome

ALL = frozenset(TOOL_NAMES)


def make_repo(root: Path) -> Path:
    repo = root / "src-repo"
    (repo / "paginator").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "paginator" / "__init__.py").write_text("")
    (repo / "paginator" / "core.py").write_text(
        "def pages(n, size):\n    return n // size\n\n\ndef first():\n    return 1\n"
    )
    (repo / "tests" / "test_core.py").write_text(
        "import unittest\n\nfrom paginator.core import pages\n\n\n"
        "class TestPages(unittest.TestCase):\n"
        "    def test_rounds_up(self):\n        self.assertEqual(pages(5, 2), 3)\n"
    )
    (repo / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    return repo


def call(toolbox: ToolBox, tool: str, **args: Any) -> ToolOutcome:
    parsed: ToolCall = parse_tool_call(tool, args, ALL)
    return toolbox.execute(parsed)
